"""framework-import-failed: `--deep` imported a framework and the import died by a signal, hung until
the deep probe's timeout, or raised.

The deep probe records why (envdoctor/probe/deep.py): "killed by signal SIGILL", "timed out after
120 s", "ImportError: ...". A framework that does not import cannot be used at all, so each is an
error. Import errors another rule explains better (a missing CUDA library, glibc too old, the NumPy 1
ABI under NumPy 2) are left to that rule.
"""

from __future__ import annotations

import re
from typing import Iterable, Optional

from envdoctor.diagnose import rule
from envdoctor.diagnose._common import FRAMEWORK_NAMES, framework_named, plan_fix, public
from envdoctor.facts import Facts, Framework
from envdoctor.findings import Finding, Fix

_SIGNAL = re.compile(r"killed by signal (SIG[A-Z0-9]+|\d+)")
_TIMEOUT = re.compile(r"timed out after (\d+(?:\.\d+)?) ?s")
_UNDEFINED_SYMBOL = re.compile(r"undefined symbol: ?([\w@.]{1,120})")


@rule
def framework_import_failed(facts: Facts) -> Iterable[Finding]:
    for key, fw in sorted(facts.frameworks.items()):
        text = " ".join((fw.import_error or "").split())
        if not text or _explained_elsewhere(facts, text):
            continue
        framework = framework_named(key)
        dist, version = _installed(facts, key, fw)
        label = f"{dist} {version}" if version else dist
        signal = _SIGNAL.search(text)
        timeout = _TIMEOUT.search(text)
        if signal:
            why, fixes = _signal(facts, key, framework, signal.group(1), text)
        elif timeout:
            why, fixes = _timeout(facts, key, timeout.group(1))
        else:
            why, fixes = _raised(facts, key, framework, text)
        yield Finding(
            code="framework-import-failed", severity="error", section="frameworks",
            title=f"{label} fails to import: {_short(text)}",
            detail=why,
            fix=fixes,
            evidence=(f"frameworks.{key}.import_error={text}",) + ((f"python.packages.{dist}={version}",) if version else ()),
        )


def _explained_elsewhere(facts: Facts, text: str) -> bool:
    """The import errors with a rule of their own (it names the cause and the fix more exactly)."""
    from envdoctor.diagnose.cuda_libs import _MISSING_LIB
    from envdoctor.diagnose.platform import _GLIBC
    from envdoctor.diagnose.python import _NUMPY_ABI

    if _MISSING_LIB.search(text) or _NUMPY_ABI.search(text):
        return True
    return bool(_GLIBC.search(text)) and facts.host.os == "linux"  # glibc-too-old speaks for Linux only


def _installed(facts: Facts, key: str, fw: Framework) -> tuple[str, Optional[str]]:
    from envdoctor.probe.deep import DISTRIBUTIONS

    for dist in DISTRIBUTIONS.get(key, (key,)):
        version = facts.python.packages.get(dist)
        if version:
            return dist, version.split("|")[0]
    return DISTRIBUTIONS.get(key, (key,))[0], fw.version


def _short(text: str, limit: int = 90) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _python(facts: Facts) -> str:
    return facts.python.executable or ("python" if facts.host.os == "windows" else "python3")


def _name(framework: Optional[str], key: str) -> str:
    return FRAMEWORK_NAMES.get(framework or "", key)


def _reinstall(facts: Facts, framework: Optional[str], key: str, what: str) -> tuple[Fix, ...]:
    """`what` as a step, then this machine's install commands from the planner when it has them (for the
    installed release: a reinstall, not an upgrade)."""
    fallback = f"{what} (`envdoctor install {framework or key}` prints the command for this machine)"
    release = public(_installed(facts, key, facts.frameworks.get(key) or Framework())[1])
    fixes = plan_fix(facts, framework, fallback, version=f"=={release}" if release else None) if framework else (fallback,)
    return fixes if fixes[0] == fallback else (f"{what}:",) + fixes


# --- died by a signal --------------------------------------------------------------------------------

def _signal(facts: Facts, key: str, framework: Optional[str], sig: str, text: str) -> tuple[str, tuple[Fix, ...]]:
    name = _name(framework, key)
    trace: Fix = (_python(facts), "-X", "faulthandler", "-c", f"import {key}")
    if sig == "SIGILL" or "instructions, but these aren" in text:
        return _illegal_instruction(facts, key, framework, name)
    if sig == "SIGSEGV":
        why = (f"Importing {key} crashed with a segmentation fault: a native library it loads does not fit it. Most "
               "often a second copy of a CUDA, cuDNN, NCCL or C++ runtime library is picked up instead of the one "
               "the wheel brought (LD_LIBRARY_PATH, a conda environment, /usr/local/cuda), two frameworks in one "
               "environment bring clashing libraries, or the install is damaged.")
        fixes: tuple[Fix, ...] = (trace,)
        if facts.env.get("LD_LIBRARY_PATH"):
            fixes += ("then retry with LD_LIBRARY_PATH unset (`env -u LD_LIBRARY_PATH python -c \"import "
                      f"{key}\"`); if that works, remove the CUDA directories from it",)
        return why, fixes + _reinstall(facts, framework, key, f"or reinstall {name} in a fresh environment")
    if sig == "SIGKILL":
        why = (f"Importing {key} was killed (SIGKILL): usually the kernel's out-of-memory killer or a container's "
               "memory limit, while the framework loaded its libraries.")
        return why, ("Check the kernel log for the OOM killer (`dmesg | grep -i 'killed process'`) and give the "
                     "machine or container more memory", trace)
    if sig == "SIGABRT":
        why = (f"Importing {key} aborted (SIGABRT): a check in one of its native libraries failed (a C++ exception "
               "that nothing caught, \"terminate called...\", a protobuf or ABI version check). The last line it "
               "printed, if recorded above, names the check.")
        return why, (trace,) + _reinstall(facts, framework, key, f"then reinstall {name}")
    if sig == "SIGBUS":
        why = (f"Importing {key} died with a bus error (SIGBUS): a memory-mapped file went away under it (a "
               "library file replaced or truncated while in use, a full /dev/shm, a network file system that "
               "dropped out).")
        return why, _reinstall(facts, framework, key, f"Reinstall {name}") + ("check `df -h /dev/shm` and the file system the environment is on",)
    why = f"Importing {key} was killed by signal {sig}."
    return why, (trace,) + _reinstall(facts, framework, key, f"then reinstall {name}")


