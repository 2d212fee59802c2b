"""Paths on the probed machine, which may be a recorded tree under ctx.root (tests).

A *machine path* is what the probed machine calls a file ("/usr/local/cuda"); ctx.path() turns it
into the host path to read. Symbolic links are followed inside the tree, so an absolute link target
("/usr/local/cuda -> /usr/local/cuda-12.6") stays inside ctx.root.
"""

from __future__ import annotations

import os
import posixpath
from pathlib import Path

MAX_HOPS = 40


def machine_path(ctx, host: str | Path) -> str:
    """Host path → the probed machine's name for it."""
    if ctx.root == Path("/") or os.name == "nt":
        return str(host)
    try:
        return "/" + Path(host).relative_to(ctx.root).as_posix()
    except ValueError:
        return str(host)


def resolve(ctx, path: str) -> str:
    """Follow symbolic links in a machine path, within ctx.root; never raises."""
    if os.name == "nt":
        return path
    parts = [p for p in path.split("/") if p]
    current = "/"
    hops = 0
    while parts:
        part = parts.pop(0)
        if part == ".":
            continue
        if part == "..":
            current = posixpath.dirname(current)
            continue
        candidate = posixpath.join(current, part)
        host = ctx.path(candidate)
        if hops < MAX_HOPS and host.is_symlink():
            hops += 1
            try:
                target = os.readlink(host)
            except OSError:
                current = candidate
                continue
            if target.startswith("/"):
                current = "/"
            parts = [p for p in target.split("/") if p] + parts
            continue
        current = candidate
    return current
