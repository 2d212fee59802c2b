"""Rules about the environment around the frameworks: environment variables that hide GPUs or
shadow libraries, and two copies or flavours of one package in the same environment."""

from __future__ import annotations

import re
from typing import Iterable, Optional

from envdoctor.diagnose import rule
from envdoctor.diagnose._common import (
    cuda_of_tag, has_usable_gpu, major_minor, nvidia_wheels, package, package_copies, pip_cuda_runtime, public,
    toolkits,
)
from envdoctor.diagnose.build import judges_the_toolkit, toolkit_vs_torch
from envdoctor.diagnose.knowledge import torch_build
from envdoctor.facts import Facts
from envdoctor.findings import Finding

# --- CUDA_VISIBLE_DEVICES ------------------------------------------------------------------------


@rule
def cuda_visible_devices(facts: Facts) -> Iterable[Finding]:
    value = facts.env.get("CUDA_VISIBLE_DEVICES")
    # The GPUs must be known; their driver need not be (unknown is not broken: the variable hides them anyway).
    if value is None or not facts.gpus or facts.driver_present is False:
        return
    tokens = [t.strip() for t in value.split(",")] if value.strip() else []
    visible = _leading_valid(tokens, facts)
    total = len(facts.gpus)
    ev = (f"env.CUDA_VISIBLE_DEVICES={value!r}", f"nvidia.gpus={total}")
    if visible == 0:
        why = ("it is empty" if not tokens else
               f"its first entry {tokens[0]!r} is not a GPU of this machine (valid: {_valid_ids(facts)})")
        yield Finding(
            code="cuda-visible-devices", severity="error", section="nvidia",
            title=f"CUDA_VISIBLE_DEVICES hides every GPU ({why})",
            detail=("CUDA only shows the GPUs listed in CUDA_VISIBLE_DEVICES, and stops reading the list at the first "
                    "entry that is not a valid GPU index or UUID. As set, no framework sees any of this machine's "
                    f"{total} GPU(s); they all run on the CPU."),
            fix=_fixes(facts),
            evidence=ev,
        )
    elif visible < len(tokens):
        bad = tokens[visible]
        yield Finding(
            code="cuda-visible-devices", severity="warning", section="nvidia",
            title=f"CUDA_VISIBLE_DEVICES entry {bad!r} is not a GPU of this machine; it and every entry after it are ignored",
            detail=(f"CUDA stops reading CUDA_VISIBLE_DEVICES at the first invalid entry, so only {visible} of the "
                    f"{len(tokens)} listed GPU(s) are visible. Valid entries here: {_valid_ids(facts)}."),
            fix=_fixes(facts),
            evidence=ev,
        )


def _leading_valid(tokens: list[str], facts: Facts) -> int:
    count = 0
    for token in tokens:
        if not _is_valid_device(token, facts):
            break
        count += 1
    return count


def _is_valid_device(token: str, facts: Facts) -> bool:
    # An index or UUID is judged against the GPU list only when a probe recorded all of it (a
    # hand-written list may name one GPU of several); "", "-1" or "NoDevFiles" are never GPUs.
    every_gpu = facts.lists_everything("nvidia.gpus")
    if re.fullmatch(r"\d+", token):
        return int(token) < len(facts.gpus) or not every_gpu
    if token.startswith("MIG-"):
        return True  # MIG instances are not in the facts; never call them invalid
    if token.startswith("GPU-"):
        uuids = [g.uuid for g in facts.gpus if g.uuid]
        return not uuids or not every_gpu or any(u.startswith(token) for u in uuids)
    return False


def _valid_ids(facts: Facts) -> str:
    return ",".join(str(i if g.index is None else g.index) for i, g in enumerate(facts.gpus))


def _fixes(facts: Facts) -> tuple[str, ...]:
    if facts.host.os == "windows":
        return ("Clear it for this shell: `set CUDA_VISIBLE_DEVICES=` (and remove it from the system environment variables)",
                f"or list real GPUs: `set CUDA_VISIBLE_DEVICES={_valid_ids(facts)}`")
    return ("Unset it: `unset CUDA_VISIBLE_DEVICES` (and remove the export from ~/.bashrc, the job script or the container config)",
            f"or list real GPUs: `export CUDA_VISIBLE_DEVICES={_valid_ids(facts)}`")


