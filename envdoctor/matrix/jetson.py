"""Typed access to matrices/jetson.toml: L4T -> JetPack -> CUDA stack, SoC -> compute capability,
and where each framework gets its Jetson build for each JetPack line.

    release_for_l4t("36.4.3")            -> JetsonRelease(jetpack="6.2", cuda="12.6", cudnn="9.3.0", ...)
    jetpack_line("36.9.9")               -> "6"     (by L4T major, for releases not in the table)
    soc_compute_capability("tegra234")   -> "8.7"
    framework_source("6.2", "pytorch")   -> JetsonFrameworkSource(kind="jetson-index",
                                              index_url="https://pypi.jetson-ai-lab.io/jp6/cu126", ...)
    framework_sources("7.2", "torch", soc="tegra264")  -> every alternative, best first

Framework names: "pytorch" (or "torch"), "tensorflow", "jax", "paddle" (or "paddlepaddle").
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, Optional

from envdoctor.matrix.loader import MatrixError, load

FILE = "jetson.toml"
KINDS = ("jetson-index", "nvidia-redist", "official", "registry", "none")
# registry: the package registry's own aarch64 (SBSA) wheels carry this SoC's kernels (Thor: sm_110)
FRAMEWORKS = ("pytorch", "tensorflow", "jax", "paddle")
ALIASES = {"torch": "pytorch", "paddlepaddle": "paddle", "paddlepaddle-gpu": "paddle", "tf": "tensorflow"}


@dataclass(frozen=True)
class JetsonRelease:
    l4t: str  # "36.4.3"
    jetpack: str  # "6.2"
    status: str  # ga | dp | ea
    cuda: Optional[str] = None
    cudnn: Optional[str] = None
    tensorrt: Optional[str] = None
    ubuntu: Optional[str] = None
    python: Optional[str] = None
    socs: tuple[str, ...] = ()
    note: Optional[str] = None
    source: str = ""

    @property
    def line(self) -> str:
        """The JetPack major line: "6" for 6.2."""
        return self.jetpack.split(".")[0]


@dataclass(frozen=True)
class JetsonFrameworkSource:
    framework: str  # pytorch | tensorflow | jax | paddle
    jetpack: str  # "6" (whole line) or "6.0" (that release only)
    kind: str  # jetson-index | nvidia-redist | official | registry | none
    index_url: Optional[str] = None
    wheel_url: Optional[str] = None  # a direct wheel (NVIDIA's PyTorch redist builds)
    versions: tuple[str, ...] = ()  # known versions there (may be incomplete: indexes churn)
    python: Optional[str] = None  # the only Python the builds are for
    cuda: Optional[str] = None
    soc: Optional[str] = None  # only for this SoC
    note: Optional[str] = None
    source: str = ""

    @property
    def available(self) -> bool:
        return self.kind != "none"


def normalise_l4t(l4t: str) -> str:
    """"36.4" -> "36.4.0"; "R35.5" -> "35.5.0"."""
    parts = l4t.strip().lstrip("Rr").split(".")
    parts += ["0"] * (3 - len(parts))
    return ".".join(parts[:3])


def release_for_l4t(l4t: Optional[str]) -> Optional[JetsonRelease]:
    if not l4t:
        return None
    return _releases().get(normalise_l4t(l4t))


def releases() -> tuple[JetsonRelease, ...]:
    return tuple(_releases().values())


def jetpack_line(l4t: Optional[str]) -> Optional[str]:
    """The JetPack major line for an L4T version, also for releases newer than the table."""
    if not l4t:
        return None
    release = release_for_l4t(l4t)
    if release is not None:
        return release.line
    try:
        major = int(normalise_l4t(l4t).split(".")[0])
    except ValueError:
        return None
    return _lines().get(major)


def soc_compute_capability(soc: Optional[str]) -> Optional[str]:
    return _socs().get(soc or "")


def soc_family(soc: Optional[str]) -> Optional[str]:
    return _soc_families().get(soc or "")


def framework_sources(jetpack: Optional[str], framework: str, soc: Optional[str] = None) -> tuple[JetsonFrameworkSource, ...]:
    """Every known source of `framework` for this JetPack (and SoC), best first.

    The most specific JetPack match wins: rows for "6.0" hide the rows for "6" on JetPack 6.0. A row
    bound to a SoC applies only to that SoC (or when the SoC is unknown).
    """
    if not jetpack:
        return ()
    name = ALIASES.get(framework.lower(), framework.lower())
    wanted = jetpack.split(".")
    matching = [row for row in _framework_rows()
                if row.framework == name
                and wanted[: len(row.jetpack.split("."))] == row.jetpack.split(".")
                and (soc is None or row.soc is None or row.soc == soc)]
    if not matching:
        return ()
    depth = max(len(row.jetpack.split(".")) for row in matching)
    best = [row for row in matching if len(row.jetpack.split(".")) == depth]
    return tuple(sorted(best, key=lambda row: row.soc is None))  # SoC-specific rows first, else file order


def framework_source(jetpack: Optional[str], framework: str, soc: Optional[str] = None) -> Optional[JetsonFrameworkSource]:
    found = framework_sources(jetpack, framework, soc)
    return found[0] if found else None


# --- loading and validation ----------------------------------------------------------------------

def _data() -> dict[str, Any]:
    return load("jetson")


@functools.lru_cache(maxsize=1)
def _releases() -> dict[str, JetsonRelease]:
    found: dict[str, JetsonRelease] = {}
    for row in _data().get("release", []):
        release = JetsonRelease(
            l4t=_text(row, "l4t", "release"), jetpack=_text(row, "jetpack", "release"),
            status=_text(row, "status", "release"),
            cuda=row.get("cuda"), cudnn=row.get("cudnn"), tensorrt=row.get("tensorrt"),
            ubuntu=row.get("ubuntu"), python=row.get("python"), socs=tuple(row.get("socs", ())),
            note=row.get("note"), source=row["source"],
        )
        if release.l4t != normalise_l4t(release.l4t):
            raise MatrixError(f"{FILE}: [[release]] l4t={release.l4t}: write three components")
        if release.l4t in found:
            raise MatrixError(f"{FILE}: [[release]] l4t={release.l4t} appears twice")
        if release.status not in ("ga", "dp", "ea"):
            raise MatrixError(f"{FILE}: [[release]] l4t={release.l4t}: unknown status {release.status!r}")
        found[release.l4t] = release
    return found


@functools.lru_cache(maxsize=1)
def _lines() -> dict[int, str]:
    lines = {}
    for row in _data().get("line", []):
        major = row.get("l4t_major")
        if not isinstance(major, int):
            raise MatrixError(f"{FILE}: [[line]] needs an integer l4t_major")
        lines[major] = _text(row, "jetpack", "line")
    return lines


@functools.lru_cache(maxsize=1)
def _socs() -> dict[str, str]:
    return {_text(row, "name", "soc"): _text(row, "compute_capability", "soc") for row in _data().get("soc", [])}


@functools.lru_cache(maxsize=1)
def _soc_families() -> dict[str, str]:
    return {row["name"]: row.get("family", row["name"]) for row in _data().get("soc", [])}


@functools.lru_cache(maxsize=1)
def _framework_rows() -> tuple[JetsonFrameworkSource, ...]:
    rows = []
    for row in _data().get("framework", []):
        source = JetsonFrameworkSource(
            framework=_text(row, "framework", "framework"), jetpack=_text(row, "jetpack", "framework"),
            kind=_text(row, "kind", "framework"), index_url=row.get("index_url"), wheel_url=row.get("wheel_url"),
            versions=tuple(row.get("versions", ())), python=row.get("python"), cuda=row.get("cuda"),
            soc=row.get("soc"), note=row.get("note"), source=row["source"],
        )
        where = f"{FILE}: [[framework]] {source.framework} jetpack={source.jetpack}"
        if source.framework not in FRAMEWORKS:
            raise MatrixError(f"{where}: unknown framework")
        if source.kind not in KINDS:
            raise MatrixError(f"{where}: unknown kind {source.kind!r} (one of {', '.join(KINDS)})")
        if source.kind not in ("none", "registry") and not source.index_url:
            raise MatrixError(f"{where}: kind {source.kind} needs index_url")
        rows.append(source)
    return tuple(rows)


def _text(row: dict[str, Any], key: str, table: str) -> str:
    value = row.get(key)
    if not isinstance(value, str) or not value:
        raise MatrixError(f"{FILE}: [[{table}]] row without {key!r}: {row.get('l4t') or row.get('name') or row}")
    return value


def validate() -> None:
    """Load every table (raises MatrixError on a bad row)."""
    _releases(), _lines(), _socs(), _framework_rows()
