"""JAX smoke checks. Runs inside the target interpreter: stdlib + jax (+ numpy, which jax needs), Python 3.8+.

The CNN is written with jax.lax only (no flax/optax), so nothing beyond jax itself is needed.
"""

import json
import os
import signal
import subprocess
import sys
import time

import _harness as h
from _harness import BATCH, SEED, Fail
DETERMINISTIC_FLAG = "--xla_gpu_deterministic_ops=true"
CHILD_MARK = "ENVDOCTOR_SMOKE_REPRO_CHILD"


HOST_DEVICES_FLAG = "--xla_force_host_platform_device_count=2"


def prepare(checks, device_request):
    """XLA reads its flags and JAX its allocator settings once, when the backend starts, which may be in
    an earlier check of this process than the one that needs them."""
    if "multi" in checks:
        _add_host_devices()
    if "repro" in checks:
        # On a GPU the deterministic runs need a second process while this one holds the device: with
        # JAX's default preallocation of 75% of the GPU in each, the second one would run out of memory.
        os.environ["XLA_PYTHON_CLIENT_PREALLOCATE"] = "false"


def _add_host_devices():
    flags = os.environ.get("XLA_FLAGS", "")
    if "xla_force_host_platform_device_count" not in flags:
        os.environ["XLA_FLAGS"] = (flags + " " + HOST_DEVICES_FLAG).strip()


def _jax(ctx):
    if ctx.device_request == "cpu":
        os.environ["JAX_PLATFORMS"] = "cpu"
    elif ctx.device_request == "cuda":
        os.environ["JAX_PLATFORMS"] = "cuda,cpu"  # the CPU stays available for reference computations
    try:
        jax = ctx.load("jax")
        import jaxlib
        gpus = [d for d in jax.devices() if d.platform == "gpu"]
    except h.ImportFailed:
        raise
    except Exception as exc:  # "Unable to initialize backend 'cuda'" with JAX_PLATFORMS=cuda
        raise Fail("jax backend failed to initialise: {}".format(h.one_line(exc)))
    ctx.details["version"] = jax.__version__
    ctx.details["jaxlib"] = jaxlib.__version__
    ctx.details["backend"] = jax.default_backend()
    ctx.want_gpu(len(gpus))
    device = gpus[0] if gpus and ctx.device_request != "cpu" else jax.devices("cpu")[0]
    ctx.device = "cuda:{}".format(device.id) if device.platform == "gpu" else device.platform
    return jax, device


def init_params(jax, seed=SEED):
    """Parameters drawn with NumPy: eager jax.random calls would each compile an XLA program."""
    import numpy as np
    rng = np.random.default_rng(seed)

    def scaled(shape, fan_in):
        return (rng.standard_normal(shape) / np.sqrt(fan_in)).astype(np.float32)

    return {
        "c1": {"w": scaled((3, 3, 1, 16), 9), "b": np.zeros(16, np.float32)},
        "c2": {"w": scaled((3, 3, 16, 32), 9 * 16), "b": np.zeros(32, np.float32)},
        "d": {"w": scaled((7 * 7 * 32, 10), 7 * 7 * 32 * 4), "b": np.zeros(10, np.float32)},
    }


