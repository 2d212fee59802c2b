"""gpu-arch-unsupported: the installed build carries no kernels for a GPU of this machine.

The build's arch list comes from the deep probe (`torch.cuda.get_arch_list()`) when `--deep` ran,
from the pytorch matrix otherwise; whether an arch list runs on a compute capability is the gpus
matrix's binary-compatibility rule.
"""

from __future__ import annotations

from typing import Iterable, Optional

from envdoctor.diagnose import knowledge, rule
from envdoctor.diagnose._common import cuda_of_tag, framework_of, gpu_ccs, package, plan_fix, public
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
    toolkit = toolkit_cannot_build_for_gpu(facts)
    if toolkit is not None:
        yield toolkit


def toolkit_cannot_build_for_gpu(facts: Facts) -> Optional[Finding]:
    """The active CUDA toolkit cannot compile for a GPU of this machine, nor for an older GPU of its
    generation (CUDA 10.2 on an RTX 3090, CUDA 12.4 on an RTX 5090): extensions built with it, and a
    framework that uses the system's CUDA (Paddle's GPU builds load it), have no kernels there. A
    warning: torch, TensorFlow and JAX wheels carry their own CUDA and do not use it."""
    toolkit = facts.cuda_toolkit.version if facts.cuda_toolkit else None
    if not toolkit or facts.jetson is not None:
        return None
    unreachable, sm = _unreachable(facts, toolkit)
    if not unreachable:
        return None
    return Finding(
        code="gpu-arch-unsupported", severity="warning", section="toolkit",
        title=f"CUDA toolkit {toolkit} cannot build for {sm}",
        detail=", ".join(f"{_gpu(i, name)} has compute capability {cc}" for i, name, cc in unreachable)
               + f"; no CUDA {toolkit} compiler targets it or an older GPU of its generation (gpus matrix), so CUDA "
               "extensions built with it, and a framework that uses the system's CUDA (Paddle's GPU builds), have no "
               "kernels for it: they fail with \"no kernel image is available\", hang, or fall back to the CPU.",
        fix=("Install a CUDA toolkit that supports this GPU (`envdoctor install cuda-toolkit`), and a framework build "
             "for that CUDA (`envdoctor install paddle --cuda auto`)",),
        evidence=(f"cuda_toolkit.version={toolkit}", *(f"nvidia.gpus[{i}].compute_capability={cc}" for i, _, cc in unreachable)),
    )


def _torch(facts: Facts) -> Iterable[Finding]:
    version, build, how = torch_build(facts)
    if version and not build:
        yield from _torch_any_build(facts, version)
    if not version or not build or not build.startswith("cu"):
        return
    arch_list, source = _torch_arch_list(facts, version, build)
    if how.startswith("conda") and source != "torch.cuda.get_arch_list()":
        return  # conda builds have their own arch lists; only the deep probe knows them
    if arch_list is None and how.startswith("python.packages") and cuda_of_tag(build):
        # A release the pytorch matrix does not cover (1.x), its CUDA named by its tag ("1.7.1+cu102").
        yield from _cuda_generation(facts, "pytorch", f"torch {version}", cuda_of_tag(build), f"python.packages.torch={version}",
                                    "Install a torch build for a CUDA version that supports this GPU: `envdoctor install pytorch --cuda auto`")
        return
    yield from _check(
        facts, "pytorch", "torch", version, arch_list, f"This build ({build}) carries code for", source,
        "torch.cuda.is_available() still says True, but the first real operation fails with \"no kernel image is "
        "available for execution on the device\" (and torch warns that the GPU \"is not compatible with the current "
        "PyTorch installation\").",
        "Install a torch build whose arch list includes {sm}: `envdoctor install pytorch --cuda auto`")


def _torch_any_build(facts: Facts, version: str) -> Iterable[Finding]:
    """Which build of torch is installed is unknown, but none of its release's CUDA builds has kernels
    for this GPU (torch 2.1 on an RTX 50xx): whichever it is, torch cannot use the GPU."""
    builds = knowledge.torch_cuda_arch_lists(str(public(version)))
    if not builds:
        return
    missing = []
    for i, name, cc in gpu_ccs(facts):
        verdicts = [runs(list(archs), cc) for _, archs in builds]
        if verdicts and all(v is not None and not v.runs for v in verdicts):
            missing.append((i, name, cc))
    if not missing:
        return
    sm = ", ".join(sorted({"sm_" + cc.replace(".", "") for _, _, cc in missing}))
    newest = max((archs for _, archs in builds), key=lambda a: max(_arch_order(x) for x in a))
    yield Finding(
        code="gpu-arch-unsupported", severity="error", section="frameworks",
        title=f"no build of torch {public(version)} has kernels for {sm}",
        detail=(f"None of torch {public(version)}'s CUDA builds ({', '.join(tag for tag, _ in builds)}; pytorch matrix) carries code for "
                + ", ".join(f"{_gpu(i, name)} (compute capability {cc})" for i, name, cc in missing)
                + f"; the newest arch list is {' '.join(newest)}. Whichever build is installed, torch cannot run on this GPU."),
        fix=plan_fix(facts, "pytorch", f"Install a torch release whose builds include {sm}: `envdoctor install pytorch --cuda auto`"),
        evidence=(f"python.packages.torch={version}", *(f"nvidia.gpus[{i}].compute_capability={cc}" for i, _, cc in missing)),
    )


