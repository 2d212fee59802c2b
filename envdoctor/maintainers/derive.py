"""Registry answers -> matrix-shaped rows: pure functions, no network (maintainers only).

Every wheel file name is read by `envdoctor.maintainers.wheels` (packaging's parser); every version
comparison is `packaging.version.Version`.

torch (matrices/pytorch.toml [[release]]):
    registry_rows(doc)                       {"2.15.0": RegistryRow(python, freethreaded, requires_python,
                                              glibc={platform: floor}, macos={platform: floor})}
    default_build(requires_dist, platform)   "cu132" | "cu128" | "cpu"
TensorFlow, JAX, Paddle (matrices/{tensorflow,jax,paddle}.toml):
    tensorflow_rows(doc), jax_rows(jax, jaxlib, plugins, since), paddle_rows(cpu, gpu)
    metal_rows(doc)                          tensorflow-metal: python, macos
Requires-Dist:
    extra_pins(lines, "and-cuda"), dependency_spec(lines, "numpy"), metadata_requires_dist(text)
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Iterable, Optional

from packaging.markers import Marker
from packaging.requirements import InvalidRequirement, Requirement
from packaging.version import InvalidVersion, Version

from envdoctor.maintainers import wheels
from envdoctor.matrix import PLATFORMS


def _live(files: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    return [f for f in files if not f.get("yanked") and str(f.get("filename", "")).endswith(".whl")]


def _version(text: str) -> Optional[Version]:
    try:
        return Version(text)
    except InvalidVersion:
        return None


# --- wheels of one release ------------------------------------------------------------------------

def wheel_platforms(files: Iterable[dict[str, Any]]) -> dict[str, list[str]]:
    """Platform key -> sorted Python versions with a wheel ("3.13t" = free-threaded)."""
    found: dict[str, set[str]] = {}
    for entry in _live(files):
        wheel = wheels.parse(entry["filename"])
        if wheel is None:
            continue
        for platform in wheel.platforms:
            for python in wheel.pythons:
                found.setdefault(platform, set()).add(python + ("t" if wheel.freethreaded else ""))
    return {key: sorted(found[key], key=_python_sort_key) for key in PLATFORMS if key in found}


def _python_sort_key(python: str) -> tuple[int, int, bool]:
    major, minor = python.rstrip("t").split(".")
    return int(major), int(minor), python.endswith("t")


def glibc_of(platform_tag: str) -> Optional[str]:
    """'manylinux_2_17_x86_64.manylinux2014_x86_64' -> '2.17' (of alternatives the lowest)."""
    floors = [pair for tag in platform_tag.split(".") for pair in wheels.platform_keys(tag)]
    return wheels.lowest(floor for key, floor in floors if key and key.startswith("linux"))


def wheel_glibc(files: Iterable[dict[str, Any]]) -> dict[str, str]:
    """Linux platform key -> the highest glibc any of the release's wheels there asks for."""
    floors = wheels.floors_of((f["filename"] for f in _live(files)), wheels.highest)
    return {key: floors[key] for key in PLATFORMS if key in floors and key.startswith("linux")}


def wheel_macos(files: Iterable[dict[str, Any]], pick=wheels.lowest) -> dict[str, str]:
    """macOS platform key -> the macOS the release's wheels there ask for (lowest: some wheel installs)."""
    floors = wheels.floors_of((f["filename"] for f in _live(files)), pick)
    return {key: floors[key] for key in PLATFORMS if key in floors and key.startswith("macos")}


def stub_platforms(files: Iterable[dict[str, Any]], max_bytes: int = 5_000_000) -> list[str]:
    """Platforms whose wheels are all tiny: stubs that only depend on another distribution
    (TensorFlow's tensorflow-intel / tensorflow-cpu-aws / tensorflow-macos arrangement)."""
    sizes: dict[str, list[int]] = {}
    for entry in _live(files):
        wheel = wheels.parse(entry["filename"])
        for platform in wheel.platforms if wheel else ():
            sizes.setdefault(platform, []).append(int(entry.get("size") or 0))
    return [key for key in PLATFORMS if key in sizes and max(sizes[key]) < max_bytes]


# --- torch ----------------------------------------------------------------------------------------

