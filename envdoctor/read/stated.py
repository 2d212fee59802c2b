"""Machine facts a reporter states in a sentence: "TF 2.12 on Windows 11 with an RTX 3060",
"Ubuntu 22.04, Python 3.10, GeForce GTX 1080", "my tensorflow version is 2.12.0.", "pytorch version
is: 1.10.1 and torchvision version is: 0.11.2+cu102", "NVIDIA driver 470.82".

Only named, unambiguous statements are read, each once (the first that is not a requirement), never
from an issue form's unticked checkbox ("- [ ] Linux in WSL") or a template's bracketed example
("(e.g., Linux Ubuntu 16.04)"), and
never from a command line, a requirement or an image name ("pip install tensorflow==2.15", "requires Python 3.9+",
"nvcr.io/nvidia/tensorflow:19.08-py3", whose tag is the image's release,
"TF >= 2.11", "upgrade to PyTorch 2.1", "Python 3.8 or later"):
  python.packages.<dist>      (torch with the CUDA said right after it as its tag: "PyTorch 1.7.1 + CUDA 10.1" -> 1.7.1+cu101)
                              tensorflow ("TF 2.12" / "TensorFlow 2.10.1" / "tensorflow-gpu 2.6" /
                              "TensorFlow v2.9" / "tensorflow version is 2.12.0"), torch ("PyTorch
                              2.1.0", "torch version: 1.13"), torchvision, torchaudio, jax, jaxlib,
                              paddlepaddle-gpu ("paddlepaddle-gpu 2.5.1")
  frameworks.paddle.version   "Paddle 2.5.1" / "paddlepaddle 2.5.1": the framework's version, not which
                              of its packages (CPU or GPU) is installed
  host.os, host.distro        "Windows 10" / "Win11" (not when the text mentions WSL: the GPU then
                              runs under Linux), "Ubuntu 22.04", "macOS 14", a Mac by chip or model ("Apple M2",
                              "MacBook Pro"); Linux for a Google Colab or
                              Kaggle notebook runtime (unless another OS is named too)
  host.machine_arch = arm64   an Apple-silicon Mac named by its chip ("Apple M2", "MacBook Pro M1", "Apple silicon")
  host.wsl                    the text names WSL ("on WSL2", "in WSL") and never as what was not used
                              ("native Windows", "without WSL", "not in WSL", "should I use WSL")
  python.version              "Python 3.10" / "python 3.11.4" / "python version is 3.9"
  nvidia.driver_version       "driver 535.104.05" / "NVIDIA driver version 470.82" (three-digit major)
  nvidia.gpus = []            none, where the reporter says so ("I don't have an nvidia card", "my laptop has
                              no GPU", "on a machine without a GPU", "do I need an NVIDIA GPU?", "Intel Xe
                              Graphics card") and names no NVIDIA GPU
  amd.gpus[].name             an AMD GPU ("RX 6800", "Radeon RX 7900 XTX", or "AMD GPU" for "on my AMD
                              card") where no NVIDIA one is named
  nvidia.gpus[].name          an NVIDIA product the GPU table knows: "RTX 3060", "GeForce GTX 1080 Ti",
                              "Quadro K4000", "TITAN V", "MX150", "RTX A6000", "GTX 960M",
                              "Tesla V100", "NVIDIA A100", and a bare data-centre name only with its
                              memory or form factor ("V100/16GB", "A100 80GB", "H100 SXM"); not the one
                              the reporter replaced ("upgraded from an 1080TI to RTX 5070")
  nvidia.gpus[].compute_capability  the reporter's own ("my compute capability (2.1)") where no GPU the
                              table knows is named
A sentence's full stop ends a version ("Windows 11.", "2.12.0."). The least trusted reader: any tool
output or template field that says the same leaf wins.
"""

from __future__ import annotations

import re
from typing import Optional

from envdoctor.read._util import add_cudnn, add_gpu, distro_name, pep440, put
from envdoctor.textnorm import flatten