def _illegal_instruction(facts: Facts, key: str, framework: Optional[str], name: str) -> tuple[str, tuple[Fix, ...]]:
    host = facts.host
    arm = host.arch in ("aarch64", "arm64") and not host.rosetta
    jetson = facts.jetson is not None or bool(facts.nvidia and facts.nvidia.driver_kind == "jetson")
    if jetson:
        why = (f"Importing {key} died by an illegal instruction (SIGILL) on a Jetson: the installed {name} is an "
               "ARM wheel built for another CPU (a generic or server-class aarch64 build, or a Jetson build for "
               "another JetPack or module), not NVIDIA's build for this JetPack.")
        return why, _reinstall(facts, framework, key, f"Install the JetPack build of {name}")
    if arm:
        why = (f"Importing {key} died by an illegal instruction (SIGILL): the installed {name} is an aarch64 wheel "
               "built for newer ARM CPU features (ARMv8.2+ or SVE, as on server CPUs) than this processor has.")
        return why, (("grep", "-m1", "Features", "/proc/cpuinfo"),
                     f"Install a {name} build for this CPU: an older release, conda-forge's build, or one built from "
                     "source on this machine")
    if host.rosetta or host.machine_arch == "arm64":
        why = (f"Importing {key} died by an illegal instruction (SIGILL): this x86_64 Python runs under Rosetta 2, "
               f"which does not provide the AVX instructions the x86_64 {name} wheels are built with.")
        return why, ("Use a native arm64 Python (e.g. a fresh venv from an arm64 Python), then reinstall "
                     f"{name} (`envdoctor install {framework or key}`)",)
    why = (f"Importing {key} died by an illegal instruction (SIGILL): the installed {name} uses CPU instructions "
           "this processor does not have. x86_64 wheels of TensorFlow, PyTorch, JAX and Paddle need AVX (newer "
           "releases AVX2); CPUs without it (pre-2011 models, many Atom, Celeron and Pentium chips) and VMs or "
           "emulators that hide it (a generic QEMU CPU model) cannot run them.")
    check: Fix = (("sysctl", "-n", "machdep.cpu.features", "machdep.cpu.leaf7_features") if host.os == "macos"
                  else ("grep", "-o", "-w", "-m2", "-E", "avx|avx2", "/proc/cpuinfo"))
    return why, (check, "if it prints no avx: run on a CPU with AVX (in a VM, pass the host CPU model through, "
                 "e.g. `-cpu host`), or install a build compiled without AVX (conda-forge, an older release, "
                 "Paddle's noavx wheels, or build from source)")


# --- hung --------------------------------------------------------------------------------------------

def _timeout(facts: Facts, key: str, seconds: str) -> tuple[str, tuple[Fix, ...]]:
    why = (f"Importing {key} did not finish within {seconds} s. A hung import is usually a driver call that does "
           "not return (then nvidia-smi hangs too), a package on a network or stale file system, a lock held by "
           "another process, or a GPU whose architecture the build lacks kernels for, so CUDA compiles them "
           "from PTX on first use (minutes, once).")
    return why, ((_python(facts), "-X", "importtime", "-c", f"import {key}"),
                 "If it finishes given time, let --deep wait longer: `ENVDOCTOR_DEEP_TIMEOUT=600 envdoctor check --deep`")


# --- raised ------------------------------------------------------------------------------------------

def _raised(facts: Facts, key: str, framework: Optional[str], text: str) -> tuple[str, tuple[Fix, ...]]:
    name = _name(framework, key)
    why = (f"Importing {key} in the target environment failed ({_short(text, 300)}), so {name} cannot be used "
           "there at all.")
    symbol = _UNDEFINED_SYMBOL.search(text)
    if symbol:
        why += (f" An undefined symbol ({symbol.group(1)}) means a library it loaded is another version than the one "
                f"{name} was built against: a CUDA, cuDNN or NCCL wheel of another release next to it, or an older "
                "copy found first on the library path.")
    return why, ((_python(facts), "-c", f"import {key}"),) + _reinstall(
        facts, framework, key, f"then, from the full traceback it prints, fix or reinstall {name}")
