"""The target Python environment: learned by running a stdlib-only script inside it."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import sys
from pathlib import Path
from typing import Mapping, Optional

from envdoctor import proc, target
from envdoctor.errors import UsageError
from envdoctor.facts import FactsError, PythonEnv, _build

SCRIPT = Path(__file__).with_name("target_script.py")


def resolve_target(python: Optional[str], environ: Mapping[str, str]) -> str:
    """The target interpreter (envdoctor.target.choose: --python, an active venv/conda env, a .venv
    here or above, the python on PATH, else this interpreter), as a `target.Target` str.

    A --python that names no executable file is the user's input error (UsageError, exit 2), for
    every command alike; one that runs but is not a working Python is a probe finding."""
    if python and not isinstance(python, target.Target) and shutil.which(python) is None:
        raise UsageError(f"cannot run target interpreter {python}: {_why_not_runnable(python)}")
    return target.choose(python, environ)


def _why_not_runnable(python: str) -> str:
    path = Path(python)
    if os.sep not in python and "/" not in python:
        return "not found on PATH"  # a bare name is looked up on PATH only, as a shell does
    if not path.exists():
        return "no such file"
    return "it is a directory" if path.is_dir() else "not an executable file"


def probe(ctx) -> PythonEnv:
    chosen = ctx.python if isinstance(ctx.python, target.Target) else None
    for variable in (chosen.stale if chosen else ()):
        ctx.error("python", target.stale_warning(variable))
    env = _describe(ctx)
    return dataclasses.replace(env, target_source=chosen.source) if chosen else env


def _describe(ctx) -> PythonEnv:
    if _is_this_interpreter(ctx):
        # The same interpreter and search path: the script's answer is ours, without a process start.
        from envdoctor.probe import target_script

        described = target_script.describe()
        described["executable"] = os.path.abspath(ctx.python)  # as the child would say sys.executable
        return parse(json.dumps(described), ctx)
    result = proc.run([ctx.python, str(SCRIPT)], timeout=ctx.timeout * 2, env=dict(ctx.environ))
    if not result.ok:
        exited = result.error is None and (result.returncode or 0) > 0  # not killed, timed out or capped
        why = "not a Python interpreter" if exited and not _is_python(ctx) else result.describe_failure()
        ctx.error("python", f"cannot run target interpreter {ctx.python}: {why}")
        return PythonEnv(executable=ctx.python)
    return parse(result.stdout, ctx)


def _is_python(ctx) -> bool:
    """After the target script failed: does the target run Python code at all? (/bin/sh does not; a
    Python too old for the script, or a broken one that still starts, does.) Every Python reads -c."""
    marker = "envdoctor-is-python"
    check = proc.run([ctx.python, "-c", f"import sys; sys.stdout.write({marker!r})"],
                     timeout=ctx.timeout, env=dict(ctx.environ))
    return check.ok and check.stdout.strip() == marker


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
