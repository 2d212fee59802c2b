"""TensorFlow knowledge from matrices/tensorflow.toml, typed and validated.

Accessors (every one reads the bundled file once, validated; a broken file is a MatrixError naming
the file and the row):

- `releases()`: every final release from 2.10, newest first, as `Release`.
- `release(version)`: one release or None.
- `Release.pythons(platform)`: Python versions with a wheel on a platform key
  (`linux_x86_64` – WSL2 too –, `linux_aarch64`, `windows_amd64`, `macos_arm64`, `macos_x86_64`).
- `Release.glibc` / `Release.glibc_for(platform)`: the glibc the Linux wheels' manylinux tag asks for.
- `Release.has_gpu(platform)`: whether that platform's wheel has CUDA kernels.
- `Release.and_cuda`: what `tensorflow[and-cuda]` pins (nvidia-* → specifier); empty before 2.14.
- `Release.stub_for`: platform → the distribution that really holds TensorFlow there
  (tensorflow-intel, tensorflow-cpu-aws, tensorflow-macos).
- `metal_for(version)`: the tensorflow-metal release documented for a TensorFlow version, or None.
- `hazards()` / `hazards_for(...)`: upgrade hazards (the `Hazard` row format is shared with
  matrices/jax.toml and matrices/paddle.toml; `parse_hazards` reads it for them).
- `last_native_windows_gpu()`: the last release with a CUDA build on native Windows (2.10.x).
- `legacy(version)`: the `[[legacy]]` row of a release before 2.10 (its tested CUDA, its keras pin), or None.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any, Mapping, Optional

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from envdoctor.matrix import gpus
from envdoctor.matrix.checks import check_glibc, check_platforms, check_pythons, check_spec, describe, row_label
from envdoctor.matrix.loader import MatrixError, load

FILE = "tensorflow.toml"


@dataclass(frozen=True)
class Release:
    version: str
    date: str
    requires_python: Optional[str]
    wheels: Mapping[str, tuple[str, ...]]  # platform -> Python versions
    cuda: str  # tested build configuration, "12.5"
    cudnn: str  # "9.3"
    gpu_platforms: tuple[str, ...]
    gpu_archs: tuple[str, ...]  # kernels of the CUDA build ("sm_80", "compute_90")
    numpy: Optional[str]
    keras: Optional[str]
    and_cuda: Mapping[str, str] = field(default_factory=dict)
    stub_for: Mapping[str, str] = field(default_factory=dict)
    glibc_by_platform: Mapping[str, str] = field(default_factory=dict)
    source: str = ""

    @property
    def series(self) -> str:
        return ".".join(self.version.split(".")[:2])

    @property
    def glibc(self) -> Optional[str]:
        """The glibc the Linux x86_64 wheel asks for (its manylinux tag)."""
        return self.glibc_by_platform.get("linux_x86_64")

    def glibc_for(self, platform: Optional[str]) -> Optional[str]:
        return self.glibc_by_platform.get(platform or "")

    def pythons(self, platform: Optional[str]) -> tuple[str, ...]:
        return self.wheels.get(platform or "", ())

    def has_gpu(self, platform: Optional[str]) -> bool:
        return platform in self.gpu_platforms

    @property
    def keras3(self) -> bool:
        return bool(self.keras) and SpecifierSet(self.keras.split(" ; ")[0]).contains("3.99")


@dataclass(frozen=True)
class Metal:
    version: str
    tensorflow: str  # specifier on the TensorFlow version
    pythons: tuple[str, ...]
    macos: str
    note: Optional[str] = None
    source: str = ""


@dataclass(frozen=True)
class Hazard:
    """A known upgrade hazard, shown as a plan warning when it applies.

    `target`: specifier on the version being installed. `installed`: specifier on the version of the
    framework already installed (the hazard needs one). `package`: a requirement an installed
    distribution must satisfy ("numpy>=2"). `env`: an environment variable that must be set.
    `build`: "gpu" | "cpu", only plans of that kind.
    """

    id: str
    target: str
    text: str
    installed: Optional[str] = None
    package: Optional[str] = None
    env: Optional[str] = None
    build: Optional[str] = None
    source: str = ""

    def applies(self, version: str, installed: Optional[str], packages: Mapping[str, str],
                environ: Mapping[str, Optional[str]], gpu_plan: bool) -> bool:
        if not _contains(self.target, version):
            return False
        if self.installed is not None and (installed is None or not _contains(self.installed, installed)):
            return False
        if self.package is not None and not _package_matches(self.package, packages):
            return False
        if self.env is not None and not environ.get(self.env):
            return False
        if self.build is not None and (self.build == "gpu") != gpu_plan:
            return False
        return True


def _contains(spec: str, version: str) -> bool:
    try:
        return SpecifierSet(spec).contains(Version(version.split("+")[0]), prereleases=True)
    except (InvalidSpecifier, InvalidVersion):
        return False


def _package_matches(requirement: str, packages: Mapping[str, str]) -> bool:
    req = Requirement(requirement)
    have = packages.get(req.name.lower().replace("_", "-"))
    return have is not None and (not req.specifier or _contains(str(req.specifier), have))


# --- accessors ------------------------------------------------------------------------------------

def releases() -> tuple[Release, ...]:
    return _parsed()[0]


def release(version: str) -> Optional[Release]:
    return next((r for r in releases() if r.version == version), None)


def metal_rows() -> tuple[Metal, ...]:
    return _parsed()[1]


def metal_for(version: str) -> Optional[Metal]:
    """The tensorflow-metal release documented for this TensorFlow version (None: none is)."""
    return next((m for m in metal_rows() if _contains(m.tensorflow, version)), None)


def hazards() -> tuple[Hazard, ...]:
    return _parsed()[2]


def last_native_windows_gpu() -> Optional[Release]:
    return next((r for r in releases() if r.has_gpu("windows_amd64")), None)


@dataclass(frozen=True)
class Legacy:
    """A range of releases before 2.10 and the CUDA/cuDNN their GPU wheels were built with."""
    versions: str
    cuda: str
    cudnn: str
    keras: Optional[str] = None  # Requires-Dist pin, from 2.6
    source: str = ""


def legacy_rows() -> tuple[Legacy, ...]:
    return _legacy()


def legacy(version: str) -> Optional[Legacy]:
    """The row of a release older than every [[release]] row (CUDA "10.1" for 2.3.0), or None."""
    return next((row for row in legacy_rows() if _contains(row.versions, version)), None)


@functools.lru_cache(maxsize=1)
def _legacy() -> tuple[Legacy, ...]:
    return parse_legacy(load("tensorflow"))


def parse_legacy(data: dict[str, Any], filename: str = FILE) -> tuple[Legacy, ...]:
    rows = []
    for i, row in enumerate(data.get("legacy", []), 1):
        where = row_label(filename, "legacy", i, row, key="versions")
        try:
            SpecifierSet(row["versions"])
            gpus.cuda_tuple(row["cuda"])
            if row.get("keras") is not None:
                SpecifierSet(row["keras"])
            rows.append(Legacy(versions=row["versions"], cuda=row["cuda"], cudnn=row["cudnn"], keras=row.get("keras"),
                               source=row["source"]))
        except (KeyError, TypeError, ValueError, InvalidSpecifier) as e:
            raise MatrixError(f"{where}: {describe(e)}") from None
    newest = min((Version(r.version) for r in releases()), default=None)
    for row in rows:
        if newest is not None and SpecifierSet(row.versions).contains(newest):
            raise MatrixError(f"{filename}: [[legacy]] {row.versions} covers {newest}, which has a [[release]] row")
    return tuple(rows)


def min_gpu_capability(release: Release) -> Optional[str]:
    """The oldest compute capability the release's kernels run on (cubins only; PTX runs on newer)."""
    ccs = [k.cc for token in release.gpu_archs for k in gpus.parse_kernels(token) if k.kind == "sm"]
    return gpus.cc_text(min(ccs)) if ccs else None


