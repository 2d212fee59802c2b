"""What the rules ask the matrices, in one place.

Each function answers one question through the typed accessor module of a matrix
(`envdoctor.matrix.<subject>`) and returns None when the matrix, the function or the row is not
there, so a rule without knowledge stays silent instead of guessing. No version table lives here:
this module only adapts the accessors' answers to the questions the rules ask. Accessor modules
are imported on first use (they parse TOML), never when a rule module is imported.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any, Optional

from envdoctor.matrix.loader import MatrixError


def accessor(subject: str) -> Any:
    """The accessor module `envdoctor.matrix.<subject>`, or None when it does not exist yet."""
    loaded = sys.modules.get(f"envdoctor.matrix.{subject}")  # imported already: what import_module would return
    if loaded is not None:
        return loaded
    try:
        return importlib.import_module(f"envdoctor.matrix.{subject}")
    except ImportError:
        return None


SUBJECTS = ("drivers", "gpus", "jetson", "pytorch", "tensorflow", "jax", "paddle")


def import_accessors() -> None:
    """Import every accessor module now (their import, not their data, is the slow part)."""
    for subject in SUBJECTS:
        accessor(subject)


def call(subject: str, function: str, *args: Any, **kwargs: Any) -> Any:
    """Call an accessor function; None when the module, the function or the row is missing."""
    module = accessor(subject)
    fn = getattr(module, function, None) if module else None
    if fn is None:
        return None
    try:
        return fn(*args, **kwargs)
    except MatrixError:
        raise  # a broken data file must be reported, not read as "no knowledge"
    except (LookupError, ValueError, TypeError, AttributeError):
        return None


_PLATFORMS_OF_OS = {"linux": ("linux_x86_64", "linux_aarch64"), "windows": ("windows_amd64",),
                    "macos": ("macos_arm64", "macos_x86_64")}


def candidate_platforms(facts) -> tuple[str, ...]:
    """The platform keys this machine can be: its own, or, where the OS or architecture was not
    recorded, every one consistent with what was (a Linux box of unknown architecture is either)."""
    known = platform(facts)
    if known:
        return (known,)
    if facts.host.os:
        return _PLATFORMS_OF_OS.get(facts.host.os, ())
    return tuple(p for group in _PLATFORMS_OF_OS.values() for p in group)


def unanimous(values) -> Optional[object]:
    """The one value every candidate gave, or None when they differ or one is unknown."""
    values = list(values)
    return values[0] if values and values[0] is not None and all(v == values[0] for v in values) else None


def platform(facts) -> Optional[str]:
    """The matrices' platform key: linux_x86_64, linux_aarch64, windows_amd64, macos_arm64, macos_x86_64."""
    from envdoctor.plan.common import target_platform

    return target_platform(facts)


# --- drivers and GPUs ------------------------------------------------------------------------------

def wheel_min_driver(cuda: str, os: str) -> Optional[str]:
    return call("drivers", "wheel_min_driver", cuda, os)


def driver_branch_cuda(driver: str) -> Optional[str]:
    """The highest CUDA the branch of this driver supports ("13.0"), from drivers.toml."""
    return call("drivers", "branch_cuda", driver)


def build_runs_on(arch_list, cc: str):
    """The gpus matrix's verdict (truthy `.runs`, `.reason`) for a build's arch list on capability `cc`."""
    return call("gpus", "build_runs_on", list(arch_list), cc)


# --- PyTorch ---------------------------------------------------------------------------------------

def _torch_release(version: str):
    return call("pytorch", "release", version)


def torch_default_build(version: str, platform_key: Optional[str]) -> Optional[str]:
    return call("pytorch", "default_build", version, platform_key) if platform_key else None


def torch_arch_list(version: str, tag: str, platform_key: Optional[str]) -> Optional[tuple[str, ...]]:
    build = call("pytorch", "build", version, tag, platform_key) if platform_key else None
    return tuple(build.archs) if build is not None and build.archs else None


