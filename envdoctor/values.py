"""The values nodes are compared and judged on, read from one node's facts (the JSON form, `Facts.to_dict()`).

Each value is a short string; `None` when the node did not record it (unknown), `NONE` when it
recorded that there is none (no driver, framework not installed). Used by `envdoctor fleet` (group
nodes by value), the `--expect` policy and the Prometheus `envdoctor_info` labels, so the three
agree on what "the driver version" of a node is.
"""

from __future__ import annotations

import re
from typing import Any, Optional

NONE = "none"
# Framework -> the distributions that install it (the same table the --deep probe uses).
FRAMEWORK_DISTRIBUTIONS = {
    "torch": ("torch",),
    "tensorflow": ("tensorflow", "tensorflow-cpu", "tensorflow-gpu", "tensorflow-macos", "tf-nightly", "tf-nightly-cpu"),
    "jax": ("jax",),
    "jaxlib": ("jaxlib",),
    "paddle": ("paddlepaddle", "paddlepaddle-gpu"),
}
BASE_KEYS = ("driver_version", "driver_cuda", "gpus", "cuda_toolkit", "cudnn", "python")
_LOCAL_BUILD = re.compile(r"\+((?:cu|rocm)[0-9.]+|cpu)\b", re.I)


def _get(data: Any, *path: str) -> Any:
    for part in path:
        if not isinstance(data, dict):
            return None
        data = data.get(part)
    return data


def _recorded(facts: dict, block: str) -> bool:
    from envdoctor.facts import recorded_blocks

    return block in recorded_blocks(facts)


def _text(value: Any) -> Optional[str]:
    return None if value is None or isinstance(value, (dict, list)) else str(value)


def gpu_list(facts: dict) -> Optional[list[dict]]:
    """The NVIDIA GPUs, or None when not recorded ([] when recorded as none)."""
    nvidia = facts.get("nvidia")
    if nvidia is None:
        return [] if _recorded(facts, "nvidia") else None
    gpus = _get(nvidia, "gpus")
    return [g for g in gpus if isinstance(g, dict)] if isinstance(gpus, list) else None


def gpu_summary(gpus: Optional[list[dict]]) -> Optional[str]:
    """"8 x NVIDIA H100 80GB HBM3" (several models: joined with " + "), "0" for none, None unknown."""
    if gpus is None:
        return None
    if not gpus:
        return "0"
    counts: dict[str, int] = {}
    for g in gpus:
        name = _text(g.get("name")) or "unknown model"
        counts[name] = counts.get(name, 0) + 1
    return " + ".join(f"{n} x {name}" for name, n in sorted(counts.items()))


def _driver(facts: dict, field: str) -> Optional[str]:
    nvidia = facts.get("nvidia")
    if nvidia is None:
        return NONE if _recorded(facts, "nvidia") else None
    value = _text(_get(nvidia, field))
    if value is None and _get(nvidia, "failure"):
        return f"failed ({_get(nvidia, 'failure')})"
    if value is None and field == "driver_version" and _recorded(facts, "nvidia"):
        return NONE  # a probe looked and found no driver
    return value


def _toolkit(facts: dict) -> Optional[str]:
    toolkit = facts.get("cuda_toolkit")
    if toolkit is None:
        return NONE if _recorded(facts, "cuda_toolkit") else None
    return _text(_get(toolkit, "version"))


def _cudnn(facts: dict) -> Optional[str]:
    found = facts.get("cudnn")
    if not isinstance(found, list):
        return None
    versions = sorted({_text(c.get("version")) or "?" for c in found if isinstance(c, dict)})
    if not versions:
        return NONE if _recorded(facts, "cudnn") else None  # an empty list nobody recorded is unknown
    return ", ".join(versions)


def framework_version(facts: dict, framework: str) -> Optional[str]:
    packages = _get(facts, "python", "packages")
    for name in FRAMEWORK_DISTRIBUTIONS.get(framework, (framework,)):
        if isinstance(packages, dict) and packages.get(name):
            return _text(packages[name])
    built = _text(_get(facts, "frameworks", framework, "version"))
    if built:
        return built
    # "none" only where a probe recorded the whole package list; a hand-written or partial document
    # that lists some packages (or none) does not say the framework is absent.
    return NONE if isinstance(packages, dict) and _recorded(facts, "python") else None


def framework_build(facts: dict, framework: str) -> Optional[str]:
    """"cu128", "rocm6.4" or "cpu": the build's CUDA as --deep read it, else the version's local tag."""
    version = framework_version(facts, framework)
    if version == NONE:
        return NONE
    fw = _get(facts, "frameworks", framework)
    if isinstance(fw, dict) and not fw.get("import_error") and fw.get("version"):
        cuda = _text(fw.get("cuda"))
        return f"cu{cuda.replace('.', '')}" if cuda else "cpu"
    tag = _LOCAL_BUILD.search(version or "")
    return tag.group(1).lower() if tag else None


def node_values(facts: dict) -> dict[str, Optional[str]]:
    """Every compared value of one node, in report order (frameworks only where some value is known)."""
    values: dict[str, Optional[str]] = {
        "driver_version": _driver(facts, "driver_version"),
        "driver_cuda": _driver(facts, "driver_cuda"),
        "gpus": gpu_summary(gpu_list(facts)),
        "cuda_toolkit": _toolkit(facts),
        "cudnn": _cudnn(facts),
        "python": _text(_get(facts, "python", "version")),
    }
    for framework in FRAMEWORK_DISTRIBUTIONS:
        values[framework] = framework_version(facts, framework)
        if framework != "jaxlib":
            values[f"{framework}_build"] = framework_build(facts, framework)
    return values