# --- parsing and validation ------------------------------------------------------------------------

@functools.lru_cache(maxsize=1)
def _parsed() -> tuple[tuple[Release, ...], tuple[Metal, ...], tuple[Hazard, ...]]:
    return parse(load("tensorflow"))


def parse(data: dict[str, Any], filename: str = FILE) -> tuple[tuple[Release, ...], tuple[Metal, ...], tuple[Hazard, ...]]:
    """Typed rows of a (provenance-checked) tensorflow.toml document; MatrixError when inconsistent."""
    rows = tuple(_release(row, i, filename) for i, row in enumerate(data.get("release", []), 1))
    if not rows:
        raise MatrixError(f"{filename}: no [[release]] rows")
    seen: set[str] = set()
    for r in rows:
        if r.version in seen:
            raise MatrixError(f"{filename}: [[release]] version {r.version} appears twice")
        seen.add(r.version)
    ordered = tuple(sorted(rows, key=lambda r: Version(r.version), reverse=True))
    metal = tuple(_metal(row, i, filename) for i, row in enumerate(data.get("metal", []), 1))
    return ordered, metal, parse_hazards(data, filename)


def _release(row: dict[str, Any], index: int, filename: str) -> Release:
    where = row_label(filename, "release", index, row)
    try:
        Version(row["version"])
        wheels = {k: tuple(v) for k, v in row["wheels"].items()}
        item = Release(
            version=row["version"], date=row["date"], requires_python=row.get("requires_python"),
            wheels=wheels, cuda=row["cuda"], cudnn=row["cudnn"],
            gpu_platforms=tuple(row["gpu_platforms"]), gpu_archs=tuple(row["gpu_archs"]),
            numpy=row.get("numpy"), keras=row.get("keras"), and_cuda=dict(row.get("and_cuda", {})),
            stub_for=dict(row.get("stub_for", {})), glibc_by_platform=dict(row.get("glibc", {})),
            source=row["source"])
    except (KeyError, TypeError, AttributeError, InvalidVersion) as exc:
        raise MatrixError(f"{where}: {describe(exc)}") from None
    check_platforms(where, list(item.wheels) + list(item.gpu_platforms) + list(item.stub_for))
    check_glibc(where, item.glibc_by_platform)
    check_pythons(where, item.wheels)
    for platform in item.gpu_platforms:
        if platform not in item.wheels:
            raise MatrixError(f"{where}: gpu_platforms names {platform}, which has no wheels")
    try:
        for token in item.gpu_archs:
            gpus.parse_kernels(token)
    except ValueError as exc:
        raise MatrixError(f"{where}: gpu_archs: {exc}") from None
    for name, spec in item.and_cuda.items():
        check_spec(where, f"and_cuda {name}", spec)
    for name, spec in (("numpy", item.numpy), ("keras", item.keras)):
        for part in (spec or "").split(" | "):
            if part:
                check_spec(where, name, part.split(" ; ")[0])
    return item


