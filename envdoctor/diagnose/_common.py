"""Small helpers shared by the rule modules: reading package versions, build tags, GPUs, and
turning a planner's answer into a finding's fix.

Nothing here holds compatibility knowledge: versions, minimums and arch lists come from the
matrices (through `knowledge.py`). The planner is imported lazily, only when a fix needs it, so
`envdoctor check` stays fast.
"""

from __future__ import annotations

import re
from typing import Iterable, Optional

from packaging.version import InvalidVersion, Version

from envdoctor.facts import Facts
from envdoctor.findings import Fix
from envdoctor.matrix.memo import memoised
from envdoctor.matrix import drivers

# Distributions of each framework, by the planner's framework name.
FRAMEWORK_DISTS = {
    "pytorch": ("torch",),
    "tensorflow": ("tensorflow", "tensorflow-cpu", "tensorflow-gpu", "tensorflow-intel", "tensorflow-macos",
                   "tf-nightly"),
    "jax": ("jax", "jaxlib"),
    "paddle": ("paddlepaddle", "paddlepaddle-gpu"),
}
FRAMEWORK_NAMES = {"pytorch": "PyTorch", "tensorflow": "TensorFlow", "jax": "JAX", "paddle": "PaddlePaddle"}
# The deep probe's key (facts.frameworks) of each framework.
DEEP_KEYS = {"pytorch": "torch", "tensorflow": "tensorflow", "jax": "jax", "paddle": "paddle"}
# Distributions built against one exact torch.
TORCH_COMPANIONS = ("torchvision", "torchaudio", "torchtext")

_LOCAL = re.compile(r"\+(.+)$")


def package(facts: Facts, name: str) -> Optional[str]:
    """The installed version of a distribution (the first one if two copies are installed)."""
    value = facts.python.packages.get(name)
    return value.split("|")[0] if value else None


def package_copies(facts: Facts, name: str) -> list[str]:
    value = facts.python.packages.get(name)
    return value.split("|") if value else []


@memoised  # a Version is never changed once made: every rule may share it
def parse(version: Optional[str]) -> Optional[Version]:
    if not version:
        return None
    try:
        return Version(version)
    except InvalidVersion:
        return None


@memoised
def public(version: Optional[str]) -> Optional[Version]:
    """`2.6.0+cu124` -> Version("2.6.0")."""
    parsed = parse(version)
    return Version(parsed.public) if parsed else None


def local_tag(version: Optional[str]) -> Optional[str]:
    """`2.6.0+cu124` -> "cu124"; `0.4.30+cuda12.cudnn89` -> "cuda12.cudnn89"; None without a tag."""
    if not version:
        return None
    match = _LOCAL.search(version)
    return match.group(1).lower() if match else None


def cuda_of_tag(tag: Optional[str]) -> Optional[str]:
    """The CUDA version a PyTorch build tag names: "cu124" -> "12.4", "cu118" -> "11.8"."""
    if not tag:
        return None
    match = re.fullmatch(r"cu(\d{2,3})", tag)
    if not match:
        return None
    digits = match.group(1)
    return f"{digits[:-1]}.{digits[-1]}"


def major_minor(version: Optional[str]) -> Optional[str]:
    parsed = parse(version)
    if parsed is None:
        return None
    release = parsed.release + (0,)
    return f"{release[0]}.{release[1]}"


def version_tuple(text: Optional[str]) -> Optional[tuple[int, ...]]:
    """A dotted number (driver versions: "570.124.04", WSL "555.99") as a tuple of ints, read by the one
    version reading (matrix.drivers.version_tuple); None where it is not one ("570.x" is unknown, not 570)."""
    if not text:
        return None
    try:
        return drivers.version_tuple(text)
    except ValueError:
        return None


def driver_at_least(driver: str, minimum: str) -> bool:
    have, need = version_tuple(driver), version_tuple(minimum)
    if have is None or need is None:
        return True  # unknown: never raise an alarm on it
    width = max(len(have), len(need))
    return have + (0,) * (width - len(have)) >= need + (0,) * (width - len(need))


def gpu_ccs(facts: Facts) -> list[tuple[int, Optional[str], str]]:
    """(index, name, "8.6") for every GPU whose compute capability is known."""
    return [(g.index, g.name, g.compute_capability) for g in facts.gpus if g.compute_capability]


