"""Options and steps shared by several commands."""

from __future__ import annotations

from typing import Optional

import typer

from envdoctor.facts import Facts

FactsOption = typer.Option(None, "--facts", metavar="FILE", help="Use a recorded machine (JSON from `envdoctor facts`) instead of probing.")
PythonOption = typer.Option(None, "--python", metavar="PATH", help="The Python environment to inspect (default: active venv/conda env, else this interpreter).")


def obtain_facts(facts_file: Optional[str], python: Optional[str], deep: bool = False) -> tuple[Facts, dict[str, float]]:
    """Replay a recorded machine, or probe this one. A bad facts file raises FactsError (exit 2)."""
    if facts_file:
        from envdoctor.facts import load_facts

        return load_facts(facts_file), {}
    from envdoctor.probe import collect

    return collect(python=python, deep=deep)


def exit_code_for(findings, strict: bool = False) -> int:
    severities = {f.severity for f in findings}
    if "error" in severities or (strict and "warning" in severities):
        return 1
    return 0
