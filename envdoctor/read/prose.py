"""Facts a reporter states in words, where no tool output says them.

Only one fact is read from prose, and only from unambiguous phrasing:
  host.container   the program ran inside a Docker/Podman container: a shell prompt with Docker's
                   default host name (`root@3f2a9c1b7d4e:/#`, the container id's first 12 hex digits),
                   a `docker run` / `podman run` / `nvidia-docker run` command line, or the words
                   "in (the|a|my) docker container", "docker image", "inside docker", "through docker", or "in the
                   container" in a text that names the engine elsewhere. Singularity and Apptainer
                   are recorded as "apptainer", as the container probe names them.
  jetson           the machine is a Jetson: "JetPack 5.1.2" / "JetPack Version: 5.1.2" ("JP 4.6" where a
                   Jetson is named), "L4T R35.4.1" /
                   "L4T Release: R35.4.1", "Jetson AGX Orin" (the model), or the word JetPack alone (only
                   Jetsons have one; the block is then present with nothing known in it).
  python.packages.torch  a torch version written with its build tag: "pytorch 1.13.1+cpu", "torch
                   2.1.0+cu118", "torch version: 2.0.1+cu117", ">>> torch.__version__ '2.6.0+cu124'", xFormers'
                   "built for: PyTorch 2.1.2+cu121 with CUDA 1201 (you have 2.1.2+cpu)" (the second), "PyTorch, it
                   installs version 2.3.1+cpu" (a
                   version without +cpu/+cuXXX/+rocmX.Y may be a requirement, not what is installed).
  python.packages.*  a build-tagged pin in a pip command the text says was run: "install : pip install
                   torch==1.8.1+cu102 torchvision==0.9.1+cu102", "I installed jaxlib with pip install
                   jaxlib==0.1.70+cuda101", "$ pip install torch==2.1.0+cu118" (a shell prompt); never a
                   question or advice ("should I install", "try pip install", a line ending in "?"), and
                   only pins with a local build tag (+cpu, +cuXXX, +cudaXXX, +rocmX.Y): the build is what
                   matters, and a bare pin may have failed to resolve.
Words alone never say more (no GPU or driver is read from prose).
"""

from __future__ import annotations

import re

from envdoctor.read._util import package_name, pep440, put
from envdoctor.textnorm import flatten

_ENGINE = r"(nvidia-docker|docker|podman|singularity|apptainer|kubernetes|k8s)"
_CONTAINER = (
    re.compile(r"(?:^|\s)root@[0-9a-f]{12}:[/~]"),  # Docker's default hostname: the container id
    re.compile(rf"\b{_ENGINE}(?: container)?[ -](?:run|exec|compose|start)\b", re.I),
    re.compile(rf"\b(?:in|inside|within|into|from|on|through|via) (?:the |a |an |my |this |our |their )?(?:official )?{_ENGINE}\b", re.I),
    re.compile(rf"\b{_ENGINE} (?:image|container)s?\b", re.I),
    # "In the container, nvidia-smi worked": the engine is named elsewhere in the text
    re.compile(r"\b(?:in|inside|within) (?:the|a|my|this|our) container\b", re.I),
    re.compile(rf"{_ENGINE} ?(?:环境|容器|镜像|里|中|内|启动|运行)|(?:在|使用|用|启动)(?:了)? ?{_ENGINE}", re.I),  # "docker 环境问题", "在docker中"
)


_JETPACK = re.compile(r"\bJetPack(?: SDK)?(?: version)?:? ?(\d\.\d(?:\.\d{1,2})?)\b", re.I)
_JP = re.compile(r"\bJP ?v?(\d\.\d(?:\.\d{1,2})?)\b", re.I)  # "Jp 4.6": JetPack, in a text that names a Jetson
_L4T = re.compile(r"\bL4T(?: release)?(?: version)?:? ?R?(\d{2}\.\d{1,2}(?:\.\d{1,2})?)\b", re.I)
# Letters and digits, not \b, end a name: Chinese text writes its own characters right after it ("xavier nx上").
_MODEL = re.compile(r"\bJetson (AGX Orin|AGX Xavier|AGX Thor|Orin Nano|Orin NX|Xavier NX|TX2 NX|Nano|TX1|TX2|Orin|Xavier|Thor|AGX|NX)(?![A-Za-z0-9])"
                    r"|\b(AGX Orin|AGX Xavier|AGX Thor|Orin Nano|Orin NX|Xavier NX)(?![A-Za-z0-9])", re.I)  # names only Jetsons carry
