"""Rules about the framework builds installed in the target environment: a CPU build on a GPU
machine, companions built for another torch, JAX pieces that do not go together, and a build that
needs a newer driver than the one present."""

from __future__ import annotations

from typing import Iterable, Optional

from envdoctor.diagnose import knowledge, rule
from envdoctor.diagnose.knowledge import torch_build  # (also imported from here by diagnose/build.py)
from envdoctor.diagnose._common import (
    DEEP_KEYS, FRAMEWORK_NAMES, TORCH_COMPANIONS, cuda_of_tag, driver_at_least, framework_of, has_usable_gpu, local_tag,
    major_minor, package, package_copies, pip_cuda_runtime, plan_fix, public,
)
from envdoctor.facts import Facts
from envdoctor.findings import Finding


def platform_key(facts: Facts) -> Optional[str]:
    """How the matrices name a platform: linux_x86_64, linux_aarch64, windows_amd64, macos_arm64..."""
    return knowledge.platform(facts)


def tensorflow_gpu(facts: Facts) -> Optional[str]:
    """The installed `tensorflow` when it is a build that can use an NVIDIA GPU here; None for a CPU-only
    one (the deep probe's is_cuda_build, or no CUDA wheels for this platform in the matrix: native Windows
    after 2.10, Linux aarch64), which loads no CUDA library, so its CUDA needs cannot be wrong."""
    version = package(facts, "tensorflow")
    if not version:
        return None
    deep = framework_of(facts, "tensorflow")
    if deep and deep.version and not deep.import_error and deep.extra.get("is_cuda_build") is False:
        return None
    return None if knowledge.tf_has_gpu(str(public(version)), platform_key(facts)) is False else version


# --- cpu-only-build --------------------------------------------------------------------------------


@rule
def cpu_only_build(facts: Facts) -> Iterable[Finding]:
    # NVIDIA GPUs listed, and their driver not known to be missing or broken (no-nvidia-driver comes first then;
    # a driver nobody recorded does not make the build less CPU-only).
    if not facts.gpus or facts.driver_present is False or facts.jetson is not None or facts.host.os not in ("linux", "windows"):
        return
    usable = "a usable NVIDIA GPU" if has_usable_gpu(facts) else "an NVIDIA GPU"
    for framework, dist, version, why, decided_by in _cpu_builds(facts):
        name = FRAMEWORK_NAMES[framework]
        yield Finding(
            code="cpu-only-build", severity="error", section="frameworks",
            title=f"{dist} {version} is a CPU-only build, but this machine has {usable}",
            detail=(f"{why} {name} will run everything on the CPU; the {len(facts.gpus)} GPU(s) stay idle."),
            fix=plan_fix(facts, framework, f"Reinstall a CUDA build of {name}: `envdoctor install {framework} --cuda auto`"),
            evidence=(f"python.packages.{dist}={version}", f"nvidia.driver_version={facts.nvidia.driver_version or 'unknown'}",
                      *decided_by),
        )


def _all_packages(facts: Facts) -> str:
    """Evidence that a conclusion rests on a package NOT being installed: the whole (probed) list."""
    return f"python.packages={len(facts.python.packages)} packages listed"


