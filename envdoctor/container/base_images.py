"""What a base image contains, from matrices/base_images.toml: the image reference is split into
repository and tag, and the first [[family]] whose repository and tag pattern match describes it."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from typing import Any, Optional

from envdoctor.matrix.loader import MatrixError, load

FILE = "base_images.toml"


@dataclass(frozen=True)
class Distro:
    name: str  # ubuntu | debian | rhel | alpine
    version: str
    codename: str
    glibc: Optional[str] = None
    python3: Optional[str] = None  # what `apt-get install python3` gives
    libc: str = "glibc"

    @property
    def label(self) -> str:
        return {"ubuntu": "Ubuntu", "debian": "Debian", "rhel": "RHEL-compatible", "alpine": "Alpine"}[self.name] + (
            f" {self.version}" if self.version != "any" else "")


@dataclass(frozen=True)
class BaseImage:
    reference: str  # as written, args substituted
    repository: str
    tag: str
    family: Optional[str] = None  # nvidia-cuda | pytorch | tensorflow | ngc | python | ubuntu | debian | l4t | None
    distro: Optional[Distro] = None
    python: Optional[str] = None
    cuda: Optional[str] = None  # CUDA toolkit version of the image ("12.4.1")
    flavour: Optional[str] = None  # base | runtime | devel
    nvcc: Optional[bool] = None
    libraries: tuple[str, ...] = ()  # CUDA libraries the image holds
    cudnn: Optional[str] = None  # "9", "8.9"
    require_cuda: Optional[str] = None  # NVIDIA_REQUIRE_CUDA's cuda>= value ("12.4")
    packages: dict[str, str] = field(default_factory=dict)  # Python distributions the image ships
    env: dict[str, str] = field(default_factory=dict)  # ENV the image sets that matters here
    extras: tuple[str, ...] = ()  # the extras its framework was installed with ("and-cuda")
    framework_cuda: Optional[str] = None  # a framework built against the image's own CUDA (NGC)
    l4t: Optional[str] = None
    arch: Optional[str] = None
    source: str = ""

    @property
    def known(self) -> bool:
        return self.family is not None


def split_reference(reference: str) -> tuple[str, str]:
    """`nvcr.io/nvidia/pytorch:24.05-py3` -> ("nvcr.io/nvidia/pytorch", "24.05-py3"); a digest is dropped."""
    ref = reference.split("@", 1)[0]
    slash = ref.rfind("/")
    colon = ref.rfind(":")
    if colon > slash:
        return ref[:colon].lower(), ref[colon + 1:]
    return ref.lower(), "latest"


@functools.lru_cache(maxsize=None)
def _data() -> dict[str, Any]:
    data = load("base_images")
    for i, row in enumerate(data.get("family", ())):
        try:
            re.compile(row["pattern"])
        except (KeyError, re.error) as exc:
            raise MatrixError(f"{FILE}: [[family]] row {i + 1}: bad pattern: {exc}") from None
    for i, row in enumerate(data.get("ngc_release", ())):
        if not row.get("containers") or not row.get("releases") or not row.get("source"):
            raise MatrixError(f"{FILE}: [[ngc_release]] row {i + 1}: needs containers, releases and source")
    return data


def wheel_platform_glibc(tag: str) -> str:
    """The oldest glibc a manylinux wheel tag runs on ([[wheel_platform]] rows): "manylinux_2_28" -> "2.28"."""
    row = next((r for r in _data().get("wheel_platform", ()) if r.get("tag") == tag), None)
    if row is None or not row.get("glibc"):
        raise MatrixError(f"{FILE}: no [[wheel_platform]] row for {tag}")
    return row["glibc"]


def distros() -> tuple[Distro, ...]:
    return tuple(Distro(name=r["name"], version=r["version"], codename=r["codename"], glibc=r.get("glibc"),
                        python3=r.get("python3"), libc=r.get("libc", "glibc")) for r in _data().get("distro", ()))


def distro(name: str, version_or_codename: Optional[str]) -> Optional[Distro]:
    wanted = (version_or_codename or "").lower()
    for row in distros():
        if row.name == name and (wanted in (row.version, row.codename) or row.version == "any"):
            return row
    return None


# A distribution as a person or /etc/os-release names it: "CentOS 7.9", "CentOS Linux release 7.9.2009",
# "Red Hat Enterprise Linux Server 7.6", "Rocky Linux 8.6", "Ubuntu 18.04.6 LTS", "Debian 10", "centos7".
_RHEL_WORDS = r"(?:centos|rhel|red ?hat(?: enterprise linux)?|rocky(?: ?linux)?|alma(?: ?linux)?|oracle ?linux|ol)"
_NAMED = re.compile(rf"\b(?:(?P<rhel>{_RHEL_WORDS})(?: linux)?(?: server| workstation)?(?: release)? ?(?P<el>[6-9])(?:\.\d{{1,2}})?"
                    r"|(?P<ubuntu>ubuntu) ?(?P<u>\d{2}\.\d{2})|(?P<debian>debian)(?: gnu/linux)? ?(?P<d>\d{1,2}))(?![\d])", re.I)


def distro_of_name(text: str) -> Optional[Distro]:
    """The row of a distribution named in words; None for one the table lacks."""
    match = _NAMED.search(text or "")
    if not match:
        return None
    if match.group("rhel"):
        return distro("rhel", match.group("el"))
    if match.group("ubuntu"):
        return distro("ubuntu", match.group("u"))
    return distro("debian", match.group("d"))


def distro_of_os_word(word: str) -> Optional[Distro]:
    """nvidia/cuda's OS word: ubuntu22.04, ubi9, rockylinux8, centos7."""
    match = re.match(r"^(ubuntu)(\d\d\.\d\d)$|^(ubi|rockylinux|centos|oraclelinux)(\d+)$", word)
    if not match:
        return None
    if match.group(1):
        return distro("ubuntu", match.group(2))
    return distro("rhel", match.group(4))


