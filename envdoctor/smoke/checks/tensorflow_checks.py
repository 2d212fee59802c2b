"""TensorFlow smoke checks. Runs inside the target interpreter: stdlib + tensorflow, Python 3.8+."""

import os
import time

import _harness as h
from _harness import BATCH, SEED, Fail

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # keep the C++ start-up chatter out of the logs


LOGICAL_CPUS = 2  # for multi: TensorFlow fixes its logical devices when its runtime starts
_CONFIGURED = []  # this process has set up TensorFlow's devices (the first check that loaded it)


def _tf(ctx, logical_cpus=0):
    tf = ctx.load("tensorflow")
    ctx.details["version"] = tf.__version__
    ctx.details["cuda_build"] = bool(tf.test.is_built_with_cuda())
    if "multi" in ctx.planned:
        logical_cpus = LOGICAL_CPUS
    gpus = tf.config.list_physical_devices("GPU")
    if not _CONFIGURED:  # once per process: after the runtime started, TensorFlow refuses changes
        if logical_cpus:
            cpu = tf.config.list_physical_devices("CPU")[0]
            tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * logical_cpus)
        if ctx.device_request == "cpu" and gpus:
            tf.config.set_visible_devices([], "GPU")
        _CONFIGURED.append(True)
    use_gpu = ctx.want_gpu(len(gpus))
    ctx.tf_device = "/GPU:0" if use_gpu else "/CPU:0"
    ctx.device = "cuda:0" if use_gpu else "cpu"
    return tf


def build_cnn(tf):
    layers = tf.keras.layers
    return tf.keras.Sequential([
        tf.keras.Input((28, 28, 1)),
        layers.Conv2D(16, 3, padding="same", activation="relu"), layers.MaxPooling2D(2),
        layers.Conv2D(32, 3, padding="same", activation="relu"), layers.MaxPooling2D(2),
        layers.Flatten(), layers.Dense(10),
    ])


def synthetic_batch(tf, batch=BATCH):
    gen = tf.random.Generator.from_seed(SEED)
    x = gen.normal((batch, 28, 28, 1))
    y = gen.uniform((batch,), 0, 10, dtype=tf.int32)
    return x, y


def train(tf, ctx, steps):
    """Seeded training on one synthetic batch: (losses, durations, model)."""
    tf.keras.utils.set_random_seed(SEED)
    with tf.device(ctx.tf_device):
        model = build_cnn(tf)
        opt = tf.keras.optimizers.SGD(learning_rate=0.05, momentum=0.9)
        loss_obj = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
        x, y = synthetic_batch(tf)

        @tf.function
        def step(x, y):
            with tf.GradientTape() as tape:
                loss = loss_obj(y, model(x, training=True))
            opt.apply_gradients(zip(tape.gradient(loss, model.trainable_variables), model.trainable_variables))
            return loss

        losses, durations = [], []
        for _ in range(steps):
            start = time.perf_counter()
            losses.append(float(step(x, y)))  # float() waits for the device
            durations.append(time.perf_counter() - start)
    return losses, durations, model


def param_digest(model):
    return h.digest(v.numpy().tobytes() for v in model.trainable_variables)


# --- checks --------------------------------------------------------------------------------------

def devices(ctx):
    tf = ctx.load("tensorflow")
    build = dict(tf.sysconfig.get_build_info())
    gpus = []
    for i, d in enumerate(tf.config.list_physical_devices("GPU")):
        info = tf.config.experimental.get_device_details(d)
        cc = info.get("compute_capability")
        gpus.append({"index": i, "name": info.get("device_name"),
                     "compute_capability": "{}.{}".format(*cc) if cc else None})
    ctx.device = "cuda" if gpus else "cpu"
    return {"version": tf.__version__, "cuda_build": bool(tf.test.is_built_with_cuda()),
            "build_cuda_version": build.get("cuda_version"), "build_cudnn_version": build.get("cudnn_version"),
            "gpus": gpus, "gpu_count": len(gpus)}


def cnn(ctx):
    tf = _tf(ctx)
    losses, durations, _ = train(tf, ctx, ctx.steps)
    return h.cnn_details(losses, durations, BATCH, trace_ms=round(durations[0] * 1000, 1))


def oom(ctx):
    tf = _tf(ctx)
    gpus = tf.config.list_physical_devices("GPU")
    ctx.skip_oom_without_gpu(len(gpus))
    ctx.details.update(memory_growth=tf.config.experimental.get_memory_growth(gpus[0]),
                       note="TensorFlow reserves most of the GPU at start unless memory growth is on")

    def alloc(n):
        block = tf.ones((n,), tf.uint8)
        _ = block[-1].numpy()  # make sure it is really there
        return block

    def memory():
        info = tf.config.experimental.get_memory_info("GPU:0")
        return {"current_mib": info["current"] >> 20, "peak_mib": info["peak"] >> 20}

    with tf.device("/GPU:0"):
        return h.oom_round_trip(ctx, alloc, lambda exc: isinstance(exc, tf.errors.ResourceExhaustedError), 1 << 30,
                                memory, lambda n: tf.reduce_sum(tf.ones((n,), tf.float32)), max_blocks=4096)


