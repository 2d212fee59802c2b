"""Rules about the platform under the frameworks: Rosetta on Apple silicon, WSL2's GPU plumbing,
TensorFlow on native Windows, and a glibc too old for the installed wheels."""

from __future__ import annotations

import re
from typing import Iterable, Optional

from envdoctor.diagnose import knowledge, rule
from envdoctor.diagnose._common import package, plan_fix, public
from envdoctor.facts import Facts
from envdoctor.findings import Finding


@rule
def rosetta_python(facts: Facts) -> Iterable[Finding]:
    host = facts.host
    translated = host.rosetta or (host.os == "macos" and host.arch == "x86_64" and host.machine_arch == "arm64")
    if not translated:
        return
    installed = [n for n in ("torch", "tensorflow", "jax", "jaxlib") if package(facts, n)]
    yield Finding(
        code="rosetta-python", severity="warning", section="platform",
        title=f"This Python ({facts.python.version or '?'}) is an x86_64 build running under Rosetta on Apple silicon",
        detail=("An Intel Python on an Apple-silicon Mac runs translated: slower, and x86_64 wheels cannot use the GPU "
                "(no MPS for PyTorch, no Metal plugin for TensorFlow). New PyTorch and TensorFlow releases publish no "
                "Intel macOS wheels at all, and x86 TensorFlow can die with 'Illegal instruction' under translation." + (f" Installed here: {', '.join(installed)}." if installed else "")),
        fix=("Install an arm64 Python (python.org universal2 installer, `brew install python` in /opt/homebrew, or "
             "Miniforge arm64), create the environment again with it, and reinstall the frameworks",),
        evidence=(f"host.arch={host.arch}", f"host.machine_arch={host.machine_arch}", f"host.rosetta={host.rosetta}",
                  f"python.executable={facts.python.executable}"),
    )


@rule
def wsl_gpu_setup(facts: Facts) -> Iterable[Finding]:
    host, nv = facts.host, facts.nvidia
    if not host.wsl:
        return
    ev = ["host.wsl=true", f"host.kernel={host.kernel}"]
    kernel = (host.kernel or "").lower()  # WSL 1: "4.4.0-19041-Microsoft"; WSL 2: "…-microsoft-standard[-WSL2]"
    if "microsoft" in kernel and "microsoft-standard" not in kernel and "wsl2" not in kernel:
        yield Finding(
            code="wsl-gpu-setup", severity="warning", section="platform",
            title="This is WSL 1, which has no GPU support",
            detail="CUDA in WSL needs WSL 2 (a real Linux kernel with the paravirtualised GPU); WSL 1 translates system calls and cannot reach the GPU.",
            fix=("In Windows PowerShell: `wsl --set-version <distro> 2` (list distros with `wsl -l -v`)",),
            evidence=tuple(ev),
        )
        return
    if nv is not None and (nv.kernel_module or nv.driver_kind == "desktop"):
        ev.append(f"nvidia.kernel_module={nv.kernel_module}" if nv.kernel_module else f"nvidia.driver_kind={nv.driver_kind}")
        yield Finding(
            code="wsl-gpu-setup", severity="error", section="nvidia",
            title="A Linux NVIDIA driver is installed inside WSL",
            detail=("In WSL 2 the GPU driver is the Windows one, exposed through /usr/lib/wsl/lib. A Linux driver "
                    "package installed inside the distro puts its own libcuda.so / libnvidia-ml.so in front of the WSL "
                    "ones and breaks CUDA ('driver version is insufficient', NVML errors)."),
            fix=("Remove the Linux driver inside WSL: `sudo apt-get remove --purge '^nvidia-.*' '^libnvidia-.*'` "
                 "(keep the cuda-toolkit packages of the wsl-ubuntu repo), then `wsl --shutdown` from Windows",),
            evidence=tuple(ev),
        )
        return
    if nv is not None and nv.failure:
        ev.append(f"nvidia.failure={nv.failure}")
        yield Finding(
            code="wsl-gpu-setup", severity="error", section="nvidia",
            title="The GPU is not reachable from WSL",
            detail=(f"NVML failed inside WSL ({nv.failure_text or nv.failure}). In WSL 2 this usually means the "
                    "libcuda/libnvidia-ml links in /usr/lib/wsl/lib are broken or shadowed, or the Windows driver is too "
                    "old for GPU in WSL."),
            fix=("Update the NVIDIA driver on Windows (the Windows driver is the WSL driver), then `wsl --shutdown` and reopen the distro",
                 "If it persists: `ls -l /usr/lib/wsl/lib/libcuda*` must show real files, and `ldconfig -p | grep libcuda` must point there"),
            evidence=tuple(ev),
        )


