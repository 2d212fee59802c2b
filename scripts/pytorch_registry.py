#!/usr/bin/env python3
"""Read what the package registry says about torch releases (maintainers' tool; needs network).

    python scripts/pytorch_registry.py                  # Python versions, glibc and macOS floors per platform
    python scripts/pytorch_registry.py --metadata 4     # + default build of the newest 4 releases,
                                                        #   read from each wheel's METADATA by HTTP
                                                        #   range requests (a few hundred KB each)
    python scripts/pytorch_registry.py --json

A thin entry point: envdoctor/maintainers/derive.py derives (offline, tested), fetch.py fetches.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from envdoctor.maintainers import derive, fetch  # noqa: E402


def default_builds(name: str, doc: dict, versions: list[str], arch: str) -> dict:
    found = {}
    for version in versions:
        for f in sorted(doc["releases"].get(version, []), key=lambda f: f["filename"]):
            if "-cp312-cp312-" in f["filename"] and f["filename"].endswith(f"_{arch}.whl") and "linux" in f["filename"]:
                requires = derive.metadata_requires_dist(fetch.wheel_metadata(fetch.file_url(name, f["url"])))
                found[version] = {"build": derive.default_build(requires, f"linux_{arch}"), "wheel": f["filename"],
                                  "pins": [r for r in requires if "cuda" in r.lower()][:4]}
                break
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--name", default="torch")
    parser.add_argument("--metadata", type=int, default=0, help="read METADATA of the newest N releases")
    parser.add_argument("--versions", nargs="*", default=[], help="read METADATA of these releases")
    parser.add_argument("--aarch64", action="store_true", help="read the aarch64 wheels' METADATA instead")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    doc = fetch.project(args.name)
    rows = derive.registry_rows(doc)
    newest = (list(rows)[-args.metadata:] if args.metadata > 0 else []) + args.versions
    builds = default_builds(args.name, doc, newest, "aarch64" if args.aarch64 else "x86_64") if newest else {}
    if args.json:
        print(json.dumps({v: {**vars(r), "default": builds.get(v)} for v, r in rows.items()}, indent=1))
        return 0
    for version, row in rows.items():
        floors = " ".join(f"{p}≥{v}" for p, v in {**row.glibc, **row.macos}.items())
        line = f"{version:8} req {row.requires_python or '-':8} {floors} "
        line += " ".join(f"{p}={','.join(v)}" for p, v in row.python.items())
        if row.freethreaded:
            line += " t:" + " ".join(f"{p}={','.join(v)}" for p, v in row.freethreaded.items())
        print(line)
        if version in builds:
            print(f"         default build {builds[version]['build']} ({builds[version]['wheel']}): "
                  f"{'; '.join(builds[version]['pins'])}")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except (OSError, ValueError, KeyError) as exc:  # network, HTTP status, unreadable answer
        sys.stderr.write(f"pytorch_registry: error: {type(exc).__name__}: {exc}\n")
        sys.exit(2)
