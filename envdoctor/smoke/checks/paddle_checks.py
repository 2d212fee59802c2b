"""PaddlePaddle smoke checks. Runs inside the target interpreter: stdlib + paddle, Python 3.8+.

More than `paddle.utils.run_check()`: a real CNN that must learn, an OOM round trip, reproducibility
and mixed precision, each reported with numbers.
"""

import os
import time

import _harness as h
from _harness import BATCH, SEED, Fail, Skip

os.environ.setdefault("GLOG_minloglevel", "2")


def _paddle(ctx):
    paddle = ctx.load("paddle")
    ctx.details["version"] = paddle.__version__
    ctx.details["cuda_build"] = bool(paddle.device.is_compiled_with_cuda())
    gpus = paddle.device.cuda.device_count() if ctx.details["cuda_build"] else 0
    use_gpu = ctx.want_gpu(gpus)
    ctx.device = "cuda:0" if use_gpu else "cpu"
    paddle.set_device("gpu:0" if use_gpu else "cpu")
    return paddle


def build_cnn(paddle):
    nn = paddle.nn
    return nn.Sequential(
        nn.Conv2D(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2D(2),
        nn.Conv2D(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2D(2),
        nn.Flatten(), nn.Linear(32 * 7 * 7, 10),
    )


def synthetic_batch(paddle, batch=BATCH):
    import numpy as np
    rng = np.random.default_rng(SEED)
    x = paddle.to_tensor(rng.standard_normal((batch, 1, 28, 28)).astype("float32"))
    y = paddle.to_tensor(rng.integers(0, 10, (batch,)).astype("int64"))
    return x, y


def train(paddle, steps):
    paddle.seed(SEED)
    model = build_cnn(paddle)
    opt = paddle.optimizer.Momentum(learning_rate=0.05, momentum=0.9, parameters=model.parameters())
    x, y = synthetic_batch(paddle)
    losses, durations = [], []
    for _ in range(steps):
        start = time.perf_counter()
        loss = paddle.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        opt.clear_grad()
        losses.append(float(loss))  # float() waits for the device
        durations.append(time.perf_counter() - start)
    return losses, durations, model


def param_digest(model):
    return h.digest(p.numpy().tobytes() for p in model.parameters())


# --- checks --------------------------------------------------------------------------------------

def devices(ctx):
    paddle = ctx.load("paddle")
    cuda_build = bool(paddle.device.is_compiled_with_cuda())
    gpus = []
    count = paddle.device.cuda.device_count() if cuda_build else 0
    for i in range(count):
        gpus.append(h.gpu_entry(i, paddle.device.cuda.get_device_properties(i)))
    ctx.device = "cuda" if gpus else "cpu"
    return {"version": paddle.__version__, "cuda_build": cuda_build,
            "build_cuda_version": paddle.version.cuda() if cuda_build else None,
            "build_cudnn_version": paddle.version.cudnn() if cuda_build else None,
            "gpus": gpus, "gpu_count": len(gpus)}


def cnn(ctx):
    paddle = _paddle(ctx)
    losses, durations, _ = train(paddle, ctx.steps)
    return h.cnn_details(losses, durations, BATCH)


def oom(ctx):
    paddle = _paddle(ctx)
    ctx.skip_oom_without_gpu(ctx.device != "cpu")
    ctx.details["allocator"] = os.environ.get("FLAGS_allocator_strategy", "auto_growth (default)")
    total = paddle.device.cuda.get_device_properties(0).total_memory
    cuda = paddle.device.cuda
    return h.oom_round_trip(
        ctx,
        lambda n: paddle.empty([n], dtype="uint8"),
        # paddle turns its ResourceExhaustedError into a MemoryError
        lambda exc: isinstance(exc, MemoryError) or "out of memory" in str(exc).lower(),
        max(total // 32, 64 << 20),
        memory=lambda: {"allocated_mib": cuda.memory_allocated(0) >> 20, "reserved_mib": cuda.memory_reserved(0) >> 20},
        ones_sum=lambda n: paddle.ones([n], dtype="float32").sum(),
        settle=cuda.empty_cache, total=total)


def repro(ctx):
    paddle = _paddle(ctx)

    def run():
        losses, _, model = train(paddle, ctx.repro_steps)
        return losses, param_digest(model)

    default = h.two_runs(run)
    if ctx.device.startswith("cuda"):
        saved = paddle.get_flags(["FLAGS_cudnn_deterministic"])
        paddle.set_flags({"FLAGS_cudnn_deterministic": True})
        settings = "paddle.seed + FLAGS_cudnn_deterministic"
        try:
            deterministic = h.two_runs(run)
        finally:  # the checks after this one in the same process run with the defaults again
            paddle.set_flags(saved)
    else:
        settings = "paddle.seed (the CPU kernels have no nondeterministic mode to switch off)"
        deterministic = default
    return h.repro_details(ctx.repro_steps, default, deterministic, settings)


def amp(ctx):
    paddle = _paddle(ctx)
    if ctx.device.startswith("cuda"):
        major = paddle.device.cuda.get_device_properties(0).major
        dtype = "bfloat16" if major >= 8 else "float16"
    else:
        dtype = "bfloat16"
    paddle.seed(SEED)
    model = build_cnn(paddle)
    opt = paddle.optimizer.SGD(learning_rate=0.05, parameters=model.parameters())
    scaler = paddle.amp.GradScaler(enable=(dtype == "float16"))
    x, y = synthetic_batch(paddle)
    with paddle.amp.auto_cast(level="O1", dtype=dtype):
        hidden = model[0](x)
        loss = paddle.nn.functional.cross_entropy(model(x), y)
    scaler.scale(loss).backward()
    grads_finite = all(bool(paddle.isfinite(p.grad).all()) for p in model.parameters() if p.grad is not None)
    scaler.step(opt)
    scaler.update()
    compute_dtype = str(hidden.dtype).replace("paddle.", "")
    if compute_dtype != dtype and not ctx.device.startswith("cuda"):
        raise Skip("paddle.amp.auto_cast does nothing on the CPU (the step stayed in {}); mixed precision is "
                   "checked on GPUs".format(compute_dtype))
    return h.amp_details(dtype, compute_dtype, float(loss), grads_finite)


def multi(ctx):
    paddle = _paddle(ctx)
    gpus = paddle.device.cuda.device_count() if ctx.details["cuda_build"] and ctx.device_request != "cpu" else 0
    if gpus < 2:
        raise Skip("{} GPU(s): Paddle's data parallel needs two or more GPUs (its CPU path is not tested here; "
                   "the distributed path is covered by the torch gloo check)".format(gpus))
    start = time.perf_counter()
    got = h.run_workers(_dp_worker, gpus)
    ctx.device = "cuda:0-{}".format(gpus - 1)
    in_sync = len({blob for _, _, blob in got}) == 1
    details = {"backend": "nccl", "world_size": gpus, "losses": [round(l, 4) for _, l, _ in got],
               "replicas_in_sync": in_sync, "step_seconds": round(time.perf_counter() - start, 3)}
    if not in_sync:
        raise Fail("parameters differ between data-parallel replicas after one step", details)
    return details


def _dp_worker(rank, world, results):
    import numpy as np
    os.environ.update({"PADDLE_TRAINER_ID": str(rank), "PADDLE_TRAINERS_NUM": str(world),
                       "FLAGS_selected_gpus": str(rank), "PADDLE_CURRENT_ENDPOINT": "127.0.0.1:{}".format(36170 + rank),
                       "PADDLE_TRAINER_ENDPOINTS": ",".join("127.0.0.1:{}".format(36170 + r) for r in range(world))})
    import paddle
    import paddle.distributed as dist
    dist.init_parallel_env()
    paddle.seed(SEED)
    model = paddle.DataParallel(build_cnn(paddle))
    opt = paddle.optimizer.SGD(learning_rate=0.05, parameters=model.parameters())
    x, y = synthetic_batch(paddle, batch=BATCH * world)
    loss = paddle.nn.functional.cross_entropy(model(x[rank * BATCH:(rank + 1) * BATCH]), y[rank * BATCH:(rank + 1) * BATCH])
    loss.backward()
    opt.step()
    flat = np.concatenate([p.numpy().reshape(-1) for p in model.parameters()])
    results.put((rank, float(loss), flat.astype(np.float32).tobytes()))


CHECKS = {"devices": devices, "cnn": cnn, "oom": oom, "repro": repro, "amp": amp, "multi": multi}

if __name__ == "__main__":
    h.main("paddle", CHECKS)
