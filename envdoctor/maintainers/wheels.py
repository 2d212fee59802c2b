"""The one reading of wheel file names for the maintainers' tools, on `packaging.utils`.

    parse("torch-2.6.0-cp312-cp312-manylinux_2_28_aarch64.whl")
        -> Wheel(name="torch", version="2.6.0", pythons=("3.12",), freethreaded=False,
                 floors={"linux_aarch64": "2.28"})

Platform keys are envdoctor's: linux_x86_64, linux_aarch64, windows_amd64, windows_arm64,
macos_arm64, macos_x86_64. A wheel's compressed tag set (`manylinux_2_17_x86_64.manylinux2014_x86_64`)
names one platform under several floors: any one satisfies pip, so the floor is the lowest. A
`universal2` macOS wheel serves both macos_arm64 and macos_x86_64. Legacy manylinux tags map to
their glibc (manylinux1 = 2.5, manylinux2010 = 2.12, manylinux2014 = 2.17); a macOS floor is
"major.minor" of the tag.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Iterable, Optional

from packaging.utils import InvalidWheelFilename, parse_wheel_filename
from packaging.version import Version

LEGACY_MANYLINUX = {"manylinux1": "2.5", "manylinux2010": "2.12", "manylinux2014": "2.17"}
_MANYLINUX = re.compile(r"^manylinux_(\d+)_(\d+)_(x86_64|aarch64)$")
_LEGACY = re.compile(r"^(manylinux1|manylinux2010|manylinux2014)_(x86_64|aarch64)$")
_MACOS = re.compile(r"^macosx_(\d+)_(\d+)_(arm64|x86_64|universal2|intel)$")
_WINDOWS = {"win_amd64": "windows_amd64", "win_arm64": "windows_arm64"}
_CPYTHON = re.compile(r"^cp(\d)(\d+)$")


@dataclass(frozen=True)
class Wheel:
    name: str
    version: str
    pythons: tuple[str, ...]  # CPython minors ("3.12"); () for a pure or non-CPython wheel
    freethreaded: bool
    floors: dict[str, Optional[str]] = field(default_factory=dict)  # platform key -> OS floor (None: none)
    build: Optional[str] = None  # the build tag ("1" in torch-2.0.0-1-cp39-...)

    @property
    def platforms(self) -> tuple[str, ...]:
        return tuple(self.floors)


UNIVERSAL2 = ("macos_arm64", "macos_x86_64")  # the platform keys one universal2 macOS wheel serves


def platform_floor(tag: str) -> tuple[Optional[str], Optional[str]]:
    """One platform tag -> (platform key, OS floor): 'manylinux_2_28_x86_64' -> ('linux_x86_64', '2.28').
    A universal2 tag gives the tag's own word, 'universal2': use platform_keys() for envdoctor's keys."""
    m = _MANYLINUX.match(tag)
    if m:
        return f"linux_{m.group(3)}", f"{m.group(1)}.{m.group(2)}"
    m = _LEGACY.match(tag)
    if m:
        return f"linux_{m.group(2)}", LEGACY_MANYLINUX[m.group(1)]
    m = _MACOS.match(tag)
    if m:
        arch = {"arm64": "macos_arm64", "x86_64": "macos_x86_64", "intel": "macos_x86_64"}.get(m.group(3), "universal2")
        return arch, f"{m.group(1)}.{m.group(2)}"
    if tag in _WINDOWS:
        return _WINDOWS[tag], None
    return None, None


def platform_keys(tag: str) -> list[tuple[str, Optional[str]]]:
    """The platform keys one tag serves, each with the OS floor: universal2 -> both macOS keys."""
    key, floor = platform_floor(tag)
    if key is None:
        return []
    return [(k, floor) for k in UNIVERSAL2] if key == "universal2" else [(key, floor)]


def parse(filename: str) -> Optional[Wheel]:
    """A wheel file name read with packaging; None for a name that is not a valid wheel name."""
    try:
        name, version, build, tags = parse_wheel_filename(filename)
    except InvalidWheelFilename:
        return None
    pythons, freethreaded, floors = set(), False, {}
    for tag in tags:
        m = _CPYTHON.match(tag.interpreter)
        if m:
            pythons.add(f"{m.group(1)}.{m.group(2)}")
            freethreaded = freethreaded or tag.abi.endswith("t")
        for platform, floor in platform_keys(tag.platform):
            floors[platform] = lowest([floors.get(platform), floor]) if platform in floors else floor
    return Wheel(str(name), str(version), tuple(sorted(pythons, key=Version)), freethreaded, floors,
                 str(build[0]) + build[1] if build else None)


def lowest(values: Iterable[Optional[str]]) -> Optional[str]:
    found = [v for v in values if v]
    return min(found, key=Version) if found else None


def highest(values: Iterable[Optional[str]]) -> Optional[str]:
    found = [v for v in values if v]
    return max(found, key=Version) if found else None


def floors_of(filenames: Iterable[str], pick=lowest) -> dict[str, str]:
    """Platform key -> the OS floor of a release's wheels there (`pick`: lowest = some wheel installs,
    highest = every wheel installs). Windows (no floor) is left out."""
    seen: dict[str, list[Optional[str]]] = {}
    for filename in filenames:
        wheel = parse(filename)
        if wheel is None:
            continue
        for platform, floor in wheel.floors.items():
            seen.setdefault(platform, []).append(floor)
    return {p: pick(v) for p, v in sorted(seen.items()) if pick(v)}
