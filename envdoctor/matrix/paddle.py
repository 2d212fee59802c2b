"""PaddlePaddle knowledge from matrices/paddle.toml, typed and validated.

Accessors (a broken file is a MatrixError naming the file and the row):

- `releases()`: 2.6 and every 3.x release, newest first, as `Release`; `release(version)`.
- `Release.pythons(platform)`: Python versions with a CPU `paddlepaddle` wheel on the registry
  (Paddle's own index mirrors them; GPU builds are taken to cover the Linux x86_64 list, UNCONFIRMED).
- `Release.builds`: the CUDA build ids on Paddle's index ("cu126", ...); `builds_of(release)` gives
  the `Build` rows.
- `builds()`, `gpu_platforms()`: every CUDA build row; the platforms that have any.
- `build(build_id)`: CUDA/cuDNN, platforms, GPU minimum, and `Build.driver_minimum(os)` →
  `(driver, documented)`: Paddle's stated minimum, or (documented=False) the CUDA toolkit's own driver
  from drivers.toml where Paddle states none.
- `index_url(build_id)`: "https://www.paddlepaddle.org.cn/packages/stable/cu126/" (also "cpu").
- `gpu_requirement(release, build_id)`: "paddlepaddle-gpu==2.6.2.post117" / "paddlepaddle-gpu==3.3.1".
- `hazards()`: upgrade hazards (row format: `envdoctor.matrix.tensorflow.Hazard`).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any, Mapping, Optional

from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion, Version

from envdoctor.matrix import drivers, gpus
from envdoctor.matrix.checks import check_glibc, check_platforms, check_pythons, check_spec, describe, row_label
from envdoctor.matrix.loader import MatrixError, load
from envdoctor.matrix.tensorflow import Hazard, parse_hazards

FILE = "paddle.toml"


@dataclass(frozen=True)
class Release:
    version: str
    date: str
    wheels: Mapping[str, tuple[str, ...]]
    builds: tuple[str, ...]
    min_compute_capability: str
    bundles_cuda: bool
    registry_gpu_wheels: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    registry_gpu_build: Optional[str] = None
    glibc_by_platform: Mapping[str, str] = field(default_factory=dict)
    source: str = ""
    registry_gpu_archs: tuple[str, ...] = ()  # kernels of the registry's GPU wheel, read from its libraries

    def archs_for(self, build_id: Optional[str]) -> tuple[str, ...]:
        """The kernel list of a build where a scanned wheel states it (the registry's 2.6 GPU wheel);
        () where only Paddle's documented minimum compute capability is known."""
        return self.registry_gpu_archs if build_id and build_id == self.registry_gpu_build else ()

    @property
    def glibc(self) -> Optional[str]:
        """The glibc the registry's Linux x86_64 CPU wheel tag asks for (manylinux1 = 2.5 understates:
        Paddle also needs libstdc++ newer than 3.4.25)."""
        return self.glibc_by_platform.get("linux_x86_64")

    def glibc_for(self, platform: Optional[str]) -> Optional[str]:
        return self.glibc_by_platform.get(platform or "")

    @property
    def series(self) -> str:
        return ".".join(self.version.split(".")[:2])

    def pythons(self, platform: Optional[str]) -> tuple[str, ...]:
        return self.wheels.get(platform or "", ())

    def gpu_pythons(self, build_id: str, platform: Optional[str]) -> tuple[str, ...]:
        if build_id == self.registry_gpu_build and platform in self.registry_gpu_wheels:
            return self.registry_gpu_wheels[platform]
        return self.pythons("linux_x86_64")


@dataclass(frozen=True)
class Build:
    id: str  # cu126
    cuda: str
    cudnn: str
    paddle: str  # specifier on the Paddle versions this build row describes
    platforms: tuple[str, ...]
    min_compute_capability: str
    driver_linux: Optional[str] = None
    driver_windows: Optional[str] = None
    version_suffix: str = ""  # 2.6: ".post117"
    note: Optional[str] = None
    source: str = ""

    def driver_minimum(self, os: str) -> tuple[Optional[str], bool]:
        """(minimum driver, whether Paddle documents it). os: linux | windows (WSL2: windows)."""
        documented = self.driver_linux if os == "linux" else self.driver_windows
        if documented:
            return documented, True
        toolkit = drivers.toolkit_driver(self.cuda)
        if toolkit is None:
            return None, False
        return (toolkit.linux if os == "linux" else toolkit.windows), False


def releases() -> tuple[Release, ...]:
    return _parsed()[0]


def release(version: str) -> Optional[Release]:
    return next((r for r in releases() if r.version == version), None)


def builds() -> tuple[Build, ...]:
    return tuple(_parsed()[1].values())


def gpu_platforms() -> set[str]:
    """Platforms with any CUDA build of Paddle."""
    return {platform for item in builds() for platform in item.platforms}


def build(build_id: str) -> Optional[Build]:
    return _parsed()[1].get(build_id)


def builds_of(item: Release) -> tuple[Build, ...]:
    return tuple(b for b in (build(i) for i in item.builds) if b is not None)


def index_url(build_id: str, channel: str = "stable") -> str:
    return _parsed()[2][channel].replace("{build}", build_id)


def gpu_requirement(item: Release, build_id: str) -> str:
    """The requirement that selects this build of this release on Paddle's index."""
    row = build(build_id)
    suffix = row.version_suffix if row and build_id != item.registry_gpu_build else ""
    return f"paddlepaddle-gpu=={item.version}{suffix}"


def hazards() -> tuple[Hazard, ...]:
    return _parsed()[3]


# --- parsing --------------------------------------------------------------------------------------

@functools.lru_cache(maxsize=1)
def _parsed():
    return parse(load("paddle"))


def parse(data: dict[str, Any], filename: str = FILE):
    """(releases newest first, builds by id, index URL forms by id, hazards); MatrixError when inconsistent."""
    builds = {}
    for i, row in enumerate(data.get("build", []), 1):
        item = _build(row, i, filename)
        if item.id in builds:
            raise MatrixError(f"{filename}: [[build]] {item.id} appears twice")
        builds[item.id] = item
    rows = [_release(row, i, filename, builds) for i, row in enumerate(data.get("release", []), 1)]
    if not rows:
        raise MatrixError(f"{filename}: no [[release]] rows")
    indexes = {}
    for i, row in enumerate(data.get("index", []), 1):
        where = row_label(filename, "index", i, row, key="id")
        if "id" not in row or "url" not in row:
            raise MatrixError(f"{where}: needs 'id' and 'url'")
        indexes[row["id"]] = row["url"]
    if "stable" not in indexes or "{build}" not in indexes["stable"]:
        raise MatrixError(f"{filename}: needs an [[index]] 'stable' whose url has {{build}}")
    ordered = tuple(sorted(rows, key=lambda r: Version(r.version), reverse=True))
    return ordered, builds, indexes, parse_hazards(data, filename)


def _build(row: dict[str, Any], index: int, filename: str) -> Build:
    where = row_label(filename, "build", index, row, key="id")
    try:
        item = Build(row["id"], row["cuda"], row["cudnn"], row["paddle"], tuple(row["platforms"]),
                     row["min_compute_capability"], row.get("driver_linux"), row.get("driver_windows"),
                     row.get("version_suffix", ""), row.get("note"), row["source"])
        gpus.cc_tuple(item.min_compute_capability)
        drivers.cuda_tuple(item.cuda)
        for driver in (item.driver_linux, item.driver_windows):
            if driver is not None:
                drivers.version_tuple(driver)
    except (KeyError, TypeError, ValueError) as exc:
        raise MatrixError(f"{where}: {describe(exc)}") from None
    if item.id != "cu" + item.cuda.replace(".", ""):
        raise MatrixError(f"{where}: id {item.id} does not match cuda {item.cuda}")
    if item.driver_linux is None and row.get("driver") != "toolkit":
        raise MatrixError(f"{where}: give driver_linux/driver_windows, or driver = \"toolkit\" (UNCONFIRMED)")
    check_spec(where, "paddle", item.paddle)
    check_platforms(where, list(item.platforms))
    return item


def _release(row: dict[str, Any], index: int, filename: str, builds: Mapping[str, Build]) -> Release:
    where = row_label(filename, "release", index, row)
    try:
        Version(row["version"])
        item = Release(row["version"], row["date"], {k: tuple(v) for k, v in row["wheels"].items()},
                       tuple(row["builds"]), row["min_compute_capability"], bool(row["bundles_cuda"]),
                       {k: tuple(v) for k, v in row.get("registry_gpu_wheels", {}).items()},
                       row.get("registry_gpu_build"), dict(row.get("glibc", {})), row["source"],
                       tuple(row.get("registry_gpu_archs", ())))
        gpus.cc_tuple(item.min_compute_capability)
        for token in item.registry_gpu_archs:
            gpus.parse_kernels(token)
    except (KeyError, TypeError, AttributeError, ValueError, InvalidVersion) as exc:
        raise MatrixError(f"{where}: {describe(exc)}") from None
    check_platforms(where, list(item.wheels) + list(item.registry_gpu_wheels))
    check_pythons(where, item.wheels)
    check_glibc(where, item.glibc_by_platform)
    for build_id in item.builds:
        if build_id not in builds:
            raise MatrixError(f"{where}: build {build_id} has no [[build]] row")
        if not SpecifierSet(builds[build_id].paddle).contains(item.version, prereleases=True):
            raise MatrixError(f"{where}: build {build_id} is described only for paddle {builds[build_id].paddle}")
    if item.registry_gpu_build is not None and item.registry_gpu_build not in item.builds:
        raise MatrixError(f"{where}: registry_gpu_build {item.registry_gpu_build} is not among its builds")
    return item