def torch_cuda_arch_lists(version: str) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """(tag, kernels) of every CUDA build of a torch release on PyTorch's index, any platform."""
    from envdoctor.matrix import PLATFORMS

    found = {}
    for platform_key in PLATFORMS:
        for build in call("pytorch", "builds_for", version, platform_key) or ():
            if build.cuda and build.archs:
                found.setdefault((build.tag, tuple(build.archs)), None)
    return tuple(found)


def torch_build(facts) -> tuple[Optional[str], Optional[str], str]:
    """(version, build, how we know) of the installed torch: build is "cpu", "cu124", "rocm6.2"...

    Shared by the rules and by the completion stage (envdoctor/complete.py), which fills the build's
    kernel list from it."""
    from envdoctor.diagnose._common import framework_of, local_tag, package, public

    version = package(facts, "torch")
    if not version:
        return None, None, ""
    deep = framework_of(facts, "pytorch")
    if deep and deep.version and not deep.import_error:
        if deep.cuda:
            return version, "cu" + deep.cuda.replace(".", "")[:3], "frameworks.torch.cuda"
        if deep.extra.get("hip"):
            return version, "rocm", "frameworks.torch.extra.hip"
        # No CUDA in a record of the deep probe (or a report saying "CUDA used to build PyTorch: None")
        # is a CPU build; a report that only named the version says nothing about it.
        if deep.extra.get("cuda_build") is False or "frameworks" in (facts.recorded or ()):
            return version, "cpu", "frameworks.torch.cuda=null"
    tag = local_tag(version)
    if tag and (tag == "cpu" or tag.startswith(("cu", "rocm", "xpu"))):
        return version, tag, f"python.packages.torch={version}"
    conda = facts.python.conda_packages
    if conda.get("pytorch"):  # a conda build: its CUDA comes from pytorch-cuda / cuda-version, not the registry
        cuda = (conda.get("pytorch-cuda") or conda.get("cuda-version") or conda.get("cudatoolkit")  # cudatoolkit: before 1.13
                or (deep.cuda if deep else None))  # the pytorch package's own build string ("py3.8_cuda10.2.89_…")
        build = "cu" + "".join(cuda.split(".")[:2]) if cuda else None
        return version, build, f"conda packages pytorch {conda['pytorch']}" + (f", CUDA {cuda}" if cuda else "")
    candidates = candidate_platforms(facts)
    default = unanimous(torch_default_build(str(public(version)), p) for p in candidates)
    where = candidates[0] if len(candidates) == 1 else f"every platform this machine can be ({', '.join(candidates)})"
    return version, default, f"registry default build of torch {public(version)} on {where}"


def torch_companions(version: str) -> dict[str, str]:
    row = _torch_release(version)
    if row is None:
        return {}
    return {name: getattr(row, name) for name in ("torchvision", "torchaudio") if getattr(row, name, None)}


def torch_glibc(version: str) -> Optional[str]:
    row = _torch_release(version)
    return getattr(row, "glibc", None) if row is not None else None


def pythons(framework: str, version: str, platform_key: Optional[str]) -> Optional[tuple[str, ...]]:
    """CPython minors with a wheel of this release on this platform (None: unknown)."""
    if not platform_key:
        return None
    if framework == "pytorch":
        row = _torch_release(version)
        return tuple(row.pythons(platform_key)) if row is not None and row.pythons(platform_key) else None
    row = call(framework, "release", version)
    fn = getattr(row, "pythons", None)
    if callable(fn):
        found = fn(platform_key)
        return tuple(found) if found else None
    return None


# --- Jetson ----------------------------------------------------------------------------------------

def jetson_sources(jetpack: Optional[str], framework: str, soc: Optional[str] = None) -> tuple:
    return call("jetson", "framework_sources", jetpack, framework, soc) or ()


def jetpacks() -> tuple[str, ...]:
    """Every JetPack version the jetson matrix knows ("5.0", "5.1.2", "6.2"), oldest first."""
    return tuple(dict.fromkeys(r.jetpack for r in call("jetson", "releases") or ()))


def jetson_soc_cc(soc: Optional[str]) -> Optional[str]:
    return call("jetson", "soc_compute_capability", soc) if soc else None