def repro(ctx):
    tf = _tf(ctx)

    def run():
        losses, _, model = train(tf, ctx, ctx.repro_steps)
        return losses, param_digest(model)

    default = h.two_runs(run)
    tf.config.experimental.enable_op_determinism()
    try:
        deterministic = h.two_runs(run)
    finally:  # the checks after this one in the same process run with the defaults again
        _disable_op_determinism(tf)
    return h.repro_details(ctx.repro_steps, default, deterministic,
                           "tf.keras.utils.set_random_seed + tf.config.experimental.enable_op_determinism()")


def _disable_op_determinism(tf):
    """tf.config.experimental.disable_op_determinism, where this release has it (not exported by all)."""
    disable = getattr(tf.config.experimental, "disable_op_determinism", None)
    if disable is None:
        from tensorflow.python.framework import config as tf_config
        disable = getattr(tf_config, "disable_op_determinism", None)
    if disable is not None:
        disable()


def amp(ctx):
    tf = _tf(ctx)
    if ctx.device == "cuda:0":
        cc = tf.config.experimental.get_device_details(tf.config.list_physical_devices("GPU")[0]).get("compute_capability")
        policy = "mixed_bfloat16" if cc and cc >= (8, 0) else "mixed_float16"
    else:
        policy = "mixed_bfloat16"
    tf.keras.mixed_precision.set_global_policy(policy)
    try:
        tf.keras.utils.set_random_seed(SEED)
        with tf.device(ctx.tf_device):
            model = build_cnn(tf)
            opt = tf.keras.optimizers.SGD(learning_rate=0.05)
            if policy == "mixed_float16":
                opt = tf.keras.mixed_precision.LossScaleOptimizer(opt)
            x, y = synthetic_batch(tf)
            loss_obj = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
            with tf.GradientTape() as tape:
                hidden = model.layers[0](x)
                loss = loss_obj(y, tf.cast(model(x, training=True), tf.float32))
            grads = tape.gradient(loss, model.trainable_variables)
            opt.apply_gradients(zip(grads, model.trainable_variables))
    finally:
        tf.keras.mixed_precision.set_global_policy("float32")
    grads_finite = all(bool(tf.reduce_all(tf.math.is_finite(tf.cast(g, tf.float32)))) for g in grads)
    compute_dtype = hidden.dtype.name if hasattr(hidden.dtype, "name") else str(hidden.dtype)
    return h.amp_details(policy[len("mixed_"):], compute_dtype, float(loss), grads_finite, policy=policy)


def multi(ctx):
    # Two logical CPU devices make MirroredStrategy testable on any machine; GPUs are used when two exist.
    tf = _tf(ctx, logical_cpus=LOGICAL_CPUS)
    import numpy as np
    gpus = tf.config.list_logical_devices("GPU") if ctx.device_request != "cpu" else []
    if ctx.data_parallel_on_gpus(len(gpus)):
        names = [d.name for d in gpus]
        ctx.device = "cuda:0-{}".format(len(gpus) - 1)
    else:
        names = [d.name for d in tf.config.list_logical_devices("CPU")[:2]]
        ctx.device = "cpu (2 logical devices)"
    strategy = tf.distribute.MirroredStrategy(names)
    n = strategy.num_replicas_in_sync
    x, y = synthetic_batch(tf, batch=BATCH * n)
    tf.keras.utils.set_random_seed(SEED)
    with strategy.scope():
        model = build_cnn(tf)
        opt = tf.keras.optimizers.SGD(learning_rate=0.05)
    initial = [v.numpy() for v in model.trainable_variables]
    loss_obj = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True, reduction="sum")
    dataset = strategy.experimental_distribute_dataset(
        tf.data.Dataset.from_tensor_slices((x, y)).batch(BATCH * n))

    @tf.function
    def step(batch):
        def replica(xb, yb):
            with tf.GradientTape() as tape:
                loss = loss_obj(yb, model(xb, training=True)) / (BATCH * n)
            opt.apply_gradients(zip(tape.gradient(loss, model.trainable_variables), model.trainable_variables))
            return loss
        return strategy.reduce("SUM", strategy.run(replica, args=batch), axis=None)

    start = time.perf_counter()
    loss = float(step(next(iter(dataset))))
    seconds = round(time.perf_counter() - start, 3)
    # Reference: the same step on one device over the whole batch.
    ref = build_cnn(tf)
    for v, value in zip(ref.trainable_variables, initial):
        v.assign(value)
    with tf.GradientTape() as tape:
        ref_loss = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)(y, ref(x, training=True))
    grads = tape.gradient(ref_loss, ref.trainable_variables)
    tf.keras.optimizers.SGD(learning_rate=0.05).apply_gradients(zip(grads, ref.trainable_variables))
    max_diff = max(float(np.max(np.abs(a.numpy() - b.numpy()))) for a, b in zip(model.trainable_variables, ref.trainable_variables))
    details = {"strategy": "MirroredStrategy", "replicas": n, "loss": round(loss, 4),
               "max_diff_vs_single_device": max_diff, "step_seconds": seconds}
    if n < 2:
        raise Fail("MirroredStrategy runs {} replica(s), expected 2 or more".format(n), details)
    if max_diff > 1e-3 or not h.finite([loss]):
        raise Fail("the mirrored step differs from the single-device step", details)
    return details


CHECKS = {"devices": devices, "cnn": cnn, "oom": oom, "repro": repro, "amp": amp, "multi": multi}

if __name__ == "__main__":
    h.main("tensorflow", CHECKS)
