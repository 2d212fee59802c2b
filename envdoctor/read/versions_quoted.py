"""Versions that error messages quote, and platform hints in paths.

Messages are matched on the flattened text (every whitespace run one space), so a message wrapped
over several lines still reads; each pattern is the framework's own template with its variable
parts as bounded groups (a template quoted with its placeholders, "Found GPU%d %s …", does not match).
Python comes from tracebacks' paths as major.minor only (".../python3.10/site-packages/",
"…\\Python311\\Lib\\site-packages") and wheel tags pip downloaded ("-cp312-cp312-win_amd64.whl"),
and only when every such hint agrees; host.os/arch likewise ("C:\\…", "[WinError", "/usr/lib/
x86_64-linux-gnu/", "/opt/homebrew/", uv's "You're on macOS (`macosx_15_0_arm64`)", setuptools' build
folders "build/lib.macosx-10.9-x86_64-cpython-38", which name the building Python's platform; a WSL
kernel release, "4.4.0-19041-Microsoft" (WSL 1) or "…-microsoft-standard-WSL2", is Linux under WSL
whatever else the paste shows, and names the kernel).
"""

from __future__ import annotations

import re
from typing import Callable

from envdoctor.probe.nvidia import cuda_from_int
from envdoctor.read._util import add_cudnn, add_gpu, cudnn_from_int, package_name, pep440, put, sm_to_cc
from envdoctor.textnorm import flatten

_V = r"(\d{1,3}(?:\.\d{1,4}){1,3}(?:(?:a|b|rc|\.post|\.dev)\d{1,8})?)"  # a package version inside prose
_MM = r"(\d{1,2}\.\d{1,2})"
_GPU_NAME = r"((?:NVIDIA|Tesla|Quadro|GeForce|TITAN|Titan|Orin|Xavier)\b[A-Za-z0-9 ._/()-]{0,60}?)"


def _driver_too_old(facts: dict, m: re.Match, flat: str) -> None:
    put(facts, "nvidia.driver_cuda", cuda_from_int(int(m.group(1))))


def _torchvision_cuda(facts: dict, m: re.Match, flat: str) -> None:
    put(facts, "frameworks.torch.cuda", m.group(1))  # torchvision's own CUDA has no place in the facts


def _sm_unsupported(facts: dict, m: re.Match, flat: str) -> None:
    add_gpu(facts, name=m.group(1).strip(), compute_capability=sm_to_cc(m.group(2)))
    put(facts, "frameworks.torch.arch_list", m.group(3).split())


def _found_gpu(facts: dict, m: re.Match, flat: str) -> None:
    add_gpu(facts, index=int(m.group(1)), name=m.group(2), compute_capability=f"{m.group(3)}.{m.group(4)}")


def _loaded_cudnn(facts: dict, m: re.Match, flat: str) -> None:
    """TensorFlow's and XLA's (so JAX's too) cuda_dnn.cc message: who printed it decides the framework."""
    add_cudnn(facts, m.group(1), "log")
    before, lower = flat[max(0, m.start() - 200):m.start()], flat.lower()
    jax = "jaxlib" in lower or "jax[" in lower or "import jax" in lower
    if "tensorflow/" in before or ("tensorflow" in lower and not jax):
        put(facts, "frameworks.tensorflow.cudnn", m.group(2))
    elif jax and "tensorflow" not in lower:
        put(facts, "frameworks.jax.cudnn", m.group(2))


def _torch_cudnn(facts: dict, m: re.Match, flat: str) -> None:
    put(facts, "frameworks.torch.cudnn", ".".join(m.group(1, 2, 3)))
    add_cudnn(facts, ".".join(m.group(4, 5, 6)), "log")


def _torch_cudnn_int(facts: dict, m: re.Match, flat: str) -> None:
    put(facts, "frameworks.torch.cudnn", cudnn_from_int(int(m.group(1))))
    add_cudnn(facts, cudnn_from_int(int(m.group(2))), "log")


