"""`python -m torch.utils.collect_env` (or a copy of collect_env.py) as pasted into a report.

Layouts from 1.x ("Is debug build: No", "Python version: 3.6 (64-bit runtime)") to 2.x ("Libc
version", "Python platform", "CUDA_MODULE_LOADING set to", a "CPU:" block, ROCm's "HIP runtime
version"). Runs only when the text has the report's own banner or first keys. Each key is read at its
first occurrence only (a report may go on with the user's own "OS: windows 10"). "Could not collect",
"N/A", "No CUDA" are unknown. "CUDA used to build PyTorch: None" is a CPU build: frameworks.torch.cuda
stays absent, frameworks.torch.extra.cuda_build is False. So is "Could not collect" there next to a real
"PyTorch version" and no ROCm version: collect_env prints every None that way (replace_nones), and the
field is torch.version.cuda itself, which cannot fail to be read. "CUDA runtime version" is what `nvcc
--version` said, i.e. the CUDA toolkit on PATH. The "[pip3]"/"[conda]" lines go to packages.py.
"""

from __future__ import annotations

import re
from typing import Callable

from envdoctor.read import packages
from envdoctor.read._util import (add_cudnn, add_gpu, arch, distro_name, major_minor, merge, numeric, pep440,
                                  put)

_MARKERS = ("Collecting environment information", "PyTorch version:", "Is debug build:")
_KEY = re.compile(r"([A-Za-z][A-Za-z0-9 _./()-]{1,45}?):(?:\s(.{0,400}))?$")
_UNKNOWN = ("", "could not collect", "n/a", "no cuda")
_OTHER_KEYS = {"Is debug build", "GCC version", "Clang version", "CMake version", "CUDA_MODULE_LOADING set to",
               "MIOpen runtime version", "Is XNNPACK available", "Is XPU available",
               "Versions of relevant libraries", "Caching allocator config", "Is a CUDA-capable GPU available"}
_GPU = re.compile(r"GPU (\d{1,3}): (.{1,100}?)(?: \(UUID: [^)]{0,80}\))?$")
_CUDNN_LIB = re.compile(r"libcudnn(?:_[a-z_]{1,40})?\.so\.(\d{1,2}\.\d{1,2}\.\d{1,3})$")
_PLATFORM_LINUX = re.compile(r"Linux-(\d[^\s]{0,80}?)-(x86_64|aarch64|ppc64le|s390x|armv7l)"
                             r"(?:-with-(?:glibc(\d\.\d{1,3}))?|$)")
_PLATFORM_WINDOWS = re.compile(r"Windows-\d{1,2}-(\d{1,2}\.\d\.\d{4,6})")
_PLATFORM_MAC = re.compile(r"macOS-(\d{1,2}(?:\.\d{1,2}){0,2})-(arm64|x86_64)")


def parse(text: str) -> dict:
    lines = [line.strip() for line in text.splitlines()]
    if not any(line.startswith(_MARKERS) for line in lines):
        return {}
    facts: dict = {}
    seen: set[str] = set()
    uncollected = False  # "CUDA used to build PyTorch: Could not collect"
    for i, line in enumerate(lines):
        m = _KEY.match(line)
        key = m.group(1) if m else None
        if key in _HANDLERS and key not in seen:
            seen.add(key)
            value = (m.group(2) or "").strip()
            if value.lower() not in _UNKNOWN or (key in _MULTILINE and not value):
                _HANDLERS[key](facts, value, _continuation(lines, i + 1) if key in _MULTILINE else [])
            elif key == "CUDA used to build PyTorch" and value.lower() == "could not collect":
                uncollected = True
    torch = facts.get("frameworks", {}).get("torch", {})
    if uncollected and torch.get("version") and "rocm" not in torch.get("extra", {}):
        put(facts, "frameworks.torch.extra.cuda_build", False)  # torch.version.cuda was None
    bracketed = "\n".join(line for line in lines if line.startswith(("[pip", "[conda]")))
    return merge(facts, packages.parse(bracketed)) if bracketed else facts


def _continuation(lines: list[str], start: int) -> list[str]:
    """The value lines under "GPU models and configuration:" / "cuDNN version: Probably one of …"."""
    out = []
    for line in lines[start:start + 64]:
        m = _KEY.match(line)
        if (m and (m.group(1) in _HANDLERS or m.group(1) in _OTHER_KEYS)) or (not line and out):
            break
        if line:
            out.append(line)
    return out


def _torch_version(facts: dict, value: str, _: list) -> None:
    version = pep440(value)
    put(facts, "frameworks.torch.version", version)
    put(facts, "python.packages.torch", version)


def _cuda_build(facts: dict, value: str, _: list) -> None:
    if value == "None":
        put(facts, "frameworks.torch.extra.cuda_build", False)
    else:
        put(facts, "frameworks.torch.cuda", major_minor(numeric(value.split()[0], 2)))


def _rocm_build(facts: dict, value: str, _: list) -> None:
    m = re.match(r"(\d{1,2}\.\d{1,2}(?:\.\d{1,6})?)", value)
    put(facts, "frameworks.torch.extra.rocm", m.group(1) if m else None)