_END = r"(?![\w+]|\.\d|\.x|\.\*)"  # not part of a longer version, a wildcard or a range
_NO_RANGE = r"(?! ?(?:or|and|to|-|~) ?(?:later|newer|higher|above|greater|up|\d))"  # not "2.1 or later", "2.1 to 2.3"
_AFTER = _END + _NO_RANGE
_IS = r"(?: version| ?版本)?(?: (?:is|was)| ?[:=]{1,2}| -| ?\()? ?:? ?v?"  # "tensorflow version is: 2.12" / "torch: 2.1" / "pytorch=2.0.1" / "TF - 2.1.0" / "TensorFlow==2.3" / "pytorch version(2.1.2)"
_VERSION = r"(\d{1,2}\.\d{1,2}(?:\.\d{1,3})?(?: ?\+ ?[a-z0-9]{2,12}(?:\.[a-z0-9]{1,12}){0,3})?)"  # "2.8.0 + cu129" too
_NAMES = (  # (dist, how a sentence names it); a longer name first where one contains another
    ("tensorflow", r"(?:TF|TensorFlow(?:[-_]gpu)?)"),
    ("torchvision", r"torchvision"), ("torchaudio", r"torchaudio"),
    ("torch", r"(?:py)?torch"),
    ("jaxlib", r"jaxlib"), ("jax", r"jax"),
    ("intel-extension-for-pytorch", r"(?:ipex|intel[-_ ]extension[-_ ]for[-_ ]pytorch)"),
    ("keras", r"keras"),
    ("paddlepaddle-gpu", r"paddlepaddle[-_]gpu"), ("paddlepaddle", r"(?:paddlepaddle|paddle)"),
)
_PACKAGES = tuple((dist, re.compile(r"(?<![\w./:-])(?:versions? of )?" + name + _IS + _VERSION + _AFTER, re.I | re.A))
                  for dist, name in _NAMES)
# The CUDA a torch was built with, said right after its version: "PyTorch 1.7.1 + CUDA 10.1", "torch 1.13 with CUDA 11.7".
_BUILT_WITH_CUDA = re.compile(r"\s{0,2}(?:\+|with|w/|(?:built|compiled) (?:with|for))\s{0,2}CUDA\s?(\d{1,2})\.(\d)(?:\.\d{1,3})?(?![\d.])", re.I | re.A)
# A CUDA version stated as the machine's: "CUDA 10.2", "cuda: 11.8", "CUDA version is 11.7", "CUDA11.2",
# "CUDA toolkit 12.1", "cuda装的是10.0版本", "CUDA版本为11.2" (7.x-13.x; "cu118" is a wheel tag, not read here; "+cuda12.1"
# ends an apt package version, "libcudnn8 8.9.3.28-1+cuda12.1": that build's CUDA, not the machine's).
_CUDA = re.compile(r"(?<![\w./+-])CUDA(?:[ -]?(?:toolkit|version|ver\.?|runtime)| ?版本)?(?: (?:is|was)| ?[:=：]| ?装的是| ?(?:为|是))? ?v?"
                   r"((?:[7-9]|1[0-3])\.\d)(?:\.\d{1,3}){0,2}(?![\d]|\.\d|\.x|\+)" + _NO_RANGE, re.I | re.A)
# A cuDNN version stated as the machine's: "cudnn 8.9.2", "the cudnn is 9.3", "cuDNN version: 8.6", "cudnn v7.6.5", "cudnn版本8.2".
_CUDNN = re.compile(r"(?<![\w./-])cuDNN(?:[ -]?version| ?版本)?(?: (?:is|was)| ?[:=：]| ?(?:为|是))? ?v?"
                    r"([5-9]\.\d{1,2}(?:\.\d{1,3}){0,2})(?![\d]|\.\d|\.x|\.\*|\+)" + _NO_RANGE, re.I | re.A)
# Words before a CUDA version that make it another's: nvidia-smi's header ("Driver Version: 535.86 CUDA Version: 12.2",
# the driver's), a framework's build ("built with CUDA 11.8", "PyTorch 2.1 + CUDA 12.1", "cu118 / CUDA 11.8 wheel").
_NOT_THE_TOOLKIT = re.compile(r"driver|smi\b|built|compiled|build\b|wheel|torch[^,;\n]{0,12}(?:\+|with|w/) ?$|\bfor $",
                              re.I | re.A)
