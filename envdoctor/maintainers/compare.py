"""Registry drift: re-derive the registry-backed rows of matrices/*.toml and report what changed.

The matrices carry facts the package registry itself can state: the Python versions each release
has wheels for (per platform), Requires-Python, glibc/macOS floors, which CUDA build the registry's
default torch wheel is, what `tensorflow[and-cuda]` pins (and its numpy/keras pins), the jaxlib a
jax release runs with, jax's jaxlib/numpy pins and the cuDNN each jax CUDA plugin pins, Paddle's
CPU and registry GPU wheels. This module
derives them again from registry answers (`envdoctor.maintainers.derive`) and compares: every
platform's glibc and macOS floor, and every distribution a row names (paddlepaddle-gpu, the
tensorflow-intel / tensorflow-cpu-aws / tensorflow-macos stubs, tensorflow-metal) included.

Registry answers come from a `Registry`: `project(name)` (the JSON API document of a project) and
`requires_dist(name, version, platform)` (the Requires-Dist lines of one wheel's METADATA, or None).
`RecordedRegistry(folder)` reads saved answers (tests, offline); `scripts/check_registry.py` asks
the live registry and can record what it saw.

    python -m envdoctor.maintainers.compare --recorded tests/fixtures/registry

Exit codes: 0 no drift, 1 drift found, 2 the answers or the matrices could not be read.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Optional, Protocol

from packaging.version import InvalidVersion, Version

from envdoctor.maintainers import derive
from envdoctor.matrix import PLATFORMS
from envdoctor.matrix.loader import load
NOT_COMPARED = {"version", "source", "checked"}


class Registry(Protocol):
    def project(self, name: str) -> dict[str, Any]: ...

    def requires_dist(self, name: str, version: str, platform: str) -> Optional[list[str]]: ...


@dataclass(frozen=True)
class Drift:
    subject: str  # pytorch | tensorflow | jax | paddle
    release: str  # "2.9.1"
    field: str  # "python.linux_aarch64", "default_build.linux_x86_64", "and_cuda", "release"
    matrix: Any  # what matrices/<subject>.toml says (None: no such row or field)
    registry: Any  # what the registry says now

    def line(self) -> str:
        if self.field == "release":
            return f"{self.subject} {self.release}: {self.registry} (matrix: {self.matrix})"
        return f"{self.subject} {self.release} {self.field}: matrix {_show(self.matrix)} ≠ registry {_show(self.registry)}"

    def to_dict(self) -> dict:
        return {"subject": self.subject, "release": self.release, "field": self.field,
                "matrix": self.matrix, "registry": self.registry}


def _show(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False) if value is not None else "—"


# --- recorded answers ------------------------------------------------------------------------------

class RecordedRegistry:
    """Saved answers: `<project>.json` (a JSON API document, trimmed) and `requires_dist.json`
    (`{"<project>==<version> <platform>": [Requires-Dist lines]}`)."""

    def __init__(self, folder: str | Path):
        self.folder = Path(folder)
        path = self.folder / "requires_dist.json"
        self._requires = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
        self.missing: list[str] = []  # METADATA asked for but not recorded: those pins went uncompared

    def project(self, name: str) -> dict[str, Any]:
        return json.loads((self.folder / f"{name}.json").read_text(encoding="utf-8"))

    def requires_dist(self, name: str, version: str, platform: str) -> Optional[list[str]]:
        key = requires_key(name, version, platform)
        if key not in self._requires and key not in self.missing:
            self.missing.append(key)
        return self._requires.get(key)


def requires_key(name: str, version: str, platform: str) -> str:
    return f"{name}=={version} {platform}"


FILE_KEYS = ("filename", "requires_python", "yanked", "size")
SIZED = {"tensorflow"}
PER_PLATFORM = ("python", "freethreaded", "default_build", "glibc", "macos", "stub_for")  # stub wheels are told by their size (TensorFlow's tensorflow-intel arrangement)


def trim_project(doc: dict[str, Any], since: str) -> dict[str, Any]:
    """A JSON API document cut down to what the derivations read: releases ≥ `since` and, per
    file, its name, Requires-Python and yanked flag (plus the size where stubs matter), and the
    upload date on the earliest file of each release (a release's date)."""
    info = doc.get("info", {})
    keys = FILE_KEYS if info.get("name", "").lower() in SIZED else FILE_KEYS[:-1]
    releases = {}
    for version, files in doc.get("releases", {}).items():
        if _version(version) is None or _version(version) < Version(since):
            continue
        kept = [{k: f[k] for k in keys if f.get(k) not in (None, False)} for f in files]
        dates = [str(f.get("upload_time") or "")[:10] for f in files]
        if kept and any(dates):
            first = dates.index(min(d for d in dates if d))
            kept[first]["upload_time"] = dates[first]
        releases[version] = kept
    return {"info": {"name": info.get("name"), "version": info.get("version")}, "releases": releases}


# --- comparing rows --------------------------------------------------------------------------------

def _version(text: str) -> Optional[Version]:
    try:
        return Version(text)
    except InvalidVersion:
        return None


def compare_rows(subject: str, matrix_rows: Iterable[dict], derived: dict[str, dict], fields: Iterable[str]) -> list[Drift]:
    """Field-by-field differences between matrix rows and registry-derived rows of the same releases;
    plus releases the registry has and the matrix lacks (or lists but the registry no longer has)."""
    fields = list(fields)
    by_version = {str(row["version"]): row for row in matrix_rows}
    drifts = [Drift(subject, version, "release", "no row", "published on the registry")
              for version in derived if version not in by_version]
    newest = max((_version(v) for v in derived), default=None)
    for version, row in by_version.items():
        if version not in derived:
            # Newer than the answer we have (a recorded answer is older than the matrix): not drift.
            if newest is not None and _version(version) is not None and _version(version) < newest:
                drifts.append(Drift(subject, version, "release", "listed", "not on the registry (or yanked)"))
            continue
        for name in fields:
            if name in derived[version]:  # a field the derivation could not state is not compared
                drifts += _compare_field(subject, version, name, row.get(name), derived[version][name])
    return drifts


def _compare_field(subject: str, version: str, name: str, matrix: Any, registry: Any) -> list[Drift]:
    if isinstance(matrix, dict) or isinstance(registry, dict):
        matrix, registry = matrix or {}, registry or {}
        if name in PER_PLATFORM or name.endswith("wheels"):  # one line per platform
            return [d for key in sorted(set(matrix) | set(registry))
                    for d in _compare_field(subject, version, f"{name}.{key}", matrix.get(key), registry.get(key))]
    if _normal(matrix) == _normal(registry):
        return []
    return [Drift(subject, version, name, _normal(matrix), _normal(registry))]


def _normal(value: Any) -> Any:
    if isinstance(value, (list, tuple)):
        return [_normal(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _normal(v) for k, v in sorted(value.items())} or None
    return value if value not in ("", [], ()) else None


def newest_common(matrix_rows: Iterable[dict], derived: dict[str, Any], count: int) -> list[str]:
    versions = [str(r["version"]) for r in matrix_rows if str(r["version"]) in derived]
    return sorted(versions, key=lambda v: _version(v) or Version("0"))[-count:] if count else []


# --- per subject -----------------------------------------------------------------------------------

# A legacy tag (manylinux1 = glibc 2.5, manylinux2010 = 2.12) does not state the real floor: torch
# 2.0-2.6 wheels are tagged manylinux1 but built on manylinux2014 (glibc 2.17), which the matrix
# records (reference/pytorch.md §4d). Only PEP 600 tags (manylinux_2_28_x86_64) are compared.
LEGACY_GLIBC = {"2.5", "2.12"}


def check_pytorch(registry: Registry, metadata_releases: int = 3) -> list[Drift]:
    rows = [_pytorch_floors(r) for r in load("pytorch")["release"]]
    derived = {v: _plain(vars(r)) for v, r in derive.registry_rows(registry.project("torch")).items()}
    for version in newest_common(rows, derived, metadata_releases):
        builds = {}
        for platform in ("linux_x86_64", "linux_aarch64", "windows_amd64"):
            requires = registry.requires_dist("torch", version, platform)
            if requires is not None:
                builds[platform] = derive.default_build(requires, platform)
        derived[version]["default_build"] = builds
    for version, row in derived.items():
        legacy = [p for p, floor in row.get("glibc", {}).items() if floor in LEGACY_GLIBC]
        for platform in legacy:  # see LEGACY_GLIBC: the matrix's value for that platform is not compared
            row["glibc"].pop(platform)
            matrix = next((r for r in rows if str(r["version"]) == version), {})
            matrix.get("glibc", {}).pop(platform, None)
    drifts = compare_rows("pytorch", rows, _only_known_platforms(derived),
                          ("python", "freethreaded", "requires_python", "glibc", "macos"))
    for version in newest_common(rows, derived, metadata_releases):
        matrix = next(r for r in rows if str(r["version"]) == version).get("default_build", {})
        for platform, build in derived[version]["default_build"].items():
            drifts += _compare_field("pytorch", version, f"default_build.{platform}", matrix.get(platform), build)
    for companion in ("torchvision", "torchaudio"):
        drifts += _companion_drift(registry, rows, companion, metadata_releases)
    return drifts


def _pytorch_floors(row: dict) -> dict:
    """A pytorch.toml row with its floors as tables (a single string means every Linux / macOS platform)."""
    out = dict(row)
    for name, prefix in (("glibc", "linux_"), ("macos", "macos_")):
        value = row.get(name)
        if isinstance(value, str):
            out[name] = {p: value for p in PLATFORMS if p.startswith(prefix) and p in row.get("python", {})}
        elif isinstance(value, dict):
            out[name] = dict(value)
    return out


def _companion_drift(registry: Registry, rows: list[dict], companion: str, count: int) -> list[Drift]:
    """The newest `count` torchvision/torchaudio releases that pin one torch exactly (`torch==X`):
    the matrix row of X must name the newest such companion. Companions declaring a range
    (torchvision 0.29.1+ says `torch>=2.14.0`) are the matrix's own judgement and not compared."""
    from packaging.requirements import InvalidRequirement, Requirement

    by_torch = {str(r["version"]): r for r in rows}
    newest: dict[str, str] = {}
    releases = [v for v in registry.project(companion).get("releases", {})
                if _version(v) is not None and not _version(v).is_prerelease]
    for version in sorted(releases, key=Version)[-count:] if count else []:
        for line in registry.requires_dist(companion, version, "linux_x86_64") or []:
            try:
                req = Requirement(line)
            except InvalidRequirement:
                continue
            pins = [s.version for s in req.specifier if s.operator == "=="]
            if req.name == "torch" and len(pins) == 1 and len(req.specifier) == 1:
                newest[pins[0]] = version  # ascending order: the newest companion wins
    drifts = []
    for torch_version, version in newest.items():
        row = by_torch.get(torch_version)
        listed = str(row.get(companion, "")) if row else ""
        if row is not None and _version(listed) is not None and listed != version:
            drifts.append(Drift("pytorch", torch_version, companion, listed, version))
    return drifts


def _plain(row: dict) -> dict:
    return {k: (dict(v) if isinstance(v, dict) else v) for k, v in row.items()}


def _only_known_platforms(derived: dict[str, dict]) -> dict[str, dict]:
    for row in derived.values():
        for name in [k for k in row if k in ("python", "freethreaded") or k.endswith("wheels")]:
            if isinstance(row.get(name), dict):
                row[name] = {p: v for p, v in row[name].items() if p in PLATFORMS}
    return derived


def check_tensorflow(registry: Registry, metadata_releases: int = 3) -> list[Drift]:
    rows = load("tensorflow")["release"]
    derived = {r["version"]: r for r in derive.tensorflow_rows(registry.project("tensorflow"))}
    matrix = [dict(r, stubs=sorted(r.get("stub_for", {}))) for r in rows]
    for row in derived.values():
        row["stubs"] = sorted(row.get("stubs", []))
    for version in newest_common(rows, derived, metadata_releases):
        requires = registry.requires_dist("tensorflow", version, "linux_x86_64")
        if requires is not None:
            derived[version].update(and_cuda=derive.extra_pins(requires, "and-cuda"),
                                    numpy=derive.dependency_spec(requires, "numpy"),
                                    keras=derive.dependency_spec(requires, "keras"))
    drifts = compare_rows("tensorflow", matrix, derived, ("date", "requires_python", "wheels", "stubs", "glibc"))
    for version in newest_common(rows, derived, metadata_releases):
        row = next(r for r in rows if str(r["version"]) == version)
        for name in ("and_cuda", "numpy", "keras"):
            if name in derived[version]:
                drifts += _compare_field("tensorflow", version, name, row.get(name), derived[version][name])
    drifts += _named_distributions(registry, "tensorflow", rows, "stub_for")
    drifts += _metal_drift(registry)
    return drifts


def _named_distributions(registry: Registry, subject: str, rows: list[dict], field: str) -> list[Drift]:
    """Each distribution a row names (`stub_for = {platform = "tensorflow-intel"}`) must have that
    release on the registry."""
    drifts, seen = [], {}
    for row in rows:
        for platform, name in sorted(row.get(field, {}).items()):
            if name not in seen:
                seen[name] = derive.versions_of(registry.project(name))
            if str(row["version"]) not in seen[name]:
                drifts.append(Drift(subject, str(row["version"]), f"{field}.{platform}", name,
                                    f"no {name} {row['version']} on the registry"))
    return drifts


def _metal_drift(registry: Registry) -> list[Drift]:
    """tensorflow-metal rows: the Apple-silicon wheels' Pythons and macOS floor."""
    rows = load("tensorflow").get("metal", [])
    derived = {r["version"]: r for r in derive.metal_rows(registry.project("tensorflow-metal"))}
    drifts = []
    for row in rows:
        got = derived.get(str(row["version"]))
        if got is None:
            drifts.append(Drift("tensorflow-metal", str(row["version"]), "release", "listed", "not on the registry"))
            continue
        for name in ("python", "macos"):
            drifts += _compare_field("tensorflow-metal", str(row["version"]), name, row.get(name), got[name])
    return drifts


def check_jax(registry: Registry, metadata_releases: int = 3) -> list[Drift]:
    from envdoctor.matrix import jax as jax_matrix

    rows = load("jax")["release"]
    since = min((str(r["version"]) for r in rows), key=Version)
    plugins = {extra: registry.project(f"jax-{extra}-plugin") for extra in ("cuda12", "cuda13")}
    derived = {r["version"]: r for r in derive.jax_rows(registry.project("jax"), registry.project("jaxlib"), plugins, since)}
    drifts = compare_rows("jax", rows, _only_known_platforms(derived),
                          ("date", "requires_python", "jaxlib", "wheels", "cuda12_wheels", "cuda13_wheels", "glibc"))
    for version in newest_common(rows, derived, metadata_releases):
        row = next(r for r in rows if str(r["version"]) == version)
        requires = registry.requires_dist("jax", version, "linux_x86_64")
        if requires is not None:
            for name, dependency in (("jaxlib_requirement", "jaxlib"), ("numpy", "numpy")):
                drifts += _compare_field("jax", version, name, row.get(name), derive.dependency_spec(requires, dependency))
        drifts += _jax_plugin_cudnn(registry, jax_matrix, derive, version, derived[version].get("jaxlib"))
    return drifts


def _jax_plugin_cudnn(registry: Registry, jax_matrix, derive, version: str, jaxlib: Optional[str]) -> list[Drift]:
    """The cuDNN each CUDA plugin's [with-cuda] extra pins, against the matrix's plugin row."""
    from packaging.specifiers import InvalidSpecifier, SpecifierSet

    drifts = []
    for extra, cudnn in (("cuda12", "nvidia-cudnn-cu12"), ("cuda13", "nvidia-cudnn-cu13")):
        plugin = jax_matrix.plugin_for(extra, version)
        requires = registry.requires_dist(f"jax-{extra}-plugin", jaxlib, "linux_x86_64") if jaxlib else None
        if plugin is None or requires is None:
            continue
        pinned = derive.extra_pins(requires, "with-cuda").get(cudnn)
        try:
            same = pinned is not None and SpecifierSet(pinned) == SpecifierSet(plugin.cudnn)
        except InvalidSpecifier:
            same = False
        if not same:
            drifts.append(Drift("jax", version, f"plugin.{extra}.cudnn", plugin.cudnn, pinned))
    return drifts


def check_paddle(registry: Registry, metadata_releases: int = 3) -> list[Drift]:
    rows = load("paddle")["release"]
    derived = {r["version"]: r for r in derive.paddle_rows(registry.project("paddlepaddle"),
                                                           registry.project("paddlepaddle-gpu"))}
    return compare_rows("paddle", rows, _only_known_platforms(derived),
                        ("date", "wheels", "registry_gpu_wheels", "glibc"))


SUBJECTS: dict[str, Callable[..., list[Drift]]] = {
    "pytorch": check_pytorch,
    "tensorflow": check_tensorflow,
    "jax": check_jax,
    "paddle": check_paddle,
}


def check_all(registry: Registry, subjects: Iterable[str], metadata_releases: int = 3) -> dict[str, list[Drift]]:
    return {name: SUBJECTS[name](registry, metadata_releases) for name in subjects}


# --- command line ----------------------------------------------------------------------------------

def report(results: dict[str, list[Drift]], as_json: bool, out=sys.stdout) -> int:
    drifts = [d for found in results.values() for d in found]
    if as_json:
        out.write(json.dumps({"drift": [d.to_dict() for d in drifts], "checked": list(results)}, indent=2,
                             ensure_ascii=False) + "\n")
    else:
        for name, found in results.items():
            out.write(f"{name}: {'no drift' if not found else f'{len(found)} difference(s)'}\n")
            for d in found:
                out.write(f"  {d.line()}\n")
    return 1 if drifts else 0


def parser(description: str = __doc__) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("subjects", nargs="*", default=[], metavar="SUBJECT",
                   help=f"what to check ({', '.join(SUBJECTS)}; default: all)")
    p.add_argument("--metadata", type=_count, default=3, metavar="N",
                   help="read the wheel METADATA (pins, default build) of the newest N releases (default 3)")
    p.add_argument("--json", action="store_true", help="print the drift as JSON")
    return p


def _count(text: str) -> int:
    """--metadata N: 0 or more (a negative N would slice from the wrong end: every release but one)."""
    if not text.strip().isdigit():
        raise argparse.ArgumentTypeError(f"must be a whole number, 0 or more, not {text!r}")
    return int(text)


def subjects_of(p: argparse.ArgumentParser, args: argparse.Namespace) -> list[str]:
    unknown = [s for s in args.subjects if s not in SUBJECTS]
    if unknown:
        p.error(f"unknown subject {unknown[0]!r} (choose from {', '.join(SUBJECTS)})")
    return args.subjects or list(SUBJECTS)


def main(argv: Optional[list[str]] = None) -> int:
    p = parser()
    p.add_argument("--recorded", required=True, metavar="DIR", help="a folder of recorded registry answers")
    args = p.parse_args(argv)
    registry = RecordedRegistry(args.recorded)
    try:
        results = check_all(registry, subjects_of(p, args), args.metadata)
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:  # unreadable or malformed answers
        sys.stderr.write(f"check_registry: error: {type(exc).__name__}: {exc}\n")
        return 2
    note_missing(registry)
    return report(results, args.json)


def note_missing(registry: Registry, err=sys.stderr) -> None:
    """Say which recorded METADATA answers were missing: "no drift" must not hide what was not compared."""
    missing = getattr(registry, "missing", [])
    if missing:
        err.write(f"check_registry: note: {len(missing)} wheel METADATA answer(s) not in the recording "
                  f"(e.g. {missing[0]}); their pins and default builds were not compared\n")




def main_live(argv: Optional[list[str]] = None) -> int:
    """scripts/check_registry.py: the live registry (or --recorded answers), optionally --record them."""
    from envdoctor.maintainers.fetch import LiveRegistry

    p = parser(__doc__)
    p.add_argument("--recorded", metavar="DIR", help="use answers saved in DIR instead of the network")
    p.add_argument("--record", metavar="DIR", help="save the answers seen (trimmed) into DIR")
    args = p.parse_args(argv)
    subjects = subjects_of(p, args)
    registry = RecordedRegistry(args.recorded) if args.recorded else LiveRegistry()
    try:
        results = check_all(registry, subjects, args.metadata)
    except Exception as exc:  # network, HTTP status, unreadable answer or matrix: one line
        sys.stderr.write(f"check_registry: error: {type(exc).__name__}: {exc}\n")
        return 2
    if args.record and isinstance(registry, LiveRegistry):
        registry.record(Path(args.record))
    note_missing(registry)
    return report(results, args.json)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
