"""Options and steps shared by several commands."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Optional

import typer

from envdoctor.facts import Facts

MAX_PATH_CHARS = 4096  # longer than any real path (PATH_MAX): an argument this long is a mistake


def not_empty(value: Optional[str]) -> Optional[str]:
    """A path option given as '' (an unset shell variable) is a usage error, not "use the default"."""
    if value is None:
        return None
    if not value.strip():
        raise typer.BadParameter("needs a path, not an empty string")
    if len(value) > MAX_PATH_CHARS:
        raise typer.BadParameter(f"is {len(value)} characters long; no path is longer than {MAX_PATH_CHARS}")
    return value


FactsOption = typer.Option(None, "--facts", metavar="FILE", callback=not_empty,
                           help="Use a recorded machine (JSON from `envdoctor facts`) instead of probing.")
PythonOption = typer.Option(None, "--python", metavar="PATH", callback=not_empty,
                            help="The Python environment to inspect. Default, the first that exists: an active "
                                 "VIRTUAL_ENV, then CONDA_PREFIX; a .venv in this folder or a parent; the python on PATH.")


def obtain_facts(facts_file: Optional[str], python: Optional[str], deep: bool = False,
                 meanwhile: Optional[Callable[[], None]] = None, completed: bool = True) -> tuple[Facts, dict[str, float]]:
    """Replay a recorded machine, or probe this one, then complete it from the matrices (unless
    `completed` is False: `envdoctor facts` prints what was observed). A bad facts file raises
    FactsError (exit 2). `meanwhile` (e.g. importing the diagnosis) runs while the probes wait."""
    facts, timings = _read_or_probe(facts_file, python, deep, meanwhile)
    if not completed:
        return facts, timings
    from envdoctor.complete import complete

    return complete(facts), timings


def _read_or_probe(facts_file: Optional[str], python: Optional[str], deep: bool,
                   meanwhile: Optional[Callable[[], None]]) -> tuple[Facts, dict[str, float]]:
    if facts_file and (python or deep):
        from envdoctor.errors import UsageError

        if python:
            raise UsageError("--facts and --python name two different targets; give one of them")
        raise UsageError("--deep imports the frameworks of this machine, --facts replays a recorded one; give one of them")
    if facts_file:
        from envdoctor.facts import load_facts

        return load_facts(facts_file), {}
    from envdoctor.probe import collect
    from envdoctor.render import progress

    with progress("importing each framework to read its build..." if deep else "probing this machine..."):
        if meanwhile is None:
            return collect(python=python, deep=deep)
        pool = ThreadPoolExecutor(max_workers=1)
        try:
            probing = pool.submit(collect, python=python, deep=deep)
            meanwhile()
            return probing.result()
        finally:  # Ctrl-C while the probes run: do not wait for them (main exits 130 at once)
            pool.shutdown(wait=False, cancel_futures=True)


def exit_code_for(findings, strict: bool = False, probe_failed: bool = False) -> int:
    """1 on errors; with --strict also on warnings and on a probe that failed (a hung nvidia-smi)."""
    severities = {f.severity for f in findings}
    if "error" in severities or (strict and ("warning" in severities or probe_failed)):
        return 1
    return 0