def _cpu_builds(facts: Facts) -> Iterable[tuple[str, str, str, str, tuple[str, ...]]]:
    """(framework, dist, version, why, the further facts that decided it) of each CPU-only build."""
    version, build, how = torch_build(facts)
    if version and build and (build == "cpu" or build.startswith(("rocm", "xpu"))):
        kind = "a CPU" if build == "cpu" else f"an {build.upper()[:4]} (non-NVIDIA)"
        decided_by = () if how.startswith(("python.packages", "frameworks")) else tuple(  # the platform's default build
            f"host.{key}={value}" for key, value in (("os", facts.host.os), ("arch", facts.host.arch)) if value)
        yield "pytorch", "torch", version, f"The installed torch is {kind} build ({how}).", decided_by
    tf = _tensorflow_cpu(facts)
    if tf:
        yield tf
    # The rest conclude from a package that is NOT installed: only a probe's package list says that.
    listed = facts.lists_everything("python.packages")
    jaxlib = package(facts, "jaxlib")
    if jaxlib and facts.host.os == "linux" and listed:
        plugins = [n for n in facts.python.packages if n.startswith("jax-cuda") and n.endswith("plugin")]
        if not plugins and "cuda" not in (local_tag(jaxlib) or ""):
            yield ("jax", "jaxlib", jaxlib, "jaxlib is installed without a CUDA plugin (jax-cuda12-plugin / jax-cuda13-plugin).",
                   (_all_packages(facts),))
    paddle = package(facts, "paddlepaddle")
    if paddle and not package(facts, "paddlepaddle-gpu") and listed:
        yield ("paddle", "paddlepaddle", paddle, "`paddlepaddle` is Paddle's CPU package; the GPU build is `paddlepaddle-gpu`.",
               (_all_packages(facts),))
    deep = framework_of(facts, "paddle")
    gpu_paddle = package(facts, "paddlepaddle-gpu")
    if gpu_paddle and deep and deep.version and not deep.import_error and deep.extra.get("compiled_with_cuda") is False:
        yield ("paddle", "paddlepaddle-gpu", gpu_paddle, "The installed Paddle reports is_compiled_with_cuda() = False.",
               ("frameworks.paddle.compiled_with_cuda=false",))


def _tensorflow_cpu(facts: Facts) -> Optional[tuple[str, str, str, str, tuple[str, ...]]]:
    if facts.host.os != "linux":
        return None  # native Windows: tf-windows-native-gpu says it better
    cpu = package(facts, "tensorflow-cpu")
    if cpu and not package(facts, "tensorflow") and facts.lists_everything("python.packages"):
        return ("tensorflow", "tensorflow-cpu", cpu, "`tensorflow-cpu` is TensorFlow's CPU-only package.",
                (_all_packages(facts),))
    version = package(facts, "tensorflow")
    if not version:
        return None
    deep = framework_of(facts, "tensorflow")
    if deep and deep.version and not deep.import_error and deep.extra.get("is_cuda_build") is False:
        return ("tensorflow", "tensorflow", version, "The installed TensorFlow reports is_cuda_build=False.",
                ("frameworks.tensorflow.is_cuda_build=false",))
    if facts.host.arch == "aarch64":
        gpu_wheels = knowledge.tf_has_gpu(str(public(version)), platform_key(facts))
        if gpu_wheels is False:
            return ("tensorflow", "tensorflow", version, "TensorFlow's Linux aarch64 wheels are CPU-only.",
                    (f"host.arch={facts.host.arch}",))
    return None


# --- companion-mismatch ----------------------------------------------------------------------------

@rule
def keras_mismatch(facts: Facts) -> Iterable[Finding]:
    """The installed keras outside the range the installed TensorFlow's wheel pins (tensorflow matrix)."""
    tf = next((v for v in (package(facts, d) for d in ("tensorflow", "tensorflow-gpu", "tensorflow-cpu")) if v), None)
    keras = package(facts, "keras")
    wanted = knowledge.tf_keras_pin(str(public(tf))) if tf and public(tf) else None
    problem = _version_problem("keras", keras, wanted) if keras and wanted else None
    if not problem:
        return
    yield Finding(
        code="companion-mismatch", severity=problem[0], section="frameworks",
        title=f"keras {keras} does not go with tensorflow {tf}",
        detail=(f"TensorFlow {public(tf)} requires keras {wanted} (its wheel's Requires-Dist, tensorflow matrix); keras {keras} "
                "is installed. tf.keras is that keras package, so a release of another series fails at import (\"Another "
                "metric with the same name already exists\", missing attributes) or, across Keras 2 and 3, in model code "
                "(\"A KerasTensor cannot be used as input to a TensorFlow function\")."),
        fix=(f"Install the keras TensorFlow {public(tf)} requires: `python -m pip install \"keras{wanted}\"` "
             "(for Keras 2 code on TensorFlow 2.16+, install tf-keras and set TF_USE_LEGACY_KERAS=1)",),
        evidence=(f"python.packages.tensorflow={tf}", f"python.packages.keras={keras}"),
    )


