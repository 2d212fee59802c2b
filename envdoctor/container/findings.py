"""Findings only a build file has: CUDA extensions compiled without nvcc, system CUDA libraries the
image lacks for a build that loads them from the system, ENV lines that bake in a device choice, a
musl image, and what the host must provide (the driver the image and its frameworks need).

Every finding is `Located`: the Finding (same class as `check`'s), the Dockerfile line it comes from,
and the corrected line where there is one."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable, Optional

from envdoctor.container import base_images
from envdoctor.container.to_facts import Described
from envdoctor.findings import Finding
from envdoctor.matrix.host_compilers import version_numbers
from envdoctor.matrix.loader import load


@dataclass(frozen=True)
class Located:
    finding: Finding
    line: Optional[int] = None
    corrected: Optional[str] = None
    file: Optional[str] = None
    service: Optional[str] = None  # compose: the service it belongs to
    corrected_at: Optional[int] = None  # the line the correction replaces, when not `line` (a FROM line)

    def to_dict(self) -> dict:
        data = self.finding.to_dict()
        data.update({"file": self.file, "line": self.line, "corrected": self.corrected,
                     "corrected_line": self.corrected_at or (self.line if self.corrected else None)})
        if self.service is not None:
            data["service"] = self.service
        return data


# --- CUDA extensions ----------------------------------------------------------------------------------

def _extensions() -> list[dict]:
    return list(load("base_images").get("cuda_extension", ()))


def extension_of(local_or_name: str) -> Optional[dict]:
    """The CUDA extension a requirement name, git URL or cloned repository builds, if any."""
    text = local_or_name.lower()
    for row in _extensions():
        if any(repo.lower() in text for repo in row["repositories"]):
            return row
    return None


def _extension_builds(described: Described) -> Iterable[tuple[dict, int, str, object]]:
    for step in described.steps:
        if step.kind not in ("pip", "source-build"):
            continue
        for req in step.requirements:
            row = next((r for r in _extensions() if r["name"] == req.name), None)
            if row is None:
                continue
            env_names = row.get("build_env", ())
            if row.get("from_source_only") and not any(n in step.env or n in described.env for n in env_names):
                continue
            yield row, step.line, req.text or req.name, step
        for local in step.local:
            row = extension_of(local)
            if row is not None:
                yield row, step.line, local, step


def extension_findings(described: Described, dockerfile) -> Iterable[Located]:
    toolkit = described.facts.get("cuda_toolkit") or {}
    nvcc = toolkit.get("nvcc")
    no_nvcc = not nvcc and described.base.nvcc is False  # an image nobody described may well have one
    arch_list = described.env.get("TORCH_CUDA_ARCH_LIST") or described.base.env.get("TORCH_CUDA_ARCH_LIST")
    seen: set[str] = set()
    for row, line, what, step in _extension_builds(described):
        if row["name"] in seen:
            continue
        seen.add(row["name"])
        if step.kind == "pip" and "--no-build-isolation" not in step.options and row["name"] != "deepspeed" and \
                any(r.name == row["name"] for r in step.requirements):
            yield _isolated(dockerfile, row, line, what)
        if no_nvcc:
            yield _no_nvcc(described, dockerfile, row, line, what)
            continue
        if not nvcc:
            continue
        mismatch = _toolkit_torch_mismatch(described, toolkit)
        if mismatch:
            yield Located(mismatch, line, _devel_from(described, dockerfile), corrected_at=described.from_line)
        if not arch_list and "TORCH_CUDA_ARCH_LIST" not in step.env:
            yield _arch_list_unset(described, row, line)


def _isolated(dockerfile, row: dict, line: int, what: str) -> Located:
    original = dockerfile.line_text(line)
    fixed = original.replace(what, f"{what} --no-build-isolation", 1) if what in original else None
    return Located(Finding(
        code="extension-build-mismatch", severity="error", section="toolkit",
        title=f"{row['name']} is built in an isolated build environment that has no torch",
        detail=(f"pip builds {row['name']} in a fresh environment (build isolation) where the installed torch is "
                "not importable, so its setup.py fails with \"No module named 'torch'\" or builds against another "
                "torch than the one installed."),
        fix=("Install it with --no-build-isolation, after torch (and ninja, packaging) are installed",),
        evidence=(f"line {line}: {what}",)), line, fixed)


def _torch_cuda(described: Described) -> Optional[str]:
    from envdoctor.diagnose._common import cuda_of_tag, local_tag

    torch = described.facts["python"]["packages"].get("torch")
    return cuda_of_tag(local_tag(torch)) if torch else None


def _no_nvcc(described: Described, dockerfile, row: dict, line: int, what: str) -> Located:
    base = described.base
    corrected = _devel_from(described, dockerfile)
    severity = "warning" if row.get("prebuilt") else "error"
    fallback = (" Its installer first looks for a prebuilt wheel matching this torch, CUDA and Python, and compiles "
                "when none matches." if row.get("prebuilt") else "")
    cuda = _torch_cuda(described) or (base.cuda and ".".join(base.cuda.split(".")[:2]))
    apt = f"apt-get install -y cuda-nvcc-{cuda.replace('.', '-')}" if cuda else "apt-get install -y cuda-nvcc-X-Y"
    return Located(Finding(
        code="extension-build-mismatch", severity=severity, section="toolkit",
        title=f"{row['name']} compiles CUDA code, and this image has no nvcc",
        detail=(f"Line {line} installs {what}, which builds CUDA kernels with nvcc and the CUDA headers.{fallback} "
                f"The base image {base.reference} is {('a ' + base.flavour + ' image') if base.flavour else 'an image'} "
                "without the CUDA compiler, so the build stops with \"CUDA_HOME environment variable is not set\" / "
                "\"nvcc not found\"."),
        fix=((f"Build on a -devel image: {corrected}",) if corrected else ()) +
            (f"or install the compiler first (from NVIDIA's CUDA apt repository): {apt}",),
        evidence=(f"base={base.reference}", f"line {line}: {what}")), line, corrected, corrected_at=described.from_line)


def _devel_from(described: Described, dockerfile) -> Optional[str]:
    """The FROM line on the -devel image, of the CUDA the torch build uses (nvcc must match its major)."""
    base = described.base
    if base.family not in ("nvidia-cuda", "pytorch") or not base.cuda:
        return None
    tag = re.sub(r"(?<=-)(base|runtime)(?=-|$)", "devel", base.tag, count=1)
    torch_cuda = _torch_cuda(described)
    if base.family == "nvidia-cuda" and torch_cuda and ".".join(base.cuda.split(".")[:2]) != torch_cuda:
        tag = tag.replace(base.cuda, f"{torch_cuda}.0", 1)
    if tag == base.tag:
        return None
    original = dockerfile.line_text(described.from_line)
    return original.replace(base.tag, tag, 1) if base.tag in original else f"FROM {base.repository}:{tag}"


def _toolkit_torch_mismatch(described: Described, toolkit: dict) -> Optional[Finding]:
    from envdoctor.diagnose._common import cuda_of_tag, local_tag
    from envdoctor.diagnose.build import toolkit_vs_torch

    torch = described.facts["python"]["packages"].get("torch")
    build_cuda = cuda_of_tag(local_tag(torch)) if torch else None
    have = toolkit.get("version")
    if toolkit_vs_torch(have, build_cuda) == "major":
        return Finding(
            code="extension-build-mismatch", severity="error", section="toolkit",
            title=f"nvcc is CUDA {have}, torch {torch} was built with CUDA {build_cuda}",
            detail=("torch.utils.cpp_extension refuses to build when the CUDA major of nvcc differs from the one "
                    "torch was compiled with (\"The detected CUDA version mismatches the version that was used to "
                    "compile PyTorch\")."),
            fix=(f"Use a -devel image of CUDA {build_cuda.split('.')[0]}.x, or a torch build for CUDA {have}",),
            evidence=(f"cuda_toolkit.version={have}", f"python.packages.torch={torch}"))
    return None


ARCH_LIST_PLACEHOLDER = "<your GPUs' compute capabilities, e.g. from nvidia-smi --query-gpu=compute_cap>"


def _arch_list_unset(described: Described, row: dict, line: int) -> Located:
    gpus = (described.facts.get("nvidia") or {}).get("gpus") or []
    ccs = sorted({g.get("compute_capability") for g in gpus if g.get("compute_capability")})
    value = ";".join(ccs) if ccs else ARCH_LIST_PLACEHOLDER
    return Located(Finding(
        code="extension-build-mismatch", severity="warning", section="toolkit",
        title=f"TORCH_CUDA_ARCH_LIST is not set for the {row['name']} build",
        detail=("No GPU is visible during `docker build`, so torch.utils.cpp_extension cannot detect which GPUs to "
                "compile for: the build compiles for every architecture it knows (slow, large) or fails, and kernels "
                "for the GPU you deploy on may be missing (\"no kernel image is available for execution on the "
                "device\")."),
        fix=(f"Set the compute capabilities of the GPUs you deploy on before the build: ENV TORCH_CUDA_ARCH_LIST=\"{value}\"",),
        evidence=("env.TORCH_CUDA_ARCH_LIST=unset",)), line,
        f"ENV TORCH_CUDA_ARCH_LIST=\"{value}\"")


# --- system CUDA libraries the image lacks -----------------------------------------------------------------

def system_library_findings(described: Described, dockerfile) -> Iterable[Located]:
    packages = described.facts["python"]["packages"]
    cudnn = described.facts.get("cudnn") or []
    toolkit = described.facts.get("cuda_toolkit") or {}
    libs_major = (toolkit.get("version") or "").split(".")[0]
    has_libs = bool(libs_major) and "cublas" in _libraries(described)
    for name, version in packages.items():
        match = re.match(r"^jax-cuda(\d+)-plugin$", name)
        if match and not any(p.startswith(f"nvidia-cudnn-cu{match.group(1)}") for p in packages):
            major = match.group(1)
            if not cudnn or not has_libs or libs_major != major:
                yield _lacks(described, dockerfile, name, version, major, bool(cudnn), has_libs and libs_major == major,
                             f"pip install \"jax[cuda{major}]=={packages.get('jax', version)}\"")
    paddle = packages.get("paddlepaddle-gpu")
    if paddle and not any(p.startswith("nvidia-cudnn") for p in packages):
        if not cudnn or not has_libs:
            yield _lacks(described, dockerfile, "paddlepaddle-gpu", paddle, libs_major or "12", bool(cudnn), has_libs, None)
    tf = packages.get("tensorflow")
    if tf and not any(p.startswith(("nvidia-cudnn", "nvidia-cuda-runtime")) for p in packages) and \
            described.facts.get("nvidia") is not None:
        from envdoctor.diagnose import knowledge
        from envdoctor.diagnose._common import public

        needs, _, and_cuda = knowledge.tf_build(str(public(tf)))
        has_gpu_wheels = knowledge.tf_has_gpu(str(public(tf)), f"linux_{described.arch}")
        if needs and has_gpu_wheels is not False:
            major = str(needs).split(".")[0]
            if not cudnn or not has_libs or libs_major != major:
                fix = f"pip install \"tensorflow[and-cuda]=={public(tf)}\"" if and_cuda else None
                yield _lacks(described, dockerfile, "tensorflow", tf, major, bool(cudnn),
                             has_libs and libs_major == major, fix)


def _libraries(described: Described) -> set[str]:
    return set(described.base.libraries) | described.libraries


def _lacks(described: Described, dockerfile, dist: str, version: str, major: str, has_cudnn: bool, has_libs: bool,
           pip_fix: Optional[str]) -> Located:
    base = described.base
    missing = " and ".join(x for x, present in ((f"the CUDA {major} libraries (cuBLAS, cuFFT, ...)", has_libs),
                                                ("cuDNN", has_cudnn)) if not present)
    corrected = _cudnn_from(described, dockerfile, major)
    line = described.line_of(f"python.packages.{dist}")
    fixes: tuple = ()
    if pip_fix:
        fixes += (f"Install the pip CUDA libraries with the framework: {pip_fix}",)
    if corrected:
        fixes += (f"or build on an image that has them: {corrected}",)
    if not fixes:
        fixes = (f"Install cuDNN and the CUDA {major} libraries in the image (a nvidia/cuda -cudnn-runtime base)",)
    return Located(Finding(
        code="cuda-libs-missing", severity="error", section="cudnn" if has_libs else "toolkit",
        title=f"{dist} {version} loads CUDA libraries from the system, and this image lacks {missing}",
        detail=(f"This {dist} install does not bring the CUDA libraries as pip wheels; it loads them from the system "
                f"at run time. The image ({base.reference}) has no {missing}, so the framework fails to initialise "
                "its GPU backend (\"Cannot load cudnn shared library\", \"CUDA backend failed to initialize\", "
                "\"Could not load dynamic library\") and runs on the CPU."),
        fix=fixes, evidence=(f"python.packages.{dist}={version}", f"base={base.reference}")),
        line, f"RUN {pip_fix}" if pip_fix else corrected, corrected_at=None if pip_fix else described.from_line)


def _cudnn_from(described: Described, dockerfile, major: str) -> Optional[str]:
    base = described.base
    if base.family != "nvidia-cuda" or not base.cuda or base.cuda.split(".")[0] != major:
        return None
    flavour = "devel" if base.flavour == "devel" else "runtime"
    os_word = base.tag.rsplit("-", 1)[-1]
    token = "cudnn" if version_numbers(base.cuda)[:2] >= (12, 4) else "cudnn8"
    original = dockerfile.line_text(described.from_line)
    new_tag = f"{base.cuda}-{token}-{flavour}-{os_word}"
    return original.replace(base.tag, new_tag, 1) if base.tag in original else f"FROM {base.repository}:{new_tag}"


# --- ENV lines and the image's libc ---------------------------------------------------------------------------

def env_findings(described: Described) -> Iterable[Located]:
    env = described.env
    visible = env.get("NVIDIA_VISIBLE_DEVICES")
    if visible is not None and visible.strip().lower() in ("void", "none", ""):
        yield Located(Finding(
            code="container-gpu-missing", severity="error", section="nvidia",
            title=f"ENV NVIDIA_VISIBLE_DEVICES={visible or '(empty)'} hides every GPU from the container",
            detail=("The NVIDIA container toolkit mounts no GPU into a container whose NVIDIA_VISIBLE_DEVICES is void, "
                    "none or empty, whatever `--gpus` says; the frameworks see no device."),
            fix=("Remove the line, or set NVIDIA_VISIBLE_DEVICES=all (let `docker run --gpus` choose)",),
            evidence=(f"env.NVIDIA_VISIBLE_DEVICES={visible}",)), described.line_of("env.NVIDIA_VISIBLE_DEVICES"),
            "ENV NVIDIA_VISIBLE_DEVICES=all")
    cvd = env.get("CUDA_VISIBLE_DEVICES")
    if cvd is not None:
        yield Located(Finding(
            code="cuda-visible-devices", severity="warning", section="nvidia",
            title=f"ENV CUDA_VISIBLE_DEVICES={cvd or '(empty)'} bakes a device choice into the image",
            detail=("Inside a container the GPUs are renumbered from 0 by the runtime (`--gpus`, "
                    "NVIDIA_VISIBLE_DEVICES); a CUDA_VISIBLE_DEVICES fixed in the image then selects among those, and "
                    "hides every GPU when it names one the container does not get (or is empty): \"no CUDA-capable "
                    "device is detected\"."),
            fix=("Remove the ENV line; choose devices at run time (`docker run --gpus '\"device=1\"'` or -e CUDA_VISIBLE_DEVICES)",),
            evidence=(f"env.CUDA_VISIBLE_DEVICES={cvd}",)), described.line_of("env.CUDA_VISIBLE_DEVICES"), None)


_PYTHON_INSTALLERS = ("conda", "miniconda", "miniforge", "mambaforge", "micromamba", "pyenv", "python-build-standalone",
                      "deadsnakes", "asdf", "rye")


def python_findings(described: Described, dockerfile) -> Iterable[Located]:
    """pip run in an image that has no Python (nvidia/cuda, ubuntu and debian images ship none)."""
    if described.base.family not in ("nvidia-cuda", "ubuntu", "debian") or described.facts["python"].get("version"):
        return
    pip = next((s for s in described.steps if s.kind == "pip" and s.tool == "pip"), None)
    if pip is None or _installs_python_otherwise(dockerfile):
        return
    distro = described.base.distro
    yield Located(Finding(
        code="python-unsupported", severity="error", section="python",
        title=f"`{pip.words[0] if pip.words else 'pip'}` is run, but {described.base.reference} has no Python",
        detail=(f"{described.base.reference} ships no Python interpreter and no pip; nothing before line {pip.line} "
                "installs one, so the build stops with \"pip: not found\"."),
        fix=("Install Python first: RUN apt-get update && apt-get install -y --no-install-recommends python3 python3-pip"
             + (f" (Python {distro.python3} on {distro.label})" if distro and distro.python3 else ""),),
        evidence=(f"base={described.base.reference}", "python.version=none")), pip.line,
        "RUN apt-get update && apt-get install -y --no-install-recommends python3 python3-pip", corrected_at=pip.line)


def _installs_python_otherwise(dockerfile) -> bool:
    from envdoctor.container.shell import commands_of

    for stage in dockerfile.stages:
        for ins in stage.instructions:
            if ins.cmd != "RUN":
                continue
            for words in commands_of(ins):
                if any(marker in word.lower() for word in words for marker in _PYTHON_INSTALLERS):
                    return True
    return False


_JETSON_FRAMEWORKS = {"torch": "pytorch", "tensorflow": "tensorflow", "jax": "jax", "paddlepaddle-gpu": "paddle"}


def jetson_findings(described: Described, dockerfile) -> Iterable[Located]:
    """On an L4T image, a framework pip installs from the registry alone is the generic aarch64 wheel, not
    NVIDIA's JetPack build (which comes from a Jetson index or NVIDIA's redist wheels)."""
    from envdoctor.matrix import jetson

    if not described.base.l4t:
        return
    release = jetson.release_for_l4t(described.base.l4t)
    jetpack = getattr(release, "jetpack", None)
    for dist, framework in _JETSON_FRAMEWORKS.items():
        requested = described.requested.get(dist)
        if requested is None:
            continue
        req, step = requested
        urls = ([step.index_url] if step.index_url else []) + step.extra_index_urls + step.find_links
        if urls or "+nv" in req.specifier:
            continue
        source = next((s for s in jetson.framework_sources(jetpack, framework) if s.index_url), None)
        corrected = (f"RUN pip3 install --extra-index-url {source.index_url} {req.text or dist}"
                     if source is not None else None)
        yield Located(Finding(
            code="jetson-wrong-wheel", severity="error", section="jetson",
            title=f"{req.text or dist} on an L4T image comes from the registry: the generic aarch64 wheel",
            detail=(f"{described.base.reference} is a Jetson (L4T {described.base.l4t}{', JetPack ' + jetpack if jetpack else ''}) "
                    f"image. Without NVIDIA's Jetson index or wheel, pip installs the registry's aarch64 {dist}, which is "
                    "built for server GPUs or the CPU, not the Tegra GPU: it runs on the CPU or fails with \"no kernel "
                    "image is available\"."),
            fix=((f"Install NVIDIA's JetPack build: {corrected[4:]}",) if corrected else ()) +
                ("or start from a Jetson framework image (nvcr.io/nvidia/l4t-pytorch, dustynv/l4t-pytorch) for this L4T",),
            evidence=(f"base={described.base.reference}", f"line {step.line}: {req.text or dist}")), step.line, corrected)


def libc_findings(described: Described) -> Iterable[Located]:
    distro = described.base.distro
    if distro is None or distro.libc != "musl":
        return
    frameworks = [n for n in described.facts["python"]["packages"] if n in ("torch", "tensorflow", "jax", "jaxlib",
                                                                            "paddlepaddle", "paddlepaddle-gpu")]
    if not frameworks:
        return
    base = described.base
    slim = base.tag.replace("alpine", "slim").rstrip("0123456789.").rstrip("-")
    yield Located(Finding(
        code="glibc-too-old", severity="error", section="platform",
        title=f"{base.reference} uses musl libc: {', '.join(frameworks)} have no wheels for it",
        detail=("Alpine's C library is musl, not glibc. The frameworks publish manylinux (glibc) wheels only, so pip "
                "finds no installable wheel (\"No matching distribution found\") or tries a source build that fails."),
        fix=(f"Use a glibc image: FROM {base.repository}:{slim}",),
        evidence=(f"base={base.reference}", "libc=musl")), described.from_line,
        f"FROM {base.repository}:{slim}")


# --- what the host must provide -----------------------------------------------------------------------------

def driver_requirements(described: Described) -> list[tuple[str, str, str]]:
    """(minimum driver, who needs it, why) for the image and each CUDA build in it."""
    from envdoctor.diagnose import knowledge
    from envdoctor.diagnose._common import cuda_of_tag, local_tag, public

    needs: list[tuple[str, str, str]] = []
    require = _require_cuda(described)
    if require:
        driver = base_images.require_cuda_driver(require)
        if driver:
            needs.append((driver, f"the image ({described.base.reference or 'ENV NVIDIA_REQUIRE_CUDA'})",
                          f"declares NVIDIA_REQUIRE_CUDA cuda>={require}: the container toolkit refuses to start it on "
                          f"a driver below the {driver} branch (datacenter GPUs excepted where the image lists "
                          "forward-compatible branches)"))
    packages = described.facts["python"]["packages"]
    torch = packages.get("torch")
    if torch:
        conda_cuda = described.facts["python"].get("conda_packages", {}).get("pytorch-cuda")
        tag = local_tag(torch) or (f"cu{conda_cuda.replace('.', '')}" if conda_cuda else
                                   knowledge.torch_default_build(str(public(torch)), f"linux_{described.arch}"))
        cuda = cuda_of_tag(tag)
        minimum = knowledge.wheel_min_driver(cuda, "linux") if cuda else None
        if minimum:
            needs.append((str(minimum), f"torch {torch}", f"bundles its own CUDA {cuda} runtime ({tag} build), "
                          "independent of the base image's CUDA"))
    runtime = next((v for k, v in packages.items() if k.startswith("nvidia-cuda-runtime")), None)
    for dist in ("tensorflow", "paddlepaddle-gpu"):
        if packages.get(dist) and runtime and any(k.startswith("nvidia-cudnn") for k in packages):
            minimum = knowledge.wheel_min_driver(".".join(runtime.split(".")[:2]), "linux")
            if minimum:
                needs.append((str(minimum), f"{dist} {packages[dist]}", f"brings CUDA {runtime} as pip wheels"))
    plugin = next((k for k in packages if re.match(r"^jax-cuda\d+-plugin$", k)), None)
    if plugin and packages.get("jax"):
        row = knowledge.jax_plugin(plugin[len("jax-"):-len("-plugin")], str(public(packages["jax"])))
        if row is not None and row.driver_linux:
            needs.append((row.driver_linux, f"{plugin} {packages[plugin]}", f"JAX's CUDA {row.cuda_build} plugin"))
    return needs


def _require_cuda(described: Described) -> Optional[str]:
    if described.env.get("NVIDIA_DISABLE_REQUIRE", "").lower() in ("1", "true", "yes"):
        return None
    declared = described.env.get("NVIDIA_REQUIRE_CUDA")
    if declared:
        match = re.search(r"cuda>=(\d+\.\d+)", declared)
        return match.group(1) if match else None
    return described.base.require_cuda


def host_findings(described: Described, host_driver: Optional[str]) -> Iterable[Located]:
    from envdoctor.diagnose._common import driver_at_least

    needs = driver_requirements(described)
    if not needs:
        return
    strictest = max(needs, key=lambda n: version_numbers(n[0]))
    lines = "; ".join(f"{who}: driver >= {driver} ({why})" for driver, who, why in needs)
    yield Located(Finding(
        code="host-driver-required", severity="info", section="nvidia",
        title=f"The host needs NVIDIA driver >= {strictest[0]} to run this image's GPU code",
        detail=(f"{lines}. The container uses the host's kernel driver (mounted by the NVIDIA container toolkit); a "
                "framework wheel's CUDA runtime needs a driver new enough for it, whatever CUDA the base image has."),
        fix=(f"On the host: nvidia-smi must show driver {strictest[0]} or newer; run with `docker run --gpus all ...`",),
        evidence=tuple(f"{who} -> driver >= {driver}" for driver, who, _ in needs)), described.from_line)
    if host_driver:
        for driver, who, why in needs:
            if not driver_at_least(host_driver, driver) and who.startswith("the image"):
                yield Located(Finding(
                    code="driver-too-old", severity="error", section="nvidia",
                    title=f"The host's driver {host_driver} is below what {who} requires (>= {driver})",
                    detail=f"{who} {why}. `docker run` fails with \"nvidia-container-cli: requirement error: unsatisfied condition: cuda>=...\".",
                    fix=(f"Update the host driver to {driver} or newer, or build on an image of an older CUDA",),
                    evidence=(f"host nvidia.driver_version={host_driver}", f"{who} -> driver >= {driver}")),
                    described.from_line)


def all_findings(described: Described, dockerfile, host_driver: Optional[str]) -> list[Located]:
    found: list[Located] = []
    for producer in (lambda: extension_findings(described, dockerfile),
                     lambda: system_library_findings(described, dockerfile),
                     lambda: env_findings(described), lambda: libc_findings(described),
                     lambda: python_findings(described, dockerfile), lambda: jetson_findings(described, dockerfile),
                     lambda: host_findings(described, host_driver)):
        found.extend(producer())
    return found
