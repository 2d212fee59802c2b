"""cuDNN: headers, system libraries (`ldconfig -p`), pip wheels and conda packages.

Every copy found is listed with where it came from; they can disagree, which is worth seeing.

- Headers: cudnn_version.h (cuDNN >= 8; Jetson names it cudnn_version_v9.h) or, for cuDNN <= 7,
  cudnn.h, in /usr/include, /usr/include/<triplet>, each toolkit's include dir and the pip wheel's
  nvidia/cudnn/include. The three #defines are read, not CUDNN_VERSION: its encoding changed
  (cuDNN 8: MAJOR*1000 + MINOR*100 + PATCH, cuDNN 9: MAJOR*10000 + MINOR*100 + PATCH).
- Libraries: `ldconfig -p` lines for libcudnn.so.N; the file the soname link points to
  (libcudnn.so.9.3.0) gives the full version.
- pip: nvidia-cudnn-cu11/12/13 in the target environment; conda: the cudnn package.
"""

from __future__ import annotations

import glob
import os
import re
import shutil
import sys
from typing import Optional

from envdoctor import proc
from envdoctor.facts import Cudnn, CudaToolkit, PythonEnv
from envdoctor.probe.paths import machine_path, resolve

HEADER_NAMES = ("cudnn_version.h", "cudnn_version_v9.h", "cudnn_version_v8.h")
LEGACY_HEADER = "cudnn.h"  # cuDNN <= 7 kept the defines here
PIP_NAMES = ("nvidia-cudnn-cu11", "nvidia-cudnn-cu12", "nvidia-cudnn-cu13")
CONDA_NAMES = ("cudnn",)


# --- parsers ----------------------------------------------------------------------------------------

def parse_cudnn_header(text: str) -> Optional[str]:
    values = {}
    for name in ("MAJOR", "MINOR", "PATCHLEVEL"):
        m = re.search(rf"^\s*#\s*define\s+CUDNN_{name}\s+(\d+)", text, re.M)
        if not m:
            return None
        values[name] = m.group(1)
    return f"{values['MAJOR']}.{values['MINOR']}.{values['PATCHLEVEL']}"


_LDCONFIG_LINE = re.compile(r"^\s*(libcudnn\.so\.(\d+))\s+\(([^)]*)\)\s+=>\s+(\S+)")


def parse_ldconfig(text: str) -> list[tuple[str, str, str]]:
    """`ldconfig -p` → [(soname, major, path)] for libcudnn.so.N (not the sub-libraries)."""
    return [(m.group(1), m.group(2), m.group(4)) for m in map(_LDCONFIG_LINE.match, text.splitlines()) if m]


def version_from_library_name(path: str, major: str) -> str:
    """libcudnn.so.9.3.0 → "9.3.0"; a bare soname gives only the major version."""
    m = re.search(r"libcudnn\.so\.(\d+\.\d+\.\d+)", os.path.basename(path))
    return m.group(1) if m else major


def three_components(version: str) -> str:
    """Wheel version "9.1.0.70" → "9.1.0"."""
    return ".".join(version.split("+")[0].split(".")[:3])


# --- the probe --------------------------------------------------------------------------------------

def probe(ctx, python_env: PythonEnv, toolkits: Optional[list[CudaToolkit]] = None) -> list[Cudnn]:
    found: list[Cudnn] = []
    found += from_pip(python_env)
    found += from_conda(python_env)
    found += from_headers(ctx, python_env, toolkits or [])
    found += from_ldconfig(ctx)
    return found


def from_pip(python_env: PythonEnv) -> list[Cudnn]:
    found = []
    for name in PIP_NAMES:
        version = python_env.packages.get(name)
        if version:
            for one in version.split("|"):  # a duplicated install lists both
                found.append(Cudnn(version=three_components(one), source=f"pip:{name}",
                                   path=python_env.nvidia_wheel_dirs.get("nvidia.cudnn")))
    return found


def from_conda(python_env: PythonEnv) -> list[Cudnn]:
    return [Cudnn(version=three_components(python_env.conda_packages[n]), source=f"conda:{n}",
                  path=python_env.env_path)
            for n in CONDA_NAMES if python_env.conda_packages.get(n)]


def header_dirs(ctx, python_env: PythonEnv, toolkits: list[CudaToolkit]) -> list[str]:
    dirs = ["/usr/include"]
    dirs += sorted(machine_path(ctx, d) for d in glob.glob(str(ctx.path("/usr/include")) + "/*-linux-gnu"))
    dirs += [f"{tk.root}/include" for tk in toolkits if tk.root]
    dirs += ["/usr/local/cuda/include"]
    wheel = python_env.nvidia_wheel_dirs.get("nvidia.cudnn")
    if wheel and not any(n in python_env.packages for n in PIP_NAMES):
        dirs.append(f"{wheel}/include")
    return dirs


def from_headers(ctx, python_env: PythonEnv, toolkits: list[CudaToolkit]) -> list[Cudnn]:
    found, seen = [], set()
    for directory in header_dirs(ctx, python_env, toolkits):
        for name in HEADER_NAMES + (LEGACY_HEADER,):
            path = f"{directory}/{name}"
            real = resolve(ctx, path)
            if real in seen or not ctx.path(real).is_file():
                continue
            if name == LEGACY_HEADER and any(c.path and c.path.startswith(directory + "/") for c in found):
                continue
            seen.add(real)
            version = parse_cudnn_header(proc.read_text(ctx.path(real), 1 << 18) or "")
            if version:
                found.append(Cudnn(version=version, source=f"header:{path}", path=path))
    return found


def from_ldconfig(ctx) -> list[Cudnn]:
    if not sys.platform.startswith("linux"):
        return []
    ldconfig = find_ldconfig(ctx)
    if ldconfig is None:
        return []
    result = proc.run([ldconfig, "-p"], timeout=ctx.timeout, env=dict(ctx.environ))
    if not result.ok:
        ctx.error("cudnn", f"ldconfig -p: {result.describe_failure()}")
        return []
    found, seen = [], set()
    for soname, major, path in parse_ldconfig(result.stdout):
        real = resolve(ctx, path)
        if real in seen:
            continue
        seen.add(real)
        found.append(Cudnn(version=version_from_library_name(real, major), source="ldconfig", path=path))
    return found


def find_ldconfig(ctx) -> Optional[str]:
    found = shutil.which("ldconfig", path=ctx.environ.get("PATH", os.defpath))
    if found:
        return found
    for path in ("/sbin/ldconfig", "/usr/sbin/ldconfig"):
        if os.access(ctx.path(path), os.X_OK):
            return str(ctx.path(path))
    return None