def describe(reference: str, build_platform: Optional[str] = None) -> BaseImage:
    repository, tag = split_reference(reference)
    for row in _data().get("family", ()):
        if repository not in row["repositories"]:
            continue
        match = re.match(row["pattern"], tag)
        if match:
            return _DESCRIBERS[row["kind"]](reference, repository, tag, row, match.groupdict())
        if tag == "latest" and row["kind"] in ("os", "python"):
            return BaseImage(reference, repository, tag, family=row["name"], source=row["source"])
    return BaseImage(reference, repository, tag)


def _cuda_image(reference: str, repository: str, tag: str, row: dict, groups: dict) -> BaseImage:
    flavour = next(f for f in _data()["cuda_flavour"] if f["name"] == groups["flavour"])
    token = groups.get("cudnn") or groups.get("cudnn_after")
    cudnn = next((t["major"] for t in _data().get("cudnn_token", ()) if t["token"] == token), None) if token else None
    cuda = groups["cuda"]
    return BaseImage(reference, repository, tag, family=row["name"], distro=distro_of_os_word(groups["os"]),
                     cuda=cuda, flavour=flavour["name"], nvcc=bool(flavour["nvcc"]),
                     libraries=libraries_of(flavour.get("libraries", ()), cuda), cudnn=cudnn,
                     require_cuda=".".join(cuda.split(".")[:2]), source=row["source"])


def _framework_image(reference: str, repository: str, tag: str, row: dict, groups: dict) -> BaseImage:
    os_distro = _distro_of_words(row.get("os"))  # left out where it changed across releases: unknown
    packages: dict[str, str] = {}
    if row["framework"] == "torch":
        cuda, cudnn = groups["cuda"], groups["cudnn"]
        packages["torch"] = f"{groups['torch']}+cu{cuda.replace('.', '')}"
        base = _cuda_image_of(cuda, row, groups)
        return BaseImage(reference, repository, tag, family=row["name"], distro=os_distro, cuda=base.cuda,
                         flavour=groups["flavour"], nvcc=groups["flavour"] == "devel", libraries=base.libraries,
                         cudnn=cudnn, require_cuda=cuda, packages=packages, python=row.get("python"),
                         source=row["source"])
    packages["tensorflow"] = groups["tensorflow"]
    extras = ("and-cuda",) if groups.get("gpu") else ()
    return BaseImage(reference, repository, tag, family=row["name"], distro=os_distro, packages=packages,
                     extras=extras, nvcc=False, python=row.get("python"), source=row["source"])


def _distro_of_words(words: Optional[str]) -> Optional[Distro]:
    """"ubuntu 22.04" -> its [[distro]] row; None (or an OS the table lacks, e.g. Ubuntu 16.04) -> None."""
    if not words:
        return None
    name, version = words.split()
    return distro(name, version)


