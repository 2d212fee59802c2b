#!/usr/bin/env python3
"""Re-check the registry-derived rows of matrices/*.toml against the live package registry.

    python scripts/check_registry.py                       # every subject; exit 1 on drift
    python scripts/check_registry.py pytorch --metadata 5  # + default build of the newest 5 releases
    python scripts/check_registry.py --record tests/fixtures/registry   # also save the answers seen
    python scripts/check_registry.py --recorded tests/fixtures/registry # offline, on saved answers

The comparison is envdoctor/maintainers/registry.py (offline, tested); this file only fetches:
each project's JSON API document, and the Requires-Dist of one wheel per (release, platform), read
from the wheel's METADATA with HTTP range requests (scripts/pytorch_registry.py), never the whole
wheel.
"""

from __future__ import annotations

import datetime as dt
import json
import sys
from pathlib import Path
from typing import Any, Optional

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from envdoctor.maintainers.registry import (  # noqa: E402
    RecordedRegistry, check_all, note_missing, parser, report, requires_key, subjects_of, trim_project,
)

JSON_API = "https://pypi.org/pypi/{name}/json"
TIMEOUT = 60
# How far back each project's recorded answer reaches (the matrices start there).
SINCE = {"torch": "2.0.0", "torchvision": "0.15.0", "torchaudio": "2.0.0", "tensorflow": "2.10.0", "jax": "0.4.36", "jaxlib": "0.4.36",
         "jax-cuda12-plugin": "0.4.36", "jax-cuda13-plugin": "0.4.36", "paddlepaddle": "2.6.0",
         "paddlepaddle-gpu": "2.6.0"}
# Which wheel stands for a platform when reading METADATA (any Python: the pins do not differ).
PLATFORM_SUFFIX = {"linux_x86_64": "_x86_64.whl", "linux_aarch64": "_aarch64.whl", "windows_amd64": "win_amd64.whl"}


class LiveRegistry:
    """The registry over the network; remembers what it answered so it can be recorded."""

    def __init__(self):
        import requests

        self.session = requests.Session()
        self.projects: dict[str, dict] = {}
        self.requires: dict[str, Optional[list[str]]] = {}

    def project(self, name: str) -> dict[str, Any]:
        if name not in self.projects:
            reply = self.session.get(JSON_API.format(name=name), timeout=TIMEOUT)
            reply.raise_for_status()
            self.projects[name] = reply.json()
        return self.projects[name]

    def requires_dist(self, name: str, version: str, platform: str) -> Optional[list[str]]:
        key = requires_key(name, version, platform)
        if key not in self.requires:
            self.requires[key] = self._read_requires(name, version, platform)
        return self.requires[key]

    def _read_requires(self, name: str, version: str, platform: str) -> Optional[list[str]]:
        from pytorch_registry import metadata_requires_dist, wheel_metadata

        files = [f for f in self.project(name)["releases"].get(version, []) if not f.get("yanked")]
        wheels = sorted((f for f in files if f["filename"].endswith(PLATFORM_SUFFIX[platform])
                         and ("linux" in f["filename"]) == platform.startswith("linux")),
                        key=lambda f: f["filename"], reverse=True)
        wheels = wheels or [f for f in files if f["filename"].endswith("-none-any.whl")]  # a pure wheel
        if not wheels:
            return None
        from urllib.parse import urljoin

        url = urljoin(JSON_API.format(name=name), wheels[0]["url"])  # a mirror may answer relative URLs
        return metadata_requires_dist(wheel_metadata(url, self.session))

    def record(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        for name, doc in self.projects.items():
            (folder / f"{name}.json").write_text(one_release_per_line(trim_project(doc, SINCE.get(name, "0"))))
        found = {k: v for k, v in sorted(self.requires.items()) if v is not None}
        (folder / "requires_dist.json").write_text(json.dumps(found, indent=1) + "\n")
        (folder / "README.md").write_text(recorded_note(sorted(self.projects), list(found)))


def one_release_per_line(doc: dict) -> str:
    """JSON a diff can read: one line per release."""
    lines = [f"{json.dumps(v)}: {json.dumps(files, separators=(',', ':'))}" for v, files in doc["releases"].items()]
    return ('{"info": ' + json.dumps(doc["info"]) + ',\n"releases": {\n' + ",\n".join(lines) + "\n}}\n")


def recorded_note(projects: list[str], metadata: list[str]) -> str:
    return (
        "# Recorded registry answers\n\n"
        f"Recorded {dt.date.today().isoformat()} by `python scripts/check_registry.py --record tests/fixtures/registry`.\n"
        "Replay offline: `python scripts/check_registry.py --recorded tests/fixtures/registry`.\n\n"
        "`<project>.json`: the JSON API answer, trimmed to releases the matrices cover and, per file, its\n"
        "name, Requires-Python and yanked flag (and size, for tensorflow's stub wheels); the earliest\n"
        "file of each release keeps its upload date. From:\n\n"
        + "".join(f"- {JSON_API.format(name=n)}\n" for n in projects)
        + "\n`requires_dist.json`: Requires-Dist of one wheel per release and platform, read from the\n"
        "wheel's METADATA with HTTP range requests (the file URL is in the project answer):\n\n"
        + "".join(f"- {k}\n" for k in metadata)
    )


def main() -> int:
    p = parser(__doc__)
    p.add_argument("--recorded", metavar="DIR", help="use answers saved in DIR instead of the network")
    p.add_argument("--record", metavar="DIR", help="save the answers seen (trimmed) into DIR")
    args = p.parse_args()
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


if __name__ == "__main__":
    sys.exit(main())
