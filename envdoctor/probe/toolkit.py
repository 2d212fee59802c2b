"""CUDA toolkits: every one found, and which one is active.

Where we look: `nvcc` on PATH (symlinks and wrapper scripts such as `exec /usr/local/cuda-13.0/bin/nvcc
"$@"` are followed to the real toolkit), CUDA_HOME, CUDA_PATH, /usr/local/cuda, /usr/local/cuda-*,
/opt/cuda (and the default install folder on Windows).

The version comes from files first (no subprocess): version.json ("cuda.version"), version.txt
("CUDA Version 10.0.130"), CUDART_VERSION in include/cuda_runtime_api.h, the nvidia_cuda_nvcc-*
dist-info of a toolkit assembled from wheels; `nvcc --version` only when none of them answers.
Versions are recorded as "major.minor".

Active: the toolkit of the nvcc on PATH, else CUDA_HOME, else CUDA_PATH, else /usr/local/cuda,
else the newest one found.
"""

from __future__ import annotations

import glob
import json
import os
import re
import shutil
import sys
from typing import Optional

from envdoctor import proc
from envdoctor.facts import CudaToolkit
from envdoctor.probe.paths import machine_path, resolve

STANDARD_ROOTS = ("/usr/local/cuda", "/opt/cuda")
WINDOWS_ROOT = r"C:\Program Files\NVIDIA GPU Computing Toolkit\CUDA"
_WRAPPED_NVCC = re.compile(r"""(/[^\s"'$]+/bin/nvcc)\b""")


# --- parsers ----------------------------------------------------------------------------------------

def _major_minor(text: str) -> Optional[str]:
    m = re.match(r"\s*(\d+)\.(\d+)", text)
    return f"{m.group(1)}.{m.group(2)}" if m else None


def parse_nvcc_version(text: str) -> Optional[str]:
    """`nvcc --version` → "13.0" (from "Cuda compilation tools, release 13.0, V13.0.88")."""
    m = re.search(r"release (\d+)\.(\d+)", text)
    return f"{m.group(1)}.{m.group(2)}" if m else None


def parse_version_json(text: str) -> Optional[str]:
    try:
        data = json.loads(text)
        return _major_minor(str(data["cuda"]["version"]))
    except (ValueError, KeyError, TypeError):
        return None


def parse_version_txt(text: str) -> Optional[str]:
    m = re.search(r"CUDA Version\s+(\d+\.\d+)", text)
    return m.group(1) if m else None


def parse_cudart_header(text: str) -> Optional[str]:
    """`#define CUDART_VERSION  13000` → "13.0" (1000*major + 10*minor)."""
    m = re.search(r"^\s*#\s*define\s+CUDART_VERSION\s+(\d+)", text, re.M)
    if not m:
        return None
    value = int(m.group(1))
    return f"{value // 1000}.{(value % 1000) // 10}"


def wrapped_nvcc(script: str) -> Optional[str]:
    """The real nvcc a wrapper script runs ("exec /usr/local/cuda-13.0/bin/nvcc "$@"")."""
    if not script.startswith("#!"):
        return None
    m = _WRAPPED_NVCC.search(script)
    return m.group(1) if m else None


# --- the probe --------------------------------------------------------------------------------------

def probe(ctx) -> tuple[Optional[CudaToolkit], list[CudaToolkit]]:
    found: dict[str, CudaToolkit] = {}  # resolved root → toolkit
    for root, found_by, nvcc in candidates(ctx):
        real = resolve(ctx, root)
        if real in found or not _looks_like_toolkit(ctx, real):
            continue
        found[real] = CudaToolkit(version=toolkit_version(ctx, real), nvcc=nvcc or _nvcc_in(ctx, real),
                                  root=real, found_by=found_by)
    toolkits = list(found.values())
    default = resolve(ctx, "/usr/local/cuda")
    return choose_active(toolkits, default), toolkits