def _tensorflow_jax(facts: Facts) -> Iterable[Finding]:
    consequence = "The framework fails on it or falls back to the CPU."
    fallback = "Install a {framework} release whose CUDA build covers {sm} (`envdoctor matrix {framework}`)"
    tf = tensorflow_gpu(facts)
    if tf:
        yield from _check(facts, "tensorflow", "tensorflow", tf, knowledge.gpu_archs("tensorflow", str(public(tf))),
                          "Its CUDA build carries", "tensorflow matrix", consequence, fallback)
    yield from _tensorflow_legacy(facts, fallback.format(sm="this GPU", framework="tensorflow"))
    plugin = next((n for n in sorted(facts.python.packages) if n.startswith("jax-cuda") and n.endswith("plugin")), None)
    jax = package(facts, "jax")
    if plugin and jax:
        extra = plugin[len("jax-"):].split("-plugin")[0]
        yield from _check(facts, "jax", plugin, package(facts, plugin), knowledge.gpu_archs("jax", str(public(jax)), extra),
                          "Its CUDA build carries", "jax matrix", consequence, fallback)


def _tensorflow_legacy(facts: Facts, fix: str) -> Iterable[Finding]:
    """A TensorFlow older than the matrix's release rows (1.x, 2.0-2.9): only its tested CUDA is known."""
    deep = framework_of(facts, "tensorflow")
    if deep and deep.version and not deep.import_error and deep.extra.get("is_cuda_build") is False:
        return  # the build itself says it has no CUDA
    for dist in ("tensorflow-gpu", "tensorflow"):
        version = tensorflow_gpu(facts) if dist == "tensorflow" else package(facts, dist)
        cuda = knowledge.tf_legacy_cuda(str(public(version))) if version and public(version) else None
        if cuda:
            yield from _cuda_generation(facts, "tensorflow", f"{dist} {version}", cuda, f"python.packages.{dist}={version}",
                                        fix, source="tensorflow matrix, [[legacy]] row")
            return


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
    for: an RTX 30xx (sm_86) under a CUDA 10.2 build, an RTX 50xx (sm_120) under CUDA 12.6."""
    paddle = facts.frameworks.get("paddle")
    cuda = paddle.cuda if paddle is not None else None
    if cuda:
        yield from _cuda_generation(facts, "paddle", "Paddle", cuda, f"frameworks.paddle.cuda={cuda}",
                                    "Install a paddlepaddle-gpu build for a CUDA version that supports this GPU "
                                    "(`envdoctor install paddle --cuda auto`)")


def _cuda_generation(facts: Facts, framework: str, what: str, cuda: str, evidence: str, fix: str,
                     source: str = "") -> Iterable[Finding]:
    """A build against CUDA X on a GPU that no toolkit X can compile for, nor any older GPU of its
    generation whose code it could run: its kernels (and its CUDA libraries') cannot run there."""
    unreachable, sm = _unreachable(facts, cuda)
    if not unreachable:
        return
    yield Finding(
        code="gpu-arch-unsupported", severity="error", section="frameworks",
        title=f"{what}, built for CUDA {cuda}, has no kernels for {sm}",
        detail=", ".join(f"{_gpu(i, name)} has compute capability {cc}" for i, name, cc in unreachable)
               + f"; no CUDA {cuda} toolkit compiles for it or for an older GPU of its generation (gpus matrix"
               + (f"; CUDA {cuda} from the {source}" if source else "") + "), so the build's kernels cannot run "
               "there: it fails with \"no kernel image is available\", hangs JIT-compiling, or falls back to the CPU.",
        fix=plan_fix(facts, framework, fix),
        evidence=(evidence, *(f"nvidia.gpus[{i}].compute_capability={cc}" for i, _, cc in unreachable)),
    )


def _unreachable(facts: Facts, cuda: str) -> tuple[list, str]:
    """The GPUs (index, name, compute capability) that CUDA `cuda` cannot reach, and their SASS names."""
    unreachable = [(i, name, cc) for i, name, cc in gpu_ccs(facts) if _generation_unreachable(cc, cuda)]
    return unreachable, ", ".join(sorted({"sm_" + cc.replace(".", "") for _, _, cc in unreachable}))


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


def first_torch_release_for(cc: str) -> tuple[Optional[str], Optional[str]]:
    """(the first release of the pytorch matrix with a CUDA build that runs on compute capability `cc`,
    or None when none does; the matrix's oldest release)."""
    from packaging.version import Version

    from envdoctor.matrix import pytorch

    ordered = sorted((r.version for r in pytorch.releases()), key=Version)
    first = next((version for version in ordered if _some_build_runs(version, cc)), None)
    return first, (ordered[0] if ordered else None)


def _some_build_runs(version: str, cc: str) -> bool:
    verdicts = (runs(list(archs), cc) for _, archs in knowledge.torch_cuda_arch_lists(version))
    return any(v is not None and v.runs for v in verdicts)


def runs(arch_list: list[str], cc: str):
    """The gpus matrix's verdict (`.runs`, `.reason`) on a build with these arches on capability `cc`."""
    return knowledge.build_runs_on(arch_list, cc)