def newest_for_python(framework: str, python: str, platform_key: Optional[str]) -> Optional[str]:
    """The newest release of a framework with a wheel for this Python on this platform."""
    if framework == "pytorch":
        for row in call("pytorch", "releases") or ():
            if python in row.pythons(platform_key):
                return row.version
        return None
    for row in call(framework, "releases") or ():
        fn = getattr(row, "pythons", None)
        if callable(fn) and python in (fn(platform_key) or ()):
            return row.version
    return None


def glibc_required(dist: str, version: str) -> Optional[str]:
    """The lowest glibc a framework release's Linux wheels need (their manylinux tag)."""
    if dist == "torch":
        return torch_glibc(version)
    framework = {"tensorflow": "tensorflow", "jaxlib": "jax", "paddlepaddle": "paddle", "paddlepaddle-gpu": "paddle"}.get(dist)
    row = call(framework, "release", version) if framework else None
    return getattr(row, "glibc", None) if row is not None else None


# --- TensorFlow, JAX, Paddle -----------------------------------------------------------------------

def release_of(framework: str, version: str):
    """The matrix row of a framework release (pytorch, tensorflow, jax, paddle), or None."""
    return call(framework, "release", version)


def tf_last_native_windows_gpu() -> Optional[str]:
    row = call("tensorflow", "last_native_windows_gpu")
    return row.version if row is not None else None


def tf_has_gpu(version: str, platform_key: Optional[str]) -> Optional[bool]:
    row = release_of("tensorflow", version)
    return row.has_gpu(platform_key) if row is not None and platform_key else None


def tf_legacy_cuda(version: str) -> Optional[str]:
    """The tested CUDA of a TensorFlow release older than the matrix's release rows ("10.1" for 2.3)."""
    row = call("tensorflow", "legacy", version)
    return row.cuda if row is not None else None


def tf_keras_pin(version: str) -> Optional[str]:
    """The keras specifier a TensorFlow release's wheel requires (its release row, or a [[legacy]] one)."""
    row = release_of("tensorflow", version) or call("tensorflow", "legacy", version)
    pin = getattr(row, "keras", None) if row is not None else None
    return pin.split(" | ")[0] if pin and ";" not in pin else None


def tf_build(version: str) -> tuple[Optional[str], Optional[str], bool]:
    """(tested CUDA, tested cuDNN, whether `[and-cuda]` exists) of a TensorFlow release."""
    row = release_of("tensorflow", version)
    if row is None:
        return None, None, False
    return row.cuda, row.cudnn, bool(row.and_cuda)


def gpu_archs(framework: str, version: str, plugin_extra: Optional[str] = None) -> Optional[tuple[str, ...]]:
    """The kernels of a TensorFlow release's CUDA build, or of a JAX CUDA plugin."""
    if framework == "tensorflow":
        row = release_of("tensorflow", version)
        return tuple(row.gpu_archs) if row is not None and row.gpu_archs else None
    if framework == "jax" and plugin_extra:
        plugin = call("jax", "plugin_for", plugin_extra, version)
        return tuple(plugin.archs) if plugin is not None and plugin.archs else None
    return None


def min_compute_capability(framework: str, version: str) -> Optional[str]:
    if framework == "paddle":
        row = release_of("paddle", version)
        return row.min_compute_capability if row is not None else None
    return None


def jax_rule(jax: str, jaxlib: Optional[str], plugin: Optional[str]) -> Optional[str]:
    """What is wrong with this jax / jaxlib / plugin combination, in a sentence (None: they agree)."""
    return call("jax", "version_rule_ok", jax, jaxlib, plugin)


def jax_plugin(extra: str, version: str):
    """The jax matrix's row for a CUDA plugin extra (cuda12, cuda13, ...) at a jax version."""
    return call("jax", "plugin_for", extra, version)


def numpy_requirements(framework: str, version: str) -> tuple[str, ...]:
    """The numpy specifiers a release declares (alternatives split by markers, markers dropped)."""
    row = release_of(framework, version)
    spec = getattr(row, "numpy", None) if row is not None else None
    if not spec:
        return ()
    return tuple(part.split(" ; ")[0].strip() for part in spec.split(" | ") if part.strip())
