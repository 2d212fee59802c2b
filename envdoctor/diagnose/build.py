"""Rules for building CUDA extensions (`check --build`): what torch.utils.cpp_extension checks, and
what makes a 40-minute flash-attn/apex/xformers compile fail, before it starts.

- nvcc's CUDA against torch.version.cuda: a different major is refused by PyTorch (RuntimeError "The
  detected CUDA version (X) mismatches the version that was used to compile PyTorch (Y)"), a different
  minor only warns (torch/utils/cpp_extension.py, _check_cuda_version);
- the host compiler against the range that CUDA release accepts (matrices/host_compilers.toml, and
  the toolkit's own crt/host_config.h);
- CUDA_HOME (what torch builds with) against the nvcc on PATH (what CMake and plain nvcc use), and a
  CUDA_HOME that is no toolkit at all;
- ninja, Python.h, TORCH_CUDA_ARCH_LIST against the GPUs, MAX_JOBS against memory.

Rules fire only on a recorded `build` block (`check --build`, or a file that has one).
"""

from __future__ import annotations

import re
from typing import Iterable, Optional

from envdoctor.diagnose import rule
from envdoctor.diagnose._common import cuda_of_tag, gpu_ccs, major_minor, package
from envdoctor.facts import Facts
from envdoctor.findings import Finding
from envdoctor.matrix.host_compilers import compiler_range, version_numbers

# Peak memory of one nvcc job on a big extension (flash-attn's kernels, xformers): 2-4 GB; we count
# 2 GiB per job as the least a job needs (flash-attn's README: "MAX_JOBS=4" on machines with < 96 GB).
MIB_PER_JOB = 2048
MANY_ARCHS = 4  # this many TORCH_CUDA_ARCH_LIST entries for one GPU model is mostly wasted compile time
BUILD_RULES: list = []  # this module's rules, which judge only the `build` block


def build_rule(fn):
    BUILD_RULES.append(fn)
    return rule(fn)


def diagnose_build(facts: Facts) -> list[Finding]:
    """Only the build rules (`check --build` adds the block after the main diagnosis ran)."""
    from envdoctor.matrix.loader import MatrixError

    found: list[Finding] = []
    for check in BUILD_RULES:
        try:
            found.extend(check(facts))
        except MatrixError:
            raise
        except Exception as exc:  # as diagnose(): a buggy rule must not hide the others
            found.append(Finding(code="internal-error", severity="warning", section="toolkit",
                                 title=f"rule {check.__name__} failed: {type(exc).__name__}: {exc}",
                                 detail="This is a bug in envdoctor; the other checks still ran."))
    return found


def torch_cuda(facts: Facts) -> tuple[Optional[str], str]:
    """(torch.version.cuda as "12.4", how we know), or (None, why): "cpu" for a CPU build."""
    from envdoctor.diagnose.frameworks import torch_build

    version, build, how = torch_build(facts)
    if not version:
        return None, "torch is not installed"
    deep = facts.frameworks.get("torch")
    if deep is not None and deep.cuda and not deep.import_error:
        return major_minor(deep.cuda), "frameworks.torch.cuda"
    if build == "cpu":
        return None, "cpu"
    cuda = cuda_of_tag(build)
    return (cuda, how) if cuda else (None, f"the CUDA of torch {version} is not known")


def torch_evidence(facts: Facts, how: str) -> tuple[str, ...]:
    """The facts torch's CUDA was read from, as `path=value` (and how, where that is a matrix row)."""
    deep = facts.frameworks.get("torch")
    if how == "frameworks.torch.cuda" and deep is not None:
        return (f"frameworks.torch.cuda={deep.cuda}",)
    version = package(facts, "torch")
    stated = f"python.packages.torch={version}"
    return (stated,) if how == stated else (stated, how)


