"""Rules about the CUDA libraries a framework loads at run time: cuDNN versions that do not fit,
and system CUDA libraries that a framework needs but cannot find."""

from __future__ import annotations

import re
from typing import Iterable, Optional

from envdoctor.diagnose import knowledge, rule
from envdoctor.diagnose._common import (
    FRAMEWORK_NAMES, framework_named, framework_of, has_usable_gpu, major_minor, nvidia_wheels, package, plan_fix, public,
    toolkits,
)
from envdoctor.diagnose.frameworks import tensorflow_gpu
from envdoctor.facts import Cudnn, Facts
from envdoctor.findings import Finding
from envdoctor.values import FRAMEWORK_DISTRIBUTIONS

_MISSING_LIB = re.compile(r"(lib(?:cudart|cudnn[a-z_]*|cublas(?:Lt)?|cufft|curand|cusolver|cusparse|nccl|nvrtc|nvJitLink|cuda)"
                          r"\.so(?:\.[\d.]+)?|(?:cudart|cudnn|cublas|cufft|curand|cusolver|cusparse|nvrtc)64_\w+\.dll)"
                          r"[^\n]{0,40}?(?:cannot open shared object file|not found|could not be found)", re.I)


def pip_cudnn(facts: Facts) -> Optional[Cudnn]:
    return next((c for c in facts.cudnn if (c.source or "").startswith("pip") and c.version), None)


def system_cudnn(facts: Facts) -> list[Cudnn]:
    return [c for c in facts.cudnn if c.version and not (c.source or "").startswith("pip")]


def loaded_cudnn(facts: Facts) -> Optional[Cudnn]:
    """The cuDNN a pip-installed framework loads: its pip wheel first, else the system one."""
    return pip_cudnn(facts) or next(iter(system_cudnn(facts)), None)


# --- cudnn-mismatch --------------------------------------------------------------------------------


@rule
def cudnn_mismatch(facts: Facts) -> Iterable[Finding]:
    if facts.jetson is not None:
        return
    yield from _framework_needs_other_cudnn(facts)
    yield from _two_majors(facts)


def _framework_needs_other_cudnn(facts: Facts) -> Iterable[Finding]:
    loaded = loaded_cudnn(facts)
    if loaded is None or not has_usable_gpu(facts):
        return
    for framework, dist in (("tensorflow", "tensorflow"), ("jax", "jaxlib")):
        version = tensorflow_gpu(facts) if framework == "tensorflow" else package(facts, dist)
        if not version:
            continue
        deep = framework_of(facts, framework)
        built = major_minor(deep.cudnn) if deep and deep.cudnn else None
        source = f"frameworks.{framework}.cudnn" if built else ""
        if not built:
            built, source = _cudnn_needed(facts, framework, version)
        if not built or _fits(loaded.version, str(built)):
            continue
        name = FRAMEWORK_NAMES[framework]
        yield Finding(
            code="cudnn-mismatch", severity="error", section="cudnn",
            title=f"{dist} {version} needs cuDNN {built} (same major, equal or newer minor); it will load cuDNN {loaded.version}",
            detail=(f"{name} checks the cuDNN it loads against the one it was built with ({source}); the cuDNN found "
                    f"first here is {loaded.version} from {loaded.source}{' at ' + loaded.path if loaded.path else ''}. "
                    "It fails with \"Loaded runtime CuDNN library ... but source was compiled with ...\" / \"DNN library "
                    "initialization failed\" and runs on the CPU."),
            fix=plan_fix(facts, framework, f"Install the cuDNN {name} needs: reinstall it with its CUDA extra "
                         f"(`envdoctor install {framework}`), and do not let an older system cuDNN come first"),
            evidence=(f"python.packages.{dist}={version}",
                      f"cudnn[{facts.cudnn.index(loaded)}].version={loaded.version} ({loaded.source}, loaded first)",
                      f"nvidia.driver_version={facts.nvidia.driver_version}"),  # a usable GPU: the check runs
        )