_CUDA_TAG = re.compile(r"\+cuda ?(\d{1,2})\.(\d)(?:\.\d{1,3})?$", re.I)  # "1.7.1+Cuda10.1", read as one version
_PYTHON = re.compile(r"(?<![\w.-])Python" + _IS + r"(3\.\d{1,2}(?:\.\d{1,2})?)" + _AFTER, re.I | re.A)
_DRIVER = re.compile(r"(?<![\w.-])(?:(?:NVIDIA |GPU |graphics )?driver(?: version)?(?: (?:is|was)| ?:)? ?v?|NVIDIA-SMI )"
                     r"([3-9]\d{2}\.\d{2,3}(?:\.\d{2,3})?)" + _END, re.I | re.A)
# Visual Studio (not VS Code) with its year is a Windows toolchain ("I have VS 2022, and CUDA 11.8").
_WINDOWS = re.compile(r"(?<![\w.-])(?:Windows? ?(?:10|11)|Win ?1[01]|(?:Visual Studio|VS) ?20(?:1[5-9]|2\d)(?! for Mac))(?![\w]|\.\d)",
                      re.I | re.A)
_UBUNTU = re.compile(r"(?<![\w.-])Ubuntu ?(\d{2}\.\d{2})(?![\d])", re.I | re.A)
_MACOS = re.compile(r"(?<![\w.-])mac ?OS (?:\w{1,12} )?(1[0-5](?:\.\d{1,2}){0,2})(?![\d])", re.I | re.A)
# A Mac named by its chip or its model ("Apple M2", "M1 Max", "MacBook Pro"): macOS, whatever its version.
_CHIP = r"Apple (?:silicon )?M[1-5]|(?:Apple|Mac) silicon|Mac ?M[1-5]|M[1-5] (?:Pro|Max|Ultra)|苹果 ?M[1-5]|M[1-5] ?芯片|(?<=on an )M[1-5]|(?<=on my )M[1-5]"  # an Apple-silicon chip named
_MAC_MODEL = re.compile(r"(?<![\w.-])(?:(?<=my )Mac|(?<=on a )Mac|(?<=on )Mac|(?<=on the )Mac|macOS ?版本|(?<=my )macOS\b|(?<=working on )macOS\b|(?<=running on )macOS\b|" + _CHIP
                        + r"|MacBook ?(?:Pro|Air)?|Mac ?(?:mini|Studio|Pro))(?![\w-])", re.I | re.A)
_APPLE_CHIP = re.compile(r"(?<![\w.-])(?:" + _CHIP + r"|M[1-5] (?:chip|Mac)|(?:MacBook(?: Pro| Air)?|Mac ?(?:mini|Studio)|iMac) \(?M[1-5])(?![\w-])",
                         re.I | re.A)
# The reporter says the machine runs Linux ("I am on Linux on a virtual machine", "on a Linux server").
_LINUX = re.compile(r"\b(?:I am|I.m|I.ve been|we are|we.re) (?:on|using|running|working on) (?:a |an )?(?:\w{1,12} )?Linux\b"
                    r"|\bon (?:a |an |my |our )?Linux (?:machine|box|server|system|host|VM|virtual machine|laptop|PC|computer|workstation|cluster)\b", re.I | re.A)
