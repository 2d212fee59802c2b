"""PyTorch releases, builds, conda-forge packages and upgrade hazards, from matrices/pytorch.toml.

    releases()                          newest first: Release(version, python per platform, ...)
    release("2.8.0")                    one release (None if not in the table)
    builds_for("2.8.0", "linux_x86_64") the builds on PyTorch's index for that release and platform,
                                        newest CUDA first, then ROCm, then CPU
    build("2.8.0", "cu128", "linux_x86_64")
    default_build("2.8.0", "linux_x86_64")  -> "cu128": what a plain `pip install torch` gets
    index_url("cu128")                  -> "https://download.pytorch.org/whl/cu128"
    hazards_for("2.6.0", installed="2.5.1")  upgrade hazards crossing into that release
    conda_forge_for("linux-64")         the conda-forge rows for a subdir, newest series first

Platforms: linux_x86_64, linux_aarch64, windows_amd64, macos_arm64, macos_x86_64
(`envdoctor.plan.common.target_platform(facts)` computes it). The registry-derived columns can be
re-derived with `scripts/pytorch_registry.py` (logic in `envdoctor.maintainers.derive`).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from typing import Any, Optional

from packaging.version import InvalidVersion, Version

from envdoctor.matrix import PLATFORMS
from envdoctor.matrix.gpus import parse_kernels
from envdoctor.matrix.loader import MatrixError, load
from envdoctor.matrix.memo import memoised

FILE = "pytorch.toml"
_CUDA_TAG = re.compile(r"^cu(\d+)(\d)$")
_GFX = re.compile(r"^gfx[0-9a-f]{3,4}$")


@dataclass(frozen=True)
class Release:
    version: str  # "2.8.0"
    requires_python: str
    python: dict[str, tuple[str, ...]]  # platform -> CPython minors with a wheel
    freethreaded: dict[str, tuple[str, ...]]
    default_build: dict[str, str]  # platform -> build tag of the registry's wheel
    glibc_by_platform: dict[str, str]  # linux_x86_64 / linux_aarch64 -> lowest glibc of its wheels
    macos_by_platform: dict[str, str]  # macos_arm64 / macos_x86_64 -> lowest macOS of its wheels
    torchvision: Optional[str]
    torchaudio: Optional[str]
    source: str

    @property
    def series(self) -> str:
        return series_of(self.version)

    @property
    def glibc(self) -> Optional[str]:
        """The Linux x86_64 floor (older readers); use glibc_for(platform)."""
        return self.glibc_by_platform.get("linux_x86_64")

    @property
    def macos(self) -> Optional[str]:
        """The Apple silicon floor (older readers); use macos_for(platform)."""
        return self.macos_by_platform.get("macos_arm64")

    def glibc_for(self, platform: Optional[str]) -> Optional[str]:
        return self.glibc_by_platform.get(platform or "")

    def macos_for(self, platform: Optional[str]) -> Optional[str]:
        return self.macos_by_platform.get(platform or "")

    def pythons(self, platform: str) -> tuple[str, ...]:
        return self.python.get(platform, ())


@dataclass(frozen=True)
class Build:
    tag: str  # cu128 | rocm6.4 | cpu
    since: str  # first series, "2.8"
    until: str  # last series, inclusive
    platforms: tuple[str, ...]
    cuda: Optional[str] = None  # "12.8"
    rocm: Optional[str] = None  # "6.4"
    archs: tuple[str, ...] = ()  # CUDA kernels ("sm_86", "compute_120")
    gfx: tuple[str, ...] = ()  # ROCm targets
    confirmed: bool = True
    source: str = ""

    @property
    def kind(self) -> str:
        return "cuda" if self.cuda else "rocm" if self.rocm else "cpu"

    def covers(self, version: str, platform: str) -> bool:
        series = _series_key(series_of(version))
        return (_series_key(self.since) <= series <= _series_key(self.until)
                and platform in self.platforms)


@dataclass(frozen=True)
class CondaForge:
    series: str  # newest series on conda-forge for this subdir
    subdir: str  # linux-64 | linux-aarch64 | win-64 | osx-arm64
    cuda: tuple[str, ...]  # cuda-version values with a CUDA build
    archs: dict[str, tuple[str, ...]] = field(default_factory=dict)  # cuda -> kernels
    source: str = ""


@dataclass(frozen=True)
class Hazard:
    id: str
    since: str  # series, "2.6"
    text: str
    source: str
    os: Optional[str] = None  # only on this OS (linux | windows | macos)
    build: Optional[str] = None  # only plans of this kind: gpu | cpu


@dataclass(frozen=True)
class Index:
    url: str  # with {tag}
    pytorch_conda_channel_last: str  # last series on the `pytorch` conda channel
    intel_mac_last: str  # last series with macOS x86_64 wheels
    source: str


@memoised
def series_of(version: str) -> str:
    """'2.8.0' / '2.8.0+cu128' -> '2.8'."""
    return ".".join(version.split("+")[0].split(".")[:2])


@memoised
def _series_key(series: str) -> tuple[int, int]:
    major, minor = series.split(".")[:2]
    return int(major), int(minor)


def cuda_of_tag(tag: str) -> Optional[str]:
    """'cu128' -> '12.8', 'cu130' -> '13.0'; None for other tags."""
    m = _CUDA_TAG.match(tag)
    return f"{m.group(1)}.{m.group(2)}" if m else None


def tag_of_cuda(cuda: str) -> str:
    """'12.8' -> 'cu128'."""
    major, minor = cuda.split(".")[:2]
    return f"cu{major}{minor}"


# --- parsing and validation -----------------------------------------------------------------------

def _where(table: str, index: int, row: dict, key: str) -> str:
    return f"{FILE}: [[{table}]] row {index} ({key}={row.get(key)})"


def _platform_lists(value: Any, where: str, name: str) -> dict[str, tuple[str, ...]]:
    if not isinstance(value, dict):
        raise MatrixError(f"{where}: '{name}' must be a table of platform = [versions]")
    out = {}
    for platform, versions in value.items():
        if platform not in PLATFORMS:
            raise MatrixError(f"{where}: unknown platform {platform!r} in '{name}'")
        if not isinstance(versions, list) or not all(isinstance(v, str) and re.match(r"^3\.\d+$", v) for v in versions):
            raise MatrixError(f"{where}: '{name}.{platform}' must be a list like [\"3.11\", \"3.12\"]")
        out[platform] = tuple(versions)
    return out


def floors(value: Any, prefix: str, where: str, name: str) -> dict[str, str]:
    """A floor per platform: a table {linux_aarch64 = "2.28", ...}, or one string for every platform
    starting with `prefix` (the older single-value form)."""
    if value is None:
        return {}
    if isinstance(value, str):
        return {p: value for p in PLATFORMS if p.startswith(prefix)}
    if not isinstance(value, dict):
        raise MatrixError(f"{where}: '{name}' must be a version or a table of platform = version")
    for platform, floor in value.items():
        if platform not in PLATFORMS or not platform.startswith(prefix):
            raise MatrixError(f"{where}: '{name}' names platform {platform!r}")
        if not isinstance(floor, str) or not re.match(r"^\d+\.\d+$", floor):
            raise MatrixError(f"{where}: '{name}.{platform}' must be a version like \"2.28\"")
    return dict(value)


def parse_releases(data: dict) -> tuple[Release, ...]:
    rows, seen = [], set()
    for i, row in enumerate(data.get("release", []), 1):
        where = _where("release", i, row, "version")
        try:
            Version(row["version"])
            item = Release(
                version=row["version"], requires_python=row["requires_python"],
                python=_platform_lists(row["python"], where, "python"),
                freethreaded=_platform_lists(row.get("freethreaded", {}), where, "freethreaded"),
                default_build=dict(row["default_build"]),
                glibc_by_platform=floors(row.get("glibc"), "linux_", where, "glibc"),
                macos_by_platform=floors(row.get("macos"), "macos_", where, "macos"),
                torchvision=row.get("torchvision"), torchaudio=row.get("torchaudio"), source=row["source"])
        except KeyError as exc:
            raise MatrixError(f"{where}: missing {exc}") from None
        except (InvalidVersion, TypeError, ValueError) as exc:
            raise MatrixError(f"{where}: {exc}") from None
        if item.version in seen:
            raise MatrixError(f"{where}: release listed twice")
        for platform in item.default_build:
            if platform not in PLATFORMS:
                raise MatrixError(f"{where}: unknown platform {platform!r} in 'default_build'")
        seen.add(item.version)
        rows.append(item)
    return tuple(sorted(rows, key=lambda r: Version(r.version), reverse=True))


def parse_builds(data: dict) -> tuple[Build, ...]:
    rows = []
    for i, row in enumerate(data.get("build", []), 1):
        where = _where("build", i, row, "tag")
        try:
            item = Build(tag=row["tag"], since=row["since"], until=row["until"],
                         platforms=tuple(row["platforms"]), cuda=row.get("cuda"), rocm=row.get("rocm"),
                         archs=tuple(row.get("archs", ())), gfx=tuple(row.get("gfx", ())),
                         confirmed=bool(row.get("confirmed", True)), source=row["source"])
            if _series_key(item.since) > _series_key(item.until):
                raise ValueError(f"since {item.since} is after until {item.until}")
        except KeyError as exc:
            raise MatrixError(f"{where}: missing {exc}") from None
        except (TypeError, ValueError) as exc:
            raise MatrixError(f"{where}: {exc}") from None
        _check_build(item, where)
        rows.append(item)
    _check_build_overlap(rows)
    return tuple(rows)


def _check_build(item: Build, where: str) -> None:
    for platform in item.platforms:
        if platform not in PLATFORMS:
            raise MatrixError(f"{where}: unknown platform {platform!r}")
    if item.cuda:
        if cuda_of_tag(item.tag) != item.cuda:
            raise MatrixError(f"{where}: tag {item.tag} does not match cuda {item.cuda}")
        if not item.archs:
            raise MatrixError(f"{where}: a CUDA build needs its 'archs'")
        for token in item.archs:
            try:
                parse_kernels(token)
            except ValueError as exc:
                raise MatrixError(f"{where}: {exc}") from None
    elif item.rocm:
        if item.tag != f"rocm{item.rocm}":
            raise MatrixError(f"{where}: tag {item.tag} does not match rocm {item.rocm}")
        bad = [g for g in item.gfx if not _GFX.match(g)]
        if bad or not item.gfx:
            raise MatrixError(f"{where}: a ROCm build needs 'gfx' targets like gfx942 (got {bad or 'none'})")
    elif item.tag != "cpu":
        raise MatrixError(f"{where}: tag {item.tag} needs 'cuda' or 'rocm'")


def _check_build_overlap(rows: list[Build]) -> None:
    for i, a in enumerate(rows):
        for b in rows[i + 1:]:
            if a.tag != b.tag or not set(a.platforms) & set(b.platforms):
                continue
            if _series_key(a.since) <= _series_key(b.until) and _series_key(b.since) <= _series_key(a.until):
                raise MatrixError(f"{FILE}: [[build]] {a.tag} rows overlap for series {b.since}..{b.until} "
                                  f"on {sorted(set(a.platforms) & set(b.platforms))}")


def _check_defaults(releases: tuple[Release, ...], builds: tuple[Build, ...]) -> None:
    for item in releases:
        for platform, tag in item.default_build.items():
            if tag in ("cpu", "mps") or platform.startswith("macos") or platform == "windows_amd64":
                continue
            if not any(b.tag == tag and b.covers(item.version, platform) for b in builds):
                raise MatrixError(f"{FILE}: [[release]] {item.version}: default_build {platform} = {tag!r} "
                                  f"has no [[build]] row for series {item.series} on {platform}")


def parse_conda_forge(data: dict) -> tuple[CondaForge, ...]:
    rows = []
    for i, row in enumerate(data.get("conda_forge", []), 1):
        where = _where("conda_forge", i, row, "subdir")
        try:
            archs = {k: tuple(v) for k, v in row.get("archs", {}).items()}
            item = CondaForge(row["series"], row["subdir"], tuple(row["cuda"]), archs, row["source"])
            _series_key(item.series)
        except (KeyError, TypeError, ValueError) as exc:
            raise MatrixError(f"{where}: {exc}") from None
        for cuda in item.cuda:
            if cuda not in item.archs:
                raise MatrixError(f"{where}: cuda {cuda} has no 'archs' list")
        rows.append(item)
    return tuple(sorted(rows, key=lambda r: _series_key(r.series), reverse=True))


def parse_hazards(data: dict) -> tuple[Hazard, ...]:
    rows = []
    for i, row in enumerate(data.get("hazard", []), 1):
        where = _where("hazard", i, row, "id")
        try:
            item = Hazard(row["id"], row["since"], row["text"], row["source"], row.get("os"), row.get("build"))
            _series_key(item.since)
            if item.build not in (None, "gpu", "cpu"):
                raise ValueError(f"build must be gpu or cpu, not {item.build!r}")
        except (KeyError, TypeError, ValueError) as exc:
            raise MatrixError(f"{where}: {exc}") from None
        rows.append(item)
    return tuple(rows)


def parse_index(data: dict) -> Index:
    row = data.get("index")
    if not isinstance(row, dict):
        raise MatrixError(f"{FILE}: missing [index] table")
    try:
        item = Index(row["url"], row["pytorch_conda_channel_last"], row["intel_mac_last"], row["source"])
    except KeyError as exc:
        raise MatrixError(f"{FILE}: [index]: missing {exc}") from None
    if "{tag}" not in item.url:
        raise MatrixError(f"{FILE}: [index]: url must contain {{tag}}")
    return item


def validate(data: Optional[dict] = None) -> None:
    """Check pytorch.toml (the bundled one, or `data` parsed from another copy); MatrixError if broken."""
    data = load("pytorch") if data is None else data
    releases_, builds_ = parse_releases(data), parse_builds(data)
    _check_defaults(releases_, builds_)
    parse_conda_forge(data), parse_hazards(data), parse_index(data)


# --- accessors ------------------------------------------------------------------------------------

@functools.lru_cache(maxsize=None)
def releases() -> tuple[Release, ...]:
    data = load("pytorch")
    rows = parse_releases(data)
    _check_defaults(rows, builds())
    return rows


@functools.lru_cache(maxsize=None)
def builds() -> tuple[Build, ...]:
    return parse_builds(load("pytorch"))


@functools.lru_cache(maxsize=None)
def hazards() -> tuple[Hazard, ...]:
    return parse_hazards(load("pytorch"))


@functools.lru_cache(maxsize=None)
def conda_forge() -> tuple[CondaForge, ...]:
    return parse_conda_forge(load("pytorch"))


@functools.lru_cache(maxsize=None)
def index() -> Index:
    return parse_index(load("pytorch"))


@memoised
def release(version: str) -> Optional[Release]:
    wanted = Version(version.split("+")[0])
    for row in releases():
        if Version(row.version) == wanted:
            return row
    return None


def _build_order(b: Build) -> tuple:
    if b.cuda:
        return (0, tuple(-int(p) for p in b.cuda.split(".")))
    if b.rocm:
        return (1, tuple(-int(p) for p in b.rocm.split(".")))
    return (2, ())


@memoised
def builds_for(version: str, platform: str) -> tuple[Build, ...]:
    """Builds on PyTorch's index for this release and platform: newest CUDA, then ROCm, then CPU."""
    found = [b for b in builds() if b.covers(version, platform)]
    return tuple(sorted(found, key=_build_order))


@memoised
def build(version: str, tag: str, platform: str) -> Optional[Build]:
    for b in builds_for(version, platform):
        if b.tag == tag:
            return b
    return None


def default_build(version: str, platform: str) -> Optional[str]:
    row = release(version)
    return row.default_build.get(platform) if row else None


@memoised
def platforms_with(kind: str) -> frozenset[str]:
    """Platforms with at least one build of this kind (cuda | rocm | cpu) on PyTorch's index."""
    return frozenset(p for b in builds() if b.kind == kind for p in b.platforms)


def index_url(tag: str) -> str:
    return index().url.format(tag=tag)


@memoised
def hazards_for(version: str, installed: Optional[str] = None) -> tuple[Hazard, ...]:
    """Hazards of moving to `version` from `installed` (None: a fresh install, every hazard ≤ version)."""
    target = _series_key(series_of(version))
    before = _series_key(series_of(installed)) if installed else None
    return tuple(h for h in hazards()
                 if _series_key(h.since) <= target and (before is None or before < _series_key(h.since)))


def conda_forge_for(subdir: str) -> tuple[CondaForge, ...]:
    return tuple(r for r in conda_forge() if r.subdir == subdir)
