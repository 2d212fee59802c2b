"""The fields of a tracker's issue template: "### Tensorflow Version⏎⏎2.11.0" (GitHub issue forms),
"- OS Platform and Distribution (e.g., Linux Ubuntu 16.04): Windows 10" and "**CUDA/cuDNN version**: 11.2/8.1"
(the older Markdown templates of TensorFlow, PyTorch, JAX, Paddle and most downstream projects).
A "CUDA Version:" right after a "Driver Version:" is nvidia-smi's header pasted a field a line, and a
CUDA field that names nvidia-smi or the driver ("CUDA Version shown by nvidia-smi:") says the same: the
driver's CUDA, not a toolkit.

Only the fields below are read, and only values that are what the field asks for (a version where a
version belongs, a known GPU product where a GPU belongs); "N/A", "No", "-" are unknown.
"""

from __future__ import annotations

import re
from typing import Callable, Optional

from envdoctor.read._util import add_cudnn, add_gpu, distro_name, put

_HEADING = re.compile(r"^\s{0,3}#{2,4}\s*(?P<field>[^#\n]{2,80}?)\s*:?\s*$")
_INLINE = re.compile(r"^\s{0,3}(?:[-*]\s+)?[*_]{0,3}(?P<field>[A-Za-z][A-Za-z /+.()-]{1,80}?)[*_]{0,3}\s*(?:\([^)\n]{0,80}\))?\s*[*_]{0,3}:[*_]{0,3}\s*(?P<value>\S.{0,200})$")  # "**OS**:", "_OS: …_"
_VERSION = re.compile(r"(?<![\d.])v?(\d{1,2}\.\d{1,3}(?:\.\d{1,3})?(?:(?:\.post|rc|a|b|\.dev)\d{0,4})?(?:\+[a-z0-9.]{1,20})?)(?![\d])", re.I)
_SMI_FIELD = re.compile(r"nvidia-smi|\bdriver\b", re.I)  # "CUDA Version shown by nvidia-smi": the driver's CUDA
_UNKNOWN = re.compile(r"^(?:n/?a|no|none|-+|unknown|not? (?:applicable|sure)|\?|_no response_|null|nan)\b", re.I)


def parse(text: str) -> dict:
    facts: dict = {}
    fields = _fields(text)
    for i, (field, value) in enumerate(fields):
        reader = _reader(field)
        if reader is _cuda_cudnn and (_after_driver_version(fields, i) or _SMI_FIELD.search(field)):
            reader = _driver_cuda  # nvidia-smi's header, pasted one field a line: the driver's CUDA
        if reader is _paddle and field.strip(" *`").lower() == "paddlepaddle":
            reader = _package("paddlepaddle")  # "paddlepaddle: 2.3.2", a package listed by its name
        if reader and value and not _UNKNOWN.match(value):
            reader(facts, value)
    return facts


def _after_driver_version(fields: list[tuple[str, str]], i: int) -> bool:
    return fields[i][0].strip().lower() == "cuda version" and any(
        f.strip().lower() in ("driver version", "nvidia-smi") for f, _ in fields[max(0, i - 2):i])


def _driver_cuda(facts: dict, value: str) -> None:
    match = re.match(r"(1[0-3]\.\d)(?![\d])", value)
    if match:
        put(facts, "nvidia.driver_cuda", match.group(1))


def _fields(text: str) -> list[tuple[str, str]]:
    lines = text.splitlines()
    found = []
    for i, line in enumerate(lines):
        inline = _INLINE.match(line)
        if inline:
            found.append((inline.group("field"), inline.group("value").strip(" *`_")))
            continue
        heading = _HEADING.match(line)
        if heading:
            value = next((v.strip() for v in lines[i + 1:i + 4] if v.strip()), "")
            if not _HEADING.match(value):
                found.append((heading.group("field"), value.strip(" *`")))
    return found


def _reader(field: str) -> Optional[Callable[[dict, str], None]]:
    first = re.match(r"[\w.-]*", field.strip(" *`").lower()).group(0)
    if re.search(r"[a-z][-_.][a-z]", first) and first not in _DIST_FIELDS:
        return None  # "pytorch-lightning: 1.9.2" / "TensorFlow.js version" name another package
    name = re.sub(r"\(.*?\)|[^a-z/ ]", " ", field.lower())
    name = " ".join(name.split())
    for words, reader in _READERS:
        if any(name == w or name.startswith(w + " ") for w in words):
            return reader
    return None


def _package(dist: str) -> Callable[[dict, str], None]:
    def read(facts: dict, value: str) -> None:
        match = _VERSION.search(value)
        if match and "." in match.group(1):
            put(facts, f"python.packages.{dist}", match.group(1))
    return read


