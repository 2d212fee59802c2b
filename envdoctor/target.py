"""Which Python environment envdoctor looks at (and `install --run` writes into).

One rule for every command, in the order uv follows:

1. `--python PATH` (source "--python");
2. an active `VIRTUAL_ENV`, then `CONDA_PREFIX`, whose interpreter exists (a variable naming a
   folder without one is *stale*: a warning that names it, and `install --run` refuses);
3. a `.venv` in the current directory or one of its parents (source ".venv");
4. the `python` (then `python3`) on PATH that is not envdoctor's own interpreter (source "PATH");
5. envdoctor's own interpreter (source "self") — what a pipx or `uv tool` install would otherwise
   inspect silently; the report says so, and `install --run` refuses it.

`choose()` returns a `Target`, a str (the interpreter path, as the probes expect) that also carries
where it came from, the stale variables it skipped, and whether it is envdoctor's own interpreter.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from typing import Mapping, Optional

SOURCES = ("--python", "VIRTUAL_ENV", "CONDA_PREFIX", ".venv", "PATH", "self")
INTERPRETERS = ("bin/python", "bin/python3", "python.exe", "Scripts/python.exe")
MAX_PARENTS = 64  # a .venv search never walks further up than this


class Target(str):
    """An interpreter path, plus why it was chosen."""

    source: str
    stale: tuple[str, ...]
    own: bool

    def __new__(cls, path: str, source: str, stale: tuple[str, ...] = (), own: Optional[bool] = None) -> "Target":
        value = super().__new__(cls, path)
        value.source = source
        value.stale = stale
        value.own = is_own_interpreter(path) if own is None else own
        return value

    def __getnewargs__(self) -> tuple:
        """copy, deepcopy and pickle rebuild a Target whole (dataclasses.asdict of Facts that hold one)."""
        return (str(self), self.source, self.stale, self.own)

    @property
    def why(self) -> str:
        """How a person reads the choice: 'the .venv of the current directory or a parent'."""
        return describe_source(self.source)


WHY = {"--python": "named by --python", "VIRTUAL_ENV": "the active virtual environment (VIRTUAL_ENV)",
       "CONDA_PREFIX": "the active conda environment (CONDA_PREFIX)",
       ".venv": "the .venv of the current directory or a parent", "PATH": "the python on PATH",
       "self": "no other environment found"}


def describe_source(source: str) -> str:
    return WHY.get(source, source)


def choose(python: Optional[str], environ: Mapping[str, str], cwd: Optional[Path] = None) -> Target:
    """The target interpreter by the rule above (an unrunnable --python is the caller's matter)."""
    if isinstance(python, Target):
        return python
    if python:
        return Target(python, "--python")
    stale: list[str] = []
    for var in ("VIRTUAL_ENV", "CONDA_PREFIX"):
        prefix = (environ.get(var) or "").strip()
        if not prefix:
            continue
        found = interpreter_in(Path(prefix))
        if found:
            return Target(str(found), var, tuple(stale))
        stale.append(f"{var}={prefix}")
    venv = dot_venv(cwd or _cwd())
    if venv:
        return Target(str(venv), ".venv", tuple(stale))
    on_path = python_on_path(environ)
    if on_path:
        return Target(on_path, "PATH", tuple(stale), own=False)
    return Target(sys.executable, "self", tuple(stale), own=True)


def stale_warning(variable: str) -> str:
    """'VIRTUAL_ENV=/gone names no Python interpreter (ignored)' for one stale variable."""
    return f"{variable} names no Python interpreter (the environment was removed or moved): ignored"


def interpreter_in(prefix: Path) -> Optional[Path]:
    for rel in INTERPRETERS:
        candidate = prefix / rel
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate
    return None


def dot_venv(start: Path) -> Optional[Path]:
    """The interpreter of a `.venv` in `start` or its nearest parent that has one."""
    here = start
    for _ in range(MAX_PARENTS):
        found = interpreter_in(here / ".venv")
        if found:
            return found
        if here.parent == here:
            return None
        here = here.parent
    return None


def python_on_path(environ: Mapping[str, str]) -> Optional[str]:
    """The first `python` / `python3` on PATH that is not envdoctor's own interpreter."""
    path = environ.get("PATH")
    if not path:
        return None
    for name in ("python", "python3"):
        for folder in path.split(os.pathsep):
            if not folder:
                continue
            found = shutil.which(name, path=folder)
            if found and not is_own_interpreter(found):
                return found
    return None


def is_own_interpreter(path: str) -> bool:
    """`path` runs envdoctor's own environment: the same file, or another name for it in the same
    folder (bin/python and bin/python3 of one venv). A venv's link to its base interpreter elsewhere
    is another environment (the folder decides, through pyvenv.cfg)."""
    target, this = os.path.abspath(path), os.path.abspath(sys.executable)
    if target == this:
        return True
    try:
        return (os.path.dirname(target) == os.path.dirname(this)
                and os.path.realpath(target) == os.path.realpath(this))
    except OSError:
        return False


def _cwd() -> Path:
    try:
        return Path.cwd()
    except OSError:  # the current directory was removed
        return Path("/")
