"""Lightning's environment report (`python -m lightning.pytorch.utilities.collect_env_details`, the
block its bug template asks for), printed by its `nice_print`: a "* Section:" line, then
"- key:   value" lines one tab deeper, a list as "- key:" and its items a level deeper still:

    * CUDA:
    	- GPU:
    		- Quadro RTX 5000
    	- available:         True
    	- version:           11.7
    * Lightning:
    	- pytorch-lightning: 1.9.2
    	- torch:             1.13.1
    * System:
    	- OS:                Darwin
    	- processor:         i386
    	- python:            3.10.8
    	- version:           Darwin Kernel Version 22.1.0: …; root:xnu-8792.41.9~2/RELEASE_ARM64_T6000

The CUDA section is torch's own view: `version` is torch.version.cuda (None: a CPU build), `available`
torch.cuda.is_available(), `GPU` the names of the devices torch sees. On macOS, `processor` is the
Python's architecture (i386 for an x86_64 Python) and a kernel built RELEASE_ARM64 an Apple-silicon
machine. Read only where the CUDA section's fixed keys are there.
"""

from __future__ import annotations

import re

from envdoctor.read._util import add_gpu, package_name, pep440, put

_SECTION = re.compile(r"^\s{0,8}\* (CUDA|Lightning|Packages|System):\s*$")
_ITEM = re.compile(r"^\s{0,16}- ([\w.+-]{1,80}):\s{0,40}(.{0,300}?)\s*$")
_LIST_ENTRY = re.compile(r"^\s{0,24}-(?: (\S.{0,200}?))?\s*$")  # an empty one too (platform.architecture()'s "")
_OS = {"Linux": "linux", "Darwin": "macos", "Windows": "windows"}


def parse(text: str) -> dict:
    if "* CUDA:" not in text or "- available:" not in text:
        return {}
    facts: dict = {}
    section, listing, gpus = None, None, 0
    for line in text.splitlines():
        header = _SECTION.match(line)
        if header:
            section, listing = header.group(1), None
            continue
        item = _ITEM.match(line)
        if item and section:
            key, value = item.group(1), item.group(2)
            listing = key if not value else None
            _read(facts, section, key, value)
            continue
        entry = _LIST_ENTRY.match(line)
        if entry and entry.group(1) and section == "CUDA" and listing == "GPU":
            add_gpu(facts, index=gpus, name=entry.group(1))
            gpus += 1
        elif line.strip() and not entry:
            section, listing = None, None  # the block ended
    return facts


def _read(facts: dict, section: str, key: str, value: str) -> None:
    if section == "CUDA":
        _cuda(facts, key, value)
    elif section in ("Lightning", "Packages"):
        name = "torch" if key == "pyTorch_version" else package_name(key)
        version = pep440(value)
        if version and key != "pyTorch_debug":
            put(facts, f"python.packages.{name}", version)
    elif section == "System":
        _system(facts, key, value)


def _cuda(facts: dict, key: str, value: str) -> None:
    if key == "available" and value in ("True", "False"):
        put(facts, "frameworks.torch.device_available", value == "True")
    elif key == "version":
        if value == "None":
            put(facts, "frameworks.torch.extra.cuda_build", False)  # torch.version.cuda is None
        elif re.fullmatch(r"\d{1,2}\.\d{1,2}", value):
            put(facts, "frameworks.torch.cuda", value)
    elif key == "GPU" and value and value != "None":
        add_gpu(facts, name=value)


def _system(facts: dict, key: str, value: str) -> None:
    if key == "OS" and value in _OS:
        put(facts, "host.os", _OS[value])
    elif key == "python" and re.fullmatch(r"3\.\d{1,2}\.\d{1,2}", value):
        put(facts, "python.version", value)
    elif key == "processor" and value in ("i386", "x86_64"):
        put(facts, "host.arch", "x86_64")
    elif key == "processor" and value in ("arm", "arm64", "aarch64"):
        put(facts, "host.arch", "arm64" if value != "aarch64" else "aarch64")
    elif key == "version" and "RELEASE_ARM64" in value:
        put(facts, "host.machine_arch", "arm64")