@dataclass
class RegistryRow:
    version: str
    python: dict[str, list[str]] = field(default_factory=dict)  # platform -> ["3.10", ...]
    freethreaded: dict[str, list[str]] = field(default_factory=dict)  # platform -> ["3.14", ...]
    requires_python: Optional[str] = None
    glibc: dict[str, str] = field(default_factory=dict)  # linux platform -> lowest glibc of its wheels
    macos: dict[str, str] = field(default_factory=dict)  # macos platform -> lowest macOS of its wheels


def row_from_files(version: str, files: list[dict]) -> RegistryRow:
    """One torch release's registry row from its file list (dicts with 'filename', 'requires_python')."""
    row = RegistryRow(version)
    live = _live(files)
    for platform, pythons in wheel_platforms(live).items():
        plain = [p for p in pythons if not p.endswith("t")]
        threaded = [p[:-1] for p in pythons if p.endswith("t")]
        if plain:
            row.python[platform] = plain
        if threaded:
            row.freethreaded[platform] = threaded
    row.requires_python = next((f["requires_python"] for f in live if f.get("requires_python")), None)
    floors = wheels.floors_of(f["filename"] for f in live)
    row.glibc = {k: v for k, v in floors.items() if k.startswith("linux")}
    row.macos = {k: v for k, v in floors.items() if k.startswith("macos")}
    return row


def registry_rows(doc: dict, since: str = "2.0.0") -> dict[str, RegistryRow]:
    """Every final release ≥ `since` in a registry JSON answer (`/pypi/torch/json`) with wheels."""
    rows = {}
    for version, files in doc.get("releases", {}).items():
        parsed = _version(version)
        if parsed is None or parsed.is_prerelease or parsed.is_devrelease or parsed < Version(since) or not files:
            continue
        row = row_from_files(version, files)
        if row.python:
            rows[version] = row
    return dict(sorted(rows.items(), key=lambda kv: Version(kv[0])))


_CUDA_PIN = re.compile(r"^(nvidia-cuda-runtime(?:-cu\d+)?|cuda-toolkit)$")


def metadata_requires_dist(metadata_text: str) -> list[str]:
    """The Requires-Dist lines of a wheel METADATA file."""
    return [line.split(":", 1)[1].strip() for line in metadata_text.splitlines()
            if line.lower().startswith("requires-dist:")]


def default_build(requires_dist: Iterable[str], platform: str = "linux_x86_64", python: str = "3.12") -> str:
    """Which build a wheel is, from its pins: 'cu128' for nvidia-cuda-runtime-cu12==12.8.90,
    'cu130' for cuda-toolkit[...]==13.0.2, 'cpu' when no CUDA runtime is required on `platform`."""
    environment = _marker_env(platform, python)
    for line in requires_dist:
        req = _requirement(line)
        if req is None or (req.marker is not None and not _marker_true(req.marker, environment)):
            continue
        if not _CUDA_PIN.match(req.name.lower()):
            continue
        pinned = [s.version for s in req.specifier if s.operator in ("==", "===", "~=")]
        if pinned:
            release = Version(pinned[0]).release
            return f"cu{release[0]}{release[1] if len(release) > 1 else 0}"
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


# --- TensorFlow, JAX, Paddle ----------------------------------------------------------------------

def release_rows(doc: dict[str, Any], since: str, include_pre: bool = False) -> list[dict[str, Any]]:
    """One row per release >= `since` that has wheels: version, date, requires_python, wheels,
    stubs, glibc (highest per Linux platform) and macos (lowest per macOS platform)."""
    rows = []
    floor = Version(since)
    for version, files in doc.get("releases", {}).items():
        parsed = _version(version)
        if parsed is None or parsed < floor or not files or (parsed.is_prerelease and not include_pre):
            continue
        live = [f for f in files if not f.get("yanked")]
        if not live:
            continue
        requires = sorted({f.get("requires_python") or "" for f in live} - {""})
        rows.append({
            "version": version,
            "date": min(str(f.get("upload_time") or "9999")[:10] for f in live),
            "requires_python": requires[0] if len(requires) == 1 else None,
            "wheels": wheel_platforms(live),
            "stubs": stub_platforms(live),
            "glibc": wheel_glibc(live),
            "macos": wheel_macos(live),
        })
    rows.sort(key=lambda r: Version(r["version"]))
    return rows


