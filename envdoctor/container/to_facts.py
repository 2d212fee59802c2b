"""A Dockerfile's final stage -> the machine it describes: a partial Facts document (schema
envdoctor.facts/1) plus where each fact came from (the Dockerfile line), so that `complete` and
`diagnose` judge it exactly as `check --facts` judges a recorded machine.

What the base image holds comes from matrices/base_images.toml; what the install lines add comes
from their words (shell.py) and the framework matrices (a `--index-url .../whl/cu124` makes the
torch build cu124; a bare `torch==X` is the registry's default build for the image's platform,
which `complete`/the rules derive; an unpinned one is judged as the newest release the matrix knows
for the image's Python). A pip wheel of torch / TensorFlow / JAX brings its own CUDA runtime: the
base image's CUDA does not decide which build runs, the host driver does.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from envdoctor.container import base_images
from envdoctor.container.parse import Dockerfile, Stage, env_pairs, has_unresolved, substitute
from envdoctor.container.shell import Requirement, Step, conda_spec, run_steps

MAX_REQUIREMENTS_BYTES = 256_000
_INDEX_TAG = re.compile(r"/whl/(?:nightly/|test/)?(cu\d{2,3}|cpu|rocm\d+(?:\.\d+){0,2}|xpu)(?:/|$)")
_PADDLE_INDEX = re.compile(r"/packages/(?:stable|nightly)/(cu\d{3}|cpu)(?:/|$)")
_APT_TOOLKIT = re.compile(r"^cuda-(?P<package>toolkit|nvcc|compiler|minimal-build)-(?P<major>\d+)-(?P<minor>\d+)(?:=.*)?$")
_APT_LIBS = re.compile(r"^cuda-(?P<package>libraries|runtime|cudart)-(?P<major>\d+)-(?P<minor>\d+)(?:=.*)?$")
_APT_CUDNN = re.compile(r"^(?:lib)?cudnn(\d+)?(?:-cuda-\d+)?(?:-dev)?(?:=(?P<version>[\d.]+))?")
_APT_PYTHON = re.compile(r"^python(3(?:\.\d+)?)(?:-full|-dev|-venv)?$")
_PLATFORMS = {"linux/amd64": "x86_64", "linux/x86_64": "x86_64", "linux/arm64": "aarch64", "linux/arm64/v8": "aarch64",
              "linux/aarch64": "aarch64"}
DEFAULT_PLATFORM = "linux/amd64"


@dataclass
class Described:
    """The machine a build describes, and where each part of it came from."""

    facts: dict
    base: base_images.BaseImage
    from_line: int
    origins: dict[str, int] = field(default_factory=dict)  # "python.packages.torch" / "env.X" / "cuda_toolkit" -> line
    steps: list[Step] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    assumptions: list[str] = field(default_factory=list)
    unresolved: list[tuple[int, str]] = field(default_factory=list)  # installs whose packages are unknown
    requested: dict[str, tuple[Requirement, Step]] = field(default_factory=dict)  # framework dists as requested
    builds: dict[str, str] = field(default_factory=dict)  # dist -> where its build came from ("index cu124")
    arch: Optional[str] = None
    copies: list[tuple[tuple[str, ...], str]] = field(default_factory=list)  # COPY/ADD from the context: (sources, dest)
    libraries: set[str] = field(default_factory=set)  # system CUDA libraries: the base image's and apt-installed ones

    def line_of(self, path: str) -> int:
        return self.origins.get(path, self.from_line)


def describe_stage(dockerfile: Dockerfile, stage: Stage, context: Optional[str], platform: Optional[str] = None,
                   host: Optional[dict] = None) -> Described:
    chain = dockerfile.chain(stage)
    root = chain[0]
    base = base_images.describe(root.base)
    arch = _arch(root.platform or stage.platform or platform, base)
    described = Described(facts={}, base=base, from_line=root.line, arch=arch)
    if not root.base.strip():
        described.assumptions.append(f"the FROM on line {root.line} names its image by a build argument without a "
                                     "default: its OS, Python and CUDA are unknown (give --build-arg NAME=IMAGE)")
    elif not base.known:
        why = "unresolved build argument" if has_unresolved(root.base) else "not in matrices/base_images.toml"
        described.assumptions.append(f"base image {root.base} ({why}): its OS, Python and CUDA are unknown")
    if not (root.platform or stage.platform or platform) and not base.arch:
        described.assumptions.append(f"platform {DEFAULT_PLATFORM} (docker build's default on an x86_64 builder; "
                                     "give --platform for another)")
    state = _State(base, arch)
    _base_packages(base, state, described)
    variables: dict[str, str] = {}
    clones: dict[str, str] = {}
    workdir = "/"
    for st in chain:
        variables.update(st.args)
        for ins in st.instructions:
            if ins.cmd == "ENV":
                for name, value in env_pairs(ins):
                    value = substitute(value, {**variables, **described.env})
                    described.env[name] = value
                    variables[name] = value
                    described.origins[f"env.{name}"] = ins.line
            elif ins.cmd == "ARG":
                variables.update({k: v for k, v in st.args.items()})
            elif ins.cmd in ("COPY", "ADD") and not any(f.startswith("--from=") for f in ins.flags) and len(ins.words) >= 2:
                words = [substitute(w, {**variables, **described.env}) for w in ins.words]
                dest = words[-1] if words[-1].startswith("/") else posixpath.join(workdir, words[-1])
                dest = posixpath.normpath(dest) + ("/" if words[-1].endswith("/") or words[-1] in (".", "./") else "")
                described.copies.append((tuple(w for w in words[:-1] if not w.startswith("--")), dest))
            elif ins.cmd == "WORKDIR" and ins.words:
                workdir = posixpath.join(workdir, substitute(ins.words[0], {**variables, **described.env}))
            elif ins.cmd == "RUN":
                for step in run_steps(ins, variables, clones):
                    described.steps.append(step)
                    _apply(step, state, described, context)
    described.facts = _facts(described, state, host)
    described.libraries = set(state.libraries)
    return described


def _base_packages(base: base_images.BaseImage, state: _State, described: Described) -> None:
    """The frameworks a framework image ships count as installed on its FROM line."""
    holder = Step(kind="pip", line=described.from_line, tool="image")
    for name, version in base.packages.items():
        state.packages[name] = version
        described.origins[f"python.packages.{name}"] = described.from_line
        described.builds[name] = f"image {base.reference}"
        if name == "torch":
            _torch_wheels(version, state, described, holder)
        if name == "tensorflow" and "and-cuda" in base.extras:
            _tensorflow_wheels(version, state, described, holder)


def _arch(platform: Optional[str], base: base_images.BaseImage) -> str:
    if base.arch:
        return base.arch
    return _PLATFORMS.get((platform or DEFAULT_PLATFORM).lower(), "x86_64")


def library_dir(arch: str, distro: Optional[base_images.Distro]) -> str:
    """Where the image's system packages (libcudnn from apt or dnf) put shared libraries: Debian and Ubuntu's
    multiarch directory of the image's architecture (/usr/lib/aarch64-linux-gnu on arm64, the SBSA builds of
    nvidia/cuda), /usr/lib64 on RHEL-family images."""
    if distro is not None and distro.name == "rhel":
        return "/usr/lib64"
    return f"/usr/lib/{arch}-linux-gnu"


class _State:
    def __init__(self, base: base_images.BaseImage, arch: str = "x86_64") -> None:
        self.lib_dir = library_dir(arch, base.distro)
        self.python: Optional[str] = base.python
        self.python_line: Optional[int] = None
        self.packages: dict[str, str] = {}
        self.conda: dict[str, str] = {}
        self.toolkit: Optional[dict] = None
        self.cudnn: list[dict] = []
        self.libraries: set[str] = set(base.libraries)
        self.lib_cuda: Optional[str] = base.cuda
        if base.cuda:
            root = "/usr/local/cuda"
            self.toolkit = {"version": ".".join(base.cuda.split(".")[:2]), "root": root,
                            "nvcc": f"{root}/bin/nvcc" if base.nvcc else None, "found_by": "/usr/local"}
        if base.cudnn:
            self.cudnn.append({"version": base.cudnn, "source": f"image:{base.reference}",
                               "path": f"{self.lib_dir}/libcudnn.so." + base.cudnn.split(".")[0]})


def _apply(step: Step, state: _State, described: Described, context: Optional[str]) -> None:
    if step.kind == "apt":
        _apt(step, state, described)
    elif step.kind == "python-install":
        version = next((p for p in step.packages if re.match(r"^3\.\d+", p or "")), None)
        if version:
            state.python, state.python_line = ".".join(version.split(".")[:2]), step.line
            described.origins["python.version"] = step.line
    elif step.kind == "conda":
        _conda(step, state, described)
    elif step.kind == "pip":
        _pip(step, state, described, context)
    elif step.kind == "unknown-install":
        described.unresolved.append((step.line, " ".join(step.words[:4])))


def _apt(step: Step, state: _State, described: Described) -> None:
    distro = described.base.distro
    for word in step.packages:
        toolkit, libs, cudnn, python = (_APT_TOOLKIT.match(word), _APT_LIBS.match(word), _APT_CUDNN.match(word),
                                        _APT_PYTHON.match(word))
        if toolkit:
            version = f"{toolkit.group('major')}.{toolkit.group('minor')}"
            state.toolkit = {"version": version, "root": "/usr/local/cuda", "nvcc": f"/usr/local/cuda-{version}/bin/nvcc",
                             "found_by": "/usr/local"}
            state.libraries |= set(base_images.package_libraries(toolkit.group("package"), version))
            described.origins["cuda_toolkit"] = step.line
        elif libs:
            state.lib_cuda = f"{libs.group('major')}.{libs.group('minor')}"
            state.libraries |= set(base_images.package_libraries(libs.group("package"), state.lib_cuda))
            if state.toolkit is None:
                state.toolkit = {"version": state.lib_cuda, "root": "/usr/local/cuda", "nvcc": None, "found_by": "/usr/local"}
            described.origins["cuda_toolkit"] = step.line
        elif cudnn and word.startswith(("libcudnn", "cudnn")) and (cudnn.group(1) or cudnn.group("version")):
            version = cudnn.group("version") or cudnn.group(1)
            state.cudnn.append({"version": version, "source": f"apt:{word.split('=')[0]}",
                                "path": f"{state.lib_dir}/libcudnn.so.{version.split('.')[0]}"})
            described.origins["cudnn"] = step.line
        elif python and step.tool in ("apt-get", "apt"):
            minor = python.group(1)
            version = minor if "." in minor else (distro.python3 if distro else None)
            if version and (state.python is None or state.python_line is not None):
                state.python, state.python_line = version, step.line
                described.origins["python.version"] = step.line
        elif word in ("python3-pip", "python-pip", "python3-venv") and state.python is None and distro and distro.python3:
            state.python, state.python_line = distro.python3, step.line
            described.origins["python.version"] = step.line


_CONDA_TO_PIP = {"pytorch": "torch", "pytorch-gpu": "torch", "pytorch-cpu": "torch", "torchvision": "torchvision",
                 "torchaudio": "torchaudio", "tensorflow": "tensorflow", "tensorflow-gpu": "tensorflow", "jax": "jax",
                 "jaxlib": "jaxlib", "paddlepaddle": "paddlepaddle", "paddlepaddle-gpu": "paddlepaddle-gpu",
                 "numpy": "numpy"}


def _conda(step: Step, state: _State, described: Described) -> None:
    if step.files:
        described.unresolved.append((step.line, f"{step.tool} environment file {step.files[0]}"))
    for word in step.packages:
        name, version, _ = conda_spec(word)
        if name == "python" and version:
            state.python, state.python_line = ".".join(version.split(".")[:2]), step.line
            described.origins["python.version"] = step.line
            continue
        state.conda[name] = version or "unknown"
        described.origins[f"python.conda_packages.{name}"] = step.line
        if name in ("cuda-nvcc", "cuda-toolkit", "cudatoolkit-dev") :
            state.toolkit = {"version": version or state.conda.get("cuda-version") or None, "root": "/opt/conda",
                             "nvcc": "/opt/conda/bin/nvcc", "found_by": "PATH"}
            described.origins["cuda_toolkit"] = step.line
        if name == "cudnn" and version:
            state.cudnn.append({"version": version, "source": "conda:cudnn", "path": "/opt/conda/lib/libcudnn.so"})
            described.origins["cudnn"] = step.line
        pip_name = _CONDA_TO_PIP.get(name)
        if pip_name and version:
            state.packages[pip_name] = version
            described.origins[f"python.packages.{pip_name}"] = step.line
            described.builds[pip_name] = f"conda {name}"


# --- pip --------------------------------------------------------------------------------------------

FRAMEWORK_DISTS = ("torch", "torchvision", "torchaudio", "tensorflow", "tensorflow-cpu", "tf-nightly", "jax", "jaxlib",
                   "paddlepaddle", "paddlepaddle-gpu", "numpy")


def _pip(step: Step, state: _State, described: Described, context: Optional[str]) -> None:
    requirements = list(step.requirements)
    urls = [u for u in ([step.index_url] if step.index_url else []) + step.extra_index_urls + step.find_links]
    for name in step.files:
        read, file_urls = _read_requirements(name, context, described, step.line)
        requirements.extend(read)
        urls.extend(file_urls)
    for local in step.local:
        if not _is_cuda_extension_source(local):
            described.unresolved.append((step.line, f"{step.tool} install {local}"))
    backend = step.option("--torch-backend")
    requirements.sort(key=lambda r: r.name != "torch")  # companions resolve from the torch they go with
    for req in requirements:
        _pip_requirement(req, step, urls, backend, state, described)


def _is_cuda_extension_source(local: str) -> bool:
    from envdoctor.container.findings import extension_of

    return extension_of(local) is not None


def _read_requirements(name: str, context: Optional[str], described: Described, line: int,
                       depth: int = 0) -> tuple[list[Requirement], list[str]]:
    """A requirements file in the build context (bounded), with nested -r files and its index options."""
    from envdoctor.container.shell import Step as _Step
    from envdoctor.container.shell import _pip_words

    if context is None or depth > 3 or "$" in name:
        described.unresolved.append((line, f"requirements file {name} (not read)"))
        return [], []
    path = _inside(Path(context), name, described.copies)
    if path is None or not path.is_file():
        described.unresolved.append((line, f"requirements file {name} (not in the build context)"))
        return [], []
    try:
        with open(path, "rb") as fh:
            raw_bytes = fh.read(MAX_REQUIREMENTS_BYTES + 1)
    except OSError:
        described.unresolved.append((line, f"requirements file {name} (unreadable)"))
        return [], []
    if len(raw_bytes) > MAX_REQUIREMENTS_BYTES:  # never judged on a truncated part of it
        described.unresolved.append((line, f"requirements file {name} (too large: over {MAX_REQUIREMENTS_BYTES:,} bytes, not read)"))
        return [], []
    try:
        if b"\x00" in raw_bytes:
            raise UnicodeDecodeError("utf-8", raw_bytes, 0, 1, "NUL byte")
        text = raw_bytes.decode("utf-8-sig")
    except UnicodeDecodeError:  # a binary file named by -r: one line saying so, not its bytes
        described.unresolved.append((line, f"requirements file {name} (not UTF-8 text)"))
        return [], []
    holder = _Step(kind="pip", line=line)
    import shlex

    for raw in text.splitlines():
        raw = raw.split(" #", 1)[0].strip()
        if not raw or raw.startswith("#"):
            continue
        try:
            _pip_words(holder, shlex.split(raw))
        except ValueError:
            continue
    requirements = list(holder.requirements)
    urls = ([holder.index_url] if holder.index_url else []) + holder.extra_index_urls + holder.find_links
    for nested in holder.files:
        more, more_urls = _read_requirements(str(Path(name).parent / nested), context, described, line, depth + 1)
        requirements.extend(more)
        urls.extend(more_urls)
    for local in holder.local:
        if not _is_cuda_extension_source(local):
            described.unresolved.append((line, f"{name}: {local}"))
    return requirements, urls


def _inside(context: Path, name: str, copies: list[tuple[tuple[str, ...], str]] = ()) -> Optional[Path]:
    """The build-context file a RUN's path names: through the COPY that put it there (`COPY requirements.txt
    /tmp/` then `-r /tmp/requirements.txt`), else relative to the context; never outside the context."""
    try:
        root = context.resolve()
        for relative in (_copied_from(name, copies), None if name.startswith("/") else name):
            if relative is None:
                continue
            path = (root / relative.lstrip("/")).resolve()
            if (path == root or root in path.parents) and path.is_file():
                return path
        return None
    except (OSError, RuntimeError, ValueError):
        return None


def _copied_from(name: str, copies) -> Optional[str]:
    for sources, dest in reversed(list(copies)):
        for source in sources:
            if dest.endswith("/") or len(sources) > 1:
                target = posixpath.join(dest, posixpath.basename(source.rstrip("/")))
            else:
                target = dest
            if posixpath.normpath(target) == posixpath.normpath(name):
                return source
            if name.startswith(dest.rstrip("/") + "/") and (source in (".", "./") or source.endswith("/")):
                return posixpath.join(source, name[len(dest.rstrip("/")) + 1:])
    return None


def _pip_requirement(req: Requirement, step: Step, urls: list[str], backend: Optional[str], state: _State,
                     described: Described) -> None:
    name = req.name
    described.origins[f"python.packages.{name}"] = step.line
    if name in FRAMEWORK_DISTS or name.startswith(("jax-cuda", "nvidia-")):
        described.requested[name] = (req, step)
    tag = _index_tag(urls, backend)
    version = _resolve_version(req, tag, state, described)
    if version is None:
        if name in FRAMEWORK_DISTS:
            described.assumptions.append(f"{name}{req.specifier} on line {step.line}: no release in the matrices fits")
        return
    if name in ("torch", "torchvision", "torchaudio"):
        if tag and "+" not in version and (tag != "cpu" or name == "torch" or True):
            version = f"{version}+{tag}"
            described.builds[name] = f"index {tag}"
        elif "+" in version:
            described.builds[name] = f"pinned +{version.split('+', 1)[1]}"
        state.packages[name] = version
        if name == "torch":
            _torch_wheels(version, state, described, step)
        return
    state.packages[name] = version
    if name == "tensorflow" and "and-cuda" in req.extras:
        _tensorflow_wheels(version, state, described, step)
    elif name == "jax":
        _jax_pieces(version, req.extras, state, described, step)
    elif name == "paddlepaddle-gpu":
        _paddle_wheels(version, urls, state, described, step)


def _index_tag(urls: list[str], backend: Optional[str]) -> Optional[str]:
    if backend and backend not in ("auto",):
        return backend
    for url in urls:
        match = _INDEX_TAG.search(url)
        if match:
            return match.group(1)
    return None


def _resolve_version(req: Requirement, tag: Optional[str], state: _State, described: Described) -> Optional[str]:
    """A pinned version as written; else the newest release the matrix knows that the specifier allows
    (with a wheel for the image's Python where known, and the index's build for torch)."""
    pinned = req.pinned
    if pinned:
        return pinned
    if req.name.startswith(("nvidia-", "jax-cuda")):  # a CUDA library wheel asked for by name: present, version as bounded
        bound = re.search(r"(?:>=|~=|==)\s*([\d.]+)", req.specifier or "")
        return bound.group(1) if bound else ""
    framework = {"torch": "pytorch", "tensorflow": "tensorflow", "jax": "jax", "paddlepaddle-gpu": "paddle",
                 "paddlepaddle": "paddle"}.get(req.name)
    if framework is None:
        if req.name in ("torchvision", "torchaudio") and state.packages.get("torch"):
            from envdoctor.diagnose import knowledge
            from envdoctor.diagnose._common import public

            companion = knowledge.torch_companions(str(public(state.packages["torch"]))).get(req.name)
            if companion and companion[:1].isdigit():
                described.assumptions.append(f"{req.name} is not pinned: judged as {companion}, the release made for "
                                             f"torch {public(state.packages['torch'])}")
                return companion
        return None
    version = _newest(framework, req.specifier, tag, state.python, described)
    if version:
        described.assumptions.append(f"{req.text or req.name} on line {described.origins.get('python.packages.' + req.name, 0)} "
                                     f"is not pinned: judged as {req.name} {version}, the newest release the matrices "
                                     "know that fits")
    return version


def _newest(framework: str, specifier: str, tag: Optional[str], python: Optional[str], described: Described) -> Optional[str]:
    from packaging.specifiers import InvalidSpecifier, SpecifierSet

    from envdoctor.diagnose import knowledge

    try:
        spec = SpecifierSet(specifier or "")
    except InvalidSpecifier:
        return None
    platform_key = f"linux_{described.arch}"
    for row in knowledge.call(framework, "releases") or ():
        if row.version not in spec:
            continue
        if framework == "pytorch" and tag and knowledge.call("pytorch", "build", row.version, tag, platform_key) is None:
            continue
        pythons = row.pythons(platform_key) if framework == "pytorch" else (
            row.pythons(platform_key) if callable(getattr(row, "pythons", None)) else None)
        if python and pythons and python not in pythons:
            continue
        return row.version
    return None


def _torch_wheels(version: str, state: _State, described: Described, step: Step) -> None:
    """A CUDA build of torch >= 2.1 on Linux takes its CUDA libraries from nvidia-* wheels."""
    from envdoctor.diagnose._common import cuda_of_tag, local_tag, public

    tag = local_tag(version)
    if tag is None:
        from envdoctor.diagnose import knowledge

        tag = knowledge.torch_default_build(str(public(version)), f"linux_{described.arch}")
    cuda = cuda_of_tag(tag)
    parsed = public(version)
    if cuda and parsed is not None and parsed.release[:2] >= (2, 1):
        wheel = f"nvidia-cuda-runtime-cu{cuda.split('.')[0]}"
        state.packages.setdefault(wheel, cuda)
        described.origins[f"python.packages.{wheel}"] = step.line


def _tensorflow_wheels(version: str, state: _State, described: Described, step: Step) -> None:
    from envdoctor.diagnose import knowledge

    row = knowledge.call("tensorflow", "release", version)
    for dist, spec in (getattr(row, "and_cuda", None) or {}).items():
        if dist in ("nvidia-cudnn-cu12", "nvidia-cuda-runtime-cu12", "nvidia-cudnn-cu11", "nvidia-cuda-runtime-cu11"):
            state.packages[dist] = spec.lstrip("=<>~!")
            described.origins[f"python.packages.{dist}"] = step.line


def _jax_pieces(version: str, extras: tuple[str, ...], state: _State, described: Described, step: Step) -> None:
    from envdoctor.diagnose import knowledge

    row = knowledge.call("jax", "release", version)
    jaxlib = getattr(row, "jaxlib", None) or version
    state.packages.setdefault("jaxlib", jaxlib)
    described.origins["python.packages.jaxlib"] = step.line
    for extra in extras:
        match = re.match(r"^cuda(\d+)(?:[-_](local|pip))?$", extra)
        if not match:
            continue
        major, local = match.group(1), match.group(2) == "local"
        for piece in (f"jax-cuda{major}-plugin", f"jax-cuda{major}-pjrt"):
            state.packages[piece] = jaxlib
            described.origins[f"python.packages.{piece}"] = step.line
        if not local:
            plugin = knowledge.call("jax", "plugin_for", f"cuda{major}", version)
            cudnn = re.search(r"[\d.]+", getattr(plugin, "cudnn", "") or "")
            runtime = getattr(plugin, "cuda_runtime_min", None) or f"{major}.0"
            if cudnn:
                state.packages[f"nvidia-cudnn-cu{major}"] = cudnn.group(0)
                described.origins[f"python.packages.nvidia-cudnn-cu{major}"] = step.line
            state.packages[f"nvidia-cuda-runtime-cu{major}"] = runtime
            described.origins[f"python.packages.nvidia-cuda-runtime-cu{major}"] = step.line


def _paddle_wheels(version: str, urls: list[str], state: _State, described: Described, step: Step) -> None:
    from envdoctor.diagnose import knowledge

    build_id = next((m.group(1) for m in (_PADDLE_INDEX.search(u) for u in urls) if m), None)
    row = knowledge.call("paddle", "release", version.split("+")[0].split(".post")[0])
    build = knowledge.call("paddle", "build", build_id) if build_id else None
    if build_id:
        described.builds["paddlepaddle-gpu"] = f"index {build_id}"
    if row is not None and row.bundles_cuda and build is not None:
        major = build.cuda.split(".")[0]
        state.packages[f"nvidia-cudnn-cu{major}"] = build.cudnn
        state.packages[f"nvidia-cuda-runtime-cu{major}"] = build.cuda
        described.origins[f"python.packages.nvidia-cudnn-cu{major}"] = step.line


# --- the Facts document -------------------------------------------------------------------------------

def gpu_intended(described: Described) -> bool:
    """Whether the build is meant for an NVIDIA GPU: a CUDA base image, a CUDA build asked for, a CUDA
    library installed, or the container toolkit's variables set."""
    base = described.base
    if base.cuda or base.framework_cuda or base.l4t:
        return True
    if any(k in described.env for k in ("NVIDIA_VISIBLE_DEVICES", "NVIDIA_DRIVER_CAPABILITIES")):
        return True
    if any(v.startswith("index cu") for v in described.builds.values()):
        return True
    conda = described.facts.get("python", {}).get("conda_packages", {}) if described.facts else {}
    if any(n in conda for n in ("pytorch-cuda", "cudatoolkit", "cuda-version", "pytorch-gpu", "cuda-toolkit", "cuda-nvcc")):
        return True
    for name, (req, _) in described.requested.items():
        if name.startswith(("nvidia-", "jax-cuda")) or name == "paddlepaddle-gpu":
            return True
        if any(e.startswith("cuda") or e == "and-cuda" for e in req.extras):
            return True
    return False


def _facts(described: Described, state: _State, host: Optional[dict]) -> dict:
    base = described.base
    distro = base.distro
    facts: dict = {
        "schema": "envdoctor.facts/1",
        "host": {"os": "linux", "arch": described.arch, "distro": distro.label if distro else None,
                 "glibc": distro.glibc if distro else None, "container": "docker"},
        "python": {"version": state.python, "implementation": "cpython" if state.python else None,
                   "env_kind": "conda" if state.conda else "system", "packages": dict(state.packages),
                   "conda_packages": dict(state.conda)},
        "cuda_toolkit": state.toolkit,
        "cudnn": list(state.cudnn) + [{"version": v or None, "source": f"pip:{k}", "path": None}
                                      for k, v in sorted(state.packages.items()) if k.startswith("nvidia-cudnn")],
        "env": {k: v for k, v in described.env.items()
                if k in ("LD_LIBRARY_PATH", "CUDA_HOME", "CUDA_PATH", "CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES",
                         "TORCH_CUDA_ARCH_LIST", "XLA_FLAGS", "TF_FORCE_GPU_ALLOW_GROWTH")},
    }
    if base.l4t:
        facts["jetson"] = {"l4t": base.l4t}
    recorded = []
    if base.known:
        recorded += ["cuda_toolkit", "cuda_toolkits", "cudnn"] + ([] if base.l4t else ["jetson"])
        facts["cuda_toolkits"] = [state.toolkit] if state.toolkit else []
        # The package list is complete only where the image ships no Python packages of its own that the
        # matrix does not list (framework images, NGC and L4T images carry many).
        if not described.unresolved and state.python and base.family in ("nvidia-cuda", "ubuntu", "debian", "python"):
            recorded.append("python")
    if host:
        _merge_host(facts, host, recorded)
    elif gpu_intended(described) or any(n in state.conda for n in ("pytorch-cuda", "cudatoolkit", "cuda-version",
                                                                    "pytorch-gpu", "cuda-toolkit", "cuda-nvcc")):
        facts["nvidia"] = {"gpus": [{"name": None}]}  # meant for an NVIDIA GPU; which one and its driver: the host's
    if recorded:
        facts["recorded"] = recorded
    return facts


def _merge_host(facts: dict, host: dict, recorded: list[str]) -> None:
    """A container sees the host's driver and GPUs (and WSL's), nothing else of it."""
    nvidia = host.get("nvidia")
    if nvidia is not None:
        facts["nvidia"] = nvidia
        if "nvidia" in (host.get("recorded") or ()) or host.get("recorded") is None:
            recorded.append("nvidia")
    host_block = host.get("host") or {}
    if host_block.get("wsl"):
        facts["host"]["wsl"] = True
        facts["host"]["kernel"] = host_block.get("kernel")