# The reporter says the machine has no NVIDIA GPU ("I don't have an nvidia card", "my laptop has no GPU").
_NO_NVIDIA = re.compile(r"\b(?:I|we|this (?:machine|computer|laptop|pc|server)|my (?:machine|computer|laptop|pc|server))"
                        r"(?: really| actually)? (?:don.t|do not|doesn.t|does not|haven.t|have not|has not|has no|have no)"
                        r" (?:even )?(?:have |has |own )?(?:a |an |any )?(?:NVIDIA |Nvidia |nvidia |nivida |nvida |nvidea |dedicated |discrete |CUDA[- ]capable )"
                        r"?(?:GPU|graphics? card|video card|card)s?\b(?! (?:with|that|which|of|large|big|enough|powerful|strong|fast|here|right now)\b)"
                        r"|\b(?:hardware accelerator|runtime type) (?:is |was |set to |= ?|: ?)?(?:none|cpu)\b"  # a notebook without a GPU
                        r"|\b(?:on|in|using) (?:an? |the |my |our )?(?:machine|computer|laptop|pc|server|node|host|VM|instance)s?"
                        r" \*?without\*? (?:an? |any )?(?:NVIDIA |Nvidia |nvidia |dedicated |discrete )?(?:GPU|graphics card)s?\b"  # "on a machine without a GPU"
                        r"|\b(?:machine|computer|laptop|pc|server|node|host|VM|instance) (?:lacks|is lacking) (?:an? |any )?(?:NVIDIA |Nvidia |nvidia |dedicated |discrete )?(?:GPU|graphics card)s?\b"
                        r"|\b(?:colab|notebook|kaggle)\b[^.\n]{0,40}?\bCPU(?:[- ]only)? (?:mode|runtime)\b"  # "ran the colab with CPU mode"
                        r"|\b(?:due to|because of|since there is|as there is|there is|there's) no (?:NVIDIA |Nvidia |nvidia )(?:GPU|graphics card|card)\b"
                        r"|\b(?:I.m|I am|we.re|we are) not (?:using|on|running) (?:an? )?NVIDIA\b(?! (?:driver|container|docker|image|runtime)s?\b)"
                        # an Intel GPU is the one they run on ("I'm using a integrated Intel GPU (iris xe graphics)")
                        r"|\b(?:I.m|I am|we.re|we are|only|just) (?:currently |now |still |only )?(?:using|running on|on|with|having|have|got) (?:an? |the |my )?(?:integrated |onboard |built-in )?"
                        r"Intel ?(?:\(R\) ?)?(?:(?:Iris|UHD|HD|Arc)\b|GPU|graphics|integrated)"
                        r"|\b(?:my|the|our) (?:only )?(?:GPU|graphics(?: card)?) (?:is|was) (?:an? |the )?(?:integrated |onboard )?Intel\b"
                        r"|\bIntel (?:Arc|Iris(?: Xe| Plus| Pro)?|UHD|HD|Xe)(?: Graphics)? (?:graphics )?card\b"  # "Intel XE Graphics card"
                        # "run Forge on Windows 11 with an Intel R GPU"
                        r"|\b(?:with|on|using) (?:an? |my |the )(?:integrated |onboard )?Intel ?(?:\(R\) ?|R )?(?:(?:Iris|UHD|HD|Arc|Xe)\w{0,4} )?(?:Graphics )?(?:GPU|iGPU|graphics card)\b"
                        # the reporter asks whether an NVIDIA GPU is needed: they have none
                        r"|\b(?:do I|do we|does it|will I) (?:really |absolutely )?need (?:an? |to have an? )?NVIDIA (?:GPU|graphics card|card)\b"
                        r"|\bIs (?:an? )?(?:NVIDIA )?GPU (?:a must|a must requirement|a requirement|required|mandatory|necessary)\b"
                        r"|\b(?:my|our|the) (?:GPU|graphics card|video card) is (?:unfortunately |sadly )?not (?:an? |by |from |made by )?(?:NVIDIA|Nvidia|nvidia)\b"
                        r"|\bI (?:only|just) have (?:a |the )?CPU\b(?! (?:version|build|torch|wheel|package))"  # "i only have cpu in my computer"
                        r"|\b(?:since|as|because) it (?:doesn.t|does not) have (?:an? |any )?(?:NVIDIA|Nvidia|nvidia) (?:GPU|graphics card|card)\b"  # "my Laptop ... since it doesn't have an NVIDIA graphics card"
                        r"|\b(?:my|the|our) (?:laptop|computer|pc|machine|notebook|system) (?:has|have|had|uses|used|is using|came with|with)"
                        r" (?:an? |only (?:an? )?)?(?:integrated |onboard )?Intel ?(?:\(R\) ?)?(?:Iris|Irish|UHD|HD|Arc|Xe)\b"
                        # "(I am using CPU only)": the machine, not a build of a framework
                        r"|\b(?:I.m|I am|we.re|we are) (?:only )?(?:using|running on|on) (?:a |the )?CPU[- ]only\b(?![- ](?:torch|pytorch|build|version|wheel|package|install|tensorflow|paddle|jax|mode))",
                        re.I | re.A)
