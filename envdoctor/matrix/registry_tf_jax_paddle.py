"""Derive the registry-backed fields of matrices/{tensorflow,jax,paddle}.toml from the registry itself.

Maintainers' tool, never on a user's path. The pure functions turn a registry project document
(the JSON API answer for one project: ``{"info": ..., "releases": {version: [file, ...]}}``) or a
wheel's ``Requires-Dist`` list into rows shaped like the matrix rows, so a drift checker can compare
them with the bundled files offline (on recorded answers) or live:

    python -m envdoctor.matrix.registry_tf_jax_paddle tensorflow   # prints derived rows as JSON

Fetching (``fetch_project``, ``fetch_requires_dist``) needs the network and is kept apart.

Derived fields:
- ``wheels``: platform key -> Python versions with a wheel, from wheel file names
  (``cp312`` -> "3.12", free-threaded ``cp313t`` -> "3.13t"); platform keys are
  linux_x86_64, linux_aarch64, windows_amd64, macos_arm64, macos_x86_64 (as envdoctor.plan.common).
- ``glibc``: Linux platform key -> the glibc its wheels' manylinux tags ask for.
- ``date`` (first upload), ``requires_python``; ``stubs``: platforms whose wheels are empty shells
  that depend on another distribution.
- from Requires-Dist: the pins of an extra (``and-cuda``, ``with-cuda``) and of plain dependencies.
"""

from __future__ import annotations

import json
import re
import sys
from typing import Any, Iterable, Optional, Sequence

from packaging.requirements import InvalidRequirement, Requirement
from packaging.version import InvalidVersion, Version

from envdoctor.matrix import PLATFORMS


# --- wheel file names -----------------------------------------------------------------------------

def platform_key(platform_tag: str) -> Optional[str]:
    """'manylinux_2_27_x86_64' -> 'linux_x86_64'; 'macosx_12_0_arm64' -> 'macos_arm64'."""
    for tag in platform_tag.split("."):
        if tag.startswith(("manylinux", "linux")):
            arch = "x86_64" if tag.endswith("x86_64") else "aarch64" if tag.endswith("aarch64") else None
            return f"linux_{arch}" if arch else None
        if tag.startswith("macosx"):
            if tag.endswith(("arm64", "universal2")):
                return "macos_arm64"
            if tag.endswith("x86_64"):
                return "macos_x86_64"
        if tag == "win_amd64":
            return "windows_amd64"
    return None


def python_of(python_tag: str, abi_tag: str) -> Optional[str]:
    """'cp312','cp312' -> '3.12'; 'cp313','cp313t' -> '3.13t'; 'cp37','cp37m' -> '3.7'."""
    match = re.fullmatch(r"cp(\d)(\d+)", python_tag)
    if not match:
        return None
    version = f"{match.group(1)}.{match.group(2)}"
    return version + "t" if abi_tag.endswith("t") and abi_tag.startswith("cp") else version


def wheel_platforms(files: Iterable[dict[str, Any]]) -> dict[str, list[str]]:
    """Platform key -> sorted Python versions that have a wheel among one release's files."""
    found: dict[str, set[str]] = {}
    for entry in files:
        name = entry.get("filename", "")
        if not name.endswith(".whl") or entry.get("yanked"):
            continue
        parts = name[:-4].split("-")
        if len(parts) < 5:
            continue
        python_tag, abi_tag, plat_tag = parts[-3], parts[-2], parts[-1]
        key = platform_key(plat_tag)
        for tag in python_tag.split("."):
            python = python_of(tag, abi_tag)
            if key and python:
                found.setdefault(key, set()).add(python)
    return {key: sorted(found[key], key=_python_sort_key) for key in PLATFORMS if key in found}


_MANYLINUX_LEGACY = {"manylinux1": "2.5", "manylinux2010": "2.12", "manylinux2014": "2.17"}


def glibc_of(platform_tag: str) -> Optional[str]:
    """The glibc a Linux wheel's platform tag asks for: 'manylinux_2_27_x86_64' -> '2.27',
    'manylinux2014_aarch64' -> '2.17'; of dotted alternatives the lowest (any one satisfies pip)."""
    found = []
    for tag in platform_tag.split("."):
        m = re.match(r"manylinux_(\d+)_(\d+)_", tag)
        if m:
            found.append((int(m.group(1)), int(m.group(2))))
        for legacy, glibc in _MANYLINUX_LEGACY.items():
            if tag.startswith(legacy + "_"):
                found.append(tuple(int(p) for p in glibc.split(".")))
    return ".".join(str(p) for p in min(found)) if found else None


def wheel_glibc(files: Iterable[dict[str, Any]]) -> dict[str, str]:
    """Linux platform key -> the highest glibc any of the release's wheels there asks for."""
    needed: dict[str, tuple[int, ...]] = {}
    for entry in files:
        name = entry.get("filename", "")
        if not name.endswith(".whl") or entry.get("yanked"):
            continue
        plat_tag = name[:-4].split("-")[-1]
        key, glibc = platform_key(plat_tag), glibc_of(plat_tag)
        if key and key.startswith("linux") and glibc:
            value = tuple(int(p) for p in glibc.split("."))
            needed[key] = max(needed.get(key, value), value)
    return {key: ".".join(str(p) for p in needed[key]) for key in PLATFORMS if key in needed}


