"""PyTorch smoke checks. Runs inside the target interpreter: stdlib + torch, Python 3.8+ (no numpy:
torch does not need it, so neither do its checks).

    python torch_checks.py --check devices,cnn,oom,repro,amp,multi [--device auto|cpu|cuda]
"""

import array
import os
import tempfile
import time

import _harness as h
from _harness import BATCH, SEED, Fail, Skip


def _torch(ctx):
    torch = ctx.load("torch")
    ctx.details["version"] = torch.__version__
    ctx.details["cuda_build"] = torch.version.cuda
    return torch


def _device(ctx, torch):
    use_gpu = ctx.want_gpu(torch.cuda.device_count() if torch.cuda.is_available() else 0)
    ctx.device = "cuda:0" if use_gpu else "cpu"
    return torch.device(ctx.device)


def build_cnn(torch):
    nn = torch.nn
    return nn.Sequential(
        nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(32 * 7 * 7, 10),
    )


def synthetic_batch(torch, device, batch=BATCH, seed=SEED):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(batch, 1, 28, 28, generator=gen)
    y = torch.randint(0, 10, (batch,), generator=gen)
    return x.to(device), y.to(device)


def train(torch, device, steps, seed=SEED):
    """Seeded training on one synthetic batch: (losses, durations, model)."""
    torch.manual_seed(seed)
    model = build_cnn(torch).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    x, y = synthetic_batch(torch, device)
    losses, durations = [], []
    for _ in range(steps):
        start = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())  # .item() synchronises with the device
        durations.append(time.perf_counter() - start)
    return losses, durations, model


def tensor_bytes(torch, tensor):
    """The raw bytes of a float32 tensor, bit for bit, without numpy (its int32 view, packed by `array`)."""
    bits = tensor.detach().cpu().contiguous().to(torch.float32).reshape(-1).view(torch.int32).tolist()
    return array.array("i", bits).tobytes()


def param_digest(torch, model):
    return h.digest(tensor_bytes(torch, p) for p in model.parameters())


def prepare(checks, device_request):
    """Before torch starts: cuBLAS reads CUBLAS_WORKSPACE_CONFIG at its first use, which may be an
    earlier check than repro in the same process. Harmless on the CPU and for the other checks."""
    if "repro" in checks:
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")


# --- checks --------------------------------------------------------------------------------------

def devices(ctx):
    torch = _torch(ctx)
    available = torch.cuda.is_available()
    count = torch.cuda.device_count() if available else 0
    gpus = []
    for i in range(count):
        gpus.append(h.gpu_entry(i, torch.cuda.get_device_properties(i)))
    ctx.device = "cuda" if count else "cpu"
    details = {"gpus": gpus, "gpu_count": count, "cpu_threads": torch.get_num_threads()}
    if torch.version.cuda:
        details["arch_list"] = torch.cuda.get_arch_list() if available else None
        details["cudnn"] = torch.backends.cudnn.version() if available else None
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        details["mps"] = True
    return details


def cnn(ctx):
    torch = _torch(ctx)
    device = _device(ctx, torch)
    losses, durations, _ = train(torch, device, ctx.steps)
    return h.cnn_details(losses, durations, BATCH)


