"""The network side of the maintainers' tools: the registry's JSON API, wheel METADATA by HTTP range
requests, and whole wheels streamed to disk with a size bound. Standard library only; nothing in
envdoctor's user commands imports this package.

    project("torch")                              the JSON API document
    wheel_metadata(url)                           METADATA text, reading only the zip's tail and one member
    download(url, path, max_bytes=3 << 30)        a wheel on disk (streamed, bounded)
"""

from __future__ import annotations

import io
import json
import os
import shutil
import urllib.request
import zipfile
from pathlib import Path
from typing import Any

def _json_api() -> str:
    """The registry's JSON API URL pattern: ENVDOCTOR_REGISTRY_URL (a mirror's ".../pypi"), or the
    default index pip itself is built with."""
    base = os.environ.get("ENVDOCTOR_REGISTRY_URL")
    if not base:
        from pip._internal.models.index import PyPI  # the installer's own default index

        base = PyPI.pypi_url
    return base.rstrip("/") + "/{name}/json"


JSON_API = _json_api()
TIMEOUT = 60
USER_AGENT = "envdoctor-maintainers"


def _open(url: str, headers: dict[str, str] | None = None, timeout: float = TIMEOUT):
    request = urllib.request.Request(url, headers={"User-Agent": USER_AGENT, **(headers or {})})
    return urllib.request.urlopen(request, timeout=timeout)  # noqa: S310 - https URLs from the registry


def project(name: str, timeout: float = TIMEOUT) -> dict[str, Any]:
    with _open(JSON_API.format(name=name), timeout=timeout) as reply:
        return json.loads(reply.read(200 << 20))


def file_url(name: str, url: str) -> str:
    """A file URL from a project answer, absolute (a mirror may answer relative URLs)."""
    from urllib.parse import urljoin

    return urljoin(JSON_API.format(name=name), url)


class RangeFile(io.RawIOBase):
    """A read-only, seekable view of a remote file through HTTP range requests."""

    def __init__(self, url: str, timeout: float = TIMEOUT):
        self.url, self.timeout, self.pos = url, timeout, 0
        request = urllib.request.Request(url, method="HEAD", headers={"User-Agent": USER_AGENT})
        with urllib.request.urlopen(request, timeout=timeout) as reply:  # noqa: S310
            self.size = int(reply.headers["Content-Length"])

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
        with _open(self.url, {"Range": f"bytes={self.pos}-{end - 1}"}, self.timeout) as reply:
            data = reply.read(end - self.pos)
        self.pos += len(data)
        return data

    def readinto(self, buffer) -> int:
        data = self.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)


def wheel_metadata(url: str) -> str:
    with zipfile.ZipFile(io.BufferedReader(RangeFile(url), buffer_size=1 << 20)) as wheel:
        name = next(n for n in wheel.namelist() if n.endswith(".dist-info/METADATA"))
        return wheel.read(name).decode("utf-8")


def metadata_requires_dist(metadata_text: str) -> list[str]:
    """The Requires-Dist lines of a wheel METADATA file."""
    return [line.split(":", 1)[1].strip() for line in metadata_text.splitlines()
            if line.lower().startswith("requires-dist:")]


class TooLarge(RuntimeError):
    pass


def download(url: str, path: Path, max_bytes: int = 3 << 30, timeout: float = TIMEOUT) -> int:
    """Stream `url` to `path`; TooLarge (and no file) past `max_bytes`. Returns the size."""
    written = 0
    with _open(url, timeout=timeout) as reply, open(path, "wb") as out:
        declared = int(reply.headers.get("Content-Length") or 0)
        if declared > max_bytes:
            raise TooLarge(f"{url}: {declared} bytes > limit {max_bytes}")
        while True:
            chunk = reply.read(1 << 20)
            if not chunk:
                break
            written += len(chunk)
            if written > max_bytes:
                out.close()
                path.unlink(missing_ok=True)
                raise TooLarge(f"{url}: more than {max_bytes} bytes")
            out.write(chunk)
    return written


def extract_member(wheel: zipfile.ZipFile, member: str, path: Path) -> None:
    with wheel.open(member) as src, open(path, "wb") as out:
        shutil.copyfileobj(src, out, 1 << 20)


