#!/usr/bin/env python3
"""Read what the package registry says about torch releases (maintainers' tool; needs network).

    python scripts/pytorch_registry.py                  # Python versions per platform, glibc, macOS
    python scripts/pytorch_registry.py --metadata 4     # + default build of the newest 4 releases,
                                                        #   read from each wheel's METADATA by HTTP
                                                        #   range requests (a few hundred KB each)
    python scripts/pytorch_registry.py --json

The parsing is in envdoctor/matrix/pytorch_registry.py (offline, tested); this file only fetches.
"""

from __future__ import annotations

import argparse
import io
import json
import sys
import zipfile
from pathlib import Path

import requests

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from envdoctor.matrix.pytorch_registry import (  # noqa: E402
    default_build, metadata_requires_dist, registry_rows,
)

JSON_API = "https://pypi.org/pypi/{name}/json"
SIMPLE_API = "https://pypi.org/simple/{name}/"
TIMEOUT = 60


class RangeFile(io.RawIOBase):
    """A read-only, seekable view of a remote file through HTTP range requests."""

    def __init__(self, url: str, session: requests.Session):
        self.url, self.session, self.pos = url, session, 0
        head = session.head(url, timeout=TIMEOUT, allow_redirects=True)
        head.raise_for_status()
        self.size = int(head.headers["Content-Length"])

    def seekable(self) -> bool:
        return True

    def readable(self) -> bool:
        return True

    def tell(self) -> int:
        return self.pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self.pos, io.SEEK_END: self.size}[whence]
        self.pos = max(0, base + offset)
        return self.pos

    def read(self, n: int = -1) -> bytes:
        end = self.size if n is None or n < 0 else min(self.size, self.pos + n)
        if end <= self.pos:
            return b""
        reply = self.session.get(self.url, headers={"Range": f"bytes={self.pos}-{end - 1}"}, timeout=TIMEOUT)
        reply.raise_for_status()
        self.pos += len(reply.content)
        return reply.content

    def readinto(self, buffer) -> int:
        data = self.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)


def wheel_metadata(url: str, session: requests.Session) -> str:
    with zipfile.ZipFile(io.BufferedReader(RangeFile(url, session), buffer_size=1 << 20)) as wheel:
        name = next(n for n in wheel.namelist() if n.endswith(".dist-info/METADATA"))
        return wheel.read(name).decode("utf-8")


def wheel_urls(name: str, session: requests.Session) -> dict[str, str]:
    reply = session.get(SIMPLE_API.format(name=name), headers={"Accept": "application/vnd.pypi.simple.v1+json"},
                        timeout=TIMEOUT)
    reply.raise_for_status()
    return {f["filename"]: f["url"] for f in reply.json()["files"]}


def default_builds(name: str, versions: list[str], session: requests.Session, platform_tag: str = "x86_64") -> dict:
    urls = wheel_urls(name, session)
    found = {}
    for version in versions:
        for filename, url in sorted(urls.items()):
            if (filename.startswith(f"{name}-{version}-") and "-cp311-cp311-" in filename
                    and filename.endswith(f"_{platform_tag}.whl") and "linux" in filename):
                requires = metadata_requires_dist(wheel_metadata(url, session))
                platform = f"linux_{platform_tag}"
                found[version] = {"build": default_build(requires, platform), "wheel": filename,
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
    session = requests.Session()
    reply = session.get(JSON_API.format(name=args.name), timeout=TIMEOUT)
    reply.raise_for_status()
    rows = registry_rows(reply.json())
    newest = (list(rows)[-args.metadata:] if args.metadata else []) + args.versions
    builds = default_builds(args.name, newest, session, "aarch64" if args.aarch64 else "x86_64") if newest else {}
    if args.json:
        print(json.dumps({v: {**vars(r), "default": builds.get(v)} for v, r in rows.items()}, indent=1))
        return 0
    for version, row in rows.items():
        line = f"{version:8} req {row.requires_python or '-':8} glibc {row.glibc or '-':5} macos {row.macos or '-':5} "
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
    except (requests.RequestException, ValueError, KeyError) as exc:  # network, HTTP status, unreadable answer
        sys.stderr.write(f"pytorch_registry: error: {type(exc).__name__}: {exc}\n")
        sys.exit(2)