def _packages(*pairs: tuple) -> Callable[[dict, re.Match, str], None]:
    """(name, version group) pairs; a name given as a number is the group that holds the name."""
    def read(facts: dict, m: re.Match, flat: str) -> None:
        for name, group in pairs:
            name = m.group(name) if isinstance(name, int) else name
            put(facts, f"python.packages.{package_name(name)}", pep440(m.group(group)))
    return read


def _jax_cudnn(facts: dict, m: re.Match, flat: str) -> None:
    """"Found cuDNN version 8600, but JAX was built against version 8907" (runtime first)."""
    put(facts, "frameworks.jax.cudnn", cudnn_from_int(int(m.group(2))))
    add_cudnn(facts, cudnn_from_int(int(m.group(1))), "log")


def _jax_outdated(facts: dict, m: re.Match, flat: str) -> None:
    """"Outdated cuDNN installation found. Version JAX was built against: 8907 … Installed version: 8600"."""
    put(facts, "frameworks.jax.cudnn", cudnn_from_int(int(m.group(1))))
    add_cudnn(facts, cudnn_from_int(int(m.group(2))), "log")


def _driver_cuda(facts: dict, m: re.Match, flat: str) -> None:
    put(facts, "nvidia.driver_cuda", m.group(1))


def _paddle_compiled(facts: dict, m: re.Match, flat: str) -> None:
    if m.group(1) == "CUDNN":
        put(facts, "frameworks.paddle.cudnn", m.group(2))
        add_cudnn(facts, m.group(3), "log")
    else:
        put(facts, "frameworks.paddle.cuda", m.group(2))


def _paddle_device(facts: dict, m: re.Match, flat: str) -> None:
    cc = m.group(2) if "." in m.group(2) else f"{m.group(2)[:-1]}.{m.group(2)[-1]}"  # "CUDA Capability: 70"
    add_gpu(facts, index=int(m.group(1)), compute_capability=cc)
    put(facts, "nvidia.driver_cuda", m.group(3))
    put(facts, "frameworks.paddle.cuda", m.group(4))  # the CUDA runtime Paddle runs on: the one it was built for


def _paddle_cudnn(facts: dict, m: re.Match, flat: str) -> None:
    add_cudnn(facts, m.group(1), "paddle")


def _cpp_extension(facts: dict, m: re.Match, flat: str) -> None:
    put(facts, "cuda_toolkit.version", m.group(1))
    put(facts, "frameworks.torch.cuda", m.group(2))


def _yolo_banner(facts: dict, m: re.Match, flat: str) -> None:
    """Ultralytics' / YOLOv5's select_device banner: "Ultralytics 8.1.3 🚀 Python-3.10.11 torch-2.1.0+cpu
    CUDA:0 (NVIDIA GeForce RTX 3060, 12288MiB)" (or "CPU (…)" / "MPS (…)" after the torch version)."""
    put(facts, "python.version", m.group(1))
    put(facts, "python.packages.torch", pep440(m.group(2)))
    for gpu in _YOLO_GPU.finditer(flat, m.end(), min(len(flat), m.end() + 800)):
        add_gpu(facts, index=int(gpu.group(1)), name=gpu.group(2).strip(), memory_total_mib=int(gpu.group(3)))


_YOLO_GPU = re.compile(r"\bCUDA:(\d{1,2}) \(([^,()]{1,80}), (\d{3,7})MiB\)")