@rule
def companion_mismatch(facts: Facts) -> Iterable[Finding]:
    torch = package(facts, "torch")
    if not torch or len(package_copies(facts, "torch")) > 1:
        return  # two copies of torch: duplicate-install names the real problem
    torch_tag = local_tag(torch)
    expected = knowledge.torch_companions(str(public(torch)))
    for name in TORCH_COMPANIONS:
        version = package(facts, name)
        if not version:
            continue
        problem = _build_problem(torch, torch_tag, version, local_tag(version)) or _version_problem(name, version, expected.get(name))
        if not problem:
            continue
        severity, why = problem
        yield Finding(
            code="companion-mismatch", severity=severity, section="frameworks",
            title=f"{name} {version} does not match torch {torch}",
            detail=(f"{why} {name}'s compiled operators link against one exact torch build; with another one they fail "
                    f"to register (\"operator torchvision::nms does not exist\", \"undefined symbol\") or {name} "
                    "refuses to load."),
            fix=plan_fix(facts, "pytorch", f"Reinstall torch and {name} together from the same build: "
                         f"`envdoctor install pytorch --version {public(torch)}`", version=f"=={public(torch)}"),
            evidence=(f"python.packages.torch={torch}", f"python.packages.{name}={version}"),
        )
    yield from _ipex(facts, torch)


def _ipex(facts: Facts, torch: str) -> Iterable[Finding]:
    """Intel Extension for PyTorch X.Y works only with torch X.Y.* (its __init__ compares major.minor
    and exits: "needs to work with PyTorch 2.8.*, but PyTorch 2.7.1 is found")."""
    ipex = package(facts, "intel-extension-for-pytorch")
    if not ipex or public(ipex) is None or public(torch) is None or public(ipex).release[:2] == public(torch).release[:2]:
        return
    series = ".".join(str(n) for n in public(ipex).release[:2])
    yield Finding(
        code="companion-mismatch", severity="error", section="frameworks",
        title=f"intel-extension-for-pytorch {ipex} needs torch {series}.*, not {torch}",
        detail=(f"Intel Extension for PyTorch checks at import that torch has its own major.minor ({series}) and refuses "
                f"to load with torch {torch} (\"needs to work with PyTorch {series}.*, but PyTorch {torch} is found\")."),
        fix=(f"Install the torch series this IPEX was built for: `python -m pip install \"torch=={series}.*\"`, or the IPEX "
             f"release made for torch {public(torch)}",),
        evidence=(f"python.packages.torch={torch}", f"python.packages.intel-extension-for-pytorch={ipex}"),
    )


def _build_problem(torch: str, torch_tag: Optional[str], version: str, tag: Optional[str]) -> Optional[tuple[str, str]]:
    if not torch_tag or not tag or torch_tag == tag:
        return None
    torch_cuda, comp_cuda = cuda_of_tag(torch_tag), cuda_of_tag(tag)
    if torch_cuda and comp_cuda:
        if torch_cuda.split(".")[0] != comp_cuda.split(".")[0]:
            return "error", f"They were built for different CUDA majors ({torch_tag} and {tag})."
        return "warning", f"They were built for different CUDA versions ({torch_tag} and {tag}); this mostly works but is not a tested pair."
    return "error", f"They are different builds ({torch_tag} and {tag})."


def _version_problem(name: str, version: str, expected: Optional[str]) -> Optional[tuple[str, str]]:
    have = public(version)
    if not expected or have is None:
        return None
    spec = str(expected)
    try:
        from packaging.specifiers import SpecifierSet

        if spec[0] in "<>=!~":
            ok = have in SpecifierSet(spec)
        else:  # the companion release made for this torch: same major.minor is the same series
            ok = have.release[:2] == public(spec).release[:2]
    except Exception:
        return None
    return None if ok else ("error", f"The {name} release made for this torch is {spec}.")


# --- jax-version-skew ------------------------------------------------------------------------------