def _toolkit_fix(facts: Facts, cuda: Optional[str]) -> tuple:
    """The planner's commands for a toolkit matching torch (the same answer as `envdoctor install cuda-toolkit`)."""
    from envdoctor.errors import UsageError
    from envdoctor.matrix.loader import MatrixError
    from envdoctor.plan.cuda_toolkit import plan_toolkit

    try:
        plan = plan_toolkit(facts, cuda=cuda)
    except (UsageError, MatrixError):  # no plan for this machine (a CUDA no toolkit has, matrix data missing): in words
        plan = None
    fixes = tuple(tuple(c) for c in plan.commands) + tuple(plan.steps) if plan is not None and plan.ok else ()
    wanted = f" --cuda {cuda}" if cuda else ""
    return fixes or (f"`envdoctor install cuda-toolkit{wanted}` prints the commands for this machine",)


def built_with(b, facts: Optional[Facts] = None) -> tuple[Optional[str], str, tuple[str, ...]]:
    """(the CUDA version of the nvcc torch will run, which one, the facts that say so as `path=value`).

    CUDA_HOME's nvcc when its version is known. The nvcc on PATH only where it is known to be the one
    torch takes: CUDA_HOME was found from it (`cuda_home_from` PATH, or `cuda_home` its toolkit), or a
    probe found no CUDA_HOME at all. Where CUDA_HOME is unknown (a hand-written file), the nvcc on PATH
    may not be what torch compares: (None, "", ())."""
    if b.cuda_home_version:
        which = f"CUDA_HOME={b.cuda_home}" if b.cuda_home_from in ("CUDA_HOME", "CUDA_PATH") \
            else f"{b.cuda_home} (from {b.cuda_home_from})"
        return b.cuda_home_version, which, (f"build.cuda_home_version={b.cuda_home_version}",)
    if not b.nvcc_version:
        return None, "", ()
    ev = (f"build.nvcc_version={b.nvcc_version}",)
    if b.cuda_home_from == "PATH":
        return b.nvcc_version, f"nvcc on PATH ({b.nvcc})", ev + ("build.cuda_home_from=PATH",)
    if b.cuda_home and b.nvcc_root and b.cuda_home.rstrip("/") == b.nvcc_root.rstrip("/"):
        return b.nvcc_version, f"nvcc on PATH ({b.nvcc})", ev + (f"build.cuda_home={b.cuda_home}", f"build.nvcc_root={b.nvcc_root}")
    if b.cuda_home is None and (facts is None or _probed(facts)):
        return b.nvcc_version, f"nvcc on PATH ({b.nvcc})", ev + ("build.cuda_home=null",)
    return None, "", ()


def toolkit_vs_torch(toolkit_cuda: Optional[str], torch_cuda: Optional[str]) -> Optional[str]:
    """The one judgement of a CUDA toolkit (nvcc, CUDA_HOME) against the CUDA torch was built with, as
    torch.utils.cpp_extension makes it: "major" (it refuses to build), "minor" (it warns), None (the same
    release, or either side unknown). Used by the build rules, the environment's CUDA_HOME check and the
    Dockerfile judge."""
    if not toolkit_cuda or not torch_cuda:
        return None
    try:
        have, want = version_numbers(toolkit_cuda)[:2], version_numbers(torch_cuda)[:2]
    except ValueError:
        return None
    if have[0] != want[0]:
        return "major"
    return "minor" if have != want else None


def judges_the_toolkit(facts: Facts) -> bool:
    """Whether the build rules (check --build) compare a toolkit with torch's CUDA here: then the CUDA_HOME
    toolkit is judged once, by them, and not a second time by the environment rules."""
    return facts.build is not None and built_with(facts.build, facts)[0] is not None