# --- LD_LIBRARY_PATH / CUDA_HOME -----------------------------------------------------------------

_CUDA_DIR = re.compile(r"(^|/)(cuda[-_.\d]*|cudnn[-_.\d]*|nccl[-_.\d]*|cuda/targets)(/|$)", re.I)
_HARMLESS = ("site-packages", "dist-packages", "/usr/lib/wsl/lib", "/usr/local/nvidia/lib", "/usr/lib64-nvidia")


@rule
def library_path_shadowing(facts: Facts) -> Iterable[Finding]:
    if facts.host.os != "linux" or not nvidia_wheels(facts):
        return
    ld = facts.env.get("LD_LIBRARY_PATH")
    entries = _cuda_entries(ld or "", facts)
    if entries:
        conflict = _cudnn_conflict(entries, facts)
        detail = ("The frameworks in this environment bring their own CUDA libraries as pip wheels (nvidia-*). "
                  f"LD_LIBRARY_PATH puts other CUDA/cuDNN/NCCL libraries first ({', '.join(entries)}), and the "
                  "dynamic loader may pick those instead of the framework's own copies: the classic cause of "
                  "'Loaded runtime CuDNN library X but source was compiled with Y', missing-symbol errors, and a "
                  "silent fall back to the CPU.")
        if conflict:
            detail += f" Here the conflict is real: {conflict}."
        yield Finding(
            code="library-path-shadowing", severity="error" if conflict else "warning", section="toolkit",
            title="LD_LIBRARY_PATH shadows the CUDA libraries the installed frameworks ship with",
            detail=detail,
            fix=("Unset it for Python work: `unset LD_LIBRARY_PATH` (or remove " + ", ".join(entries) +
                 " from it in ~/.bashrc, the module file or $CONDA_PREFIX/etc/conda/activate.d)",),
            evidence=(f"env.LD_LIBRARY_PATH={ld}",) + tuple(f"python.packages.{k}={v}" for k, v in sorted(nvidia_wheels(facts).items())[:4]),
        )
    yield from _cuda_home(facts)


def _cuda_entries(ld: str, facts: Facts) -> list[str]:
    roots = {t.root.rstrip("/"): t.version for t in toolkits(facts) if t.root}
    cudnn_dirs = {c.path.rsplit("/", 1)[0] for c in facts.cudnn if c.path and not (c.source or "").startswith("pip")}
    pip_major = (pip_cuda_runtime(facts) or "").split(".")[0]
    found = []
    for entry in (e.rstrip("/") for e in ld.split(":") if e.strip()):
        if any(h in entry for h in _HARMLESS):
            continue
        root = next((r for r in roots if entry == r or entry.startswith(r + "/")), None)
        if root is not None and entry not in cudnn_dirs:
            other_major = roots[root] and pip_major and roots[root].split(".")[0] != pip_major
            if not other_major:  # same CUDA major: same sonames (libcudart.so.12...), so the loader can mix them
                found.append(entry)
        elif entry in cudnn_dirs:
            found.append(entry)
        elif _CUDA_DIR.search(entry) and not _other_major(entry, facts, pip_major):
            found.append(entry)
    return found


def _other_major(entry: str, facts: Facts, pip_major: str) -> bool:
    """Whether a CUDA directory belongs to another CUDA major than the pip libraries (other sonames)."""
    named = re.search(r"cuda-(\d+)", entry)
    if named:
        major = named.group(1)
    elif re.match(r"/usr/local/cuda(/|$)", entry) and facts.cuda_toolkit and facts.cuda_toolkit.version:
        major = facts.cuda_toolkit.version.split(".")[0]  # the /usr/local/cuda symlink: the active toolkit
    else:
        return False
    return bool(pip_major) and major != pip_major