_GEFORCE = r"(?:[1-5]0[5-9]0|16[56]0|9[5-8]0)"  # a GeForce model number: 1080, 2070, 3090, 4060, 5070, 1660, 980
_GPU = re.compile(r"(?<![\w.-])((?:NVIDIA )?(?:GeForce )?(?:RTX|GTX)[ -]?\d{3,4}(?: ?Ti| ?SUPER|M)?"
                  r"|(?:NVIDIA )?Quadro (?:RTX )?[KMP]?\d{3,5}|(?:NVIDIA )?(?:GeForce )?(?:GTX )?TITAN (?:Xp|X|V|RTX|Black|Z)"
                  r"|(?:NVIDIA )?(?:GeForce )?MX ?\d{3}|(?:NVIDIA )?RTX A\d{4}"
                  r"|(?:NVIDIA )?Tesla [KMPVT]\d{1,3}|(?:NVIDIA )?Tesla [CM]20\d0|NVIDIA (?:A|H|B|L)\d{1,3}[A-Z]?"
                  r"|(?:NVIDIA )?(?:GeForce )?GTS? \d{3,4}M?"  # "GT 730", "GT 625M", "GTS 450": the low-end GeForce lines
                  r"|[KPVAHB]\d{2,3}(?= ?/? ?\d{1,3} ?GB\b| \(?(?:PCIe|SXM|NVL))"
                  # a GeForce by its number alone: "GeForce 3090", "my 5070ti", "a 4090 GPU"
                  r"|(?:NVIDIA |GeForce |NVIDIA GeForce )" + _GEFORCE + r"(?: ?Ti| ?SUPER)?"
                  r"|" + _GEFORCE + r" ?Ti|" + _GEFORCE + r"(?= ?(?:GPU|graphics card|video card|card|RTX|GTX)s?\b))(?!(?!GPU)[\w]|\.\d)", re.I | re.A)
_PLURAL_GEFORCE = re.compile(r"((?:\d ?[x×] ?|\b(?:two|three|four|eight|my|our|\d) ))(" + _GEFORCE + r"(?: ?Ti)?)s\b", re.I | re.A)
_WSL = re.compile(r"(?<![\w-])WSL ?2?(?![\w-])", re.I | re.A)
_NOT_WSL = re.compile(r"native(?:ly)? (?:on )?windows|without (?:using )?wsl|not (?:in |on |using |with |under )?(?:the )?wsl"
                      r"|outside (?:of )?wsl|(?:use|try|install|switch to|move to|recommend\w{0,3}) (?:the )?wsl", re.I)
_AMD = re.compile(r"(?<![\w.-])((?:AMD )?Radeon(?: RX| Pro| VII)? ?\w{0,12}\d{2,4}\w{0,3}(?: XTX| XT)?|(?:AMD )?RX ?\d{3,4}(?: ?XTX| ?XT| ?M)?"
                  r"|(?:AMD )?(?:RX )?Vega(?: RX)? ?\d{2}|AMD \d{3,4}(?= series| \d{1,2} ?GB))(?![\w])", re.I | re.A)  # "AMD Vega 64", "AMD 570 series"
_HOSTED = re.compile(r"(?<!like )(?<!such as )\b(?:on|in|using|with) (?:a |the |my )?(?:Google )?Colab(?:oratory)?\b"
                     r"|\bColab (?:notebook|runtime|environment|instance|VM|Pro)\b"
                     r"|(?<!like )\b(?:on|in|using) (?:a |the )?Kaggle (?:notebook|kernel)s?\b", re.I | re.A)  # Linux runtimes
# The machine's GPU, in a form's field or a sentence, is an AMD one ("GPU: Radeon RX 580 Series", "with my rx570").
_AMD_IS_THE_GPU = re.compile(r"\b(?:GPU|graphics card|video card|graphics)(?: model)?(?: (?:is|was))? ?[:=-]? ?(?:an? |the )?(?:AMD |ATI )?(?:Radeon|RX ?\d{3,4})"
                             r"|\b(?:my|our|I have an?|I own an?|I'm using an?|I am using an?) (?:AMD |ATI )?(?:Radeon(?: RX)? ?|RX ?)\d{3,4}", re.I | re.A)