@build_rule
def nvcc_matches_torch(facts: Facts) -> Iterable[Finding]:
    b = facts.build
    if b is None:
        return
    cuda, how = torch_cuda(facts)
    nvcc, which, nvcc_ev = built_with(b, facts)
    if how == "cpu":
        yield Finding(
            code="extension-build-mismatch", severity="info", section="toolkit",
            title=f"torch {package(facts, 'torch')} is a CPU build: CUDA extensions cannot be built against it",
            detail="torch.version.cuda is None, so CUDAExtension builds have no CUDA runtime to link; install a CUDA "
                   "build of torch first (`envdoctor install pytorch`).",
            evidence=(f"python.packages.torch={package(facts, 'torch')}",))
        return
    if cuda is None:
        return
    if nvcc is None:
        if b.cuda_home is None and b.nvcc is None and _probed(facts):  # looked for and not found
            yield Finding(
                code="extension-build-mismatch", severity="error", section="toolkit",
                title=f"no CUDA toolkit for building extensions: CUDA_HOME is not set and no nvcc is on PATH (torch uses CUDA {cuda})",
                detail=("torch.utils.cpp_extension stops with \"CUDA_HOME environment variable is not set\"; the pip "
                        "torch wheel brings the CUDA runtime, not the compiler. Install a toolkit matching torch's CUDA."),
                fix=_toolkit_fix(facts, cuda),
                evidence=(*torch_evidence(facts, how), "build.nvcc=null", "build.cuda_home=null"))
        return
    mismatch = toolkit_vs_torch(nvcc, cuda)
    if mismatch is None:
        return
    major = mismatch == "major"
    yield Finding(
        code="extension-build-mismatch", severity="error" if major else "warning", section="toolkit",
        title=(f"nvcc is CUDA {nvcc} but torch was built with CUDA {cuda}: "
               + ("PyTorch refuses to build extensions" if major else "a minor mismatch (PyTorch warns)")),
        detail=(f"torch.utils.cpp_extension compares {which} with torch.version.cuda: "
                + (f"\"The detected CUDA version ({nvcc}) mismatches the version that was used to compile PyTorch "
                   f"({cuda})\" is a RuntimeError." if major else
                   "a minor difference within one major is accepted with a warning, and usually works; an exact "
                   "match avoids surprises in PTX and library versions.")),
        fix=_toolkit_fix(facts, cuda),
        evidence=(*nvcc_ev, *torch_evidence(facts, how)),
    )


@build_rule
def cuda_home_is_a_toolkit(facts: Facts) -> Iterable[Finding]:
    b = facts.build
    if b is None or b.cuda_home is None or b.cuda_home_headers is not False:
        return
    real = b.nvcc_root if b.nvcc_root and b.nvcc_root != b.cuda_home else None
    cuda_torch = torch_cuda(facts)[0] is not None  # with a CPU torch (or none) nothing builds with it yet
    yield Finding(
        code="extension-build-mismatch", severity="error" if cuda_torch else "warning", section="toolkit",
        title=f"torch will build with CUDA_HOME={b.cuda_home} ({b.cuda_home_from}), which has no CUDA headers",
        detail=(f"torch.utils.cpp_extension takes CUDA_HOME from {_how_found(b)} and compiles with "
                f"{b.cuda_home}/include, but there is no cuda_runtime.h there"
                + (f" (the nvcc on PATH is a wrapper for the toolkit in {real})" if real else "")
                + ": the build stops with \"cuda_runtime.h: No such file or directory\" or cannot link cudart."),
        fix=((f"export CUDA_HOME={real}",) if real else ()) + (
            "Point CUDA_HOME at a toolkit folder that has bin/nvcc and include/cuda_runtime.h",),
        evidence=(f"build.cuda_home={b.cuda_home}", "build.cuda_home_headers=false",
                  *((f"build.nvcc_root={real}",) if real else ())),
    )


def _how_found(b) -> str:
    return {"PATH": "the nvcc on PATH (the folder above its bin/)", "CUDA_HOME": "$CUDA_HOME",
            "CUDA_PATH": "$CUDA_PATH"}.get(b.cuda_home_from or "", b.cuda_home_from or "its default")


