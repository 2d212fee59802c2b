"""The target Python environment: learned by running a stdlib-only script inside it."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path
from typing import Mapping, Optional

from envdoctor import proc
from envdoctor.errors import UsageError
from envdoctor.facts import FactsError, PythonEnv, _build

SCRIPT = Path(__file__).with_name("target_script.py")


def resolve_target(python: Optional[str], environ: Mapping[str, str]) -> str:
    """--python PATH, else the active venv, else the active conda env, else this interpreter.

    A --python that names no executable file is the user's input error (UsageError, exit 2), for
    every command alike; one that runs but is not a working Python is a probe finding."""
    if python:
        if shutil.which(python) is None:
            raise UsageError(f"cannot run target interpreter {python}: {_why_not_runnable(python)}")
        return python
    for var in ("VIRTUAL_ENV", "CONDA_PREFIX"):
        prefix = environ.get(var)
        if prefix:
            candidate = _interpreter_in(Path(prefix))
            if candidate:
                return str(candidate)
    return sys.executable


def _why_not_runnable(python: str) -> str:
    path = Path(python)
    if os.sep not in python and "/" not in python:
        return "not found on PATH"  # a bare name is looked up on PATH only, as a shell does
    if not path.exists():
        return "no such file"
    return "it is a directory" if path.is_dir() else "not an executable file"


def _interpreter_in(prefix: Path) -> Optional[Path]:
    for rel in ("bin/python", "bin/python3", "python.exe", "Scripts/python.exe"):
        if (prefix / rel).exists():
            return prefix / rel
    return None


def probe(ctx) -> PythonEnv:
    if _is_this_interpreter(ctx):
        # The same interpreter and search path: the script's answer is ours, without a process start.
        from envdoctor.probe import target_script

        described = target_script.describe()
        described["executable"] = os.path.abspath(ctx.python)  # as the child would say sys.executable
        return parse(json.dumps(described), ctx)
    result = proc.run([ctx.python, str(SCRIPT)], timeout=ctx.timeout * 2, env=dict(ctx.environ))
    if not result.ok:
        ctx.error("python", f"cannot run target interpreter {ctx.python}: {result.describe_failure()}")
        return PythonEnv(executable=ctx.python)
    return parse(result.stdout, ctx)


def _is_this_interpreter(ctx) -> bool:
    """The target is envdoctor's own interpreter: the same file, or another name for it in the same
    folder (an activated venv gives bin/python, envdoctor runs as bin/python3); the folder decides
    the environment (pyvenv.cfg), so a venv's link to its base interpreter elsewhere is not the same."""
    target, this = os.path.abspath(ctx.python), os.path.abspath(sys.executable)
    same = target == this or (os.path.dirname(target) == os.path.dirname(this)
                              and os.path.realpath(target) == os.path.realpath(this))
    return (same and ctx.environ.get("PYTHONPATH") == os.environ.get("PYTHONPATH")
            and not sys.flags.no_site and not sys.flags.isolated)


def parse(stdout: str, ctx) -> PythonEnv:
    if not stdout.strip():
        ctx.error("python", f"target interpreter {ctx.python} printed nothing: is it a Python interpreter?")
        return PythonEnv(executable=ctx.python)
    try:
        data = json.loads(stdout)
        if not isinstance(data, dict):
            raise FactsError(f"expected a JSON object, got {type(data).__name__}")
        ctx.target_machine = data.pop("machine", None)  # host.for_target: Rosetta is the target's matter
        return _build(PythonEnv, data, "python")
    except (json.JSONDecodeError, FactsError) as exc:
        ctx.error("python", f"target interpreter {ctx.python} printed unreadable output: {exc}")
        return PythonEnv(executable=ctx.python)
