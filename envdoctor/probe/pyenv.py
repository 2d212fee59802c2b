"""The target Python environment: learned by running a stdlib-only script inside it."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Mapping, Optional

from envdoctor import proc
from envdoctor.facts import FactsError, PythonEnv, _build

SCRIPT = Path(__file__).with_name("target_script.py")


def resolve_target(python: Optional[str], environ: Mapping[str, str]) -> str:
    """--python PATH, else the active venv, else the active conda env, else this interpreter."""
    if python:
        return python
    for var in ("VIRTUAL_ENV", "CONDA_PREFIX"):
        prefix = environ.get(var)
        if prefix:
            candidate = _interpreter_in(Path(prefix))
            if candidate:
                return str(candidate)
    return sys.executable


def _interpreter_in(prefix: Path) -> Optional[Path]:
    for rel in ("bin/python", "bin/python3", "python.exe", "Scripts/python.exe"):
        if (prefix / rel).exists():
            return prefix / rel
    return None


def probe(ctx) -> PythonEnv:
    if _is_this_interpreter(ctx):
        # The same interpreter and search path: the script's answer is ours, without a process start.
        from envdoctor.probe import target_script

        return parse(json.dumps(target_script.describe()), ctx)
    result = proc.run([ctx.python, str(SCRIPT)], timeout=ctx.timeout * 2, env=dict(ctx.environ))
    if not result.ok:
        ctx.error("python", f"cannot run target interpreter {ctx.python}: {result.describe_failure()}")
        return PythonEnv(executable=ctx.python)
    return parse(result.stdout, ctx)


def _is_this_interpreter(ctx) -> bool:
    return (os.path.abspath(ctx.python) == os.path.abspath(sys.executable)
            and ctx.environ.get("PYTHONPATH") == os.environ.get("PYTHONPATH")
            and not sys.flags.no_site and not sys.flags.isolated)


def parse(stdout: str, ctx) -> PythonEnv:
    try:
        data = json.loads(stdout)
        data.pop("machine", None)
        return _build(PythonEnv, data, "python")
    except (json.JSONDecodeError, FactsError) as exc:
        ctx.error("python", f"target interpreter printed unreadable output: {exc}")
        return PythonEnv(executable=ctx.python)