# --- the live registry, recorded for offline tests -------------------------------------------------

# How far back each project's recorded answer reaches (the matrices start there).
SINCE = {"torch": "2.0.0", "torchvision": "0.15.0", "torchaudio": "2.0.0", "tensorflow": "2.10.0",
         "tensorflow-intel": "2.10.0", "tensorflow-cpu-aws": "2.10.0", "tensorflow-macos": "2.10.0",
         "tensorflow-metal": "0.5.0", "jax": "0.4.36", "jaxlib": "0.4.36", "jax-cuda12-plugin": "0.4.36",
         "jax-cuda13-plugin": "0.4.36", "paddlepaddle": "2.6.0", "paddlepaddle-gpu": "2.6.0"}
# Which wheel stands for a platform when reading METADATA (any Python: the pins do not differ).
PLATFORM_SUFFIX = {"linux_x86_64": "_x86_64.whl", "linux_aarch64": "_aarch64.whl", "windows_amd64": "win_amd64.whl"}


class LiveRegistry:
    """The registry over the network; remembers what it answered so it can be recorded."""

    def __init__(self):
        self.projects: dict[str, dict] = {}
        self.requires: dict[str, Any] = {}
        self.missing: list[str] = []

    def project(self, name: str) -> dict[str, Any]:
        if name not in self.projects:
            self.projects[name] = project(name)
        return self.projects[name]

    def requires_dist(self, name: str, version: str, platform: str):
        from envdoctor.maintainers.compare import requires_key

        key = requires_key(name, version, platform)
        if key not in self.requires:
            self.requires[key] = self._read_requires(name, version, platform)
        return self.requires[key]

    def _read_requires(self, name: str, version: str, platform: str):
        files = [f for f in self.project(name)["releases"].get(version, []) if not f.get("yanked")]
        wheels = sorted((f for f in files if f["filename"].endswith(PLATFORM_SUFFIX[platform])
                         and ("linux" in f["filename"]) == platform.startswith("linux")),
                        key=lambda f: f["filename"], reverse=True)
        wheels = wheels or [f for f in files if f["filename"].endswith("-none-any.whl")]  # a pure wheel
        if not wheels:
            return None
        return metadata_requires_dist(wheel_metadata(file_url(name, wheels[0]["url"])))

    def record(self, folder: Path) -> None:
        from envdoctor.maintainers.compare import trim_project

        folder.mkdir(parents=True, exist_ok=True)
        for name, doc in self.projects.items():
            (folder / f"{name}.json").write_text(one_release_per_line(trim_project(doc, SINCE.get(name, "0"))))
        found = {k: v for k, v in sorted(self.requires.items()) if v is not None}
        (folder / "requires_dist.json").write_text(json.dumps(found, indent=1) + "\n")
        (folder / "README.md").write_text(recorded_note(sorted(self.projects), list(found)))


def one_release_per_line(doc: dict) -> str:
    """JSON a diff can read: one line per release."""
    lines = [f"{json.dumps(v)}: {json.dumps(files, separators=(',', ':'))}" for v, files in doc["releases"].items()]
    return '{"info": ' + json.dumps(doc["info"]) + ',\n"releases": {\n' + ",\n".join(lines) + "\n}}\n"


def recorded_note(projects: list[str], metadata: list[str]) -> str:
    import datetime as dt

    return (
        "# Recorded registry answers\n\n"
        f"Recorded {dt.date.today().isoformat()} by `python scripts/check_registry.py --record tests/fixtures/registry`.\n"
        "Replay offline: `python scripts/check_registry.py --recorded tests/fixtures/registry`.\n\n"
        "`<project>.json`: the registry's JSON API answer for the project, trimmed to releases the matrices\n"
        "cover and, per file, its name, Requires-Python and yanked flag (and size, for tensorflow's stub\n"
        "wheels); the earliest file of each release keeps its upload date. Projects:\n\n"
        + "".join(f"- {n}\n" for n in projects)
        + "\n`requires_dist.json`: Requires-Dist of one wheel per release and platform, read from the\n"
        "wheel's METADATA with HTTP range requests (the file URL is in the project answer):\n\n"
        + "".join(f"- {k}\n" for k in metadata)
    )
