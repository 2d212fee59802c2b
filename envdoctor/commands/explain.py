"""`envdoctor explain [TEXT | -]`: match an error message or log against known causes, then check
this machine (or --facts FILE) for the one that applies and print its fix.

Exit codes: 0 no known problem in the text; 1 a known problem was recognised (like `check`, so a CI
step can fail on it); 2 usage or input error (no text, unreadable file, bad facts file).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

import typer

from envdoctor.commands.common import FactsOption, PythonOption, obtain_facts
from envdoctor.errors import UsageError

MAX_BYTES = 5_000_000


def register(app: typer.Typer) -> None:
    app.command()(explain)


def explain(
    text: Optional[str] = typer.Argument(None, metavar="[TEXT | -]", help="The error message; '-' reads it from standard input."),
    file: Optional[str] = typer.Option(None, "--file", "-f", metavar="LOG", help="Read the error log from a file."),
    facts_file: Optional[str] = FactsOption,
    python: Optional[str] = PythonOption,
    json_out: bool = typer.Option(False, "--json", help='Print {"matches": [...], "findings": [...]} as JSON.'),
    verbose: bool = typer.Option(False, "-v", "--verbose", help="Show the evidence and the source of each signature."),
) -> None:
    """Explain an error message or log: the known cause, checked against this machine, with its fix.

    Exit 0 when the text holds no known problem, 1 when one was recognised, 2 on a usage error.
    """
    from envdoctor.explain import explain as run_explain

    if facts_file and python:
        raise UsageError("--facts and --python name two different targets; give one of them")
    log = read_input(text, file)
    facts, _ = obtain_facts(facts_file, python)
    result = run_explain(log, facts)
    if json_out:
        from envdoctor.render import print_json

        print_json(result.to_dict())
    else:
        from envdoctor.render import console
        from envdoctor.render.explain import print_explanation

        source = f"the recorded machine {Path(facts_file).name}" if facts_file else "this machine"
        print_explanation(console(), result, source, verbose)
    raise typer.Exit(1 if result.matches else 0)


def read_input(text: Optional[str], file: Optional[str]) -> str:
    if file and text:
        raise UsageError("give the error either as TEXT (or '-') or with --file LOG, not both")
    if file:
        try:
            with open(file, "rb") as fh:
                data = fh.read(MAX_BYTES)
        except OSError as exc:
            raise UsageError(f"cannot read log file {file}: {exc.strerror or exc}") from None
        return data.decode("utf-8", errors="replace")
    if text == "-":
        data = sys.stdin.buffer.read(MAX_BYTES)
        return data.decode("utf-8", errors="replace")
    if text is None or not text.strip():
        raise UsageError("no error text: pass it as an argument, '-' to read standard input, or --file LOG")
    return text
