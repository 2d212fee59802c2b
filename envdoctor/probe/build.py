"""CUDA extension builds (`envdoctor check --build`): what torch.utils.cpp_extension, flash-attn, apex
and friends will compile with.

Read the way torch.utils.cpp_extension reads it: the toolkit is CUDA_HOME, else CUDA_PATH, else the
folder above the `bin` of the `nvcc` on PATH, else /usr/local/cuda (`_find_cuda_home`), and its
`bin/nvcc --version` is what `_check_cuda_version` compares with torch.version.cuda. nvcc's host
compiler is $CC (torch passes it as -ccbin), else gcc; torch's C++ compiler is $CXX, else c++ (cl on
Windows). Also: ninja, the target interpreter's Python.h, TORCH_CUDA_ARCH_LIST, MAX_JOBS, the CPU
count and MemAvailable, and the newest GCC the toolkit's own crt/host_config.h accepts.

Every subprocess is bounded by ctx.timeout and they run concurrently; failures become probe errors.
"""

from __future__ import annotations

import dataclasses
import os
import re
import shutil
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Optional

from envdoctor import proc
from envdoctor.facts import Build, Compiler, Facts
from envdoctor.probe.toolkit import _root_of, _unwrap, nvcc_on_path, parse_nvcc_version

_GCC_MAX = re.compile(r"#if __GNUC__ > (\d+)\s*\n(?:[^\n]*\n){0,3}?\s*#error -- unsupported GNU version")
_CLANG = re.compile(r"clang version (\d+(?:\.\d+){0,2})")
_MSVC = re.compile(r"Compiler Version (\d+(?:\.\d+){1,3})")
_GCC_FIRST_LINE = re.compile(r"^\S+ \([^)]*\) (\d+\.\d+(?:\.\d+)?)")
_TRAILING_VERSION = re.compile(r"(\d+\.\d+(?:\.\d+)?)\s*$")
_INCLUDE_SCRIPT = "import sysconfig; print(sysconfig.get_paths()['include'])"


# --- parsers ----------------------------------------------------------------------------------------

def parse_compiler_version(text: str) -> tuple[Optional[str], Optional[str]]:
    """`gcc --version` / `clang --version` / cl.exe's banner → (kind, version).
    "gcc (Debian 12.2.0-14+deb12u1) 12.2.0" → ("gcc", "12.2.0"); "Ubuntu clang version 18.1.3 (1ubuntu1)"
    → ("clang", "18.1.3"); "Microsoft (R) C/C++ Optimizing Compiler Version 19.38.33130 for x64" → ("msvc", …)."""
    m = _CLANG.search(text)
    if m:
        return "clang", m.group(1)
    m = _MSVC.search(text)
    if m:
        return "msvc", m.group(1)
    first = text.strip().splitlines()[0] if text.strip() else ""
    # "gcc (Debian 12.2.0-14) 12.2.0"; Red Hat: "gcc (GCC) 14.2.1 20240912 (Red Hat 14.2.1-3)"
    m = _GCC_FIRST_LINE.match(first) or _TRAILING_VERSION.search(first)
    if m and ("Free Software Foundation" in text or "gcc" in first.lower() or "g++" in first.lower()
              or first.lower().startswith(("c++", "cc "))):
        return "gcc", m.group(1)
    return None, None


def parse_host_config_gcc_max(text: str) -> Optional[int]:
    """The newest GCC major a toolkit accepts, from include/crt/host_config.h ("#if __GNUC__ > 15" above
    "#error -- unsupported GNU version!")."""
    m = _GCC_MAX.search(text)
    return int(m.group(1)) if m else None


def parse_mem_available_mib(meminfo: str) -> Optional[int]:
    m = re.search(r"^MemAvailable:\s+(\d+)\s*kB", meminfo, re.MULTILINE)
    return int(m.group(1)) // 1024 if m else None


# --- the probe --------------------------------------------------------------------------------------