def _cudnn_needed(facts: Facts, framework: str, version: str) -> tuple[Optional[str], str]:
    """The cuDNN a TensorFlow release was built with ("8.9"), or a JAX plugin's cuDNN specifier."""
    if framework == "tensorflow":
        return knowledge.tf_build(str(public(version)))[1], "tensorflow matrix (tested build configuration)"
    plugin = next((n for n in facts.python.packages if n.startswith("jax-cuda") and n.endswith("plugin")), None)
    row = knowledge.jax_plugin(plugin[len("jax-"):].split("-plugin")[0], str(public(package(facts, "jax") or version))) if plugin else None
    return (row.cudnn, f"jax matrix ({plugin})") if row is not None and row.cudnn else (None, "")


def _fits(loaded: Optional[str], built: str) -> bool:
    """cuDNN rule: the loaded one has the same major and an equal or newer minor (or meets a specifier)."""
    have = public(loaded)
    if have is None:
        return True
    if built[:1] in "<>=!~":
        from packaging.specifiers import SpecifierSet

        return have in SpecifierSet(built)
    need = public(built)
    if need is None:
        return True
    return have.release[0] == need.release[0] and have.release[:2] >= need.release[:2]


def _two_majors(facts: Facts) -> Iterable[Finding]:
    majors: dict[int, Cudnn] = {}
    for c in facts.cudnn:
        v = public(c.version)
        if v is not None:
            majors.setdefault(v.release[0], c)
    pip_majors = {public(c.version).release[0] for c in facts.cudnn if (c.source or "").startswith("pip") and public(c.version)}
    if len(majors) < 2 or not (len(pip_majors) > 1 or _loads_system_cudnn(facts)):
        return  # e.g. torch with its pip cuDNN 9 next to an unused system cuDNN 8: harmless
    listing = "; ".join(f"cuDNN {c.version} ({c.source}{' ' + c.path if c.path else ''})" for _, c in sorted(majors.items()))
    user = _loads_system_cudnn(facts)
    yield Finding(
        code="cudnn-mismatch", severity="warning", section="cudnn",
        title=f"cuDNN {' and '.join(str(m) for m in sorted(majors))} are both present",
        detail=(f"Two cuDNN majors are installed ({listing})" + (f", and {user} loads cuDNN from the system" if user else "") +
                ". Each framework must load the major it was built for; "
                "which copy the loader finds first depends on LD_LIBRARY_PATH, ldconfig and import order, so one day the "
                "wrong one wins (\"Loaded runtime CuDNN library\", CUDNN_STATUS_NOT_INITIALIZED)."),
        fix=("Remove the cuDNN no framework here needs (the system package or the older pip wheel), or keep the "
             "frameworks in separate environments",),
        evidence=tuple(f"cudnn[{i}]={c.version} ({c.source})" for i, c in enumerate(facts.cudnn) if c.version),
    )


def _loads_system_cudnn(facts: Facts) -> Optional[str]:
    """An installed framework that takes cuDNN from the system, not from an nvidia-cudnn wheel."""
    pip = any(n.startswith("nvidia-cudnn") for n in nvidia_wheels(facts))
    tf = tensorflow_gpu(facts)
    if tf and (not pip or not knowledge.tf_build(str(public(tf)))[2]):
        return "tensorflow"  # before [and-cuda] (2.14) TensorFlow always used the system cuDNN
    paddle = package(facts, "paddlepaddle-gpu")
    if paddle:
        row = knowledge.release_of("paddle", str(public(paddle)))
        if not pip or (row is not None and not row.bundles_cuda):
            return "paddlepaddle-gpu"
    if package(facts, "jaxlib") and not pip and any(n.startswith("jax-cuda") for n in facts.python.packages):
        return "jaxlib"
    return None


# --- cuda-libs-missing -----------------------------------------------------------------------------