@build_rule
def cuda_home_matches_path_nvcc(facts: Facts) -> Iterable[Finding]:
    b = facts.build
    if b is None or b.cuda_home_from not in ("CUDA_HOME", "CUDA_PATH") or not b.nvcc_version or not b.cuda_home_version:
        return
    if b.nvcc_version == b.cuda_home_version:
        return
    yield Finding(
        code="extension-build-mismatch", severity="warning", section="toolkit",
        title=(f"{b.cuda_home_from}={b.cuda_home} is CUDA {b.cuda_home_version} but the nvcc on PATH is CUDA "
               f"{b.nvcc_version}"),
        detail=("torch.utils.cpp_extension builds with the toolkit in CUDA_HOME, while CMake-based builds, Triton "
                "and plain `nvcc` use the one on PATH: two toolkits in one build mix headers and libraries of "
                "different CUDA releases."),
        fix=(f"Make them agree: export PATH={b.cuda_home}/bin:$PATH (or set {b.cuda_home_from} to {b.nvcc_root})",),
        evidence=(f"build.cuda_home_from={b.cuda_home_from}", f"build.cuda_home_version={b.cuda_home_version}",
                  f"build.nvcc_version={b.nvcc_version}"),
    )


# --- the host compiler -----------------------------------------------------------------------------

def _fmt(version: tuple[int, ...]) -> str:
    return ".".join(str(v) for v in version)


@build_rule
def host_compiler_supported(facts: Facts) -> Iterable[Finding]:
    b = facts.build
    if b is None:
        return
    cuda, _, cuda_ev = built_with(b, facts)
    index, host = next(((i, c) for i, c in enumerate(b.compilers) if c.role == "nvcc-host"), (None, None))
    if host is None:
        return
    if host.path is None and _probed(facts) and (b.nvcc or b.cuda_home_version):
        yield Finding(
            code="build-toolchain-missing", severity="error", section="toolkit",
            title=f"no host C++ compiler: `{host.command}` is not on PATH",
            detail="nvcc compiles the host side of every .cu file with a C/C++ compiler (gcc on Linux, cl.exe on Windows).",
            fix=("Debian/Ubuntu: sudo apt-get install build-essential; RHEL/Fedora: sudo dnf install gcc-c++; "
                 "conda: conda install -c conda-forge gxx; Windows: Visual Studio Build Tools (C++ workload)",),
            evidence=(f"build.compilers[{index}].role=nvcc-host", f"build.compilers[{index}].command={host.command}",
                      f"build.compilers[{index}].path=null"))
        return
    if host.kind not in ("gcc", "clang") or not host.version or not (cuda or (host.kind == "gcc" and b.gcc_max)):
        return
    have = version_numbers(host.version)
    bounds = compiler_range(cuda, host.kind) if cuda else None
    bound_ev = cuda_ev
    if host.kind == "gcc" and b.gcc_max is not None:  # the toolkit's own host_config.h decides nvcc's #error
        low = bounds[0] if bounds else (0,)  # (the lower bound is unknown without the CUDA version)
        bounds = (low, (b.gcc_max + 1,), "the toolkit's include/crt/host_config.h")
        bound_ev = (f"build.gcc_max={b.gcc_max}",)
    if bounds is None:
        return
    low, high, source = bounds
    if low <= have[:len(low)] and have[:len(high)] < high:
        return
    too_new = have[:len(high)] >= high
    if not too_new:
        bound_ev = cuda_ev  # the lower bound comes from the CUDA release's row
    release = f"CUDA {cuda}" if cuda else "this toolkit"
    yield Finding(
        code="extension-build-mismatch", severity="error", section="toolkit",
        title=(f"{host.kind} {host.version} is {'newer' if too_new else 'older'} than {release}'s nvcc accepts "
               f"({host.kind} >= {_fmt(low)}, < {_fmt(high)})"),
        detail=(f"nvcc stops with \"unsupported GNU version\" (or the clang equivalent), and torch.utils.cpp_extension "
                f"refuses it first (\"The current installed version of {host.kind} ... is "
                f"{'greater than the maximum' if too_new else 'less than the minimum'} required version by {release}\"). "
                f"Range from {source}."),
        fix=_compiler_fix(host.kind, high[0] - 1 if too_new else low[0], cuda, have[0]),
        evidence=(f"build.compilers[{index}].role=nvcc-host", f"build.compilers[{index}].kind={host.kind}",
                  f"build.compilers[{index}].version={host.version}", *bound_ev),
    )