def candidates(ctx) -> list[tuple[str, str, Optional[str]]]:
    """(machine root, how it was found, nvcc path) in the order that decides the active one."""
    found = []
    nvcc = nvcc_on_path(ctx)
    if nvcc:
        found.append((_root_of(resolve(ctx, _unwrap(ctx, nvcc))), "PATH", nvcc))
    for var in ("CUDA_HOME", "CUDA_PATH"):
        value = ctx.environ.get(var)
        if value:
            found.append((value.rstrip("/\\") or value, var, None))
    if sys.platform == "win32":
        found += [(p, "Program Files", None) for p in sorted(glob.glob(os.path.join(WINDOWS_ROOT, "v*")))]
    for root in STANDARD_ROOTS:
        if ctx.path(resolve(ctx, root)).exists():
            found.append((root, "/usr/local" if root.startswith("/usr/local/") else root, None))
    for host in sorted(glob.glob(str(ctx.path("/usr/local")) + "/cuda-*")):
        found.append((machine_path(ctx, host), "/usr/local", None))
    return found


def nvcc_on_path(ctx) -> Optional[str]:
    found = shutil.which("nvcc", path=ctx.environ.get("PATH", os.defpath))
    return machine_path(ctx, found) if found else None


def _unwrap(ctx, nvcc: str) -> str:
    real = resolve(ctx, nvcc)
    host = ctx.path(real)
    try:
        if host.stat().st_size < 4096:
            target = wrapped_nvcc(proc.read_text(host, 4096) or "")
            if target:
                return target
    except OSError:
        pass
    return real


def _root_of(nvcc: str) -> str:
    """/usr/local/cuda-13.0/bin/nvcc → /usr/local/cuda-13.0."""
    parts = nvcc.replace("\\", "/").rsplit("/", 2)
    return parts[0] if len(parts) == 3 and parts[1] == "bin" else os.path.dirname(nvcc)


def _looks_like_toolkit(ctx, root: str) -> bool:
    host = ctx.path(root)
    return any((host / rel).exists() for rel in ("bin/nvcc", "bin/nvcc.exe", "version.json", "version.txt",
                                                  "include/cuda_runtime_api.h"))


def _nvcc_in(ctx, root: str) -> Optional[str]:
    for name in ("bin/nvcc", "bin/nvcc.exe"):
        if ctx.path(root).joinpath(name).exists():
            return f"{root}/{name}"
    return None


def toolkit_version(ctx, root: str) -> Optional[str]:
    host = ctx.path(root)
    readers = (
        ("version.json", parse_version_json),
        ("version.txt", parse_version_txt),
        ("include/cuda_runtime_api.h", parse_cudart_header),
    )
    for rel, parse in readers:
        text = proc.read_text(host / rel, 1 << 17)
        version = parse(text) if text else None
        if version:
            return version
    for header in sorted(glob.glob(str(host / "targets" / "*" / "include" / "cuda_runtime_api.h"))):
        version = parse_cudart_header(proc.read_text(header, 1 << 17) or "")
        if version:
            return version
    for dist in sorted(glob.glob(str(host / "dist-info" / "nvidia_cuda_nvcc-*.dist-info"))):
        version = _major_minor(os.path.basename(dist)[len("nvidia_cuda_nvcc-"):])
        if version:
            return version
    nvcc = _nvcc_in(ctx, root)
    if nvcc:
        result = proc.run([str(ctx.path(nvcc)), "--version"], timeout=ctx.timeout, env=dict(ctx.environ))
        if result.ok:
            return parse_nvcc_version(result.stdout)
        ctx.error("toolkit", f"{nvcc} --version: {result.describe_failure()}")
    return None


def choose_active(toolkits: list[CudaToolkit], default_root: Optional[str] = None) -> Optional[CudaToolkit]:
    """PATH, else CUDA_HOME, else CUDA_PATH, else what /usr/local/cuda points to, else the newest."""
    for how in ("PATH", "CUDA_HOME", "CUDA_PATH"):
        for tk in toolkits:
            if tk.found_by == how:
                return tk
    for tk in toolkits:
        if default_root and tk.root == default_root:
            return tk
    if not toolkits:
        return None
    return max(toolkits, key=lambda tk: tuple(int(x) for x in (tk.version or "0.0").split(".")))
