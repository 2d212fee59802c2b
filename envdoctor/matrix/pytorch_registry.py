"""What the package registry itself says about torch releases: pure functions, no network.

Used to derive and re-check the registry rows of matrices/pytorch.toml (Python versions per
platform, free-threaded builds, Requires-Python, glibc and macOS minimums from the wheel tags, and
which build the default Linux wheel is from its METADATA). `scripts/pytorch_registry.py` fetches the
registry's JSON answer and the wheels' METADATA and feeds them here; the drift checker compares the
result with `envdoctor.matrix.pytorch.releases()`.

    rows = registry_rows(pypi_json)          # {"2.15.0": RegistryRow(...), ...}
    default_build(requires_dist_lines)       # "cu132" | "cu128" | "cpu"
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Iterable, Optional

from packaging.markers import Marker
from packaging.requirements import InvalidRequirement, Requirement
from packaging.version import InvalidVersion, Version

_WHEEL = re.compile(r"^(?P<name>[^-]+)-(?P<version>[^-]+)(-(?P<build>\d[^-]*))?-(?P<py>[^-]+)-(?P<abi>[^-]+)-(?P<plat>[^-]+)\.whl$")
_MANYLINUX = re.compile(r"^manylinux_(\d+)_(\d+)_(x86_64|aarch64)$")
_LEGACY_MANYLINUX = {"manylinux1": "2.5", "manylinux2010": "2.12", "manylinux2014": "2.17"}
_MACOS = re.compile(r"^macosx_(\d+)_(\d+)_(arm64|x86_64|universal2)$")


@dataclass
class RegistryRow:
    version: str
    python: dict[str, list[str]] = field(default_factory=dict)  # platform -> ["3.10", ...]
    freethreaded: dict[str, list[str]] = field(default_factory=dict)  # platform -> ["3.14", ...]
    requires_python: Optional[str] = None
    glibc: Optional[str] = None  # lowest glibc any Linux x86_64 wheel needs
    macos: Optional[str] = None  # lowest macOS of the arm64 wheels


def platform_of(tag: str) -> tuple[Optional[str], Optional[str]]:
    """A wheel platform tag -> (platform key, minimum OS version): ("linux_x86_64", "2.28")."""
    for part in tag.split("."):  # compressed tag sets: manylinux1_x86_64.manylinux_2_5_x86_64
        m = _MANYLINUX.match(part)
        if m:
            return f"linux_{m.group(3)}", f"{m.group(1)}.{m.group(2)}"
        for legacy, glibc in _LEGACY_MANYLINUX.items():
            if part in (f"{legacy}_x86_64", f"{legacy}_aarch64"):
                return f"linux_{part.rsplit('_', 1)[-1] if part.endswith('aarch64') else 'x86_64'}", glibc
        m = _MACOS.match(part)
        if m:
            arch = "arm64" if m.group(3) == "arm64" else "x86_64"
            return f"macos_{arch}", f"{m.group(1)}.{m.group(2)}"
        if part == "win_amd64":
            return "windows_amd64", None
        if part == "win_arm64":
            return "windows_arm64", None
    return None, None


def python_of(py_tag: str, abi_tag: str) -> tuple[Optional[str], bool]:
    """('cp312', 'cp312') -> ('3.12', False); ('cp314', 'cp314t') -> ('3.14', True)."""
    m = re.match(r"^cp(\d)(\d+)$", py_tag)
    if not m:
        return None, False
    return f"{m.group(1)}.{m.group(2)}", abi_tag.endswith("t")


def _version_key(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in text.split("."))


def _lowest(values: Iterable[str]) -> Optional[str]:
    values = [v for v in values if v]
    return min(values, key=_version_key) if values else None


def row_from_files(version: str, files: list[dict]) -> RegistryRow:
    """One release's registry row from its file list (dicts with 'filename', 'requires_python')."""
    row = RegistryRow(version)
    glibcs, macoses = [], []
    for f in files:
        if f.get("yanked"):
            continue
        m = _WHEEL.match(f.get("filename", ""))
        if not m:
            continue
        platform, minimum = platform_of(m.group("plat"))
        python, free_threaded = python_of(m.group("py"), m.group("abi"))
        if not platform or not python:
            continue
        target = row.freethreaded if free_threaded else row.python
        target.setdefault(platform, [])
        if python not in target[platform]:
            target[platform].append(python)
        if platform == "linux_x86_64":
            glibcs.append(minimum)
        if platform == "macos_arm64":
            macoses.append(minimum)
        row.requires_python = row.requires_python or f.get("requires_python") or None
    for table in (row.python, row.freethreaded):
        for platform in table:
            table[platform].sort(key=_version_key)
    row.glibc, row.macos = _lowest(glibcs), _lowest(macoses)
    return row