def _compiler_fix(kind: str, major: int, cuda: str, have: int) -> tuple:
    if kind == "gcc":
        return ((f"sudo apt-get install gcc-{major} g++-{major}   # or dnf install gcc-toolset-{major}, "
                 f"conda install -c conda-forge gxx={major}"),
                f"export CC=gcc-{major} CXX=g++-{major}   # torch passes CC to nvcc as -ccbin",
                f"or use a CUDA release whose nvcc supports gcc {have}")
    return (f"Install clang {major} and export CC=clang-{major} CXX=clang++-{major}, "
            f"or use a CUDA release whose nvcc supports clang {have}",)


def _probed(facts: Facts) -> bool:
    """The build block was recorded by a probe, so a tool it lists without a path was looked for and not found."""
    return facts.recorded is not None and "build" in facts.recorded


# --- ninja, Python.h, arch list, memory ------------------------------------------------------------

@build_rule
def ninja_present(facts: Facts) -> Iterable[Finding]:
    b = facts.build
    if b is None or facts.known("build.ninja") is False or b.ninja is not None or not (b.nvcc or b.cuda_home_version):
        return  # ninja found, or not recorded (unknown is not absent)
    yield Finding(
        code="build-toolchain-missing", severity="warning", section="toolkit",
        title="ninja is not installed: extensions build one file at a time",
        detail=("torch.utils.cpp_extension falls back to setuptools' serial build without ninja (\"Attempted to use "
                "ninja as the BuildExtension backend but we could not find ninja\"); flash-attn and similar projects "
                "take hours that way, and some (dlink builds) require ninja."),
        fix=(("python", "-m", "pip", "install", "ninja"),),
        evidence=("build.ninja=null",),
    )


@build_rule
def python_headers_present(facts: Facts) -> Iterable[Finding]:
    b = facts.build
    if b is None or b.python_h is not False:
        return
    version = ".".join((facts.python.version or "").split(".")[:2]) or "X.Y"
    yield Finding(
        code="build-toolchain-missing", severity="error", section="python",
        title=f"Python.h is missing ({b.python_include}): no C/C++ extension can be compiled for this Python",
        detail="Every extension includes Python.h; the distribution ships it in a separate development package.",
        fix=(f"Debian/Ubuntu: sudo apt-get install python{version}-dev; RHEL/Fedora: sudo dnf install python{version.replace('.', '')}-devel "
             "(or python3-devel); a conda or uv-managed Python includes it",),
        evidence=(f"build.python_include={b.python_include}", "build.python_h=false"),
    )


_ARCH = re.compile(r"^(\d+)\.(\d+)([a-z]?)(\+ptx)?$")


def parse_arch_list(text: str) -> Optional[list[tuple[int, int, str, bool]]]:
    """TORCH_CUDA_ARCH_LIST "8.0;8.6 9.0+PTX" → [(8, 0, "", False), (8, 6, "", False), (9, 0, "", True)];
    None when an entry is not numeric (named architectures: "Ampere"), since their meaning is torch's."""
    entries = []
    for token in re.split(r"[;\s,]+", text.strip().lower()):
        if not token:
            continue
        m = _ARCH.match(token)
        if not m:
            return None
        entries.append((int(m.group(1)), int(m.group(2)), m.group(3), bool(m.group(4))))
    return entries


def arch_covers(entries, cc: str) -> bool:
    """Whether code compiled for these archs runs on a GPU of compute capability `cc`: a cubin runs on
    the same major with an equal or higher minor (not the arch-specific "a"/"f" variants elsewhere), PTX
    is JIT-compiled for any equal or newer GPU."""
    major, minor = (int(x) for x in cc.split(".")[:2])
    for m, n, suffix, ptx in entries:
        if (m, n) == (major, minor):
            return True
        if not suffix and m == major and n <= minor:
            return True
        if ptx and (m, n) <= (major, minor):
            return True
    return False