_MESSAGES: tuple[tuple[re.Pattern, Callable[[dict, re.Match, str], None]], ...] = (
    (re.compile(r"(?:Ultralytics|YOLOv\d{1,2})\b[^\n]{0,80}? Python-(\d\.\d{1,2}\.\d{1,3}) torch-([0-9][^\s]{0,40})"),
     _yolo_banner),
    (re.compile(r"The NVIDIA driver on your system is too old \(found version (\d{4,6})\)"), _driver_too_old),
    (re.compile(rf"PyTorch has CUDA Version ?= ?{_MM} and torchvision has CUDA Version ?= ?{_MM}"), _torchvision_cuda),
    (re.compile(rf"{_GPU_NAME} with CUDA capability (sm_\d{{2,3}}) is not compatible with the current PyTorch "
                r"installation\. The current PyTorch install supports CUDA capabilities "
                r"((?:(?:sm|compute)_\d{2,3}a? ?){1,40})"), _sm_unsupported),
    (re.compile(r"Found GPU(\d{1,3}) (.{1,80}?) which is of cuda capability (\d{1,2})\.(\d)"), _found_gpu),
    (re.compile(r"Loaded runtime CuDNN library: (\d{1,2}\.\d{1,2}\.\d{1,3}) but source was compiled with: "
                r"(\d{1,2}\.\d{1,2}\.\d{1,3})"), _loaded_cudnn),
    (re.compile(r"cuDNN version incompatibility: PyTorch was compiled against \((\d{1,2}), (\d{1,2}), (\d{1,3})\) "
                r"but found runtime version \((\d{1,2}), (\d{1,2}), (\d{1,3})\)"), _torch_cudnn),
    (re.compile(r"cuDNN version (?:incompatibility|mismatch): PyTorch was compiled against (\d{4,6}) but linked "
                r"against (\d{4,6})"), _torch_cudnn_int),
    (re.compile(rf"jaxlib version {_V} is newer than and incompatible with jax version {_V}"),
     _packages(("jaxlib", 1), ("jax", 2))),
    (re.compile(rf"jaxlib is version {_V}, but this version of jax requires version >= ?{_V}"),
     _packages(("jaxlib", 1))),
    (re.compile(rf"plugin (jax_[a-z0-9_]{{1,40}}) version {_V} is installed, but it is not compatible with the "
                rf"installed jaxlib version {_V}"), _packages((1, 2), ("jaxlib", 3))),
    (re.compile(r"Found cuDNN version (\d{4,6}), but JAX was built against version (\d{4,6})"), _jax_cudnn),
    (re.compile(r"Outdated cuDNN installation found\. (?:E )?Version JAX was built against: (\d{4,6}) (?:E )?Minimum "
                r"supported: \d{4,6} (?:E )?Installed version: (\d{4,6})"), _jax_outdated),  # "E   ": pytest's prefix
    (re.compile(rf"The NVIDIA driver's CUDA version is {_MM} which is older than the ptxas CUDA version"),
     _driver_cuda),
    (re.compile(rf"The installed Paddle is compiled with (CUDA|CUDNN) {_MM}, but (?:CUDA runtime|CUDNN) version "
                rf"in your machine is {_MM}"), _paddle_compiled),
    (re.compile(rf"device: (\d{{1,3}}), (?:GPU Compute Capability|CUDA Capability): (\d{{1,2}}\.\d|\d{{2,3}}), "
                rf"Driver API Version: {_MM}, Runtime API Version: {_MM}"), _paddle_device),
    (re.compile(rf"device: \d{{1,3}}, cuDNN Version: {_MM}\."), _paddle_cudnn),
    (re.compile(rf"The detected CUDA version \({_MM}\) (?:has a minor version mismatch with|mismatches) the version "
                rf"that was used to compile PyTorch \({_MM}\)"), _cpp_extension),
)


def parse(text: str) -> dict:
    facts: dict = {}
    flat = flatten(text)
    for pattern, read in _MESSAGES:
        found = list(pattern.finditer(flat))
        if read is _yolo_banner:  # the last start-up line is the run reported (an older, working one may come first)
            found.reverse()
        for m in found:
            read(facts, m, flat)
    _platform(facts, flat)
    return facts


