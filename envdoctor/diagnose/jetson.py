"""jetson-wrong-wheel: on a Jetson, a framework build that is not a Jetson build for this JetPack.

Generic aarch64 wheels are CPU-only or carry no kernels for the Jetson GPU (binary compatibility
does not hold on Tegra); JetPack needs NVIDIA's Jetson builds. The jetson matrix says where each
framework's builds come from per JetPack (and which versions those are); the gpus matrix says
whether an arch list runs on the Jetson GPU.
"""

from __future__ import annotations

from typing import Iterable, Optional

from envdoctor.diagnose import knowledge, rule
from envdoctor.diagnose._common import FRAMEWORK_NAMES, framework_of, gpu_ccs, local_tag, package, plan_fix, public
from envdoctor.facts import Facts
from envdoctor.findings import Finding

DISTS = (("pytorch", "torch"), ("tensorflow", "tensorflow"), ("jax", "jaxlib"), ("paddle", "paddlepaddle-gpu"),
         ("paddle", "paddlepaddle"))


@rule
def jetson_wrong_wheel(facts: Facts) -> Iterable[Finding]:
    jetson = facts.jetson
    if jetson is None:
        return
    for framework, dist in DISTS:
        version = package(facts, dist)
        if not version:
            continue
        why = _why_wrong(facts, framework, dist, version)
        if not why:
            continue
        name = FRAMEWORK_NAMES[framework]
        yield Finding(
            code="jetson-wrong-wheel", severity="error", section="jetson",
            title=f"{dist} {version} is not a Jetson build for JetPack {jetson.jetpack or '?'}",
            detail=(f"{why} On a Jetson, {name} needs a build made for this JetPack's CUDA and the Tegra GPU; a generic "
                    "aarch64 wheel runs on the CPU only or fails with \"no kernel image is available\"."),
            fix=plan_fix(facts, framework, f"Install the JetPack {jetson.jetpack or ''} build of {name} "
                         f"(`envdoctor install {framework}` names the source)".replace("  ", " ")),
            evidence=(f"jetson.jetpack={jetson.jetpack}", f"jetson.l4t={jetson.l4t}", f"jetson.soc={jetson.soc}",
                      f"python.packages.{dist}={version}"),
        )


def _why_wrong(facts: Facts, framework: str, dist: str, version: str) -> Optional[str]:
    jetson = facts.jetson
    if dist == "paddlepaddle":
        return "`paddlepaddle` is Paddle's CPU package."
    if local_tag(version) == "cpu":
        return f"The installed {dist} is a CPU build (+cpu)."
    sources = knowledge.jetson_sources(jetson.jetpack, framework, jetson.soc)
    if any(version in s.versions for s in sources):
        return None  # exactly one of this JetPack's published Jetson builds
    other = _other_jetpack(facts, framework, version)
    if other:
        return f"It is NVIDIA's build for JetPack {other}, not for JetPack {jetson.jetpack}."
    deep = framework_of(facts, framework)
    if deep and deep.version and not deep.import_error:
        return _why_wrong_deep(facts, framework, deep)
    if sources and all(s.kind == "none" for s in sources):
        note = next((s.note for s in sources if s.note), "")
        return (f"No {FRAMEWORK_NAMES[framework]} GPU build is published for JetPack {jetson.jetpack}"
                f"{' (' + note + ')' if note else ''}; the generic wheel installed here cannot use the Jetson GPU.")
    if framework == "pytorch":
        return _why_wrong_torch(facts, version, sources)
    if framework == "tensorflow" and "nv" not in (local_tag(version) or ""):
        return "NVIDIA's JetPack TensorFlow wheels carry a +nvYY.MM version tag; this one is the generic aarch64 (CPU-only) wheel."
    return None


def _other_jetpack(facts: Facts, framework: str, version: str) -> Optional[str]:
    """The JetPack of another major line whose Jetson builds list this version (rows for a whole line
    like "5" and for one release like "5.0")."""
    mine = (facts.jetson.jetpack or "").split(".")[0]
    if not mine:
        return None  # this Jetson's JetPack is unknown: no build is "for another one"
    for jetpack in knowledge.jetpacks():
        if jetpack.split(".")[0] == mine:
            continue
        for source in knowledge.jetson_sources(jetpack, framework):
            if version in source.versions:
                return source.jetpack
    return None


def _jetson_cc(facts: Facts) -> Optional[str]:
    ccs = [cc for _, _, cc in gpu_ccs(facts)]
    if ccs:
        return ccs[0]
    soc = facts.jetson.soc if facts.jetson else None
    return knowledge.jetson_soc_cc(soc)


def _why_wrong_deep(facts: Facts, framework: str, deep) -> Optional[str]:
    if framework == "pytorch" and not deep.cuda:
        return "The installed torch has no CUDA support (torch.version.cuda is None)."
    if framework == "tensorflow" and deep.extra.get("is_cuda_build") is False:
        return "The installed TensorFlow is a CPU build (is_cuda_build=False)."
    cc = _jetson_cc(facts)
    if framework == "pytorch" and deep.arch_list and cc:
        verdict = knowledge.build_runs_on(deep.arch_list, cc)
        if verdict is not None and not verdict.runs:
            return f"Its arch list ({' '.join(deep.arch_list)}) cannot run on this Jetson: {verdict.reason}."
    return None


def _why_wrong_torch(facts: Facts, version: str, sources) -> Optional[str]:
    tag = local_tag(version) or ""
    cc = _jetson_cc(facts)
    if tag.startswith("cu") and cc:
        arches = knowledge.torch_arch_list(str(public(version)), tag, "linux_aarch64")
        verdict = knowledge.build_runs_on(arches, cc) if arches else None
        if verdict is not None and not verdict.runs:
            return f"It is a generic aarch64 (SBSA) {tag} build: {verdict.reason}."
        if verdict is None and not any(s.kind == "official" for s in sources):
            return f"It is a generic aarch64 {tag} build from the PyTorch index, not a JetPack build."
    return None
