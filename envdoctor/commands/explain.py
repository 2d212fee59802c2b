"""`envdoctor explain [TEXT | -]`: match an error message or log against known causes, then check
this machine (or --facts FILE) for the one that applies and print its fix.

Exit codes: 0 no known problem in the text; 1 a known problem was recognised (like `check`, so a CI
step can fail on it); 2 usage or input error (no text, unreadable file, bad facts file).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import BinaryIO, Optional

import typer

from envdoctor.commands.common import FactsOption, PythonOption, obtain_facts
from envdoctor.errors import UsageError

# A longer log is read as its first and last bytes: start-up warnings (TensorFlow's "Could not load
# dynamic library") come first, the crash that ended the run comes last.
HEAD_BYTES = 1_000_000
TAIL_BYTES = 4_000_000


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
                return read_log(fh)
        except OSError as exc:
            raise UsageError(f"cannot read log file {file}: {exc.strerror or exc}") from None
    if text == "-":
        return read_log(sys.stdin.buffer)
    if text is None or not text.strip():
        raise UsageError("no error text: pass it as an argument, '-' to read standard input, or --file LOG")
    return text


def read_log(stream: BinaryIO) -> str:
    """The log as text: all of it, or its first HEAD_BYTES and last TAIL_BYTES when it is longer."""
    head = stream.read(HEAD_BYTES)
    skipped = False
    if stream.seekable():  # a file (or stdin redirected from one): jump to its tail
        here = stream.tell()
        end = stream.seek(0, os.SEEK_END)
        skipped = end > here + TAIL_BYTES
        stream.seek(end - TAIL_BYTES if skipped else here)
    tail = bytearray()
    for chunk in iter(lambda: stream.read(1 << 20), b""):
        tail += chunk
        if len(tail) > TAIL_BYTES:
            del tail[:-TAIL_BYTES]
            skipped = True
    return (head + (b"\n" if skipped else b"") + tail).decode("utf-8", errors="replace")