def has_usable_gpu(facts: Facts) -> bool:
    return facts.has_usable_driver and bool(facts.gpus)


def toolkits(facts: Facts) -> list:
    """Every CUDA toolkit found, the active one (facts.cuda_toolkit) first."""
    found = [facts.cuda_toolkit] if facts.cuda_toolkit else []
    return found + [t for t in facts.cuda_toolkits if t and t not in found]


def nvidia_wheels(facts: Facts) -> dict[str, str]:
    """Installed NVIDIA CUDA-library wheels (nvidia-cudnn-cu12, nvidia-cuda-runtime, ...)."""
    return {name: v for name, v in facts.python.packages.items() if name.startswith("nvidia-") and name != "nvidia-ml-py"}


def pip_cuda_runtime(facts: Facts) -> Optional[str]:
    """The CUDA version of the pip CUDA runtime wheel, if one is installed ("12.9")."""
    for name in ("nvidia-cuda-runtime", "nvidia-cuda-runtime-cu13", "nvidia-cuda-runtime-cu12", "nvidia-cuda-runtime-cu11"):
        version = package(facts, name)
        if version:
            return major_minor(version)
    return None


def framework_of(facts: Facts, framework: str):
    """The deep-probe record of a framework (frameworks.torch, ...), or None without --deep."""
    return facts.frameworks.get(DEEP_KEYS[framework])


def framework_named(name: str) -> Optional[str]:
    """The framework a distribution (tensorflow-cpu, torchvision, jax-cuda12-plugin) or a deep-probe
    key (torch, paddle) belongs to; None for anything else (numpy, nvidia-cudnn-cu12)."""
    for framework, dists in FRAMEWORK_DISTS.items():
        if name in dists or name == DEEP_KEYS[framework]:
            return framework
    if name in TORCH_COMPANIONS:
        return "pytorch"
    return "jax" if name.startswith("jax-cuda") else None


def installed_frameworks(facts: Facts) -> list[str]:
    return [fw for fw, dists in FRAMEWORK_DISTS.items() if any(package(facts, d) for d in dists)]


def framework_version(facts: Facts, framework: str) -> Optional[str]:
    for dist in FRAMEWORK_DISTS[framework]:
        version = package(facts, dist)
        if version:
            return version
    return None


def plan_fix(facts: Facts, framework: str, fallback: str, version: Optional[str] = None,
             cuda: str = "auto") -> tuple[Fix, ...]:
    """This machine's fix from the planner: its commands and manual steps.

    Falls back to one plain step when the planner for the framework is not available or finds
    nothing that fits (its steps then say what to change, e.g. the driver).
    """
    from envdoctor.diagnose import knowledge

    if knowledge.platform(facts) is None or _accelerator_unknown(facts):
        # OS, architecture, GPUs or their driver not recorded: no wheel can be chosen (the planner would
        # read unknown GPUs as none and propose a CPU build)
        return (fallback, f"`envdoctor install {framework}` on that machine prints the exact command")
    try:
        from envdoctor.plan import PlanRequest, make_plan

        plan = make_plan(facts, PlanRequest(framework=framework, version=version, cuda=cuda))
    except Exception:  # planner not there yet, or it cannot plan for this machine
        return (fallback,)
    fixes: list[Fix] = [tuple(c) for c in plan.commands]
    fixes.extend(plan.steps)
    if not fixes:
        fixes.extend(plan.warnings or ())
        fixes.append(fallback)
    return tuple(fixes)


def _accelerator_unknown(facts: Facts) -> bool:
    """Whether the build to install depends on what nobody recorded: whether there are NVIDIA GPUs, or,
    with GPUs listed, whether their driver works (a macOS or Jetson machine's build does not)."""
    if facts.host.os == "macos" or facts.jetson is not None:
        return False
    nv = facts.nvidia
    if facts.gpus or (nv is not None and nv.pci_devices):
        return facts.driver_present is None
    if facts.amd is not None and facts.amd.gpus:
        return False
    return not facts.known("nvidia.gpus")


def evidence(**facts_used: object) -> tuple[str, ...]:
    return tuple(f"{k.replace('__', '.')}={v}" for k, v in facts_used.items())


def first(items: Iterable):
    for item in items:
        return item
    return None