_A_CARD = re.compile(r"(?<![A-Za-z])A卡")  # Chinese for the reporter's own AMD card: no NVIDIA one
# An AMD GPU the reporter has, named by make only ("errors with cupy on amd gpu", "I have an AMD card", "A卡").
_AMD_OWNED = re.compile(r"\b(?:on|with|have|has|using|use|own) (?:an? |my |the )?(?:AMD|Radeon) (?:GPU|graphics card|card|video card)s?\b"
                        r"|(?:запуст\w{0,6}|работа\w{0,6}) на (?:видеокарт\w{1,3} )?(?:amd|radeon)\b|(?:用|是)(?:AMD|amd)(?:的)?(?:显卡|GPU)"
                        r"|" + _A_CARD.pattern, re.I)
# A template's example in brackets: "OS Platform and Distribution (e.g., Linux Ubuntu 16.04):" says nothing of the machine.
_EXAMPLE = re.compile(r"\((?:e\.? ?g\.?|for example|for instance|such as|like)[,:]? [^()\n]{0,160}\)|\((?:例如|比如|如|例)[^()\n]{0,160}\)", re.I)
_UNTICKED = re.compile(r"\s{0,8}[-*] \[ \]")  # an issue form's unticked checkbox: "- [ ] Linux in WSL"
_COMMAND = re.compile(r"(?:pip3?|conda|mamba|uv|poetry) (?:install|add|create)\b", re.I | re.A)


def _before_command(line: str) -> str:
    """A line without the install command in it: a command in backticks is dropped, else the line ends where the
    command begins ("laptops are Mac M1, so we cannot `pip install scvi-tools` anymore" keeps the Mac)."""
    m = _COMMAND.search(line)
    if m is None:
        return line
    opening = line.rfind("`", 0, m.start())
    closing = line.find("`", m.end())
    if opening != -1 and closing != -1 and line.count("`", 0, opening) % 2 == 0:
        return line[:opening] + " " + _before_command(line[closing + 1:])
    return line[:m.start()]


# Words just before a version that make it a wish, a requirement or a range, not what is installed.
_WANTED = re.compile(r"(?:requir\w{0,4}|needs?|need(?:ed|s)? to|support(?:s|ed)?|upgrad\w{1,4}(?: to)?|downgrad\w{1,4}(?: to)?"
                     r"|install(?:ing)?|try(?:ing)?|want(?:ed)?|recommend\w{0,3}|compatible with|since|before|after|until"
                     r"|older than|newer than|instead of|switch(?:ed)? to|>=?|<=?|~=|!=|==)\W{0,3}(?:\w{1,12}\W{1,3}){0,1}$", re.I | re.A)
_WORDS = ("cuda", "cudnn", "ipex", "intel_ext", "keras", "wsl", "radeon", "amd", "vega", "rx", "colab", "kaggle", "tf ", "tensorflow", "torch", "jax", "paddle", "python", "windows", "win1", "visual studio", "vs 20", "vs20", "ubuntu", "macos", "mac os",
          "rtx", "gtx", "gt ", "gts ", "tesla", "quadro", "titan", "mx", "nvidia", "driver", "apple", "苹果", "a卡", "mac", "gpu", "card", "linux", "intel")


def parse(text: str) -> dict:
    facts: dict = {}
    lower = text.lower()
    if not any(word in lower for word in _WORDS) and not re.search(r"\b[kpvahb]\d{2,3}\b", lower):
        return facts
    kept = [_before_command(line) for line in text.splitlines()  # a command names what is wanted, an unticked box nothing
            if not _UNTICKED.match(line)]
    flat = _EXAMPLE.sub(" ", flatten("\n".join(kept)).replace("**", "").replace("`", ""))
    flat = _PLURAL_GEFORCE.sub(r"\1\2 GPUs", flat)  # "2x 5090s": GeForces counted, the product is read
    for dist, pattern in _PACKAGES:
        # "Paddle 2.5" / "paddlepaddle 2.5" names the framework, not which of its two packages is installed
        path = "frameworks.paddle.version" if dist == "paddlepaddle" else f"python.packages.{dist}"
        _first_stated(facts, path, pattern, flat, dist)
    _first_stated(facts, "python.version", _PYTHON, flat)
    _first_stated(facts, "nvidia.driver_version", _DRIVER, flat)
    _cuda_toolkit(facts, flat)
    _cudnn(facts, flat)
    _os(facts, flat, lower)
    for m in _GPU.finditer(flat):
        if not _replaced(flat, m):
            _gpu(facts, m.group(1))
    _stated_capability(facts, flat)
    if "amd" in lower or "radeon" in lower or "vega" in lower or "a卡" in lower or re.search(r"\brx ?\d{3,4}\b", lower):
        _amd(facts, flat)
    if not (facts.get("nvidia") or {}).get("gpus") and _NO_NVIDIA.search(flat):
        put(facts, "nvidia.gpus", [])  # stated as none: known, and empty
    return facts