@rule
def tf_windows_native_gpu(facts: Facts) -> Iterable[Finding]:
    no_gpu = facts.known("nvidia.gpus") and (not facts.gpus or facts.driver_present is False)
    if facts.host.os != "windows" or no_gpu:
        return  # the build has no GPU support either way; it only matters where a GPU is, or may be
    name = next((n for n in ("tensorflow", "tensorflow-gpu", "tensorflow-intel") if package(facts, n)), None)
    if name is None:
        return
    version = package(facts, name)
    last = knowledge.tf_last_native_windows_gpu()
    if last is None or public(version) is None or public(version) <= public(str(last)):
        return
    yield Finding(
        code="tf-windows-native-gpu", severity="error", section="frameworks",
        title=f"TensorFlow {version} cannot use the GPU on native Windows (the last native-Windows GPU release is {last})",
        detail=(f"TensorFlow stopped publishing CUDA builds for native Windows after {last}; newer releases run on the "
                "CPU only there. Use TensorFlow in WSL2 (Linux wheels with `[and-cuda]`), or pin the last native GPU "
                f"release {last} with the CUDA and cuDNN it was built for (`envdoctor matrix tensorflow`)."),
        fix=plan_fix(facts, "tensorflow", f"Install TensorFlow inside WSL2 (`wsl --install -d Ubuntu`, then "
                     f"`python3 -m pip install 'tensorflow[and-cuda]'`), or on Windows pin `tensorflow=={last}.*` "
                     f"with the CUDA and cuDNN it was built for"),
        evidence=("host.os=windows", f"python.packages.{name}={version}", f"nvidia.gpus={len(facts.gpus)}"),
    )


_GLIBC = re.compile(r"GLIBC_(\d+\.\d+)'? not found")


@rule
def glibc_too_old(facts: Facts) -> Iterable[Finding]:
    glibc = facts.host.glibc
    if facts.host.os != "linux":
        return
    for key, fw in sorted(facts.frameworks.items()):
        match = _GLIBC.search(fw.import_error or "")
        if match:
            yield _glibc_finding(facts, key, fw.version, match.group(1), glibc, f"frameworks.{key}.import_error={match.group(0)}")
            return
    if not glibc:
        return
    for dist in ("torch", "tensorflow", "jaxlib", "paddlepaddle", "paddlepaddle-gpu"):
        version = package(facts, dist)
        needed = _glibc_needed(facts, dist, str(public(version))) if version else None
        if needed and public(glibc) is not None and public(glibc) < public(str(needed)):
            yield _glibc_finding(facts, dist, version, str(needed), glibc, f"python.packages.{dist}={version}")


_GLIBC_MATRIX = {"torch": "pytorch", "tensorflow": "tensorflow", "jaxlib": "jax", "paddlepaddle": "paddle",
                 "paddlepaddle-gpu": "paddle"}


def _glibc_needed(facts: Facts, dist: str, version: str) -> Optional[str]:
    """The glibc floor of the wheels for this machine's architecture (torch 2.6: 2.17 on x86_64 but
    2.28 on aarch64); the x86_64 floor where the architecture is unknown."""
    row = knowledge.call(_GLIBC_MATRIX[dist], "release", version)
    platform_key = knowledge.platform(facts)
    per_platform = getattr(row, "glibc_for", None)
    if callable(per_platform) and platform_key and platform_key.startswith("linux"):
        return per_platform(platform_key)
    return knowledge.glibc_required(dist, version)


def _glibc_finding(facts: Facts, dist: str, version, needed: str, glibc, ev: str) -> Finding:
    return Finding(
        code="glibc-too-old", severity="error", section="platform",
        title=f"{dist} {version or ''} needs glibc {needed}, this system has {glibc or 'an older one'}".replace("  ", " "),
        detail=("Linux wheels are built against a minimum glibc (their manylinux tag); on an older system the "
                "framework's native libraries fail to load with \"GLIBC_x.y not found\". glibc comes with the "
                "operating system and cannot be upgraded by pip."),
        fix=(f"Run on a newer distribution (glibc {needed} or later: e.g. Ubuntu 20.04+, RHEL/Rocky 8+), use a container "
             "built on one, or install an older framework release whose wheels target this glibc",),
        evidence=(f"host.glibc={glibc}", ev),
    )