def find_cuda_home(ctx, nvcc: Optional[str]) -> tuple[Optional[str], Optional[str]]:
    """(the toolkit folder torch uses, where it came from), as torch.utils.cpp_extension._find_cuda_home."""
    for var in ("CUDA_HOME", "CUDA_PATH"):
        if ctx.environ.get(var):
            return ctx.environ[var].rstrip("/\\") or ctx.environ[var], var
    if nvcc:
        return os.path.dirname(os.path.dirname(nvcc)), "PATH"  # the nvcc as found, wrappers not followed
    default = "/usr/local/cuda"
    return (default, default) if ctx.path(default).exists() else (None, None)


def probe(ctx, python: Optional[str] = None) -> Build:
    nvcc = nvcc_on_path(ctx)
    cuda_home, cuda_home_from = find_cuda_home(ctx, nvcc)
    home_nvcc = _nvcc_of(ctx, cuda_home)
    roles = compiler_commands(ctx.environ)
    with ThreadPoolExecutor(max_workers=6) as pool:
        nvcc_future = pool.submit(_nvcc_version, ctx, nvcc) if nvcc else None
        home_future = (pool.submit(_nvcc_version, ctx, home_nvcc)
                       if home_nvcc and (not nvcc or os.path.realpath(ctx.path(home_nvcc)) != os.path.realpath(ctx.path(nvcc)))
                       else None)
        compiler_futures = [pool.submit(compiler, ctx, role, command) for role, command in roles]
        ninja_future = pool.submit(_ninja, ctx, python)
        include_future = pool.submit(python_include, ctx, python)
        nvcc_version = nvcc_future.result() if nvcc_future else None
        home_version = home_future.result() if home_future else (nvcc_version if home_nvcc else None)
        compilers = [f.result() for f in compiler_futures]
        ninja, ninja_version = ninja_future.result()
        include = include_future.result()
    nvcc_root = _root_of(_unwrap(ctx, nvcc)) if nvcc else None
    return Build(
        nvcc=nvcc, nvcc_version=nvcc_version, nvcc_root=nvcc_root,
        cuda_home=cuda_home, cuda_home_from=cuda_home_from, cuda_home_version=home_version,
        cuda_home_headers=_has_runtime_headers(ctx, cuda_home) if cuda_home else None,
        gcc_max=_gcc_max(ctx, cuda_home) or _gcc_max(ctx, _root_of(_unwrap(ctx, home_nvcc or nvcc)) if (home_nvcc or nvcc) else None),
        compilers=compilers, ninja=ninja, ninja_version=ninja_version,
        python_include=include, python_h=ctx.path(include).joinpath("Python.h").is_file() if include else None,
        torch_cuda_arch_list=ctx.environ.get("TORCH_CUDA_ARCH_LIST"), max_jobs=ctx.environ.get("MAX_JOBS"),
        cpu_count=_cpu_count(),
        mem_available_mib=parse_mem_available_mib(proc.read_text(ctx.path("/proc/meminfo"), 1 << 16) or ""),
    )


def compiler_commands(environ) -> list[tuple[str, str]]:
    if sys.platform == "win32":
        return [("cxx", environ.get("CXX", "cl")), ("nvcc-host", environ.get("CC") or "cl")]
    return [("cxx", environ.get("CXX", "c++")), ("nvcc-host", environ.get("CC") or environ.get("NVCC_CCBIN") or "gcc")]


def compiler(ctx, role: str, command: str) -> Compiler:
    path = shutil.which(command, path=ctx.environ.get("PATH", os.defpath))
    if path is None:
        return Compiler(role=role, command=command)
    argv = [path] if os.path.basename(path).lower().startswith("cl") and sys.platform == "win32" else [path, "--version"]
    result = proc.run(argv, timeout=ctx.timeout, env=dict(ctx.environ))
    kind, version = parse_compiler_version(result.stdout + "\n" + result.stderr)
    if kind is None and not result.ok:
        ctx.error("build", f"{command} --version: {result.describe_failure()}")
    return Compiler(role=role, command=command, path=path, kind=kind, version=version)


def _nvcc_of(ctx, cuda_home: Optional[str]) -> Optional[str]:
    if not cuda_home:
        return None
    for name in ("bin/nvcc", "bin/nvcc.exe"):
        if ctx.path(cuda_home).joinpath(name).exists():
            return f"{cuda_home}/{name}"
    return None