@rule
def cuda_libs_missing(facts: Facts) -> Iterable[Finding]:
    for key, fw in sorted(facts.frameworks.items()):
        match = _MISSING_LIB.search(fw.import_error or "")
        if match:
            yield Finding(
                code="cuda-libs-missing", severity="error", section="toolkit",
                title=f"{key} cannot load {match.group(1)}",
                detail=(f"Importing {key} failed because a CUDA library it needs is not on the loader's path "
                        f"({match.group(0).strip()})."),
                fix=plan_fix(facts, framework_named(key) or "pytorch", f"Reinstall {key} with its CUDA libraries (`envdoctor install {key}`)"),
                evidence=(f"frameworks.{key}.import_error={match.group(0).strip()}",),
            )
            return
    if not has_usable_gpu(facts) or facts.host.os != "linux" or facts.jetson is not None:
        return
    if not all(facts.lists_everything(p) for p in ("python.packages", "cuda_toolkits", "cudnn")):
        return  # the rules below conclude from libraries NOT found: only a probe's lists say that
    yield from _tensorflow_libs(facts)
    yield from _paddle_libs(facts)
    yield from _jax_local(facts)


def _toolkit_majors(facts: Facts) -> list[str]:
    """The CUDA majors of the system toolkits found, the active one first: ["12", "11"]."""
    return list(dict.fromkeys(t.version.split(".")[0] for t in toolkits(facts) if t.version))


def _tensorflow_libs(facts: Facts) -> Iterable[Finding]:
    version = tensorflow_gpu(facts)
    if not version or facts.host.arch != "x86_64":
        return
    needs, _, and_cuda = knowledge.tf_build(str(public(version)))  # e.g. "12.5"
    if not needs:
        return
    pip_runtime = any(n.startswith(("nvidia-cuda-runtime", "nvidia-cudnn")) for n in nvidia_wheels(facts))
    major = str(needs).split(".")[0]
    if (pip_runtime and and_cuda) or major in _toolkit_majors(facts):
        return
    yield Finding(
        code="cuda-libs-missing", severity="error", section="toolkit",
        title=f"tensorflow {version} will not find the CUDA {major}.x libraries it needs",
        detail=(f"TensorFlow {public(version)} was built for CUDA {needs}. It loads the CUDA and cuDNN libraries at run "
                "time, from the pip wheels of `tensorflow[and-cuda]` or from a system installation; neither is here "
                f"(system toolkit: {' and '.join(_toolkit_majors(facts)) or 'none'}). It prints \"Could not load dynamic library\" / "
                "\"Cannot dlopen some GPU libraries\" and runs on the CPU."),
        fix=plan_fix(facts, "tensorflow", "Install TensorFlow with its CUDA wheels: `python -m pip install \"tensorflow[and-cuda]\"`",
                     version=f"=={public(version)}"),
        evidence=(f"python.packages.tensorflow={version}", f"cuda_toolkits={','.join(_toolkit_majors(facts)) or None}", "python.packages.nvidia-*=none",
                  f"python.packages={len(facts.python.packages)} packages listed"),
    )


def _paddle_libs(facts: Facts) -> Iterable[Finding]:
    version = package(facts, "paddlepaddle-gpu")
    if not version or any(n.startswith("nvidia-cudnn") for n in nvidia_wheels(facts)) or system_cudnn(facts):
        return
    yield Finding(
        code="cuda-libs-missing", severity="error", section="cudnn",
        title=f"paddlepaddle-gpu {version} will not find cuDNN",
        detail=("This Paddle build loads cuDNN from the system (or from nvidia-cudnn wheels), and none is installed: "
                "\"Cannot load cudnn shared library. Cannot invoke method cudnnGetVersion\"."),
        fix=plan_fix(facts, "paddle", "Install the cuDNN of the CUDA version this Paddle build targets, or reinstall Paddle "
                     "from its own index for your CUDA (`envdoctor install paddle`)"),
        evidence=(f"python.packages.paddlepaddle-gpu={version}", "cudnn=[]"),
    )


