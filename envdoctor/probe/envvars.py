"""Environment variables that change how frameworks find devices, libraries and memory."""

from __future__ import annotations

from typing import Optional

# Always reported (null when unset), so a recorded machine says they were looked at.
ALWAYS = ("CUDA_VISIBLE_DEVICES", "LD_LIBRARY_PATH", "CUDA_HOME", "CUDA_PATH", "PYTORCH_CUDA_ALLOC_CONF")
# Reported when set.
PREFIXES = ("XLA_PYTHON_CLIENT_", "TF_FORCE_GPU_ALLOW_GROWTH", "TF_GPU_ALLOCATOR", "TF_CPP_MIN_LOG_LEVEL",
            "NVIDIA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "JAX_PLATFORMS",
            "CUDA_MODULE_LOADING", "PYTORCH_ALLOC_CONF", "NCCL_")


def probe(ctx) -> dict[str, Optional[str]]:
    found: dict[str, Optional[str]] = {name: ctx.environ.get(name) for name in ALWAYS}
    for name in sorted(ctx.environ):
        if name.startswith(PREFIXES):
            found[name] = ctx.environ[name]
    return found
