"""Host: OS, distro, kernel, architecture, glibc, container, WSL2, macOS/Rosetta, Windows."""

from __future__ import annotations

import platform
import re
from dataclasses import replace
from typing import Optional

from envdoctor import proc
from envdoctor.facts import Host

ARCH_NAMES = {"amd64": "x86_64", "x64": "x86_64", "arm64": "aarch64", "aarch64": "aarch64", "x86_64": "x86_64"}


def probe(ctx) -> Host:
    system = platform.system().lower()
    if system == "darwin":
        return _macos(ctx)
    if system == "windows":
        return windows_host(platform.release(), platform.version(), platform.machine())
    return _linux(ctx)


def _linux(ctx) -> Host:
    # Read through ctx so a recorded tree (ctx.root) describes its own kernel.
    kernel = (proc.read_text(ctx.path("/proc/sys/kernel/osrelease"), 256) or "").strip() or platform.release()
    proc_version = proc.read_text(ctx.path("/proc/version"), 4096) or ""
    return Host(
        os="linux",
        distro=parse_os_release(_os_release_text(ctx)),
        kernel=kernel,
        arch=normalise_arch(platform.machine()),
        glibc=_glibc(),
        wsl=is_wsl(proc_version, ctx.path("/usr/lib/wsl/lib").is_dir()),
        container=detect_container(ctx),
    )


def _macos(ctx) -> Host:
    # sysctl.proc_translated is 1 for a process translated by Rosetta 2, 0 for a native one, and
    # missing on Intel Macs (sysctl then fails).
    translated = proc.run(["sysctl", "-n", "sysctl.proc_translated"], timeout=ctx.timeout)
    rosetta = translated.ok and translated.stdout.strip() == "1"
    return macos_host(platform.machine(), platform.mac_ver()[0], platform.release(), rosetta)


def macos_host(python_arch: str, mac_version: str, kernel: str, rosetta: bool) -> Host:
    """`python_arch` is what this (possibly translated) Python runs as; under Rosetta it says x86_64
    on Apple silicon hardware."""
    hardware = "arm64" if rosetta or python_arch == "arm64" else "x86_64"
    return Host(
        os="macos",
        distro=f"macOS {mac_version}".strip(),
        kernel=kernel,
        arch="arm64" if python_arch == "arm64" else "x86_64",
        os_version=mac_version or None,
        machine_arch=hardware,
        rosetta=rosetta,
    )


def for_target(host: Host, target_machine: Optional[str]) -> Host:
    """On Apple silicon the target Python may run under Rosetta while envdoctor runs natively (a
    pipx install checking an x86_64 conda env), or the reverse: arch and rosetta describe the target."""
    if host.os != "macos" or host.machine_arch != "arm64" or target_machine not in ("x86_64", "arm64"):
        return host
    return replace(host, arch=target_machine, rosetta=target_machine == "x86_64")


def windows_host(release: str, version: str, machine: str) -> Host:
    """Python reports release "10" on Windows 11 (before 3.12); the build number tells: >= 22000 is 11."""
    build = version.split(".")[2] if version.count(".") >= 2 else ""
    if release == "10" and build.isdigit() and int(build) >= 22000:
        release = "11"
    return Host(
        os="windows",
        distro=f"Windows {release}",
        kernel=version,
        arch=normalise_arch(machine),
        os_version=version,
    )


def normalise_arch(machine: str) -> str:
    return ARCH_NAMES.get(machine.lower(), machine.lower())


def _glibc() -> Optional[str]:
    name, version = platform.libc_ver()
    return version if name == "glibc" and version else None


def _os_release_text(ctx) -> str:
    """os-release(5): /etc/os-release, else /usr/lib/os-release (what a minimal image may only have)."""
    for candidate in ("/etc/os-release", "/usr/lib/os-release"):
        text = proc.read_text(ctx.path(candidate))
        if text:
            return text
    return ""


# os-release(5) as Python's platform.freedesktop_os_release() reads it: KEY=value, the value
# optionally in matching quotes, with \\ \$ \" \' \` escapes; comments and other lines ignored.
_OS_RELEASE_LINE = re.compile(r"""^(?P<name>[a-zA-Z0-9_]+)=(?P<quote>["']?)(?P<value>.*)(?P=quote)$""")
_OS_RELEASE_ESCAPE = re.compile(r"""\\([\\$"'`])""")


def os_release_values(text: str) -> dict[str, str]:
    values: dict[str, str] = {}
    for line in text.splitlines():
        match = _OS_RELEASE_LINE.match(line.strip())
        if match:
            values[match["name"]] = _OS_RELEASE_ESCAPE.sub(r"\1", match["value"])
    return values


def parse_os_release(text: str) -> Optional[str]:
    """`/etc/os-release` → "Ubuntu 24.04" (NAME + VERSION_ID), PRETTY_NAME as a fallback."""
    values = os_release_values(text)
    name = values.get("NAME")
    version = values.get("VERSION_ID")
    if name and version:
        name = re.sub(r"\s*(GNU/Linux|Linux)$", "", name) if name.startswith("Debian") else name
        return f"{name} {version}"
    return values.get("PRETTY_NAME") or name


def is_wsl(proc_version: str, has_wsl_lib: bool) -> bool:
    """WSL kernels say "microsoft" in /proc/version ("...-microsoft-standard-WSL2"); WSL2 also mounts
    the Windows GPU libraries at /usr/lib/wsl/lib."""
    return "microsoft" in proc_version.lower() or has_wsl_lib


def detect_container(ctx) -> Optional[str]:
    """The container runtime envdoctor runs in, or None: the container probe's rule (one place)."""
    from envdoctor.probe.container import detect_runtime

    return detect_runtime(ctx)[0]