def _jax_local(facts: Facts) -> Iterable[Finding]:
    plugin = next((n for n in facts.python.packages if n.startswith("jax-cuda") and n.endswith("plugin")), None)
    if not plugin:
        return
    major = plugin[len("jax-cuda"):].split("-")[0]
    pip_libs = any(re.match(rf"nvidia-(cudnn|cuda-runtime)(-cu{major})?$", n) for n in nvidia_wheels(facts))
    if pip_libs or (major in _toolkit_majors(facts) and system_cudnn(facts)):
        return
    yield Finding(
        code="cuda-libs-missing", severity="error", section="toolkit",
        title=f"{plugin} has no CUDA {major} libraries to load",
        detail=(f"The JAX CUDA plugin is installed without the nvidia-* wheels (a `cuda{major}-local` install), so it needs "
                f"a system CUDA {major} toolkit and cuDNN; this machine has "
                f"{'CUDA ' + ' and '.join(_toolkit_majors(facts)) if _toolkit_majors(facts) else 'no CUDA toolkit'}"
                f"{' and no cuDNN' if not system_cudnn(facts) else ''}. JAX fails with \"CUDA backend failed to initialize\"."),
        fix=plan_fix(facts, "jax", f"Install the pip CUDA libraries: `pip install \"jax[cuda{major}]\"`"),
        evidence=(f"python.packages.{plugin}={package(facts, plugin)}", f"cuda_toolkits={','.join(_toolkit_majors(facts)) or None}"),
    )


@rule
def tensorflow_stated_toolkit(facts: Facts) -> Iterable[Finding]:
    """A TensorFlow that loads the system's CUDA (every GPU build without `[and-cuda]`) where the one
    CUDA toolkit known is a stated one of another release than its build's: the libraries it opens by
    soname (libcudart.so.10.1 / cudart64_101.dll before CUDA 11, one per major from CUDA 11) are not
    that toolkit's. A probed machine's full toolkit list is judged by the rule above instead; a text
    that names another framework too (torch, Paddle, JAX, ONNX Runtime) may be about that one."""
    toolkit = facts.cuda_toolkit.version if facts.cuda_toolkit else None
    if not toolkit or facts.lists_everything("cuda_toolkits") or facts.jetson is not None:
        return
    if any(package(facts, d) for d in _OTHER_RUNTIMES) or any(k != "tensorflow" for k in facts.frameworks):
        return
    dist = "tensorflow-gpu" if package(facts, "tensorflow-gpu") else "tensorflow"
    version = package(facts, "tensorflow-gpu") or tensorflow_gpu(facts)
    release = str(public(version)) if version and public(version) else None
    if not release:
        return
    needs, _, and_cuda = knowledge.tf_build(release)
    needs = needs or knowledge.tf_legacy_cuda(release)
    if not needs or and_cuda or _soname_series(needs) == _soname_series(toolkit):
        return
    yield Finding(
        code="cuda-libs-missing", severity="error", section="toolkit",
        title=f"{dist} {version} was built for CUDA {needs}, the CUDA here is {toolkit}",
        detail=(f"TensorFlow {release} loads the CUDA {_soname_series(needs)} libraries of the system at run time "
                f"(libcudart.so.{_soname_series(needs)} and its siblings); "
                f"a CUDA {toolkit} toolkit does not provide them, so it prints \"Could not load dynamic library\" and "
                "runs on the CPU."),
        fix=(f"Install the CUDA {needs} toolkit (and its cuDNN) next to the other one, or a TensorFlow release built for "
             f"CUDA {toolkit} (`envdoctor matrix tensorflow`)",),
        evidence=(f"python.packages.{dist}={version}", f"cuda_toolkit.version={toolkit}"),
    )


_OTHER_RUNTIMES = tuple(dist for framework, dists in FRAMEWORK_DISTRIBUTIONS.items() if framework != "tensorflow"
                        for dist in dists) + ("onnxruntime", "onnxruntime-gpu")


def _soname_series(cuda: str) -> str:
    """The part of a CUDA version its libraries' sonames carry: "10.1" up to CUDA 10, the major from 11 on."""
    major = cuda.split(".")[0]
    return cuda if int(major) < 11 else major
