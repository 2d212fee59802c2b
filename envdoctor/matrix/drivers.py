"""NVIDIA driver ↔ CUDA knowledge from matrices/drivers.toml.

Three questions, three accessors:

- `wheel_min_driver(cuda, os)`: the oldest driver that runs a prebuilt binary (a pip wheel that
  bundles its CUDA runtime) built with CUDA `cuda` — NVIDIA's minor-version compatibility minimum.
  `driver_runs_cuda(driver, cuda, os)` answers "can this driver run that wheel" with it.
- `toolkit_driver(cuda)`: the driver bundled with a toolkit release, i.e. what the full feature set
  of that exact toolkit needs (explanations only; never a reason to reject a wheel).
- `branch_cuda(driver)`: the highest CUDA version a driver branch supports (what nvidia-smi prints),
  for when the probe could not read it.

`os` is "linux" or "windows"; WSL2 reports the Windows host's driver, so pass "windows" there
(`envdoctor.plan.common.driver_os(facts)` does this). Driver versions are strings ("570.124.04",
"572.61"); comparison is numeric per component.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Optional

from packaging.version import InvalidVersion, Version

from envdoctor.matrix.loader import MatrixError, load
from envdoctor.matrix.memo import memoised

FILE = "drivers.toml"
OSES = ("linux", "windows")


@memoised
def version_tuple(text: str) -> tuple[int, ...]:
    """'570.124.04' -> (570, 124, 4), read by packaging.version (the one version reading of the code
    base). ValueError on anything that is not a plain dotted number ('570.x', '2.8.0rc1', '')."""
    try:
        parsed = Version(str(text).strip())
    except InvalidVersion:
        raise ValueError(f"not a dotted version number: {text!r}") from None
    if parsed.pre or parsed.post is not None or parsed.dev is not None or parsed.local or parsed.epoch:
        raise ValueError(f"not a dotted version number: {text!r}")
    return parsed.release


@memoised
def cuda_tuple(text: str) -> tuple[int, int]:
    """'12.8' / '12.8.1' / 'cu128'-free major.minor -> (12, 8)."""
    parts = version_tuple(text)
    return (parts[0], parts[1] if len(parts) > 1 else 0)


@dataclass(frozen=True)
class WheelMinimum:
    cuda_from: tuple[int, int]
    cuda_to: tuple[int, int]
    linux: str
    windows: str
    source: str


@dataclass(frozen=True)
class ToolkitDriver:
    cuda: str  # "12.8.1"
    linux: str
    windows: Optional[str]  # None from CUDA 13.0: the Windows installer bundles no driver
    source: str


@dataclass(frozen=True)
class Branch:
    branch: int  # 570
    cuda: str  # "12.8"
    source: str


def wheel_minimums() -> tuple[WheelMinimum, ...]:
    return _cached("wheel_minimum")


def parse_wheel_minimums(data: dict) -> tuple[WheelMinimum, ...]:
    rows = []
    for i, row in enumerate(data.get("wheel_minimum", []), 1):
        where = f"{FILE}: [[wheel_minimum]] row {i} (cuda_from={row.get('cuda_from')})"
        try:
            item = WheelMinimum(cuda_tuple(row["cuda_from"]), cuda_tuple(row["cuda_to"]),
                                row["linux"], row["windows"], row["source"])
            version_tuple(item.linux), version_tuple(item.windows)
        except (KeyError, ValueError, TypeError) as exc:
            raise MatrixError(f"{where}: {exc}") from None
        if item.cuda_from > item.cuda_to:
            raise MatrixError(f"{where}: cuda_from is after cuda_to")
        rows.append(item)
    _check_no_overlap(rows)
    return tuple(rows)


def _check_no_overlap(rows: list[WheelMinimum]) -> None:
    ordered = sorted(rows, key=lambda r: r.cuda_from)
    for before, after in zip(ordered, ordered[1:]):
        if after.cuda_from <= before.cuda_to:
            raise MatrixError(f"{FILE}: [[wheel_minimum]] ranges overlap at CUDA "
                              f"{after.cuda_from[0]}.{after.cuda_from[1]}")


def toolkits() -> tuple[ToolkitDriver, ...]:
    return _cached("toolkit")


def parse_toolkits(data: dict) -> tuple[ToolkitDriver, ...]:
    rows = []
    for i, row in enumerate(data.get("toolkit", []), 1):
        where = f"{FILE}: [[toolkit]] row {i} (cuda={row.get('cuda')})"
        try:
            item = ToolkitDriver(row["cuda"], row["linux"], row.get("windows"), row["source"])
            version_tuple(item.cuda), version_tuple(item.linux)
            if item.windows is not None:
                version_tuple(item.windows)
        except (KeyError, ValueError, TypeError) as exc:
            raise MatrixError(f"{where}: {exc}") from None
        rows.append(item)
    return tuple(sorted(rows, key=lambda r: version_tuple(r.cuda)))


def branches() -> tuple[Branch, ...]:
    return _cached("branch")


def parse_branches(data: dict) -> tuple[Branch, ...]:
    rows = []
    for i, row in enumerate(data.get("branch", []), 1):
        where = f"{FILE}: [[branch]] row {i} (branch={row.get('branch')})"
        try:
            item = Branch(int(row["branch"]), row["cuda"], row["source"])
            cuda_tuple(item.cuda)
        except (KeyError, ValueError, TypeError) as exc:
            raise MatrixError(f"{where}: {exc}") from None
        rows.append(item)
    rows.sort(key=lambda r: r.branch)
    for before, after in zip(rows, rows[1:]):
        if cuda_tuple(after.cuda) <= cuda_tuple(before.cuda):
            raise MatrixError(f"{FILE}: [[branch]] {after.branch} supports CUDA {after.cuda}, "
                              f"not newer than branch {before.branch} ({before.cuda})")
    return tuple(rows)


@memoised
def wheel_min_driver(cuda: str, os: str = "linux") -> Optional[str]:
    """Oldest driver that runs a prebuilt wheel built with CUDA `cuda` ("12.8"); None if unknown."""
    if os not in OSES:
        raise ValueError(f"os must be one of {OSES}, not {os!r}")
    wanted = cuda_tuple(cuda)
    for row in wheel_minimums():
        if row.cuda_from <= wanted <= row.cuda_to:
            return row.linux if os == "linux" else row.windows
    return None


@memoised
def driver_runs_cuda(driver: str, cuda: str, os: str = "linux") -> Optional[bool]:
    """Whether `driver` runs a prebuilt wheel built with CUDA `cuda`; None when the table has no row."""
    minimum = wheel_min_driver(cuda, os)
    if minimum is None:
        return None
    return version_tuple(driver) >= version_tuple(minimum)


@memoised
def toolkit_driver(cuda: str) -> Optional[ToolkitDriver]:
    """Driver bundled with the first listed release of toolkit `cuda` ("12.8" -> 12.8.0 row).

    With a full version ("12.8.1") that exact release, if listed."""
    parts = version_tuple(cuda)
    for row in toolkits():
        got = version_tuple(row.cuda)
        if got == parts or (len(parts) == 2 and got[:2] == parts):
            return row
    return None


@memoised
def branch_cuda(driver: str) -> Optional[str]:
    """Highest CUDA version supported by the branch of `driver` (Linux or Windows numbering).

    A driver belongs to the newest listed branch whose number is ≤ its first component; None for a
    driver older than every listed branch.
    """
    major = version_tuple(driver)[0]
    found = None
    for row in branches():
        if row.branch <= major:
            found = row.cuda
    return found


_PARSERS = {"wheel_minimum": parse_wheel_minimums, "toolkit": parse_toolkits, "branch": parse_branches}


@functools.lru_cache(maxsize=None)
def _cached(table: str) -> tuple:
    return _PARSERS[table](load("drivers"))


def validate(data: Optional[dict] = None) -> None:
    """Check every table of drivers.toml (the bundled one, or `data` parsed from another copy).

    Raises MatrixError naming the file and row."""
    data = load("drivers") if data is None else data
    for parse in _PARSERS.values():
        parse(data)