def _cudnn_conflict(entries: list[str], facts: Facts) -> Optional[str]:
    pip = next((c for c in facts.cudnn if (c.source or "").startswith("pip") and c.version), None)
    if pip is None:
        return None
    for c in facts.cudnn:
        if (c.source or "").startswith("pip") or not c.version or not c.path:
            continue
        directory = c.path.rsplit("/", 1)[0]
        in_path = any(directory == e or directory.startswith(e + "/") for e in entries)
        if in_path and (public(c.version) or public("0")) < (public(pip.version) or public("0")):
            return f"cuDNN {c.version} at {directory} comes before the pip cuDNN {pip.version}"
    return None


def _cuda_home(facts: Facts) -> Iterable[Finding]:
    home = facts.env.get("CUDA_HOME")
    torch, build, _ = torch_build(facts)  # +cu124, or the registry's default build of an untagged torch
    torch_cuda = cuda_of_tag(build)
    if not home or not torch_cuda or judges_the_toolkit(facts):  # check --build: one finding, from the build rules
        return
    toolkit = next((t for t in toolkits(facts) if t.root and t.root.rstrip("/") == home.rstrip("/") and t.version), None)
    if toolkit is None or toolkit_vs_torch(toolkit.version, torch_cuda) != "major":
        return
    yield Finding(
        code="library-path-shadowing", severity="warning", section="toolkit",
        title=f"CUDA_HOME points to CUDA {toolkit.version}, but torch {torch} was built with CUDA {torch_cuda}",
        detail=("Extensions built on this machine (pip packages with CUDA code, torch.utils.cpp_extension, "
                "flash-attn, xformers...) compile against the toolkit in CUDA_HOME. A different CUDA major than "
                "torch's own fails at build time or loads a second CUDA runtime at run time."),
        fix=(f"Point CUDA_HOME at a CUDA {torch_cuda.split('.')[0]}.x toolkit, or unset it when you build no extensions",),
        evidence=(f"env.CUDA_HOME={home}", f"cuda_toolkits[{home}].version={toolkit.version}", f"python.packages.torch={torch}"),
    )


# --- two copies or flavours of a package ---------------------------------------------------------

# Distributions that install into the same import package: only one may be present.
FLAVOUR_CONFLICTS = (
    ("tensorflow", "tensorflow-cpu"), ("tensorflow", "tensorflow-gpu"), ("tensorflow-cpu", "tensorflow-gpu"),
    ("tensorflow", "tf-nightly"), ("paddlepaddle", "paddlepaddle-gpu"), ("jax-cuda12-plugin", "jax-cuda13-plugin"),
)
# conda package name -> pip distribution of the same framework
CONDA_TWINS = {"pytorch": "torch", "tensorflow": "tensorflow", "jaxlib": "jaxlib", "paddlepaddle-gpu": "paddlepaddle-gpu"}


@rule
def duplicate_install(facts: Facts) -> Iterable[Finding]:
    yield from _two_copies(facts)
    yield from _flavours(facts)
    yield from _conda_and_pip(facts)
    yield from _nvidia_flavours(facts)


def _uninstall(facts: Facts, *names: str) -> tuple[str, ...]:
    return (facts.python.executable or "python", "-m", "pip", "uninstall", "-y", *names)


def _two_copies(facts: Facts) -> Iterable[Finding]:
    for name, value in sorted(facts.python.packages.items()):
        copies = value.split("|")
        if len(copies) < 2:
            continue
        yield Finding(
            code="duplicate-install", severity="warning", section="python",
            title=f"Two copies of {name} are installed ({' and '.join(copies)})",
            detail=("Two installations of the same distribution (left behind by an interrupted upgrade, or one in "
                    "user site-packages and one in the environment). Which one Python imports depends on sys.path "
                    "order, and their files can be mixed."),
            fix=(_uninstall(facts, name), ("run it again" if len(copies) == 2 else f"run it {len(copies) - 1} more times")
                 + ": pip removes one copy per run",
                 f"then reinstall one copy of {name} (`envdoctor install` gives the command)"),
            evidence=(f"python.packages.{name}={value}",),
        )