@rule
def jax_version_skew(facts: Facts) -> Iterable[Finding]:
    jax, jaxlib = package(facts, "jax"), package(facts, "jaxlib")
    if not jax or not jaxlib:
        return
    plugins = sorted(n for n in facts.python.packages if n.startswith("jax-cuda") and n.endswith(("-plugin", "-pjrt")))
    problems: list[str] = []
    for plugin in (None, *plugins):  # the jax matrix's rule on jax + jaxlib, then with each CUDA plugin / PJRT
        verdict = knowledge.jax_rule(str(public(jax)), str(public(jaxlib)),
                                     str(public(package(facts, plugin))) if plugin else None)
        if verdict and verdict not in problems:
            problems.append(verdict)
    if not problems:
        return
    extra = next((n.split("-")[1] for n in facts.python.packages if n.startswith("jax-cuda") and n.endswith("plugin")), None)
    yield Finding(
        code="jax-version-skew", severity="error", section="frameworks",
        title="jax, jaxlib and the CUDA plugin versions do not go together",
        detail=("; ".join(problems) + ". JAX loads its CUDA backend as a plugin built against one exact jaxlib; "
                "mismatched pieces fail with 'Unable to initialize backend cuda', 'Mismatched PJRT plugin PJRT API "
                "version', missing FFI handlers, or a segfault, and JAX silently falls back to the CPU."),
        fix=plan_fix(facts, "jax", f"Reinstall them together: `pip install \"jax[{extra or 'cuda12'}]=={public(jax)}\"`",
                     version=f"=={public(jax)}"),
        evidence=tuple(f"python.packages.{n}={facts.python.packages[n]}" for n in sorted(facts.python.packages)
                       if n in ("jax", "jaxlib") or n.startswith("jax-cuda")),
    )


# --- driver-too-old --------------------------------------------------------------------------------


@rule
def driver_too_old(facts: Facts) -> Iterable[Finding]:
    nv = facts.nvidia
    if nv is None or facts.jetson is not None or nv.driver_kind == "jetson":
        return
    if not facts.has_usable_driver and not _driver_cuda_only(facts):
        return
    target_os = _driver_os(facts)
    for framework, dist, version, cuda, how in _cuda_builds(facts):
        minimum = knowledge.wheel_min_driver(cuda, target_os)
        if not minimum or not _below(facts, str(minimum)):
            continue
        name = FRAMEWORK_NAMES[framework]
        have = nv.driver_version or f"a driver for CUDA ≤ {nv.driver_cuda} (nvidia-smi's \"CUDA Version\")"
        yield Finding(
            code="driver-too-old", severity="error", section="nvidia",
            title=f"{dist} {version} needs NVIDIA driver >= {minimum} (CUDA {cuda}); this machine has {have}",
            detail=(f"The installed {name} build uses CUDA {cuda} ({how}). Its CUDA runtime refuses to start on an older "
                    f"driver (\"CUDA driver version is insufficient\" / \"The NVIDIA driver on your system is too old\"), "
                    f"so {name} runs on the CPU or fails."),
            fix=_driver_fixes(facts, framework, str(minimum)),
            evidence=(f"nvidia.driver_version={nv.driver_version}" if nv.driver_version else
                      f"nvidia.driver_cuda={nv.driver_cuda}", f"python.packages.{dist}={version}"),
        )