def forward(jax, params, x):
    lax = jax.lax

    def conv(x, p):
        y = lax.conv_general_dilated(x, p["w"].astype(x.dtype), (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))
        return jax.nn.relu(y + p["b"].astype(x.dtype))

    def pool(x):
        return lax.reduce_window(x, -jax.numpy.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")

    x = pool(conv(x, params["c1"]))
    x = pool(conv(x, params["c2"]))
    x = x.reshape(x.shape[0], -1)
    return x @ params["d"]["w"].astype(x.dtype) + params["d"]["b"].astype(x.dtype)


def loss_fn(jax, params, x, y, dtype=None):
    if dtype is not None:
        x = x.astype(dtype)
    logits = forward(jax, params, x).astype(jax.numpy.float32)
    logp = jax.nn.log_softmax(logits)
    return -jax.numpy.mean(jax.numpy.take_along_axis(logp, y[:, None], axis=1))


def synthetic_batch(jax, batch=BATCH):
    import numpy as np
    rng = np.random.default_rng(SEED + 1)
    return rng.standard_normal((batch, 28, 28, 1)).astype(np.float32), rng.integers(0, 10, batch).astype(np.int32)


def make_step(jax, lr=0.05, dtype=None):
    def step(params, x, y):
        loss, grads = jax.value_and_grad(lambda p: loss_fn(jax, p, x, y, dtype))(params)
        return jax.tree_util.tree_map(lambda p, g: p - lr * g, params, grads), loss, grads
    return step


_JITTED = {}


def jitted_step(jax, dtype=None):
    """One compiled step per dtype and process (a new closure each time would recompile)."""
    if dtype not in _JITTED:
        _JITTED[dtype] = jax.jit(make_step(jax, dtype=dtype))
    return _JITTED[dtype]


def train(jax, device, steps):
    params = jax.device_put(init_params(jax), device)
    x, y = jax.device_put(synthetic_batch(jax), device)
    step = jitted_step(jax)
    losses, durations = [], []
    for _ in range(steps):
        start = time.perf_counter()
        params, loss, _ = step(params, x, y)
        losses.append(float(loss))  # float() waits for the device
        durations.append(time.perf_counter() - start)
    return losses, durations, params


def param_digest(jax, params):
    import numpy as np
    return h.digest(np.asarray(leaf).tobytes() for leaf in jax.tree_util.tree_leaves(params))


# --- checks --------------------------------------------------------------------------------------

def devices(ctx):
    jax = ctx.load("jax")
    import jaxlib
    ctx.details.update(version=jax.__version__, jaxlib=jaxlib.__version__)
    try:
        all_devices = jax.devices()
    except Exception as exc:
        raise Fail("jax found no usable backend: {}".format(h.one_line(exc)))
    gpus = []
    for d in all_devices:
        if d.platform != "gpu":
            continue
        entry = {"index": d.id, "name": d.device_kind,
                 "compute_capability": getattr(d, "compute_capability", None)}
        try:
            entry["memory_mib"] = int((d.memory_stats() or {}).get("bytes_limit", 0)) >> 20 or None
        except Exception:
            entry["memory_mib"] = None
        gpus.append(entry)
    ctx.device = "cuda" if gpus else jax.default_backend()
    plugin = _cuda_plugin()
    return {"backend": jax.default_backend(), "gpus": gpus, "gpu_count": len(gpus),
            "platforms": sorted({d.platform for d in all_devices}),
            "cuda_plugin": plugin, "cuda_build": bool(plugin or gpus)}


def _cuda_plugin():
    try:
        from importlib import metadata
    except ImportError:
        return None
    for name in ("jax-cuda13-plugin", "jax-cuda12-plugin", "jax-cuda11-plugin"):
        try:
            return "{}=={}".format(name, metadata.version(name))
        except Exception:
            continue
    return None


def cnn(ctx):
    jax, device = _jax(ctx)
    losses, durations, _ = train(jax, device, ctx.steps)
    return h.cnn_details(losses, durations, BATCH, compile_ms=round(durations[0] * 1000, 1))


def oom(ctx):
    jax, device = _jax(ctx)
    ctx.skip_oom_without_gpu(device.platform == "gpu")
    jnp = jax.numpy
    limit = int((device.memory_stats() or {}).get("bytes_limit", 0))
    ctx.details.update(total_is="bytes_limit of JAX's allocator",
                       preallocate=os.environ.get("XLA_PYTHON_CLIENT_PREALLOCATE", "true (default: 75% of the GPU at start)"),
                       mem_fraction=os.environ.get("XLA_PYTHON_CLIENT_MEM_FRACTION"))

    def alloc(n):
        block = jax.device_put(jnp.zeros((n,), jnp.uint8), device)
        block.block_until_ready()
        return block

    def is_oom(exc):  # XlaRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying to allocate ...
        return "RESOURCE_EXHAUSTED" in str(exc) or "out of memory" in str(exc).lower()

    def memory():
        stats = device.memory_stats() or {}
        return {"in_use_mib": int(stats.get("bytes_in_use", 0)) >> 20, "peak_mib": int(stats.get("peak_bytes_in_use", 0)) >> 20}

    return h.oom_round_trip(ctx, alloc, is_oom, max(limit // 32, 64 << 20), memory,
                            lambda n: jax.device_put(jnp.ones((n,), jnp.float32), device).sum(), total=limit)


def repro(ctx):
    prepare(["repro"], ctx.device_request)  # in case this process did not plan it (a direct call)
    jax, device = _jax(ctx)

    def run():
        losses, _, params = train(jax, device, ctx.repro_steps)
        return losses, param_digest(jax, params)

    default = h.two_runs(run)
    if os.environ.get(CHILD_MARK):  # the fresh process below: its two runs are the deterministic ones
        return {"runs": default}
    if device.platform != "gpu":
        deterministic, settings = default, "defaults (CPU)"  # XLA on the CPU has no nondeterministic kernels
    elif DETERMINISTIC_FLAG in os.environ.get("XLA_FLAGS", ""):
        deterministic, settings = default, "XLA_FLAGS=" + DETERMINISTIC_FLAG + " (set by the caller)"
    else:
        deterministic, settings = _deterministic_runs(ctx), "XLA_FLAGS=" + DETERMINISTIC_FLAG
    return h.repro_details(ctx.repro_steps, default, deterministic, settings)


def _deterministic_runs(ctx):
    """XLA reads its flags once, at start-up: the deterministic runs need a fresh process."""
    env = dict(os.environ, XLA_FLAGS=(os.environ.get("XLA_FLAGS", "") + " " + DETERMINISTIC_FLAG).strip())
    env[CHILD_MARK] = "1"
    argv = [sys.executable, os.path.abspath(__file__), "--check", "repro", "--device", ctx.device_request,
            "--steps", str(ctx.steps)]
    proc = subprocess.run(argv, env=env, stdout=subprocess.PIPE, universal_newlines=True)
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith("{"):
            child = json.loads(line)
            if child["status"] != "pass":
                raise Fail("the deterministic runs in a fresh process failed: {}".format(child.get("reason")))
            return child["details"]["runs"]
    ended = "status {}".format(proc.returncode) if proc.returncode >= 0 else signal.Signals(-proc.returncode).name
    raise Fail("the deterministic runs in a fresh process ended ({}) without a result".format(ended))


def amp(ctx):
    jax, device = _jax(ctx)
    jnp = jax.numpy
    dtype = jnp.bfloat16  # XLA supports bf16 on CPUs and on GPUs; fp16 needs loss scaling
    params = jax.device_put(init_params(jax), device)
    x, y = jax.device_put(synthetic_batch(jax), device)
    step = jitted_step(jax, dtype)
    compute_dtype = str(jax.eval_shape(lambda p, x: forward(jax, p, x.astype(dtype)), params, x).dtype)
    params, loss, grads = step(params, x, y)
    grads_finite = all(bool(jnp.isfinite(g).all()) for g in jax.tree_util.tree_leaves(grads))
    return h.amp_details("bfloat16", compute_dtype, float(loss), grads_finite)


def multi(ctx):
    # Two virtual CPU devices make the sharded path testable on any machine; GPUs are used when two exist
    # (prepare() asks for them before the backend starts).
    _add_host_devices()
    jax, _ = _jax(ctx)
    import numpy as np
    gpus = [d for d in jax.devices() if d.platform == "gpu"] if ctx.device_request != "cpu" else []
    if ctx.data_parallel_on_gpus(len(gpus)):
        devs = gpus
        ctx.device = "cuda:0-{}".format(len(gpus) - 1)
    else:
        devs = jax.devices("cpu")[:2]
        ctx.device = "cpu (2 virtual devices)"
    from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
    mesh = Mesh(np.array(devs), ("batch",))
    n = len(devs)
    x, y = synthetic_batch(jax, batch=BATCH * n)
    xs = jax.device_put(x, NamedSharding(mesh, P("batch")))
    ys = jax.device_put(y, NamedSharding(mesh, P("batch")))
    params = jax.device_put(init_params(jax), NamedSharding(mesh, P()))
    step = jitted_step(jax)
    start = time.perf_counter()
    new_params, loss, _ = step(params, xs, ys)
    loss = float(loss)
    seconds = round(time.perf_counter() - start, 3)
    cpu = jax.devices("cpu")[0]
    ref_params, ref_loss, _ = step(jax.device_put(init_params(jax), cpu),
                                                      jax.device_put(x, cpu), jax.device_put(y, cpu))
    max_diff = max(float(np.max(np.abs(np.asarray(a) - np.asarray(b))))
                   for a, b in zip(jax.tree_util.tree_leaves(new_params), jax.tree_util.tree_leaves(ref_params)))
    details = {"devices": n, "sharding": "NamedSharding over a 1-d mesh", "loss": round(loss, 4),
               "input_shards": len(xs.addressable_shards), "max_diff_vs_single_device": max_diff, "step_seconds": seconds}
    if len(xs.addressable_shards) != n:
        raise Fail("the batch was not split across {} devices".format(n), details)
    if max_diff > 1e-3 or not h.finite([loss]):
        raise Fail("the sharded step differs from the single-device step", details)
    return details


CHECKS = {"devices": devices, "cnn": cnn, "oom": oom, "repro": repro, "amp": amp, "multi": multi}

if __name__ == "__main__":
    h.main("jax", CHECKS, prepare=prepare)
