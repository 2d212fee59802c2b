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
    file: Optional[str] = typer.Option(None, "--file", "-f", metavar="LOG", help="Read the error log (or a whole pasted bug report) from a file."),
    facts_file: Optional[str] = FactsOption,
    python: Optional[str] = PythonOption,
    here: bool = typer.Option(False, "--here", help="Judge this machine even when the text describes another one."),
    json_out: bool = typer.Option(False, "--json", help='Print {"diagnosis": [...], "matches": [...], "machine": {...}} as JSON.'),
    verbose: bool = typer.Option(False, "-v", "--verbose", help="Show the evidence and the source of each signature."),
) -> None:
    """Explain an error message, a log or a pasted bug report: the known cause, judged on the machine
    the text describes (or this one), with its fix.

    Exit 0 when the text holds no known problem, 1 when one was recognised, 2 on a usage error.
    """
    from envdoctor.complete import complete
    from envdoctor.explain import explain as run_explain
    from envdoctor.textnorm import normalise

    if facts_file and python:
        raise UsageError("--facts and --python name two different targets; give one of them")
    if here and facts_file:
        raise UsageError("--here judges this machine, --facts a recorded one; give one of them")
    raw, truncated = read_input(text, file)
    doc = normalise(raw, truncated)
    facts, machine = _machine(doc.text, facts_file, python, here)
    facts = complete(facts)
    result = run_explain(doc, facts, machine_described=machine["judged"] != "this machine")
    if json_out:
        from envdoctor.render import print_json

        machine["facts"] = facts.to_dict()
        print_json({**result.to_dict(), "machine": machine, "truncated": truncated}, schema="envdoctor.explain/1")
    else:
        from envdoctor.render import console
        from envdoctor.render.explain import print_explanation

        print_explanation(console(), result, machine, verbose, truncated)
    raise typer.Exit(1 if result.diagnosis else 0)


def _machine(text: str, facts_file: Optional[str], python: Optional[str], here: bool):
    """The machine to judge: the one the text describes (merged under --facts FILE, which wins where
    both speak), else the recorded one, else this one."""
    from envdoctor.facts import Facts, FactsError, load_facts
    from envdoctor.read import merge, read_machine

    described, notes = ({}, []) if here else read_machine(text)
    if described:
        base = load_facts(facts_file).to_dict() if facts_file else {}
        try:
            facts = Facts.from_dict(merge(base, described) if base else described)
        except FactsError:  # a value read from prose that is not what it looked like: judge what is sure
            facts = load_facts(facts_file) if facts_file else Facts()
        judged = "the machine described in the text" + (f" and {Path(facts_file).name}" if facts_file else "")
        return facts, {"judged": judged, "read": notes}
    if facts_file:
        return load_facts(facts_file), {"judged": f"the recorded machine {Path(facts_file).name}", "read": []}
    facts, _ = obtain_facts(None, python, completed=False)
    return facts, {"judged": "this machine", "read": []}


def read_input(text: Optional[str], file: Optional[str]) -> tuple[bytes | str, bool]:
    """The text to explain and whether only part of it was read."""
    if file and text:
        raise UsageError("give the error either as TEXT (or '-') or with --file LOG, not both")
    if file == "-":  # the usual spelling of standard input for a file option
        data, truncated = read_log(sys.stdin.buffer)
        if not data.strip():
            raise UsageError("standard input is empty: pipe the log in, e.g. `python train.py 2>&1 | envdoctor explain --file -`")
        return data, truncated
    if file:
        try:
            with _open_log(file) as fh:
                data, truncated = read_log(fh)
        except OSError as exc:
            raise UsageError(f"cannot read log file {file}: {exc.strerror or exc}") from None
        if not data.strip():
            raise UsageError(f"log file {file} is empty (a named pipe nobody writes to reads as empty)")
        return data, truncated
    if text == "-":
        return read_log(sys.stdin.buffer)
    if text is None or not text.strip():
        raise UsageError("no error text: pass it as an argument, '-' to read standard input, or --file LOG")
    return text, False


def _open_log(file: str) -> BinaryIO:
    """A log file, or a pipe such as `--file <(python train.py 2>&1)`. Opened without blocking, so a named
    FIFO nobody writes to reads as empty instead of waiting forever; a directory is refused."""
    import stat

    fd = os.open(file, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    mode = os.fstat(fd).st_mode
    if stat.S_ISDIR(mode):
        os.close(fd)
        raise UsageError(f"cannot read log file {file}: it is a directory")
    if hasattr(os, "set_blocking"):
        os.set_blocking(fd, True)  # a writer that is there (process substitution) is waited for
    return os.fdopen(fd, "rb")


def read_log(stream: BinaryIO) -> tuple[bytes, bool]:
    """The log's bytes: all of it, or its first HEAD_BYTES and last TAIL_BYTES when it is longer
    (a 100 MB log or an endless pipe costs a bounded amount of memory)."""
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
    return head + (b"\n" if skipped else b"") + bytes(tail), skipped
