"""gpu-arch-unsupported: the installed build carries no kernels for a GPU of this machine.

The build's arch list comes from the deep probe (`torch.cuda.get_arch_list()`) when `--deep` ran,
from the pytorch matrix otherwise; whether an arch list runs on a compute capability is the gpus
matrix's binary-compatibility rule.
"""

from __future__ import annotations

from typing import Iterable, Optional

from envdoctor.diagnose import knowledge, rule
from envdoctor.diagnose._common import framework_of, gpu_ccs, package, plan_fix, public
from envdoctor.diagnose.frameworks import platform_key, tensorflow_gpu
from envdoctor.diagnose.knowledge import torch_build
from envdoctor.facts import Facts
from envdoctor.matrix import PLATFORMS
from envdoctor.findings import Finding


@rule
def gpu_arch_unsupported(facts: Facts) -> Iterable[Finding]:
    if facts.driver_present is False or facts.jetson is not None:
        return  # no working driver: no-nvidia-driver first; Jetson: jetson-wrong-wheel names the real problem
    # (A driver nobody recorded does not change which GPUs a build has kernels for.)
    yield from _torch(facts)
    yield from _tensorflow_jax(facts)
    yield from _paddle(facts)


def _torch(facts: Facts) -> Iterable[Finding]:
    version, build, how = torch_build(facts)
    if not version or not build or not build.startswith("cu"):
        return
    arch_list, source = _torch_arch_list(facts, version, build)
    if how.startswith("conda") and source != "torch.cuda.get_arch_list()":
        return  # conda builds have their own arch lists; only the deep probe knows them
    yield from _check(
        facts, "pytorch", "torch", version, arch_list, f"This build ({build}) carries code for", source,
        "torch.cuda.is_available() still says True, but the first real operation fails with \"no kernel image is "
        "available for execution on the device\" (and torch warns that the GPU \"is not compatible with the current "
        "PyTorch installation\").",
        "Install a torch build whose arch list includes {sm}: `envdoctor install pytorch --cuda auto`")


def _tensorflow_jax(facts: Facts) -> Iterable[Finding]:
    consequence = "The framework fails on it or falls back to the CPU."
    fallback = "Install a {framework} release whose CUDA build covers {sm} (`envdoctor matrix {framework}`)"
    tf = tensorflow_gpu(facts)
    if tf:
        yield from _check(facts, "tensorflow", "tensorflow", tf, knowledge.gpu_archs("tensorflow", str(public(tf))),
                          "Its CUDA build carries", "tensorflow matrix", consequence, fallback)
    plugin = next((n for n in sorted(facts.python.packages) if n.startswith("jax-cuda") and n.endswith("plugin")), None)
    jax = package(facts, "jax")
    if plugin and jax:
        extra = plugin[len("jax-"):].split("-plugin")[0]
        yield from _check(facts, "jax", plugin, package(facts, plugin), knowledge.gpu_archs("jax", str(public(jax)), extra),
                          "Its CUDA build carries", "jax matrix", consequence, fallback)


def _check(facts: Facts, framework: str, dist: str, version: str, arch_list, carries: str, source: str,
           consequence: str, fallback: str) -> Iterable[Finding]:
    """gpu-arch-unsupported for the GPUs of this machine that a build with `arch_list` cannot run on."""
    if not arch_list:
        return
    missing = [(i, name, cc) for i, name, cc in gpu_ccs(facts) if (v := runs(arch_list, cc)) is not None and not v.runs]
    if not missing:
        return
    sm = ", ".join(sorted({"sm_" + cc.replace(".", "") for _, _, cc in missing}))
    gpus = ", ".join(f"{_gpu(i, name)} (compute capability {cc})" for i, name, cc in missing)
    yield Finding(
        code="gpu-arch-unsupported", severity="error", section="frameworks",
        title=f"{dist} {version} has no kernels for {sm}",
        detail=f"{carries} {' '.join(arch_list)} ({source}); {gpus} cannot run any of it. {consequence}",
        fix=plan_fix(facts, framework, fallback.format(sm=sm, framework=framework)),
        evidence=(f"python.packages.{dist}={version}", f"arch_list={','.join(arch_list)}",
                  *(f"nvidia.gpus[{i}].compute_capability={cc}" for i, _, cc in missing)),
    )


def _gpu(index, name: Optional[str]) -> str:
    """"GPU 0 NVIDIA A100", or just the name where a report gave no index."""
    return " ".join(part for part in (f"GPU {index}" if index is not None else "", name or "") if part) or "a GPU"