def _amd(facts: dict, flat: str) -> None:
    """An AMD GPU named ("RX 6800", "Radeon RX 7900 XTX"), or one by make only ("on my AMD GPU"): the
    machine's, unless an NVIDIA one is named too."""
    if (facts.get("nvidia") or {}).get("gpus"):
        return
    m = _AMD.search(flat)
    if m:
        name = re.sub(r"\s{1,20}", " ", m.group(1).strip())
        put(facts, "amd.gpus", [{"name": name if name.lower().startswith("amd") else f"AMD {name}"}])
        if _AMD_IS_THE_GPU.search(flat):  # "GPU: Radeon RX 580", "my GPU is an AMD RX 6800": the only one named
            put(facts, "nvidia.gpus", [])
    elif _AMD_OWNED.search(flat):
        put(facts, "amd.gpus", [{"name": "AMD GPU"}])
        if _A_CARD.search(flat):
            put(facts, "nvidia.gpus", [])


def _first_stated(facts: dict, path: str, pattern: re.Pattern, flat: str, dist: str = "") -> None:
    """The first match not preceded by words that make it a requirement or a wish."""
    for m in pattern.finditer(flat):
        if _WANTED.search(flat[max(0, m.start() - 40):m.start()]):
            continue
        if dist == "torch" and flat[m.start():m.start() + 12].lower().startswith("torch") and _part_of_name(flat, m.start()):
            continue
        value = pep440(_CUDA_TAG.sub(r"+cu\1\2", m.group(1).replace(" ", ""))) if dist else m.group(1)
        cuda = _BUILT_WITH_CUDA.match(flat, m.end()) if dist == "torch" and value and "+" not in value else None
        put(facts, path, f"{value}+cu{cuda.group(1)}{cuda.group(2)}" if cuda else value)  # "PyTorch 1.7.1 + CUDA 10.1"
        return


def _cuda_toolkit(facts: dict, flat: str) -> None:
    """The first CUDA version the reporter says they have ("cuda 10.2", "CUDA version is 11.7",
    "cuda装的是10.0版本"), not nvidia-smi's header (the driver's CUDA), nor the CUDA a framework was
    built with, nor a wish or a requirement."""
    version = _the_machines(_CUDA, flat)
    if version:
        put(facts, "cuda_toolkit.version", version)


def _cudnn(facts: dict, flat: str) -> None:
    """The first cuDNN version the reporter says they have ("the cudnn is 9.3", "cuDNN v8.9.2", "cudnn版本8.6"),
    with the same exclusions."""
    add_cudnn(facts, _the_machines(_CUDNN, flat), "stated")


def _the_machines(pattern: re.Pattern, flat: str) -> Optional[str]:
    """The first version `pattern` finds that is not wanted (a requirement, an upgrade) nor another's
    (nvidia-smi's header, a framework's or wheel's build)."""
    for m in pattern.finditer(flat):
        before = flat[max(0, m.start() - 60):m.start()]
        if not (_WANTED.search(before[-40:]) or _NOT_THE_TOOLKIT.search(before)):
            return m.group(1)
    return None


def _part_of_name(flat: str, at: int) -> bool:
    """"torch" inside "torchvision 0.15" is torchvision's (the lookbehind keeps "pytorch" whole)."""
    return bool(re.match(r"torch(?:vision|audio|text)", flat[at:at + 12], re.I | re.A))