_ACRONYMS = ("agx", "nx", "tx1", "tx2")
_JETPACK_WORD = re.compile(r"\bjetpack\b", re.I)
_TAGGED = r"(\d{1,2}\.\d{1,2}(?:\.\d{1,3})?(?:\.dev\d{8})?\+(?:cpu|cu\d{2,3}|rocm\d{1,2}\.\d{1,2}(?:\.\d{1,2})?))\b"
_BUILT_FOR = r"(?! with CUDA \d{3,4} \(you have)"  # xFormers' "built for: PyTorch X with CUDA 1201 (you have Y)"
# pip's log of what it removes: "Found existing installation: torch 1.13.1+cu117", "Uninstalling
# torch-1.13.1+cu117:", "Successfully uninstalled torch-1.13.1+cu117" name what is no longer installed.
_NOT_REMOVED = r"(?<!uninstalled )(?<!uninstalling )(?<!installation: )"
_TORCH = (
    re.compile(r"\bPyTorch [^ ()]{1,40} with CUDA \d{3,4} \(you have " + _TAGGED, re.I),
    re.compile(_NOT_REMOVED + r"(?<!install )\b(?:py)?torch(?: version)?(?: ?: ?| |-)v?" + _TAGGED + _BUILT_FOR, re.I),
    re.compile(r"torch\.__version__\)? ?(?:>>> ?|Out\[\d{1,4}\]: ?)?['\"]" + _TAGGED, re.I),
    # "When I use `pdm add torch` to install PyTorch, it installs version 2.3.1+cpu"
    re.compile(r"\b(?:py)?torch\b[^.\n]{0,60}?\b(?:installs|installed|install|gets|got|is|was) (?:the )?version " + _TAGGED, re.I),
)


_PIP = re.compile(r"\b(?:python3?(?:\.\d{1,2})? -m )?pip3? install\b", re.I)
_DID = re.compile(r"(?:^|[\s~/\\:)\]\w])[$>#] ?$|\binstall(?:ed)?(?: command)? ?: ?$"
                  r"|\b(?:I|we)(?:'ve| have| had)? (?:\w{1,20} ){0,3}?(?:installed|ran|run|used|did)\b", re.I)
_ASKING = re.compile(r"\b(?:should|shall|need to|how (?:do|to|can)|can I|could I|would|want to|try|please|recommend)\b", re.I)
_TAGGED_PIN = re.compile(r"(?<![\w.-])([A-Za-z][A-Za-z0-9._-]{0,60})==(\d{1,4}(?:\.\d{1,6}){0,3}"
                         r"\+(?:cpu|cu\d{2,3}|cuda\d{2,3}(?:\.cudnn\d{2,3})?|rocm\d{1,2}\.\d{1,2}(?:\.\d{1,2})?))(?![\w.+])")


def _installed_pins(facts: dict, text: str) -> None:
    """Build-tagged pins of a pip command that a line says was run (see the module docstring)."""
    for line in text.splitlines()[:20_000]:
        if "==" not in line or "+" not in line:
            continue
        command = _PIP.search(line)
        if command is None or line.rstrip().endswith("?"):
            continue
        before = line[max(0, command.start() - 120):command.start()]
        if not _DID.search(before.rstrip(" `'\"")) or _ASKING.search(before):
            continue
        for pin in _TAGGED_PIN.finditer(line, command.end(), min(len(line), command.end() + 600)):
            put(facts, f"python.packages.{package_name(pin.group(1))}", pep440(pin.group(2)))


def parse(text: str) -> dict:
    facts: dict = {}
    if "==" in text and "install" in text:
        _installed_pins(facts, text)
    lower = text.lower()
    jetson = any(word in lower for word in ("jetpack", "l4t", "jetson", "orin", "xavier"))
    container = any(word in lower for word in ("docker", "podman", "singularity", "apptainer", "kubernetes", "k8s", "root@"))
    torch = "torch" in lower and "+" in lower
    if not (jetson or container or torch):
        return facts
    flat = flatten(text).replace("**", "")
    if jetson:
        _jetson(facts, flat)
    for pattern in _TORCH if torch else ():
        m = pattern.search(flat)
        if m:
            put(facts, "python.packages.torch", pep440(m.group(1)))
            break
    for pattern in _CONTAINER if container else ():
        m = pattern.search(flat)
        if m:
            named = next((g for g in m.groups() if g), None)  # the engine, whichever branch named it
            engine = (named or _engine_named(lower)).lower()
            put(facts, "host.container", _RUNTIME.get(engine, "docker"))
            break
    return facts


_RUNTIME = {"podman": "podman", "singularity": "apptainer", "apptainer": "apptainer",  # as the container probe names them
            "kubernetes": "kubernetes", "k8s": "kubernetes"}


def _engine_named(lower: str) -> str:
    """The engine a text names elsewhere ("root@…" alone is Docker's prompt)."""
    return next((e for e in ("podman", "singularity", "apptainer", "kubernetes") if e in lower), "docker")


def _jetson(facts: dict, flat: str) -> None:
    for key, pattern in (("jetpack", _JETPACK), ("l4t", _L4T)):
        m = pattern.search(flat)
        if m:
            put(facts, f"jetson.{key}", m.group(1))
    m = _JP.search(flat) if "jetpack" not in facts.get("jetson", {}) and re.search(r"\bjetson\b", flat, re.I) else None
    if m:
        put(facts, "jetson.jetpack", m.group(1))
    m = _MODEL.search(flat)
    if m:
        name = m.group(1) or m.group(2)
        put(facts, "jetson.model", "Jetson " + " ".join(w.upper() if w.lower() in _ACRONYMS else w.capitalize() for w in name.split()))
    if "jetson" not in facts and _JETPACK_WORD.search(flat):
        facts["jetson"] = {}