def _paddle(facts: Facts) -> Iterable[Finding]:
    yield from _paddle_cuda(facts)
    version = package(facts, "paddlepaddle-gpu")
    minimum = knowledge.min_compute_capability("paddle", str(public(version))) if version else None
    if not minimum:
        return
    low = [(i, name, cc) for i, name, cc in gpu_ccs(facts) if _cc(cc) < _cc(minimum)]
    if not low:
        return
    yield Finding(
        code="gpu-arch-unsupported", severity="error", section="frameworks",
        title=f"paddlepaddle-gpu {version} needs compute capability {minimum} or newer",
        detail=", ".join(f"{_gpu(i, name)} has compute capability {cc}" for i, name, cc in low)
               + f"; Paddle {public(version)}'s GPU builds start at {minimum}.",
        fix=plan_fix(facts, "paddle", "Use an older Paddle release that still supports this GPU (`envdoctor matrix paddle`)"),
        evidence=(f"python.packages.paddlepaddle-gpu={version}", *(f"nvidia.gpus[{i}].compute_capability={cc}" for i, _, cc in low)),
    )


def _paddle_cuda(facts: Facts) -> Iterable[Finding]:
    """A Paddle running on CUDA X (its "Runtime API Version") on a GPU that no toolkit X can compile
    for, nor any older GPU of its generation whose code it could run: an RTX 30xx (sm_86) under a
    CUDA 10.2 build, an RTX 50xx (sm_120) under CUDA 12.6."""
    paddle = facts.frameworks.get("paddle")
    cuda = paddle.cuda if paddle is not None else None
    if not cuda:
        return
    unreachable = [(i, name, cc) for i, name, cc in gpu_ccs(facts) if _generation_unreachable(cc, cuda)]
    if not unreachable:
        return
    sm = ", ".join(sorted({"sm_" + cc.replace(".", "") for _, _, cc in unreachable}))
    yield Finding(
        code="gpu-arch-unsupported", severity="error", section="frameworks",
        title=f"Paddle built for CUDA {cuda} has no kernels for {sm}",
        detail=", ".join(f"{_gpu(i, name)} has compute capability {cc}" for i, name, cc in unreachable)
               + f"; no CUDA {cuda} toolkit compiles for it or for an older GPU of its generation (gpus matrix), "
               "so Paddle's kernels cannot run there: run_check hangs JIT-compiling or fails.",
        fix=plan_fix(facts, "paddle", "Install a paddlepaddle-gpu build for a CUDA version that supports this GPU "
                                      "(`envdoctor install paddle --cuda auto`)"),
        evidence=(f"frameworks.paddle.cuda={cuda}", *(f"nvidia.gpus[{i}].compute_capability={cc}" for i, _, cc in unreachable)),
    )


def _generation_unreachable(cc: str, cuda: str) -> bool:
    """No architecture of this GPU's major generation, up to its own, that toolkit `cuda` can build:
    binaries for sm_80 run on sm_86, so an sm_86 GPU under CUDA 11.0 is reachable, under 10.2 not."""
    from envdoctor.matrix import gpus

    same = [a.cc for a in gpus.archs() if _cc(a.cc)[0] == _cc(cc)[0] and _cc(a.cc) <= _cc(cc)]
    verdicts = [gpus.cuda_can_build(a, cuda) for a in same]
    return bool(verdicts) and all(v is False for v in verdicts)


def _cc(cc: str) -> tuple[int, ...]:
    return tuple(int(p) for p in cc.split(".")[:2])


def _torch_arch_list(facts: Facts, version: str, build: str) -> tuple[Optional[list[str]], str]:
    deep = framework_of(facts, "pytorch")
    if deep and deep.arch_list:
        return list(deep.arch_list), "torch.cuda.get_arch_list()"
    platform = platform_key(facts)
    if platform is None:  # every platform's build of this tag together: a GPU none of them covers is not covered
        lists = [knowledge.torch_arch_list(str(public(version)), build, p) for p in PLATFORMS]  # none where no such build
        union = sorted({a for archs in lists if archs for a in archs}, key=_arch_order)
        return (union, "pytorch matrix, every platform's build") if union else (None, "")
    arches = knowledge.torch_arch_list(str(public(version)), build, platform)
    return (list(arches), "pytorch matrix") if arches else (None, "")


def _arch_order(arch: str) -> tuple[int, str]:
    return int("".join(ch for ch in arch if ch.isdigit()) or 0), arch


def runs(arch_list: list[str], cc: str):
    """The gpus matrix's verdict (`.runs`, `.reason`) on a build with these arches on capability `cc`."""
    return knowledge.build_runs_on(arch_list, cc)