def _cuda_image_of(cuda: str, row: dict, groups: dict) -> BaseImage:
    flavour = next(f for f in _data()["cuda_flavour"] if f["name"] == groups["flavour"])
    return BaseImage("", "", "", cuda=cuda, libraries=libraries_of(flavour.get("libraries", ()), cuda))


def libraries_of(names, cuda: Optional[str]) -> tuple[str, ...]:
    """The libraries of a flavour or package row that exist in CUDA `cuda` ([[cuda_library]] min_cuda: nvJitLink
    from 12.0 on); an unknown CUDA keeps them all."""
    from envdoctor.matrix.host_compilers import version_numbers

    minimum = {r["name"]: r["min_cuda"] for r in _data().get("cuda_library", ())}
    if not cuda:
        return tuple(names)
    have = version_numbers(cuda)
    return tuple(n for n in names if n not in minimum or have >= version_numbers(minimum[n]))


def package_libraries(package: str, cuda: str) -> tuple[str, ...]:
    """The CUDA libraries the repository's package cuda-<package>-<major>-<minor> brings ([[cuda_package]])."""
    row = next((r for r in _data().get("cuda_package", ()) if package in r["names"]), None)
    return libraries_of(row["libraries"], cuda) if row else ()


def ngc_release(container: str, release: str) -> Optional[dict]:
    """The documented contents of nvcr.io/nvidia/<container>:<release>-...: rows are per container (the PyTorch,
    TensorFlow, JAX and PaddlePaddle containers of one month differ), and a release no row names is unknown."""
    for row in _data().get("ngc_release", ()):
        if container in row.get("containers", ()) and release in row.get("releases", ()):
            return row
    return None


def _ngc_image(reference: str, repository: str, tag: str, row: dict, groups: dict) -> BaseImage:
    release = ngc_release(repository.rsplit("/", 1)[-1], groups["release"])
    if release is None:
        return BaseImage(reference, repository, tag, family=row["name"], source=row["source"])
    cuda = release.get("cuda")  # as the release notes write it: "12.4.1"
    require = ".".join(cuda.split(".")[:2]) if cuda else None
    return BaseImage(reference, repository, tag, family=row["name"], distro=_distro_of_words(release.get("os")),
                     python=release.get("python"), cuda=cuda, nvcc=release.get("nvcc"), cudnn=release.get("cudnn"),
                     require_cuda=require, framework_cuda=cuda, packages=dict(release.get("packages", {})),
                     env=dict(release.get("env", {})), source=release["source"])


def _python_image(reference: str, repository: str, tag: str, row: dict, groups: dict) -> BaseImage:
    variant, os_word = groups.get("variant") or "", groups.get("os") or ""
    if variant.startswith("alpine") or os_word.startswith("alpine"):
        os_distro = distro("alpine", "any")
    elif os_word:
        os_distro = distro("debian", os_word)
    else:
        os_distro = None  # the tag follows Debian's current release: which one depends on the day it is pulled
    return BaseImage(reference, repository, tag, family=row["name"], distro=os_distro, python=groups["python"],
                     nvcc=False, source=row["source"])


def _os_image(reference: str, repository: str, tag: str, row: dict, groups: dict) -> BaseImage:
    return BaseImage(reference, repository, tag, family=row["name"], distro=distro(row["distro"], groups["os"]),
                     nvcc=False, source=row["source"])


def _jetson_image(reference: str, repository: str, tag: str, row: dict, groups: dict) -> BaseImage:
    os_word = (row.get("os_by_l4t_major") or {}).get(groups["l4t"].split(".")[0])
    os_distro = distro(*os_word.split()) if os_word else None
    return BaseImage(reference, repository, tag, family=row["name"], distro=os_distro, l4t=groups["l4t"], arch="aarch64",
                     nvcc=None, source=row["source"])


_DESCRIBERS = {"cuda": _cuda_image, "framework": _framework_image, "ngc": _ngc_image, "python": _python_image,
               "os": _os_image, "jetson": _jetson_image}


def require_cuda_driver(cuda: str) -> Optional[str]:
    """The oldest driver branch whose CUDA is >= `cuda`: what NVIDIA_REQUIRE_CUDA="cuda>=X.Y" asks of the host
    (outside the forward-compatibility exceptions for datacenter drivers the image also lists)."""
    from envdoctor.matrix import drivers

    wanted = drivers.cuda_tuple(cuda)
    for row in drivers.branches():
        if drivers.cuda_tuple(row.cuda) >= wanted:
            return str(row.branch)
    return None
