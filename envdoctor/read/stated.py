"""Machine facts a reporter states in a sentence: "TF 2.12 on Windows 11 with an RTX 3060",
"Ubuntu 22.04, Python 3.10, GeForce GTX 1080".

Only named, unambiguous statements are read, each once (the first), and never from a command line
or a requirement ("pip install tensorflow==2.15", "requires Python 3.9+", "TF >= 2.11"):
  python.packages.tensorflow  "TF 2.12" / "TensorFlow 2.10.1" / "tensorflow-gpu 2.6" / "TensorFlow v2.9"
  host.os, host.distro        "Windows 10" / "Win11" (not when the text mentions WSL: the GPU then
                              runs under Linux), "Ubuntu 22.04", "macOS 14"
  python.version              "Python 3.10" / "python 3.11.4"
  nvidia.gpus[].name          an NVIDIA product the GPU table knows: "RTX 3060", "GeForce GTX 1080 Ti",
                              "Tesla V100", "NVIDIA A100"
The least trusted reader: any tool output or template field that says the same leaf wins.
"""

from __future__ import annotations

import re

from envdoctor.read._util import add_gpu, distro_name, put
from envdoctor.textnorm import flatten

_AFTER = r"(?![\d.]|\+|\.x| ?(?:or|and|to|-) ?(?:later|newer|higher|above|\d))"
_TF = re.compile(r"(?<![A-Za-z0-9_.-])(?:TF|TensorFlow(?:-gpu)?) (?:version )?v?" + r"(\d\.\d{1,2}(?:\.\d{1,2})?)" + _AFTER, re.I)
_PYTHON = re.compile(r"(?<![A-Za-z0-9_.-])Python ?v?(3\.\d{1,2}(?:\.\d{1,2})?)" + _AFTER, re.I)
_WINDOWS = re.compile(r"(?<![A-Za-z0-9_.-])(?:Windows ?(?:10|11)|Win ?1[01])(?![A-Za-z0-9_.])", re.I)
_UBUNTU = re.compile(r"(?<![A-Za-z0-9_.-])Ubuntu ?(\d{2}\.\d{2})(?![\d])", re.I)
_MACOS = re.compile(r"(?<![A-Za-z0-9_.-])mac ?OS (?:\w{1,12} )?(1[0-5](?:\.\d{1,2}){0,2})(?![\d])", re.I)
_GPU = re.compile(r"(?<![A-Za-z0-9_.-])((?:NVIDIA )?(?:GeForce )?(?:RTX|GTX) ?\d{3,4}(?: ?Ti| ?SUPER)?"
                  r"|(?:NVIDIA )?Tesla [KMPVT]\d{1,3}|NVIDIA (?:A|H|B|L)\d{1,3}[A-Z]?)(?![A-Za-z0-9_.])", re.I)
_COMMAND = re.compile(r"(?:pip3?|conda|mamba|uv|poetry) (?:install|add|create)\b", re.I)


def parse(text: str) -> dict:
    facts: dict = {}
    lower = text.lower()
    if not any(word in lower for word in ("tf ", "tensorflow", "python", "windows", "win1", "ubuntu", "macos", "mac os", "rtx", "gtx", "tesla", "nvidia")):
        return facts
    kept = [line for line in text.splitlines() if not _COMMAND.search(line)]  # a command names what is wanted
    flat = flatten("\n".join(kept)).replace("**", "")
    m = _TF.search(flat)
    if m:
        put(facts, "python.packages.tensorflow", m.group(1))
    m = _PYTHON.search(flat)
    if m:
        put(facts, "python.version", m.group(1))
    _os(facts, flat, lower)
    for m in _GPU.finditer(flat):
        _gpu(facts, m.group(1))
    return facts


def _os(facts: dict, flat: str, lower: str) -> None:
    if "wsl" in lower:
        return
    ubuntu, windows, mac = _UBUNTU.search(flat), _WINDOWS.search(flat), _MACOS.search(flat)
    if sum(1 for m in (ubuntu, windows, mac) if m) != 1:  # none, or several machines: say nothing
        return
    if windows:
        put(facts, "host.os", "windows")
    elif mac:
        put(facts, "host.os", "macos")
    else:
        put(facts, "host.os", "linux")
        put(facts, "host.distro", distro_name(f"Ubuntu {ubuntu.group(1)}"))


def _gpu(facts: dict, name: str) -> None:
    from envdoctor.matrix import gpus

    name = re.sub(r"\s{1,20}", " ", name.strip())
    name = re.sub(r"(?i)\b(RTX|GTX)(\d)", r"\1 \2", name)
    if gpus.product_for_name(name) is None:
        return
    name = re.sub(r"(?i)^nvidia ", "", name)
    full = name if name.lower().startswith("tesla") else f"NVIDIA {name}"
    if not any(g.get("name") for g in (facts.get("nvidia") or {}).get("gpus", [])):
        add_gpu(facts, name=full)
