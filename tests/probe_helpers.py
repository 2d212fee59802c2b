"""Helpers for probe tests: a ProbeContext over a temporary machine tree, fixture readers."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from envdoctor.probe import ProbeContext

ROOT = Path(__file__).resolve().parent.parent
RAW = ROOT / "tests" / "fixtures" / "raw"
FAKEBIN = ROOT / "tests" / "fakebin"
SYSTEM_PATH = "/usr/bin:/bin"


def raw(relative: str) -> str:
    return (RAW / relative).read_text(encoding="utf-8")


def raw_bytes(relative: str) -> bytes:
    return (RAW / relative).read_bytes()


def context(root: Path, path: str = SYSTEM_PATH, timeout: float = 5.0, **environ: str) -> ProbeContext:
    """A context that reads files under `root` and finds tools on `path` only."""
    env = {"PATH": path, "ENVDOCTOR_NVML": "0", **environ}
    return ProbeContext(python=sys.executable, root=root, environ=env, timeout=timeout)


def put(root: Path, machine_path: str, content: str | bytes = "", mode: int | None = None) -> Path:
    """Write a file at a machine path inside the tree."""
    target = root / machine_path.lstrip("/")
    target.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        target.write_bytes(content)
    else:
        target.write_text(content, encoding="utf-8")
    if mode is not None:
        os.chmod(target, mode)
    return target


def link(root: Path, machine_path: str, target: str) -> None:
    """A symbolic link inside the tree (absolute targets are machine paths, as on the real box)."""
    where = root / machine_path.lstrip("/")
    where.parent.mkdir(parents=True, exist_ok=True)
    os.symlink(target, where)


def script(root: Path, machine_path: str, body: str) -> Path:
    return put(root, machine_path, "#!/bin/sh\n" + body + "\n", mode=0o755)