_PY_POSIX = re.compile(r"/python3\.(\d{1,2})/(?:site|dist)-packages/")
_PY_WINDOWS = re.compile(r"\\Python3(\d{1,2})\\(?:Lib\\site-packages|python\.exe|Scripts)", re.I)
_WINDOWS = re.compile(r"(?<![A-Za-z])[A-Z]:\\(?:>|[A-Za-z0-9 _.$()-]{1,60}\\)|\[WinError \d{1,6}\]")
_MULTIARCH = re.compile(r"/usr/lib/(x86_64|aarch64)-linux-gnu/")
_WHEEL = re.compile(r"(?:Downloading|Using cached|Processing) \S{0,300}?-cp3(\d{1,2})-(?:cp3\d{1,2}[dmu]?|abi3)-"
                    r"(win_amd64|win_arm64|macosx_\d{1,2}_\d{1,2}_(?:arm64|x86_64)|(?:many|musl)?linux\S{0,40}?"
                    r"_(?:x86_64|aarch64))\.whl")
# setuptools' build folders carry the building interpreter's platform (sysconfig.get_platform()):
# "build/lib.macosx-10.9-x86_64-cpython-38" is an x86_64 Python, "build/temp.linux-aarch64-cpython-310" an aarch64 one.
_BUILD_DIR = re.compile(r"\bbuild[/\\](?:lib|temp|bdist)\.(macosx-\d{1,2}(?:\.\d{1,2})?-(?:x86_64|arm64)|linux-(?:x86_64|aarch64)|win-(?:amd64|arm64))"
                        r"(?:-cpython-3\d{1,2}|-3\.\d{1,2})?(?![\w.-])")
_UV_PLATFORM = re.compile(r"You're on (macOS|Linux|Windows) \(`([a-z0-9_]{3,60})`\)")


def _platform(facts: dict, flat: str) -> None:
    oses, arches, pythons = set(), set(), set()
    pythons.update(f"3.{m.group(1)}" for m in _PY_POSIX.finditer(flat))
    for m in _PY_WINDOWS.finditer(flat):
        pythons.add(f"3.{m.group(1)}")
        oses.add("windows")
    if _WINDOWS.search(flat):
        oses.add("windows")
    for m in _MULTIARCH.finditer(flat):
        oses.add("linux")
        arches.add(m.group(1))
    if "/opt/homebrew/" in flat:
        oses.add("macos")
    for m in _WHEEL.finditer(flat):
        pythons.add(f"3.{m.group(1)}")
        _tag(m.group(2), oses, arches)
    for m in _BUILD_DIR.finditer(flat):
        _tag(m.group(1), oses, arches)
    for m in _UV_PLATFORM.finditer(flat):
        _tag(m.group(2), oses, arches)
    kernel = _WSL_KERNEL.search(flat)
    wsl = kernel is not None or "-microsoft-standard-WSL2" in flat
    _only(facts, "host.os", {"linux"} if wsl else oses)
    put(facts, "host.wsl", True if wsl else None)
    if kernel is not None:
        put(facts, "host.kernel", kernel.group(1))
    _only(facts, "host.arch", arches)
    _only(facts, "python.version", pythons)


# A WSL kernel release, as /proc/version or `uname -a` print it: WSL 1 "4.4.0-19041-Microsoft",
# WSL 2 "5.15.153.1-microsoft-standard-WSL2" (older: "4.19.104-microsoft-standard").
_WSL_KERNEL = re.compile(r"(?<![\w.])(\d\.\d{1,2}\.\d{1,3}(?:\.\d{1,3})?-(?:\d{1,6}-)?[Mm]icrosoft(?:-standard(?:-WSL2)?)?)(?![\w-])")


def _tag(tag: str, oses: set, arches: set) -> None:
    """A wheel platform tag: win_amd64, macosx_15_0_arm64, manylinux_2_28_x86_64."""
    mac = tag.startswith("macosx")
    oses.add("windows" if tag.startswith("win") else "macos" if mac else "linux")
    if tag.endswith(("x86_64", "amd64")):
        arches.add("x86_64")
    elif tag.endswith(("arm64", "aarch64")):
        arches.add("arm64" if mac else "aarch64")


def _only(facts: dict, path: str, values: set) -> None:
    if len(values) == 1:
        put(facts, path, next(iter(values)))