def tensorflow_rows(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """Final TensorFlow releases from 2.10, as matrix rows (registry-derived fields only)."""
    return release_rows(doc, "2.10")


def metal_rows(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """tensorflow-metal releases: the Pythons of the Apple-silicon wheels and their macOS floor."""
    return [{"version": r["version"], "python": r["wheels"].get("macos_arm64", []),
             "macos": r["macos"].get("macos_arm64")} for r in release_rows(doc, "0")]


def versions_of(doc: dict[str, Any]) -> set[str]:
    """Releases with at least one file not yanked (a distribution a row names must have the version)."""
    return {v for v, files in doc.get("releases", {}).items() if any(not f.get("yanked") for f in files)}


def jax_rows(jax_doc: dict[str, Any], jaxlib_doc: dict[str, Any],
             plugin_docs: dict[str, dict[str, Any]], since: str) -> list[dict[str, Any]]:
    """JAX releases >= `since`. `jaxlib`: the jaxlib the release runs with (its own version, or the
    newest older jaxlib when jax shipped alone, e.g. 0.4.37 -> 0.4.36, which is what its CUDA extras
    pin); `wheels`: that jaxlib's; `cuda12_wheels` / `cuda13_wheels`: the plugin's of that version."""
    libs = {r["version"]: r for r in release_rows(jaxlib_doc, "0")}
    plugins = {extra: {r["version"]: r for r in release_rows(doc, "0")} for extra, doc in plugin_docs.items()}
    rows = []
    for row in release_rows(jax_doc, since):
        older = [v for v in libs if Version(v) <= Version(row["version"])]
        jaxlib = max(older, key=Version) if older else None
        item = {"version": row["version"], "date": row["date"], "requires_python": row["requires_python"],
                "jaxlib": jaxlib, "wheels": libs[jaxlib]["wheels"] if jaxlib else {},
                "glibc": libs[jaxlib]["glibc"] if jaxlib else {}}
        for extra, found in plugins.items():
            if jaxlib in found:
                item[f"{extra}_wheels"] = found[jaxlib]["wheels"]
        rows.append(item)
    return rows


def paddle_rows(cpu_doc: dict[str, Any], gpu_doc: dict[str, Any], since: str = "2.6") -> list[dict[str, Any]]:
    """paddlepaddle releases from 2.6 with the registry's CPU wheels and (2.x) GPU wheels; a release
    only the GPU distribution has (paddlepaddle-gpu 2.6.0, 2.6.1) has no CPU wheels and its glibc
    is the GPU wheels'."""
    cpu = {r["version"]: r for r in release_rows(cpu_doc, since)}
    gpu = {r["version"]: r for r in release_rows(gpu_doc, since)}
    rows = []
    for version in sorted(set(cpu) | set(gpu), key=Version):
        base = cpu.get(version) or {**gpu[version], "wheels": {}, "stubs": []}
        rows.append({**base, "registry_gpu_wheels": gpu.get(version, {}).get("wheels", {})})
    return rows


# --- Requires-Dist --------------------------------------------------------------------------------

def extra_pins(requires_dist: Iterable[str], extra: str) -> dict[str, str]:
    """Package -> specifier for the requirements that only an extra brings (e.g. 'and-cuda')."""
    pins = {}
    for line in requires_dist:
        req = _requirement(line)
        if req is None or req.marker is None:
            continue
        if _marker_needs_extra(str(req.marker), extra):
            pins[_canonical(req.name)] = _spec_text(req)
    return dict(sorted(pins.items()))


def dependency_spec(requires_dist: Iterable[str], name: str) -> Optional[str]:
    """The specifier of a plain (extra-less) dependency, joined with ' | ' when markers split it."""
    specs = []
    for line in requires_dist:
        req = _requirement(line)
        if req is None or _canonical(req.name) != _canonical(name):
            continue
        if req.marker is not None and "extra" in str(req.marker):
            continue
        specs.append(_spec_text(req) + (f" ; {req.marker}" if req.marker is not None else ""))
    return " | ".join(specs) if specs else None


def _requirement(line: str) -> Optional[Requirement]:
    try:
        return Requirement(line)
    except InvalidRequirement:
        return None


def _marker_needs_extra(marker: str, extra: str) -> bool:
    wanted = {extra, extra.replace("-", "_")}
    return any(m in wanted for m in re.findall(r'extra\s*==\s*"([^"]+)"', marker))


def _spec_text(req: Requirement) -> str:
    return ",".join(sorted(str(s) for s in req.specifier)) or "*"


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()