@build_rule
def arch_list_covers_gpus(facts: Facts) -> Iterable[Finding]:
    b = facts.build
    if b is None or not b.torch_cuda_arch_list:
        return
    entries = parse_arch_list(b.torch_cuda_arch_list)
    ccs = sorted({cc for _, _, cc in gpu_ccs(facts)})
    if entries is None or not ccs:
        return
    missing = [cc for cc in ccs if not arch_covers(entries, cc)]
    named = set(missing) or set(ccs)
    ev = (f"build.torch_cuda_arch_list={b.torch_cuda_arch_list}",
          *(f"nvidia.gpus[{i}].compute_capability={g.compute_capability}" for i, g in enumerate(facts.gpus)
            if g.compute_capability in named))
    if missing:
        yield Finding(
            code="extension-build-mismatch", severity="error", section="toolkit",
            title=f"TORCH_CUDA_ARCH_LIST={b.torch_cuda_arch_list!r} has no code for this machine's GPU (compute {', '.join(missing)})",
            detail=("The extension would build, then fail at the first kernel launch with \"no kernel image is available "
                    "for execution on the device\": its kernels exist only for the listed architectures."),
            fix=(f"export TORCH_CUDA_ARCH_LIST=\"{';'.join(ccs)}\" (or unset it: torch then builds for the visible GPUs)",),
            evidence=ev,
        )
    elif len(ccs) == 1 and len(entries) >= MANY_ARCHS:
        yield Finding(
            code="extension-build-mismatch", severity="info", section="toolkit",
            title=f"TORCH_CUDA_ARCH_LIST compiles {len(entries)} architectures for one GPU model (compute {ccs[0]})",
            detail="Every architecture is another full compile of every kernel; for a build used only here one is enough.",
            fix=(f"export TORCH_CUDA_ARCH_LIST=\"{ccs[0]}\"",),
            evidence=ev,
        )


@build_rule
def jobs_fit_memory(facts: Facts) -> Iterable[Finding]:
    b = facts.build
    if b is None or not b.mem_available_mib or not (b.nvcc or b.cuda_home_version):
        return
    if b.max_jobs is None and not facts.known("build.max_jobs"):
        return  # MAX_JOBS not recorded: unknown, not unset (unknown is not absent)
    jobs = _jobs(b)
    if jobs is None:
        return
    need = jobs * MIB_PER_JOB
    if need <= b.mem_available_mib:
        return
    fit = max(1, b.mem_available_mib // (MIB_PER_JOB * 2))
    source = f"MAX_JOBS={b.max_jobs}" if b.max_jobs else f"no MAX_JOBS: ninja runs about {jobs} jobs on {b.cpu_count} CPUs"
    yield Finding(
        code="build-jobs-memory", severity="warning", section="toolkit",
        title=f"{jobs} parallel compile jobs need about {need // 1024} GiB, {b.mem_available_mib // 1024} GiB is available",
        detail=(f"{source}. One nvcc job on a large extension takes 2-4 GB; too many at once end with the "
                "out-of-memory killer (\"Killed\", \"nvcc error: 'cicc' died due to signal 9\") late in the build."),
        fix=(f"export MAX_JOBS={fit}",),
        evidence=((f"build.max_jobs={b.max_jobs}",) if b.max_jobs else ("build.max_jobs=null", f"build.cpu_count={b.cpu_count}"))
                 + (f"build.mem_available_mib={b.mem_available_mib}",),
    )


def _jobs(b) -> Optional[int]:
    if b.max_jobs:
        return int(b.max_jobs) if b.max_jobs.strip().isdigit() and int(b.max_jobs) > 0 else None
    return b.cpu_count + 2 if b.cpu_count else None  # ninja's default parallelism