def _paddle(facts: dict, value: str) -> None:
    """Paddle's template asks for "PaddlePaddle版本": the package only where the answer names the build
    ("paddlepaddle-gpu 2.5.1", "2.5.1 GPU", "2.4 cpu版"); a bare "paddle 1.8.4" is the framework's version."""
    match = _VERSION.search(value)
    if not match or "." not in match.group(1):
        return
    low = value.lower()
    path = ("python.packages.paddlepaddle-gpu" if "gpu" in low else "python.packages.paddlepaddle" if "cpu" in low
            else "frameworks.paddle.version")
    put(facts, path, match.group(1))


def _python(facts: dict, value: str) -> None:
    match = re.search(r"(?<![\d.])([23]\.\d{1,2}(?:\.\d{1,2})?)(?![\d.])", value)  # 2.7 too: old reports ask about it
    if match:
        put(facts, "python.version", match.group(1))


def _os(facts: dict, value: str) -> None:
    low = value.lower()
    if "wsl" in low:
        put(facts, "host.os", "linux")
        put(facts, "host.wsl", True)
    elif re.search(r"\bwin(?:dows?)?\s?(?:1[01]|7|8|server)?\b|\bwin1[01]\b", low):  # "Window" too
        put(facts, "host.os", "windows")
    elif re.search(r"mac\s?os|\bos\s?x\b|darwin|\bmac\b", low):  # not "centos x86_64"
        put(facts, "host.os", "macos")
    elif re.search(r"ubuntu|debian|linux|centos|fedora|rhel|red hat|rocky|alma|arch|suse|manjaro|mint", low):
        put(facts, "host.os", "linux")
        # platform.platform() ("Linux-5.15-...") is misc's; a list of several answers ("centos x86_64、cuda 12.4、GPU: P40")
        # is no distribution's name
        distro = distro_name(value) if not re.match(r"Linux-\d", value) else None
        distro = None if distro and re.search(r"[、,;|]", distro) else distro
        if distro and distro.lower() not in ("linux", "gnu/linux"):  # "Platform: Linux" names the OS, not a distribution
            put(facts, "host.distro", distro)


def _cuda_cudnn(facts: dict, value: str) -> None:
    low = value.lower()
    cuda = re.search(r"(?:cuda\s*:?\s*)?(?<![\d.])(1[0-3]\.\d)(?:\.\d{1,3})?(?![\d])", low)
    if cuda and "cudnn" not in low[:cuda.start()]:
        put(facts, "cuda_toolkit.version", cuda.group(1))
    cudnn = re.search(r"cudnn\s*(?:v|version)?\s*:?\s*(\d\.\d{1,2}(?:\.\d{1,3})?)", low) or re.search(r"/\s*(\d\.\d{1,2}(?:\.\d{1,3})?)", low)
    if cudnn:
        add_cudnn(facts, cudnn.group(1), "issue form")


def _gpu(facts: dict, value: str) -> None:
    from envdoctor.matrix import gpus

    value = re.sub(r"^GPU \d{1,3}: ", "", value)  # collect_env's "GPU models and configuration: GPU 0: NVIDIA …"
    value = re.sub(r"^\d{1,2} ?[x×*] ?", "", value)  # "2x NVIDIA Tesla P40": the product, not the count
    name = re.split(r"[,;(]|\s\d{1,3}\s?gb\b", value, maxsplit=1, flags=re.I)[0].strip()
    if name and gpus.product_for_name(name) is not None and re.search(r"[a-z]", name, re.I):
        add_gpu(facts, name=name if name.lower().startswith(("nvidia", "tesla")) else f"NVIDIA {name}")


def _driver(facts: dict, value: str) -> None:
    match = re.search(r"(?<![\d.])(\d{3}\.\d{2,3}(?:\.\d{2})?)(?![\d])", value)
    if match:
        put(facts, "nvidia.driver_version", match.group(1))


# Field names with a hyphen that still name a framework's package.
_DIST_FIELDS = ("tensorflow-gpu", "tensorflow-cpu", "paddlepaddle-gpu")
_READERS: tuple[tuple[tuple[str, ...], Callable[[dict, str], None]], ...] = (
    (("tensorflow version", "tf version", "tensorflow"), _package("tensorflow")),
    (("pytorch version", "torch version", "pytorch", "torch"), _package("torch")),
    (("torchvision version", "torchvision"), _package("torchvision")),
    (("jax version", "jax"), _package("jax")),
    (("jaxlib version", "jaxlib"), _package("jaxlib")),
    (("paddle version", "paddlepaddle version", "paddlepaddle"), _paddle),
    (("python version", "python"), _python),
    (("os platform and distribution", "os platform", "operating system", "os", "platform", "system"), _os),
    (("cuda/cudnn version", "cuda / cudnn version", "cuda version", "cuda/cudnn", "cuda"), _cuda_cudnn),
    (("cudnn version", "execution provider library version"), _cuda_cudnn),  # the latter: onnxruntime's form
    (("gpu model and memory", "gpu model", "gpu models and configuration", "gpu", "graphics card", "hardware"), _gpu),
    (("nvidia driver version", "driver version", "gpu driver version", "nvidia driver", "driver"), _driver),
)
