"""JAX knowledge from matrices/jax.toml, typed and validated.

Accessors (a broken file is a MatrixError naming the file and the row):

- `releases()`: releases of the last two years, newest first, as `Release`; `release(version)`.
- `Release.pythons(platform)`: Python versions with a jaxlib wheel ("3.13t" = free-threaded);
  `Release.plugin_pythons(extra, platform)`: the same for a CUDA plugin (`cuda12`, `cuda13`).
- `Release.glibc` / `glibc_for(platform)`: the glibc jaxlib's Linux wheels ask for.
- `Release.jaxlib`: the jaxlib (= plugin = PJRT) version `jax[cudaNN]==version` installs.
- `plugin_for(extra, version)`: the `Plugin` row (CUDA it is built with, cuDNN pin, driver and GPU
  minimums, ahead-of-time kernels) for one extra and jax version, or None.
- `platform_note(platform)`: `PlatformNote(cuda, note)`: whether CUDA plugins exist there and what
  to say where they do not.
- `hazards()`: upgrade hazards (row format: `envdoctor.matrix.tensorflow.Hazard`).
- `version_rule_ok(jax, jaxlib, plugin)`: the jax/jaxlib/plugin rule (see the file header),
  returning a sentence when broken (for diagnosis) or None when fine.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any, Mapping, Optional

from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion, Version

from envdoctor.matrix import PLATFORMS, gpus
from envdoctor.matrix.checks import check_glibc, check_platforms, check_pythons, check_spec, describe, row_label
from envdoctor.matrix.loader import MatrixError, load
from envdoctor.matrix.tensorflow import Hazard, parse_hazards

FILE = "jax.toml"
CUDA_EXTRAS = ("cuda13", "cuda12")  # preference order: JAX recommends CUDA 13


@dataclass(frozen=True)
class Release:
    version: str
    date: str
    requires_python: Optional[str]
    jaxlib: str
    jaxlib_requirement: str
    numpy: Optional[str]
    extras: tuple[str, ...]
    wheels: Mapping[str, tuple[str, ...]]
    plugin_wheels: Mapping[str, Mapping[str, tuple[str, ...]]] = field(default_factory=dict)  # extra -> wheels
    glibc_by_platform: Mapping[str, str] = field(default_factory=dict)  # jaxlib's manylinux tags
    source: str = ""

    @property
    def glibc(self) -> Optional[str]:
        return self.glibc_by_platform.get("linux_x86_64")

    def glibc_for(self, platform: Optional[str]) -> Optional[str]:
        return self.glibc_by_platform.get(platform or "")

    def pythons(self, platform: Optional[str]) -> tuple[str, ...]:
        return self.wheels.get(platform or "", ())

    def plugin_pythons(self, extra: str, platform: Optional[str]) -> tuple[str, ...]:
        return self.plugin_wheels.get(extra, {}).get(platform or "", ())


@dataclass(frozen=True)
class Plugin:
    extra: str  # cuda12 | cuda13 | cuda12-local | cuda13-local
    jax: str  # specifier on the jax version
    cuda_build: str  # CUDA it is built with, "12.9"
    cuda_runtime_min: str
    cudnn: str  # specifier its [with-cuda] extra pins
    driver_linux: str  # the JAX docs' minimum (Linux numbering)
    min_compute_capability: str
    archs: tuple[str, ...]
    platforms: tuple[str, ...]
    local: bool = False
    note: Optional[str] = None
    source: str = ""

    @property
    def cuda_major(self) -> str:
        return self.cuda_build.split(".")[0]


@dataclass(frozen=True)
class PlatformNote:
    platform: str
    cuda: bool
    note: str
    source: str = ""


def releases() -> tuple[Release, ...]:
    return _parsed()[0]


def release(version: str) -> Optional[Release]:
    return next((r for r in releases() if r.version == version), None)


def plugins() -> tuple[Plugin, ...]:
    return _parsed()[1]


def plugin_for(extra: str, version: str) -> Optional[Plugin]:
    v = Version(version)
    return next((p for p in plugins() if p.extra == extra and SpecifierSet(p.jax).contains(v, prereleases=True)), None)


def platform_note(platform: Optional[str]) -> Optional[PlatformNote]:
    return _parsed()[2].get(platform or "")


def hazards() -> tuple[Hazard, ...]:
    return _parsed()[3]


def version_rule_ok(jax: str, jaxlib: Optional[str], plugin: Optional[str] = None) -> Optional[str]:
    """None when installed jax / jaxlib / CUDA plugin versions agree; else what is wrong, in a sentence."""
    if jaxlib is None:
        return f"jax {jax} is installed without jaxlib"
    row = release(jax)
    if Version(jaxlib) > Version(jax):
        return f"jaxlib {jaxlib} is newer than jax {jax}: jax refuses to import"
    if row is not None and not SpecifierSet(row.jaxlib_requirement).contains(jaxlib, prereleases=True):
        return f"jax {jax} needs jaxlib {row.jaxlib_requirement}, found {jaxlib}"
    if plugin is not None and _numeric(plugin) != _numeric(jaxlib):
        return (f"the CUDA plugin {plugin} does not equal jaxlib {jaxlib}: JAX ignores the plugin "
                f"and runs on the CPU")
    return None


def _numeric(version: str) -> tuple[int, ...]:
    return Version(version).release


# --- parsing --------------------------------------------------------------------------------------

@functools.lru_cache(maxsize=1)
def _parsed():
    return parse(load("jax"))


def parse(data: dict[str, Any], filename: str = FILE):
    """(releases newest first, plugins, platform notes by platform, hazards); MatrixError when inconsistent."""
    rows = [_release(row, i, filename) for i, row in enumerate(data.get("release", []), 1)]
    if not rows:
        raise MatrixError(f"{filename}: no [[release]] rows")
    if len({r.version for r in rows}) != len(rows):
        raise MatrixError(f"{filename}: a [[release]] version appears twice")
    plugin_rows = tuple(_plugin(row, i, filename) for i, row in enumerate(data.get("plugin", []), 1))
    notes = {}
    for i, row in enumerate(data.get("platform", []), 1):
        where = row_label(filename, "platform", i, row, key="platform")
        try:
            note = PlatformNote(row["platform"], bool(row["cuda"]), row["note"], row["source"])
        except (KeyError, TypeError) as exc:
            raise MatrixError(f"{where}: {describe(exc)}") from None
        check_platforms(where, [note.platform])
        notes[note.platform] = note
    for index, r in enumerate(rows, 1):
        for extra in r.plugin_wheels:
            if not any(p.extra == extra and SpecifierSet(p.jax).contains(r.version, prereleases=True)
                       for p in plugin_rows):
                raise MatrixError(f"{filename}: [[release]] {r.version} has {extra} wheels but no [[plugin]] "
                                  f"row covers it")
    ordered = tuple(sorted(rows, key=lambda r: Version(r.version), reverse=True))
    return ordered, plugin_rows, notes, parse_hazards(data, filename)


def _release(row: dict[str, Any], index: int, filename: str) -> Release:
    where = row_label(filename, "release", index, row)
    try:
        Version(row["version"])
        Version(row["jaxlib"])
        plugin_wheels = {extra: {k: tuple(v) for k, v in row[f"{extra}_wheels"].items()}
                         for extra in ("cuda12", "cuda13") if f"{extra}_wheels" in row}
        item = Release(row["version"], row["date"], row.get("requires_python"), row["jaxlib"],
                       row["jaxlib_requirement"], row.get("numpy"), tuple(row.get("extras", ())),
                       {k: tuple(v) for k, v in row["wheels"].items()}, plugin_wheels,
                       dict(row.get("glibc", {})), row["source"])
    except (KeyError, TypeError, AttributeError, InvalidVersion) as exc:
        raise MatrixError(f"{where}: {describe(exc)}") from None
    check_spec(where, "jaxlib_requirement", item.jaxlib_requirement)
    # The version rule: jaxlib <= jax, and jax's own requirement admits it.
    if Version(item.jaxlib) > Version(item.version):
        raise MatrixError(f"{where}: jaxlib {item.jaxlib} is newer than jax {item.version}")
    if not SpecifierSet(item.jaxlib_requirement).contains(item.jaxlib, prereleases=True):
        raise MatrixError(f"{where}: jaxlib {item.jaxlib} is outside jaxlib_requirement {item.jaxlib_requirement}")
    check_platforms(where, list(item.wheels))
    check_pythons(where, item.wheels)
    check_glibc(where, item.glibc_by_platform)
    for extra, wheels in item.plugin_wheels.items():
        check_platforms(where, list(wheels))
        check_pythons(where, wheels)
    return item


def _plugin(row: dict[str, Any], index: int, filename: str) -> Plugin:
    where = row_label(filename, "plugin", index, row, key="extra")
    try:
        item = Plugin(row["extra"], row["jax"], row["cuda_build"], row["cuda_runtime_min"], row["cudnn"],
                      str(row["driver_linux"]), row["min_compute_capability"], tuple(row["archs"]),
                      tuple(row["platforms"]), bool(row.get("local", False)), row.get("note"), row["source"])
        gpus.cc_tuple(item.min_compute_capability)
        gpus.cc_tuple(item.cuda_build)
        for token in item.archs:
            gpus.parse_kernels(token)
    except (KeyError, TypeError, ValueError) as exc:
        raise MatrixError(f"{where}: {describe(exc)}") from None
    check_spec(where, "jax", item.jax)
    check_spec(where, "cudnn", item.cudnn)
    check_platforms(where, list(item.platforms))
    return item


__all__ = ["Release", "Plugin", "PlatformNote", "Hazard", "PLATFORMS", "CUDA_EXTRAS", "releases", "release",
           "plugins", "plugin_for", "platform_note", "hazards", "version_rule_ok", "parse"]