def stub_platforms(files: Iterable[dict[str, Any]], max_bytes: int = 5_000_000) -> list[str]:
    """Platforms whose wheels are all tiny: stubs that only depend on another distribution
    (TensorFlow's tensorflow-intel / tensorflow-cpu-aws / tensorflow-macos arrangement)."""
    sizes: dict[str, list[int]] = {}
    for entry in files:
        name = entry.get("filename", "")
        if name.endswith(".whl") and not entry.get("yanked"):
            key = platform_key(name[:-4].split("-")[-1])
            if key:
                sizes.setdefault(key, []).append(int(entry.get("size") or 0))
    return [key for key in PLATFORMS if key in sizes and max(sizes[key]) < max_bytes]


def _python_sort_key(python: str) -> tuple[int, int, bool]:
    major, minor = python.rstrip("t").split(".")
    return int(major), int(minor), python.endswith("t")


# --- releases -------------------------------------------------------------------------------------

def release_rows(doc: dict[str, Any], since: str, include_pre: bool = False) -> list[dict[str, Any]]:
    """One row per release >= `since` that has files: version, date, requires_python, wheels."""
    rows = []
    floor = Version(since)
    for version, files in doc.get("releases", {}).items():
        try:
            parsed = Version(version)
        except InvalidVersion:
            continue
        if parsed < floor or not files or (parsed.is_prerelease and not include_pre):
            continue
        live = [f for f in files if not f.get("yanked")]
        if not live:
            continue
        requires = sorted({f.get("requires_python") or "" for f in live} - {""})
        rows.append({
            "version": version,
            "date": min(f.get("upload_time", "9999")[:10] for f in live),
            "requires_python": requires[0] if len(requires) == 1 else None,
            "wheels": wheel_platforms(live),
            "stubs": stub_platforms(live),
            "glibc": wheel_glibc(live),
        })
    rows.sort(key=lambda r: Version(r["version"]))
    return rows


def tensorflow_rows(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """Final TensorFlow releases from 2.10, as matrix rows (registry-derived fields only)."""
    return release_rows(doc, "2.10")


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


def paddle_rows(cpu_doc: dict[str, Any], gpu_doc: dict[str, Any]) -> list[dict[str, Any]]:
    """paddlepaddle releases from 2.6 with the registry's CPU wheels and (2.x) GPU wheels."""
    gpu = {r["version"]: r for r in release_rows(gpu_doc, "2.6")}
    rows = []
    for row in release_rows(cpu_doc, "2.6"):
        rows.append({**row, "registry_gpu_wheels": gpu.get(row["version"], {}).get("wheels", {})})
    return rows


# --- Requires-Dist ---------------------------------------------------------------------------------

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


# --- fetching (network; maintainers only) ---------------------------------------------------------

def fetch_project(name: str, timeout: float = 60) -> dict[str, Any]:
    import requests

    response = requests.get(f"https://pypi.org/pypi/{name}/json", timeout=timeout)
    response.raise_for_status()
    return response.json()


def fetch_requires_dist(spec: str, platforms: Sequence[str], python: str, timeout: float = 180) -> list[str]:
    """Requires-Dist of the wheel pip would pick for `spec` on platform tags and a Python version,
    read through the installer's metadata-only resolution (no wheel is unpacked)."""
    import tempfile

    from envdoctor.proc import run

    with tempfile.TemporaryDirectory() as tmp:
        report = f"{tmp}/report.json"
        result = run([sys.executable, "-m", "pip", "install", "--dry-run", "--no-deps", "--quiet",
                      "--target", f"{tmp}/t", "--report", report, "--only-binary=:all:",
                      "--ignore-requires-python", *_platform_options(platforms),
                      "--python-version", python, spec], timeout=timeout)
        if not result.ok:
            raise RuntimeError(f"{spec}: {result.describe_failure()} {result.stderr.strip()[-300:]}")
        with open(report, encoding="utf-8") as fh:
            install = json.load(fh)["install"]
    return list(install[0]["metadata"].get("requires_dist", [])) if install else []


def _platform_options(platforms: Sequence[str]) -> list[str]:
    return [option for tag in platforms for option in ("--platform", tag)]


def main(argv: list[str]) -> int:
    subject = argv[0] if argv else "tensorflow"
    if subject == "tensorflow":
        rows = tensorflow_rows(fetch_project("tensorflow"))
    elif subject == "jax":
        rows = jax_rows(fetch_project("jax"), fetch_project("jaxlib"),
                        {"cuda12": fetch_project("jax-cuda12-plugin"),
                         "cuda13": fetch_project("jax-cuda13-plugin")}, since=argv[1] if len(argv) > 1 else "0.4.35")
    elif subject == "paddle":
        rows = paddle_rows(fetch_project("paddlepaddle"), fetch_project("paddlepaddle-gpu"))
    else:
        print(f"unknown subject {subject!r} (tensorflow, jax, paddle)", file=sys.stderr)
        return 2
    print(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main(sys.argv[1:]))
