"""Kernel lists of the matrices' build rows against the wheels themselves (maintainers only).

    targets(subjects)        the rows whose wheel the registry hosts: Target(row, distribution, version,
                             platform, listed, convention)
    scan(target, workdir)    download the wheel (bounded), read every library's fat binaries -> Scan
    compare_scan(target, scan)  -> kernels.Comparison
    load_scans(folder) / save_scan(folder, scan)   tests/fixtures/kernel_scan/*.json (offline replay)

Rows compared: TensorFlow `gpu_archs` (tensorflow, Linux x86_64), the registry's paddlepaddle-gpu
wheel (`registry_gpu_archs`), the JAX CUDA plugins (`archs` of each [[plugin]] row, the newest jax of
its range, Linux x86_64 and aarch64; like TensorFlow's they follow Bazel's spelling, where a final
compute_NN is SASS sm_NN and PTX compute_NN), and torch's registry default CUDA wheel per release (the
[[build]] row's `archs`). Only a library's main kernels count (`Kernels.main()`): the few fat binaries
a bundled dependency carries for every architecture are not the framework's kernel list.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Iterable, Optional

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from envdoctor.maintainers import kernels, wheels


@dataclass(frozen=True)
class Target:
    row: str  # "tensorflow 2.15.0 gpu_archs"
    distribution: str  # the registry project
    version: str
    platform: str  # linux_x86_64 | linux_aarch64
    listed: tuple[str, ...]
    convention: str = "plain"  # "bazel": a final compute_NN is SASS sm_NN + PTX compute_NN (TF, JAX)

    @property
    def key(self) -> str:
        return f"{self.distribution}-{self.version}-{self.platform}"


@dataclass
class Scan:
    key: str
    wheel: str
    size: int
    libraries: dict[str, dict] = field(default_factory=dict)  # member -> Kernels.to_dict()
    download_s: float = 0.0
    scan_s: float = 0.0
    checked: str = ""
    errors: dict[str, str] = field(default_factory=dict)  # member -> why it could not be read

    def kernels(self) -> kernels.Kernels:
        """The wheel's main kernels: every library's entries together, less the targets only a few
        fat binaries carry (a bundled dependency's, e.g. paddle's libwarpctc.so for sm_35..sm_90)."""
        total = kernels.Kernels()
        for member, found in self.libraries.items():
            if not member.endswith("[relocatable]"):  # relocatable code is never loaded as it is
                total = total.merged(kernels.Kernels.from_dict(found))
        return total.main()


# --- which rows ----------------------------------------------------------------------------------

def targets(subjects: Iterable[str] = ("tensorflow", "paddle", "jax", "pytorch")) -> list[Target]:
    found: list[Target] = []
    for subject in subjects:
        found += {"tensorflow": _tensorflow, "paddle": _paddle, "jax": _jax, "pytorch": _pytorch}[subject]()
    return found


def _tensorflow() -> list[Target]:
    from envdoctor.matrix import tensorflow

    return [Target(f"tensorflow {r.version} gpu_archs", "tensorflow", r.version, "linux_x86_64", tuple(r.gpu_archs),
                   "bazel")
            for r in tensorflow.releases() if r.gpu_archs and "linux_x86_64" in r.gpu_platforms]


def _paddle() -> list[Target]:
    from envdoctor.matrix import paddle

    return [Target(f"paddle {r.version} registry_gpu_archs", "paddlepaddle-gpu", r.version, platform,
                   r.registry_gpu_archs)
            for r in paddle.releases() if r.registry_gpu_archs
            for platform in r.registry_gpu_wheels if platform.startswith("linux")]


def _jax() -> list[Target]:
    from envdoctor.matrix import jax

    found = []
    for plugin in jax.plugins():
        versions = [r for r in jax.releases() if SpecifierSet(plugin.jax).contains(r.version, prereleases=True)
                    and r.plugin_wheels.get(plugin.extra)]
        if not versions:
            continue
        newest = max(versions, key=lambda r: Version(r.version))
        for platform in plugin.platforms:
            found.append(Target(f"jax plugin {plugin.extra} {plugin.jax} archs", f"jax-{plugin.extra}-plugin",
                                newest.jaxlib, platform, tuple(plugin.archs), "bazel"))
    return found


def _pytorch() -> list[Target]:
    from envdoctor.matrix import pytorch

    found = []
    for release in pytorch.releases():
        tag = release.default_build.get("linux_x86_64")
        build = pytorch.build(release.version, tag, "linux_x86_64") if tag else None
        if build is not None and build.kind == "cuda":
            found.append(Target(f"pytorch {release.version} {tag} archs (the registry's default wheel)", "torch",
                                release.version, "linux_x86_64", build.archs))
    return found


# --- comparing -------------------------------------------------------------------------------------

def expected_names(target: Target) -> tuple[str, ...]:
    """The row's list as SASS/PTX names: in TensorFlow's and JAX's (Bazel's) spelling a final
    compute_NN also means SASS sm_NN."""
    listed = list(target.listed)
    if target.convention == "bazel" and listed and listed[-1].startswith("compute_"):
        listed.insert(-1, "sm_" + listed[-1].split("_", 1)[1])
    return tuple(listed)


def compare_scan(target: Target, scan: Scan) -> kernels.Comparison:
    """The row against the wheel; a wheel with an unreadable library is not compared (its kernels
    are unknown, and an empty list would read as "the wheel lacks" everything that library holds)."""
    if scan.errors:
        why = "; ".join(f"{member}: {reason}" for member, reason in sorted(scan.errors.items()))
        return kernels.Comparison(target.row, expected_names(target), (), error=why)
    return kernels.compare(target.row, expected_names(target), scan.kernels())


# --- fetching and scanning (network, disk) ---------------------------------------------------------

def pick_wheel(doc: dict, version: str, platform: str) -> Optional[dict]:
    """The registry file standing for (version, platform): a real (not stub) wheel, CPython 3.12 if any."""
    candidates = []
    for f in doc.get("releases", {}).get(version, []):
        wheel = wheels.parse(f.get("filename", ""))
        if f.get("yanked") or wheel is None or platform not in wheel.platforms:
            continue
        if f.get("size") is not None and int(f["size"]) < 5_000_000:  # a stub that depends on another distribution
            continue
        candidates.append(((wheel.pythons[-1:] != ("3.12",), wheel.freethreaded, f["filename"]), f))
    return min(candidates, key=lambda c: c[0])[1] if candidates else None


def scan(target: Target, workdir: Path, docs: dict, max_bytes: int = 4 << 30) -> Optional[Scan]:
    """Download the target's wheel into `workdir`, scan it, delete it. None when no wheel fits."""
    from envdoctor.maintainers import fetch
    from envdoctor.maintainers.scan import scan_wheel

    if target.distribution not in docs:
        docs[target.distribution] = fetch.project(target.distribution)
    entry = pick_wheel(docs[target.distribution], target.version, target.platform)
    if entry is None:
        return None
    path = workdir / entry["filename"]
    started = time.monotonic()
    try:
        fetch.download(fetch.file_url(target.distribution, entry["url"]), path, max_bytes)
        downloaded = time.monotonic()
        errors: dict[str, str] = {}
        found = scan_wheel(path, errors=errors)
    finally:
        path.unlink(missing_ok=True)
    import datetime as dt

    return Scan(target.key, entry["filename"], int(entry.get("size") or 0),
                {k: v.to_dict() for k, v in sorted(found.items())}, round(downloaded - started, 1),
                round(time.monotonic() - downloaded, 1), dt.date.today().isoformat(), errors)


# --- recorded scans --------------------------------------------------------------------------------

def save_scan(folder: Path, result: Scan) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{result.key}.json"
    path.write_text(json.dumps(asdict(result), indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return path


def load_scans(folder: Path) -> dict[str, Scan]:
    found = {}
    for path in sorted(Path(folder).glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        found[data["key"]] = Scan(**data)
    return found


def verify_recorded(folder: Path, subjects: Iterable[str] = ("tensorflow", "paddle", "jax", "pytorch")
                    ) -> tuple[list[kernels.Comparison], list[Target]]:
    """(comparisons of the rows with a recorded scan, rows without one)."""
    scans = load_scans(folder)
    compared, unscanned = [], []
    for target in targets(subjects):
        if target.key in scans:
            compared.append(compare_scan(target, scans[target.key]))
        else:
            unscanned.append(target)
    return compared, unscanned