def oom(ctx):
    torch = _torch(ctx)
    ctx.skip_oom_without_gpu(torch.cuda.device_count() if torch.cuda.is_available() else 0, "CUDA device")
    ctx.device = "cuda:0"
    ctx.details["alloc_conf"] = os.environ.get("PYTORCH_CUDA_ALLOC_CONF")
    props = torch.cuda.get_device_properties(0)
    if getattr(props, "is_integrated", False):
        raise Skip("integrated GPU shares host memory; filling it would exhaust the host")
    total = props.total_memory
    oom_error = getattr(torch.cuda, "OutOfMemoryError", RuntimeError)  # torch < 1.13: a RuntimeError
    return h.oom_round_trip(
        ctx,
        lambda n: torch.empty(n, dtype=torch.uint8, device="cuda:0"),
        lambda exc: isinstance(exc, oom_error) and "out of memory" in str(exc).lower(),
        max(total // 32, 64 << 20),
        memory=lambda: {"allocated_mib": torch.cuda.memory_allocated(0) >> 20,
                        "reserved_mib": torch.cuda.memory_reserved(0) >> 20},
        ones_sum=lambda n: torch.ones(n, device="cuda:0").sum().item(),
        settle=torch.cuda.empty_cache, total=total)


def repro(ctx):
    # cuBLAS needs this before its first use for deterministic matmuls (prepare() sets it at start-up).
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    torch = _torch(ctx)
    device = _device(ctx, torch)

    def run():
        losses, _, model = train(torch, device, ctx.repro_steps)
        return losses, param_digest(torch, model)

    default = h.two_runs(run)
    saved = (torch.are_deterministic_algorithms_enabled(), torch.backends.cudnn.deterministic,
             torch.backends.cudnn.benchmark)
    torch.use_deterministic_algorithms(True)
    torch.backends.cudnn.deterministic = True
    torch.backends.cudnn.benchmark = False
    try:
        deterministic = h.two_runs(run)
    finally:  # the checks after this one in the same process run with the defaults again
        torch.use_deterministic_algorithms(saved[0])
        torch.backends.cudnn.deterministic, torch.backends.cudnn.benchmark = saved[1], saved[2]
    return h.repro_details(ctx.repro_steps, default, deterministic,
                           "torch.use_deterministic_algorithms(True), cudnn.deterministic")


def amp(ctx):
    torch = _torch(ctx)
    device = _device(ctx, torch)
    if device.type == "cuda":
        dtype = torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
    else:
        dtype = torch.bfloat16
    torch.manual_seed(SEED)
    model = build_cnn(torch).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    if hasattr(torch.amp, "GradScaler"):
        scaler = torch.amp.GradScaler(device.type, enabled=(dtype == torch.float16))
    else:  # torch < 2.3
        scaler = torch.cuda.amp.GradScaler(enabled=(dtype == torch.float16))
    x, y = synthetic_batch(torch, device)
    with torch.autocast(device_type=device.type, dtype=dtype):
        logits = model(x)
        loss = torch.nn.functional.cross_entropy(logits, y)
    scaler.scale(loss).backward()
    grads_finite = all(bool(torch.isfinite(p.grad).all()) for p in model.parameters())
    scaler.step(opt)
    scaler.update()
    return h.amp_details(str(dtype).replace("torch.", ""), str(logits.dtype).replace("torch.", ""), loss.item(),
                         grads_finite)


# --- multi: DistributedDataParallel --------------------------------------------------------------

def _ddp_worker(rank, world, backend, init_file, results):
    import torch
    import torch.distributed as dist

    dist.init_process_group(backend, init_method="file://" + init_file, rank=rank, world_size=world)
    try:
        device = torch.device("cuda", rank) if backend == "nccl" else torch.device("cpu")
        if backend == "nccl":
            torch.cuda.set_device(device)
        torch.manual_seed(SEED)
        model = torch.nn.parallel.DistributedDataParallel(
            build_cnn(torch).to(device), device_ids=[rank] if backend == "nccl" else None)
        opt = torch.optim.SGD(model.parameters(), lr=0.05)
        x, y = synthetic_batch(torch, device, batch=BATCH * world)
        shard = slice(rank * BATCH, (rank + 1) * BATCH)
        loss = torch.nn.functional.cross_entropy(model(x[shard]), y[shard])
        loss.backward()
        opt.step()
        flat = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
        results.put((rank, loss.item(), tensor_bytes(torch, flat)))
    finally:
        dist.destroy_process_group()


def multi(ctx):
    torch = _torch(ctx)
    gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if ctx.data_parallel_on_gpus(gpus):
        backend, world, ctx.device = "nccl", gpus, "cuda:0-{}".format(gpus - 1)
    else:
        backend, world, ctx.device = "gloo", 2, "cpu"
    if not torch.distributed.is_available():
        raise Fail("this torch build has no torch.distributed")
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        got = h.run_workers(_ddp_worker, world, (backend, os.path.join(tmp, "rendezvous")))
        seconds = round(time.perf_counter() - start, 3)
    in_sync = len({blob for _, _, blob in got}) == 1
    # The reference: the same step in one process on the whole batch (DDP averages the gradients).
    torch.manual_seed(SEED)
    ref_model = build_cnn(torch)
    opt = torch.optim.SGD(ref_model.parameters(), lr=0.05)
    x, y = synthetic_batch(torch, torch.device("cpu"), batch=BATCH * world)
    torch.nn.functional.cross_entropy(ref_model(x), y).backward()
    opt.step()
    ref = torch.cat([p.detach().reshape(-1) for p in ref_model.parameters()])
    replica = torch.frombuffer(bytearray(got[0][2]), dtype=torch.float32)
    max_diff = float((ref - replica).abs().max())
    details = {"backend": backend, "world_size": world, "losses": [round(l, 4) for _, l, _ in got],
               "replicas_in_sync": in_sync, "max_diff_vs_single_process": max_diff, "step_seconds": seconds}
    if not in_sync:
        raise Fail("parameters differ between DDP replicas after one step", details)
    if max_diff > 1e-3:
        raise Fail("DDP step differs from the single-process step on the whole batch", details)
    return details

CHECKS = {"devices": devices, "cnn": cnn, "oom": oom, "repro": repro, "amp": amp, "multi": multi}

if __name__ == "__main__":
    h.main("torch", CHECKS, prepare=prepare)