def _nvcc_version(ctx, nvcc: str) -> Optional[str]:
    result = proc.run([str(ctx.path(nvcc)), "--version"], timeout=ctx.timeout, env=dict(ctx.environ))
    version = parse_nvcc_version(result.stdout) if result.ok else None
    if version is None:
        ctx.error("build", f"{nvcc} --version: {result.describe_failure() if not result.ok else 'no release number'}")
    return version


def _has_runtime_headers(ctx, root: str) -> bool:
    host = ctx.path(root)
    return (host / "include" / "cuda_runtime.h").is_file() or any(
        (t / "include" / "cuda_runtime.h").is_file() for t in _targets(host))


def _targets(host) -> list:
    try:
        return [p for p in (host / "targets").iterdir()][:8]
    except OSError:
        return []


def _gcc_max(ctx, root: Optional[str]) -> Optional[int]:
    if not root:
        return None
    host = ctx.path(root)
    for candidate in [host / "include" / "crt" / "host_config.h"] + [t / "include" / "crt" / "host_config.h"
                                                                    for t in _targets(host)]:
        text = proc.read_text(candidate, 1 << 18)
        if text:
            return parse_host_config_gcc_max(text)
    return None


def _ninja(ctx, python: Optional[str]) -> tuple[Optional[str], Optional[str]]:
    """ninja on PATH, else in the target environment's bin folder (the ninja wheel puts it there)."""
    path = shutil.which("ninja", path=ctx.environ.get("PATH", os.defpath))
    if path is None and python:
        path = shutil.which("ninja", path=os.path.dirname(python))
    if path is None:
        return None, None
    result = proc.run([path, "--version"], timeout=ctx.timeout)
    return path, (result.stdout.strip() or None) if result.ok else None


def python_include(ctx, python: Optional[str]) -> Optional[str]:
    """The target interpreter's sysconfig include folder (where Python.h must be)."""
    if not python or os.path.realpath(python) == os.path.realpath(sys.executable):
        import sysconfig

        return sysconfig.get_paths()["include"]
    result = proc.run([python, "-c", _INCLUDE_SCRIPT], timeout=ctx.timeout)
    if not result.ok:
        ctx.error("build", f"{python}: cannot read its include folder: {result.describe_failure()}")
        return None
    return result.stdout.strip() or None


def _cpu_count() -> Optional[int]:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count()


# --- wiring for `check --build` ---------------------------------------------------------------------

def with_build(facts: Facts, timings: dict, facts_file: Optional[str]) -> tuple[Facts, dict]:
    """`check --build`: add the `build` block to probed facts (a replayed file keeps what it recorded)."""
    if facts_file:
        return facts, timings
    from pathlib import Path

    from envdoctor.probe import ProbeContext, timeout_from

    ctx = ProbeContext(python=facts.python.executable or sys.executable,
                       root=Path(os.environ.get("ENVDOCTOR_ROOT") or "/"), timeout=timeout_from(os.environ))
    start = time.perf_counter()
    try:
        build = probe(ctx, facts.python.executable)
    except Exception as exc:  # a probe bug must not take the report down
        ctx.error("build", f"internal error: {type(exc).__name__}: {exc}")
        build = None
    timings = {**timings, "build": round(time.perf_counter() - start, 4)}
    recorded = tuple(facts.recorded or ()) + (("build",) if build is not None else ())
    errors = sorted(list(facts.errors) + ctx.errors, key=lambda e: e.probe)
    return dataclasses.replace(facts, build=build, recorded=recorded if facts.recorded is not None else None,
                               errors=errors), timings


def add_build(facts: Facts, findings: list, timings: dict, facts_file: Optional[str]) -> tuple[Facts, list, dict]:
    """`check --build` after the usual diagnosis: probe the build tools and add what the build rules say
    about them (a replayed file was already judged on the block it recorded)."""
    if facts_file or facts.build is not None:
        return facts, findings, timings
    facts, timings = with_build(facts, timings, None)
    from envdoctor.diagnose.build import diagnose_build
    from envdoctor.findings import SEVERITIES

    order = {s: i for i, s in enumerate(SEVERITIES)}
    return facts, sorted(list(findings) + diagnose_build(facts), key=lambda f: order[f.severity]), timings
