"""jetson-wrong-wheel: on a Jetson, a framework build that is not a Jetson build for this JetPack.

Generic aarch64 wheels are CPU-only or carry no kernels for the Jetson GPU (binary compatibility
does not hold on Tegra); JetPack needs NVIDIA's Jetson builds. The jetson matrix says where each
framework's builds come from per JetPack and how they are versioned.
"""

from __future__ import annotations

from typing import Iterable, Optional

from envdoctor.diagnose import knowledge, rule
from envdoctor.diagnose._common import FRAMEWORK_NAMES, framework_of, gpu_ccs, local_tag, package, plan_fix
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
            evidence=(f"jetson.jetpack={jetson.jetpack}", f"jetson.l4t={jetson.l4t}", f"python.packages.{dist}={version}"),
        )


def _why_wrong(facts: Facts, framework: str, dist: str, version: str) -> Optional[str]:
    tag = local_tag(version) or ""
    deep = framework_of(facts, framework) if dist != "paddlepaddle" else None
    if dist == "paddlepaddle":
        return "`paddlepaddle` is Paddle's CPU package."
    if tag == "cpu":
        return f"The installed {dist} is a CPU build (+cpu)."
    if deep and deep.version and not deep.import_error:
        if framework == "pytorch" and not deep.cuda:
            return "The installed torch has no CUDA support (torch.version.cuda is None)."
        if framework == "pytorch" and deep.arch_list:
            ccs = [cc for _, _, cc in gpu_ccs(facts)] or _soc_cc(facts)
            sm = {"sm_" + cc.replace(".", "") for cc in ccs}
            if sm and not sm & set(deep.arch_list):
                return (f"Its arch list ({' '.join(deep.arch_list)}) has no {', '.join(sorted(sm))} kernels; on Tegra "
                        "only an exact match runs.")
        if framework == "tensorflow" and deep.extra.get("is_cuda_build") is False:
            return "The installed TensorFlow is a CPU build (is_cuda_build=False)."
        return None
    verdict = knowledge.call("jetson", "is_jetson_build", framework, str(version), facts.jetson.jetpack)
    if verdict is False:
        return f"{dist} {version} is not one of the Jetson builds published for JetPack {facts.jetson.jetpack}."
    if verdict is None and framework == "tensorflow" and ".nv" not in version and "+nv" not in version:
        return "NVIDIA's JetPack TensorFlow wheels carry a +nvYY.MM version tag; this one is the generic aarch64 (CPU-only) wheel."
    if verdict is None and framework == "jax":
        return "No Jetson JAX wheels are published; the generic aarch64 jaxlib has no kernels for the Jetson GPU."
    return None


def _soc_cc(facts: Facts) -> list[str]:
    cc = knowledge.call("jetson", "compute_capability", facts.jetson.soc) if facts.jetson and facts.jetson.soc else None
    return [str(cc)] if cc else []