def _metal(row: dict[str, Any], index: int, filename: str) -> Metal:
    where = row_label(filename, "metal", index, row)
    try:
        item = Metal(row["version"], row["tensorflow"], tuple(row["python"]), row["macos"], row.get("note"),
                     row["source"])
    except (KeyError, TypeError) as exc:
        raise MatrixError(f"{where}: {describe(exc)}") from None
    check_spec(where, "tensorflow", item.tensorflow)
    check_pythons(where, {"macos_arm64": item.pythons})
    return item


def parse_hazards(data: dict[str, Any], filename: str) -> tuple[Hazard, ...]:
    """The [[hazard]] rows of tensorflow.toml, jax.toml or paddle.toml."""
    found = []
    for index, row in enumerate(data.get("hazard", []), 1):
        where = row_label(filename, "hazard", index, row, key="id")
        try:
            item = Hazard(id=row["id"], target=row["target"], text=row["text"], installed=row.get("installed"),
                          package=row.get("package"), env=row.get("env"), build=row.get("build"),
                          source=row["source"])
        except (KeyError, TypeError) as exc:
            raise MatrixError(f"{where}: {describe(exc)}") from None
        check_spec(where, "target", item.target)
        if item.installed is not None:
            check_spec(where, "installed", item.installed)
        if item.package is not None:
            try:
                Requirement(item.package)
            except InvalidRequirement:
                raise MatrixError(f"{where}: package {item.package!r} is not a requirement") from None
        if item.build not in (None, "gpu", "cpu"):
            raise MatrixError(f"{where}: build must be 'gpu' or 'cpu', not {item.build!r}")
        found.append(item)
    return tuple(found)
