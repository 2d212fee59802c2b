"""Read a machine out of a pasted bug report.

`read_machine(text)` runs every parser on text already normalised by envdoctor.textnorm
(`normalise(raw).text`) and merges what they read into a partial facts dict (schema
envdoctor.facts/1): only the keys some output actually said; nothing is guessed. Where two parsers
read the same leaf, the more trusted wins, in this order: collect_env > nvidia_smi > lightning_env > misc > packages
> versions_quoted > stated (a sentence's words) > paths (the OS a traceback's file paths show).
"""

from __future__ import annotations

import re
from typing import Any

from envdoctor.facts import SCHEMA
from envdoctor.read import (collect_env, envdoctor_report, issue_form, lightning_env, misc, nvidia_smi, packages, paths, prose,
                            stated, versions_quoted)
from envdoctor.read._util import merge
from envdoctor.values import FRAMEWORK_DISTRIBUTIONS

PARSERS = (("collect_env", collect_env.parse), ("nvidia-smi", nvidia_smi.parse), ("lightning", lightning_env.parse),
           ("misc", misc.parse),
           ("packages", packages.parse), ("issue form", issue_form.parse), ("quoted", versions_quoted.parse),
           ("prose", prose.parse), ("stated", stated.parse), ("paths", paths.parse))
_NOTED = (  # (path, how a note shows it)
    ("frameworks.torch.version", "torch {}"), ("frameworks.tensorflow.version", "tensorflow {}"),
    ("frameworks.jax.version", "jax {}"), ("frameworks.paddle.version", "paddle {}"),
    ("frameworks.torch.cuda", "torch built for CUDA {}"),
    ("frameworks.tensorflow.cuda", "tensorflow built for CUDA {}"), ("frameworks.paddle.cuda", "paddle built for CUDA {}"),
    ("nvidia.driver_version", "driver {}"), ("nvidia.driver_cuda", "driver supports CUDA {}"),
    ("nvidia.failure", "nvidia-smi failure {}"), ("cuda_toolkit.version", "CUDA toolkit {}"),
    ("python.version", "Python {}"), ("host.os", "OS {}"), ("host.machine_arch", "{} hardware"), ("host.container", "in a {} container"), ("host.distro", "{}"), ("jetson.l4t", "L4T {}"), ("jetson.jetpack", "JetPack {}"),
    ("amd.rocm_version", "ROCm {}"), ("host.wsl", "WSL"),
)
# Shown by name and version (torch's companions right after it); other packages are counted.
_NAMED_DISTS = ("torch", "torchvision", "torchaudio") + tuple(
    dist for framework, dists in FRAMEWORK_DISTRIBUTIONS.items() if framework != "torch" for dist in dists)

__all__ = ["read_machine", "merge", "PARSERS"]

HEAD, TAIL = 200_000, 100_000  # characters of a longer text the parsers read (a pasted issue is a few kB)


def read_machine(text: str) -> tuple[dict, list[str]]:
    """(partial facts, notes). Facts carry "schema" only when some machine fact was read, else {}.

    A facts document envdoctor wrote (its Markdown report, its JSON) is the machine as it is: the
    prose parsers do not run, so nothing read from the summary can overwrite a measured value."""
    embedded = envdoctor_report.parse(text)
    if embedded:
        version = envdoctor_report.version_of(text)
        lead = f"envdoctor {version} report" if version else "envdoctor facts document"
        return embedded, [f"{lead}: its facts, as recorded"] + [f"{n} (report)" for n in _notes({}, embedded)]
    if len(text) > HEAD + TAIL:  # a long training log: reports and environment dumps sit at its ends
        text = text[:HEAD] + "\n" + text[-TAIL:]
    merged: dict = {}
    notes: list[str] = []
    for label, parse in PARSERS:
        part = parse(text)
        if label == "stated" and _get(merged, "nvidia.gpus"):  # a sentence's GPU only where no output named one
            part.get("nvidia", {}).pop("gpus", None)
            if part.get("nvidia") == {}:
                part.pop("nvidia")
        before = merged
        merged = merge(merged, part)
        notes.extend(f"{note} ({label})" for note in _notes(before, part))
    return ({"schema": SCHEMA, **merged} if merged else {}), notes


def _notes(before: dict, part: dict) -> list[str]:
    """What `part` added that `before` did not already say."""
    notes = []
    for path, shape in _NOTED:
        value = _get(part, path)
        if value not in (None, False) and _get(before, path) is None:  # host.wsl = false is no "WSL"
            notes.append(shape.format(value))
    gpus = _get(before, "nvidia.gpus") or []
    names, indexes = {g.get("name") for g in gpus}, {g.get("index") for g in gpus if "index" in g}
    notes += [_gpu(g) for g in _get(part, "nvidia.gpus") or []
              if (g.get("name") and g["name"] not in names) or (not g.get("name") and g.get("index") not in indexes)]
    if _get(part, "nvidia.gpus") == [] and _get(before, "nvidia.gpus") is None:
        notes.append("no NVIDIA GPU")
    known_amd = {g.get("name") for g in _get(before, "amd.gpus") or []}
    notes += [g["name"] for g in _get(part, "amd.gpus") or [] if g.get("name") and g["name"] not in known_amd]
    old = {e.get("version") for e in _get(before, "cudnn") or []}
    notes += [f"cuDNN {e['version']}" for e in _get(part, "cudnn") or [] if e.get("version") not in old]
    added = {name: version for name, version in (_get(part, "python.packages") or {}).items()
             if name not in (_get(before, "python.packages") or {})}
    named = [name for name in _NAMED_DISTS if name in added]
    notes += [f"{name} {added.pop(name)}" for name in named]  # a repeat of "torch X" goes at the end
    conda = len(set(_get(part, "python.conda_packages") or {}) - set(_get(before, "python.conda_packages") or {}))
    for n, what in ((len(added), "other pip package" if named else "pip package"), (conda, "conda package")):
        notes += [f"{n} {what}{'s' if n > 1 else ''}"] if n else []
    jetson = part.get("jetson")
    if isinstance(jetson, dict) and jetson.get("l4t") is None and jetson.get("jetpack") is None:
        notes.append(jetson.get("model") or "a Jetson")
    if part and not notes and merge(before, part) != before:  # something less prominent: say where it went
        notes.append("facts on " + ", ".join(sorted(part)))
    return list(dict.fromkeys(notes))


def _gpu(gpu: dict) -> str:
    if gpu.get("name"):
        cc = str(gpu.get("compute_capability") or "")
        return gpu["name"] + (f" (sm_{cc.replace('.', '')})" if re.fullmatch(r"\d{1,2}\.\d", cc) else "")
    cc = f" (compute capability {gpu['compute_capability']})" if gpu.get("compute_capability") else ""
    return f"GPU {gpu.get('index', '?')}{cc}"


def _get(data: Any, path: str) -> Any:
    for key in path.split("."):
        if not isinstance(data, dict):
            return None
        data = data.get(key)
    return data