@rule
def toolkit_newer_than_driver(facts: Facts) -> Iterable[Finding]:
    """The CUDA toolkit (nvcc) is newer than the CUDA the driver supports. Below the toolkit major's
    minimum driver nothing it builds starts; within the major (minor-version compatibility) its binaries
    run, but PTX it emits cannot be JIT-compiled by the older driver (Numba, CuPy, Triton, extensions)."""
    nv, toolkit = facts.nvidia, major_minor(facts.cuda_toolkit.version) if facts.cuda_toolkit else None
    if nv is None or toolkit is None or facts.jetson is not None or nv.driver_kind == "jetson":
        return
    if not facts.has_usable_driver and not _driver_cuda_only(facts):
        return
    target_os = _driver_os(facts)
    minimum = knowledge.wheel_min_driver(toolkit, target_os)
    runs_none = bool(minimum) and _below(facts, str(minimum))
    supported = nv.driver_cuda or (knowledge.driver_branch_cuda(nv.driver_version) if nv.driver_version else None)
    if not runs_none and (not supported or driver_at_least(supported, toolkit)):
        return
    have = nv.driver_version or "this driver"
    yield Finding(
        code="driver-too-old", severity="error" if runs_none else "warning", section="toolkit",
        title=(f"CUDA toolkit {toolkit} is newer than the driver supports ({have}" + (f": CUDA {supported})" if supported else ")")),
        detail=(f"Programs built with this toolkit need NVIDIA driver >= {minimum}: they fail with \"CUDA driver version "
                f"is insufficient for CUDA runtime version\"." if runs_none else
                f"Binaries built with CUDA {toolkit} run on this driver (minor-version compatibility), but PTX "
                f"this toolkit emits cannot be compiled by a driver for CUDA {supported}: Numba, CuPy, Triton and "
                f"extensions built for a newer GPU fail with CUDA_ERROR_UNSUPPORTED_PTX_VERSION (\"the provided PTX "
                f"was compiled with an unsupported toolchain\")."),
        fix=(f"Update the NVIDIA driver to one for CUDA {toolkit} or newer" + (f", or use a CUDA toolkit no newer than {supported}" if supported else ""),),
        evidence=(f"cuda_toolkit.version={facts.cuda_toolkit.version}",
                  f"nvidia.driver_version={nv.driver_version}" if nv.driver_version else f"nvidia.driver_cuda={nv.driver_cuda}"),
    )


def _driver_os(facts: Facts) -> str:
    """Which driver numbering applies: Windows' (a WSL2 machine uses the Windows driver), else Linux's."""
    return "windows" if facts.host.os == "windows" or facts.nvidia.driver_kind == "wsl" or facts.host.wsl else "linux"


def _driver_cuda_only(facts: Facts) -> bool:
    """No driver version recorded, but the highest CUDA the driver supports (nvidia-smi's "CUDA Version")."""
    nv = facts.nvidia
    return bool(nv.driver_cuda and not nv.driver_version and not nv.failure and facts.driver_present is not False)


def _below(facts: Facts, minimum: str) -> bool:
    """Is the driver older than `minimum`? From its version; or, where only the CUDA it supports is known,
    when that CUDA is below what the `minimum` driver's branch supports (support grows with the driver,
    so every driver for the lower CUDA is older than `minimum`)."""
    nv = facts.nvidia
    if nv.driver_version:
        return not driver_at_least(nv.driver_version, minimum)
    needs = knowledge.driver_branch_cuda(minimum)
    return bool(needs) and not driver_at_least(nv.driver_cuda, needs)


def _driver_fixes(facts: Facts, framework: str, minimum: str) -> tuple:
    fallback = (f"Update the NVIDIA driver to {minimum} or newer, or install a build for an older CUDA "
                f"(`envdoctor install {framework}`)")
    fixes = plan_fix(facts, framework, fallback)
    if fixes[0] != fallback:
        fixes += (f"or update the NVIDIA driver to {minimum} or newer",)
    return fixes


def _cuda_builds(facts: Facts) -> Iterable[tuple[str, str, str, str, str]]:
    version, build, how = torch_build(facts)
    torch_cuda = cuda_of_tag(build)
    if version and torch_cuda:
        yield "pytorch", "torch", version, torch_cuda, how
    runtime = pip_cuda_runtime(facts)
    for framework, dist in (("tensorflow", "tensorflow"), ("jax", "jaxlib"), ("paddle", "paddlepaddle-gpu")):
        fw_version = tensorflow_gpu(facts) if framework == "tensorflow" else package(facts, dist)
        if not fw_version:
            continue
        deep = framework_of(facts, framework)
        cuda = major_minor(deep.cuda) if deep and deep.cuda else None
        source = f"frameworks.{DEEP_KEYS[framework]}.cuda" if cuda else ""
        if not cuda and framework == "jax":
            plugin = next((n for n in facts.python.packages if n.startswith("jax-cuda") and n.endswith("plugin")), None)
            cuda = f"{plugin[len('jax-cuda'):].split('-')[0]}.0" if plugin else None
            source = f"python.packages.{plugin}" if plugin else ""
        if not cuda and runtime and framework != "jax":
            cuda, source = runtime, "the nvidia-cuda-runtime wheel in the environment"
        if cuda:
            yield framework, dist, fw_version, cuda, source