def _os(facts: dict, flat: str, lower: str) -> None:
    if "wsl" in lower:
        if _WSL.search(flat) and not _NOT_WSL.search(flat):
            put(facts, "host.os", "linux")
            put(facts, "host.wsl", True)
        return
    ubuntu, windows, hosted = _machine_named(_UBUNTU, flat), _machine_named(_WINDOWS, flat), _HOSTED.search(flat) or _LINUX.search(flat)
    mac = _machine_named(_MACOS, flat) or _MAC_MODEL.search(flat)
    if sum(1 for m in (ubuntu or hosted, windows, mac) if m) != 1:  # none, or several machines: say nothing
        return
    if windows:
        put(facts, "host.os", "windows")
    elif mac:
        put(facts, "host.os", "macos")
        if _APPLE_CHIP.search(flat):
            put(facts, "host.machine_arch", "arm64")  # the hardware; the Python running on it may still be x86_64
    elif not ubuntu:  # a Colab or Kaggle runtime is a Linux machine, and one the reporter says runs Linux
        put(facts, "host.os", "linux")
    else:
        put(facts, "host.os", "linux")
        put(facts, "host.distro", distro_name(f"Ubuntu {ubuntu.group(1)}"))


# A GPU the machine had before ("upgraded from an 1080TI to RTX 5070", "replaced my 2080 with a 4090").
_FORMER_BEFORE = re.compile(r"\b(?:upgrad\w{0,4}|switch\w{0,4}|mov\w{0,3}|chang\w{0,4}|went|replac\w{0,4}|swapp?\w{0,4})"
                            r" (?:from )?(?:an? |my |the |our |old |an old )?$", re.I | re.A)
_FORMER_AFTER = re.compile(r"^(?: \w{1,12}){0,2}? (?:to|with|for)\b", re.I | re.A)


def _replaced(flat: str, m: re.Match) -> bool:
    """The GPU named is the one the reporter replaced, not the machine's own."""
    return bool(_FORMER_BEFORE.search(flat[max(0, m.start() - 40):m.start()]) and _FORMER_AFTER.match(flat[m.end():m.end() + 30]))


# The reporter's own GPU's compute capability ("the number of my compute capability (2.1)").
_MY_CC = re.compile(r"\b(?:my|our) (?:\w{1,12} ){0,3}?compute capability(?: is| of| =|:)? ?\(?(\d{1,2}\.\d)\)?(?![\d.])"
                    r"|\bcompute capability of (?:my|our|this) (?:GPU|card|graphics card) (?:is )?\(?(\d{1,2}\.\d)\)?(?![\d.])", re.I | re.A)


def _stated_capability(facts: dict, flat: str) -> None:
    """A compute capability the reporter gives for their GPU, where no GPU the gpus matrix knows was named
    (a GT 730 is Fermi or Kepler: only the reporter knows which)."""
    m = _MY_CC.search(flat)
    if m and not (facts.get("nvidia") or {}).get("gpus"):
        add_gpu(facts, compute_capability=m.group(1) or m.group(2))


def _machine_named(pattern: re.Pattern, flat: str) -> Optional[re.Match]:
    """The first mention that is not a range or a wish ("after Mac OS 10.11", "requires Windows 10")."""
    return next((m for m in pattern.finditer(flat) if not _WANTED.search(flat[max(0, m.start() - 40):m.start()])), None)


def _gpu(facts: dict, name: str) -> None:
    from envdoctor.matrix import gpus

    name = re.sub(r"\s{1,20}", " ", name.strip())
    name = re.sub(r"(?i)\b(RTX|GTX)[ -]?(\d)", r"\1 \2", name)  # "RTX3060" / "RTX-3060"
    number = re.fullmatch(r"(?:NVIDIA )?(?:GeForce )?((\d{1,2})\d{2})(?: ?(Ti|SUPER))?", name, re.I)
    if number:  # "GeForce 3090" / "5070ti": the series says RTX or GTX
        series = "GTX" if number.group(2) in ("9", "10", "16") else "RTX"
        suffix = {"ti": " Ti", "super": " SUPER"}.get((number.group(3) or "").lower(), "")
        name = f"{series} {number.group(1)}{suffix}"
    if re.fullmatch(r"[KPVAHB]\d{2,3}", name, re.I):  # a bare data-centre name
        name = f"NVIDIA {name.upper()}"
    if gpus.product_for_name(name) is None:
        return
    name = re.sub(r"(?i)^nvidia ", "", name)
    full = name if name.lower().startswith("tesla") else f"NVIDIA {name}"
    if not any(g.get("name") for g in (facts.get("nvidia") or {}).get("gpus", [])):
        add_gpu(facts, name=full)