def registry_rows(pypi_json: dict, since: str = "2.0.0") -> dict[str, RegistryRow]:
    """Every final release ≥ `since` in a registry JSON answer (`/pypi/torch/json`) with wheels."""
    rows = {}
    for version, files in pypi_json.get("releases", {}).items():
        try:
            parsed = Version(version)
        except InvalidVersion:
            continue
        if parsed.is_prerelease or parsed.is_devrelease or parsed < Version(since) or not files:
            continue
        row = row_from_files(version, files)
        if row.python:
            rows[version] = row
    return dict(sorted(rows.items(), key=lambda kv: Version(kv[0])))


# --- the default build, from METADATA Requires-Dist -----------------------------------------------

_CUDA_PIN = re.compile(r"^(nvidia-cuda-runtime(?:-cu\d+)?|cuda-toolkit|nvidia-cuda-runtime-cu\d+)$")


def metadata_requires_dist(metadata_text: str) -> list[str]:
    """The Requires-Dist lines of a wheel METADATA file."""
    return [line.split(":", 1)[1].strip() for line in metadata_text.splitlines()
            if line.lower().startswith("requires-dist:")]


def default_build(requires_dist: Iterable[str], platform: str = "linux_x86_64", python: str = "3.12") -> str:
    """Which build a wheel is, from its pins: 'cu128' for nvidia-cuda-runtime-cu12==12.8.90,
    'cu130' for cuda-toolkit[...]==13.0.2, 'cpu' when no CUDA runtime is required on `platform`."""
    environment = _marker_env(platform, python)
    for line in requires_dist:
        try:
            req = Requirement(line)
        except InvalidRequirement:
            continue
        if req.marker is not None and not _marker_true(req.marker, environment):
            continue
        if not _CUDA_PIN.match(req.name.lower()):
            continue
        pinned = [s.version for s in req.specifier if s.operator in ("==", "===", "~=")]
        if pinned:
            major, minor = pinned[0].split(".")[:2]
            return f"cu{major}{minor}"
    return "cpu"


def _marker_env(platform: str, python: str) -> dict[str, str]:
    system, machine = {
        "linux_x86_64": ("Linux", "x86_64"), "linux_aarch64": ("Linux", "aarch64"),
        "windows_amd64": ("Windows", "AMD64"), "macos_arm64": ("Darwin", "arm64"),
        "macos_x86_64": ("Darwin", "x86_64"),
    }[platform]
    return {"platform_system": system, "platform_machine": machine, "python_version": python,
            "python_full_version": f"{python}.0", "sys_platform": {"Linux": "linux", "Windows": "win32",
                                                                     "Darwin": "darwin"}[system],
            "os_name": "nt" if system == "Windows" else "posix", "implementation_name": "cpython",
            "platform_python_implementation": "CPython", "extra": ""}


def _marker_true(marker: Marker, environment: dict[str, str]) -> bool:
    try:
        return marker.evaluate(environment)
    except Exception:  # an unknown marker variable: do not count the requirement
        return False