def _flavours(facts: Facts) -> Iterable[Finding]:
    gpu = has_usable_gpu(facts)
    for a, b in FLAVOUR_CONFLICTS:
        va, vb = package(facts, a), package(facts, b)
        if not (va and vb):
            continue
        paddle = a == "paddlepaddle"
        cpu_flavour = next((n for n in (a, b) if n in ("tensorflow-cpu", "paddlepaddle")), None)
        severity = "error" if paddle or (gpu and cpu_flavour) else "warning"
        if paddle:
            keep = "paddlepaddle-gpu" if gpu else "paddlepaddle"
            fix = (_uninstall(facts, a, b), f"then reinstall {keep} alone (`envdoctor install paddle`)")
        else:
            fix = (_uninstall(facts, cpu_flavour if cpu_flavour else b),)
        yield Finding(
            code="duplicate-install", severity=severity, section="frameworks",
            title=f"{a} {va} and {b} {vb} are both installed",
            detail=(f"Both distributions install the same import package, so the files of whichever was installed "
                    f"last overwrite the other's{' (a CPU build can win over the GPU build)' if cpu_flavour else ''}; "
                    "uninstalling either one later breaks the other."),
            fix=fix,
            evidence=(f"python.packages.{a}={va}", f"python.packages.{b}={vb}"),
        )


def _conda_and_pip(facts: Facts) -> Iterable[Finding]:
    for conda_name, pip_name in CONDA_TWINS.items():
        conda_version = facts.python.conda_packages.get(conda_name)
        pip_versions = package_copies(facts, pip_name)
        if not conda_version or not pip_versions:
            continue
        if all(public(v) == public(conda_version) for v in pip_versions):
            continue  # the conda package's own metadata, not a second copy
        yield Finding(
            code="duplicate-install", severity="warning", section="python",
            title=f"{pip_name} is installed by conda ({conda_version}) and by pip ({'|'.join(pip_versions)})",
            detail=("conda and pip each believe they own the package; the pip copy usually wins at import time but "
                    "conda keeps its own CUDA libraries, and the next `conda install` or `conda update` can silently "
                    "replace pip's files."),
            fix=(f"Keep one: `conda remove --force {conda_name}` to keep the pip build, or "
                 f"`python -m pip uninstall {pip_name}` to keep the conda one",),
            evidence=(f"python.conda_packages.{conda_name}={conda_version}", f"python.packages.{pip_name}={'|'.join(pip_versions)}"),
        )


# NVIDIA wheels whose CUDA-major flavours install into one shared directory (nvidia/cudnn, ...).
SHARED_DIRS = ("cudnn", "nccl", "nvshmem")


def _nvidia_flavours(facts: Facts) -> Iterable[Finding]:
    by_component: dict[str, dict[str, str]] = {}
    for name, version in nvidia_wheels(facts).items():
        match = re.fullmatch(r"nvidia-(.+?)-cu(\d+)", name)
        if match:
            component, major = match.group(1), match.group(2)
        else:  # CUDA 13 components are published without a suffix ("nvidia-cuda-runtime 13.0.96")
            component, major = name[len("nvidia-"):], (major_minor(version) or "0").split(".")[0]
        by_component.setdefault(component, {})[major] = f"{name} {version}"
    for component, flavours in sorted(by_component.items()):
        if len(flavours) < 2 or component not in SHARED_DIRS:
            continue  # other components install into per-major directories and coexist
        yield Finding(
            code="duplicate-install", severity="warning", section="cudnn" if component == "cudnn" else "python",
            title=f"NVIDIA {component} wheels for CUDA {' and '.join(sorted(flavours))} side by side ({'; '.join(sorted(flavours.values()))})",
            detail=("Both flavours install into the same site-packages/nvidia/" + component + " directory: the one "
                    "installed last overwrote the other's libraries, and uninstalling either removes files the other needs. "
                    "Usually two frameworks pinned different CUDA majors (e.g. TensorFlow's [and-cuda] on CUDA 12 and "
                    "PyTorch on CUDA 13); keep them in separate environments or pick builds of the same CUDA major."),
            fix=("Put the frameworks in separate virtual environments, or install builds that share one CUDA major "
                 "(`envdoctor install FRAMEWORK --cuda 12.x` for each)",),
            evidence=tuple(f"python.packages.{v.split(' ')[0]}={v.split(' ')[1]}" for v in sorted(flavours.values())),
        )