def _os(facts: dict, value: str, _: list) -> None:
    m = re.match(r"(.{1,80}?)\s{0,120}\((x86_64|aarch64|arm64|ppc64le|s390x|armv7l)\)$", value)
    name = m.group(1) if m else value
    if name.lower().startswith("microsoft windows"):
        put(facts, "host.os", "windows")
        win = re.search(r"\((\d{2}\.\d\.\d{4,6})", value)
        put(facts, "host.os_version", win.group(1) if win else None)
        return
    mac = re.match(r"(?:macOS|Mac OSX) (\d{1,2}(?:\.\d{1,2}){0,2})", name)
    if mac:
        for key, v in (("os", "macos"), ("os_version", mac.group(1)), ("distro", f"macOS {mac.group(1)}")):
            put(facts, f"host.{key}", v)
    elif m or re.match(r"(Ubuntu|Debian|CentOS|Red Hat|Rocky|AlmaLinux|Fedora|openSUSE|SUSE|Arch|Amazon)\b", name):
        put(facts, "host.os", "linux")
        put(facts, "host.distro", distro_name(name))
    if m and facts.get("host", {}).get("os"):
        put(facts, "host.arch", m.group(2) if mac else arch(m.group(2)))


def _libc(facts: dict, value: str, _: list) -> None:
    m = re.fullmatch(r"glibc-(\d\.\d{1,3})", value)
    if m:
        put(facts, "host.os", "linux")
        put(facts, "host.glibc", m.group(1))


def _python_version(facts: dict, value: str, _: list) -> None:
    m = re.match(r"(\d\.\d{1,2}(?:\.\d{1,3})?)(?:[ab]|rc)?\d{0,2}(?:\s|$|\+)", value)
    put(facts, "python.version", m.group(1) if m else None)


def _python_platform(facts: dict, value: str, _: list) -> None:
    m = _PLATFORM_LINUX.match(value)
    if m:
        for key, v in (("os", "linux"), ("kernel", m.group(1)), ("arch", arch(m.group(2))), ("glibc", m.group(3))):
            put(facts, f"host.{key}", v)
        put(facts, "host.wsl", True if "microsoft" in m.group(1).lower() else None)
        return
    windows, mac = _PLATFORM_WINDOWS.match(value), _PLATFORM_MAC.match(value)
    if windows:
        put(facts, "host.os", "windows")
        put(facts, "host.os_version", windows.group(1))
    elif mac:
        put(facts, "host.os", "macos")
        put(facts, "host.os_version", mac.group(1))
        put(facts, "host.arch", mac.group(2))


def _cuda_available(facts: dict, value: str, _: list) -> None:
    put(facts, "frameworks.torch.device_available", {"true": True, "yes": True, "false": False,
                                                     "no": False}.get(value.lower()))


def _cuda_runtime(facts: dict, value: str, _: list) -> None:
    put(facts, "cuda_toolkit.version", major_minor(numeric(value, 2)))


def _gpus(facts: dict, value: str, more: list) -> None:
    items = [v for v in ([value] if value else []) + more if v.lower() not in _UNKNOWN]
    rocm = "rocm" in facts.get("frameworks", {}).get("torch", {}).get("extra", {})
    for item in items:
        m = _GPU.match(item)
        if m:
            add_gpu(facts, index=int(m.group(1)), name=m.group(2))
        elif rocm and not re.fullmatch(r"Device [0-9a-f]{4}", item):
            gfx = re.search(r"\b(gfx[0-9a-f]{2,4})\b", item)
            name = re.sub(r"\s{0,120}\(gfx[^)]{0,60}\)$", "", item)
            gpu = {"name": name, "gfx": gfx.group(1)} if gfx else {"name": name}
            facts.setdefault("amd", {}).setdefault("gpus", []).append(gpu)
        elif not rocm and len(items) == 1 and re.match(r"(NVIDIA|Tesla|Quadro|GeForce|TITAN)\b", item):
            add_gpu(facts, name=item)


def _driver(facts: dict, value: str, _: list) -> None:
    put(facts, "nvidia.driver_version", numeric(value, 2))


def _cudnn(facts: dict, value: str, more: list) -> None:
    paths = ([] if value.startswith("Probably one of") else [value]) + more
    found = [m.group(1) for m in (_CUDNN_LIB.search(p) for p in paths) if m]
    if not found and numeric(value, 3):
        found = [value]
    for version in dict.fromkeys(found):
        add_cudnn(facts, version, "collect_env")


def _cpu(facts: dict, value: str, more: list) -> None:
    """macOS's CPU block is the chip's name: an Apple M-series chip is an arm64 machine whatever
    architecture the Python runs as (x86_64 there is Rosetta)."""
    if any(re.match(r"Apple M\d", line) for line in [value, *more[:4]]):
        put(facts, "host.machine_arch", "arm64")


def _hip(facts: dict, value: str, _: list) -> None:
    put(facts, "frameworks.torch.extra.hip_runtime", numeric(value.split()[0], 2))


_HANDLERS: dict[str, Callable[[dict, str, list], None]] = {
    "PyTorch version": _torch_version, "CUDA used to build PyTorch": _cuda_build,
    "ROCM used to build PyTorch": _rocm_build, "OS": _os, "Libc version": _libc,
    "Python version": _python_version, "Python platform": _python_platform,
    "Is CUDA available": _cuda_available, "CUDA runtime version": _cuda_runtime,
    "GPU models and configuration": _gpus, "Nvidia driver version": _driver, "cuDNN version": _cudnn,
    "HIP runtime version": _hip, "CPU": _cpu,
}
_MULTILINE = {"GPU models and configuration", "cuDNN version", "CPU"}
