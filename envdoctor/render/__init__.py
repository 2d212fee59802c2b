"""render: the only place that prints. Console output is for people; JSON is for machines.

Every JSON document starts with the same three keys (`document()`): `schema` (envdoctor.<kind>/1),
`envdoctor_version` and `matrices_checked` (the newest `checked` date of the data files it was
judged with). Output survives any terminal: a stream that cannot encode the marks gets ASCII ones
(`envdoctor.render.marks`), and JSON falls back to \\u escapes.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import sys
from typing import Any, Optional

# The schema of each command's --json document (a document that names its own schema keeps it).
COMMAND_SCHEMAS = {
    "check": "envdoctor.report/1",
    "facts": "envdoctor.facts/1",
    "install": "envdoctor.install/1",
    "explain": "envdoctor.explain/1",
    "smoke": "envdoctor.smoke/1",
    "matrix": "envdoctor.matrix/1",
    "dockerfile": "envdoctor.dockerfile/1",
    "compose": "envdoctor.compose/1",
    "fleet": "envdoctor.fleet/1",
}
# Documents a command prints besides its own (they name their schema in the document).
ANSIBLE_FACT_SCHEMA = "envdoctor.ansible-fact/1"  # `facts --ansible-fact`
OTHER_SCHEMAS = (ANSIBLE_FACT_SCHEMA,)
HEAD_KEYS = ("schema", "envdoctor_version", "matrices_checked")


def console(stderr: bool = False):
    """A rich Console that honours NO_COLOR and drops colour when not writing to a terminal."""
    from rich.console import Console

    return Console(stderr=stderr, no_color=bool(os.environ.get("NO_COLOR")) or None, highlight=False,
                   soft_wrap=True)  # a line too long for a pipe is not broken in the middle


@contextlib.contextmanager
def progress(message: str):
    """A spinner with `message` on stderr while the block runs: only when stderr is a terminal and
    not --quiet (never on stdout, never in a log). It leaves nothing behind when done."""
    stream = sys.stderr
    if quiet() or stream is None or not _isatty(stream):
        yield
        return
    from rich.live import Live
    from rich.spinner import Spinner

    with Live(Spinner("dots", text=message, style="cyan"), console=console(stderr=True), transient=True,
              redirect_stdout=False, redirect_stderr=True, refresh_per_second=8):
        yield


def _isatty(stream) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):
        return False


def quiet() -> bool:
    """-q/--quiet or ENVDOCTOR_QUIET=1: only errors and the verdict line."""
    return os.environ.get("ENVDOCTOR_QUIET", "").strip().lower() in ("1", "true", "yes", "on")


def document(data: Any, schema: Optional[str] = None) -> Any:
    """A JSON document with its head: schema, envdoctor_version, matrices_checked, then the rest."""
    if not isinstance(data, dict):
        return data
    from envdoctor import __version__

    head = {"schema": data.get("schema") or schema or _command_schema(),
            "envdoctor_version": __version__, "matrices_checked": matrices_checked()}
    return {**head, **{k: v for k, v in data.items() if k not in head}}


def print_json(data: Any, schema: Optional[str] = None) -> None:
    """The document on stdout: UTF-8 where the stream can take it, \\u escapes where it cannot."""
    text = json.dumps(document(data, schema), indent=2, ensure_ascii=False)
    if not can_encode(text, sys.stdout):
        text = json.dumps(document(data, schema), indent=2, ensure_ascii=True)
    sys.stdout.write(text + "\n")


def can_encode(text: str, stream) -> bool:
    encoding = getattr(stream, "encoding", None) or "ascii"
    try:
        text.encode(encoding)
    except (UnicodeEncodeError, LookupError):
        return False
    return True


@functools.lru_cache(maxsize=1)
def matrices_checked() -> Optional[str]:
    """The newest `checked` date in the data files (matrices/ and recipes/), or None: the same reading
    as `check -v`'s "checked up to" line (loader.newest_checked)."""
    from envdoctor.matrix.loader import newest_checked

    dates = [d for d in (newest_checked("matrices"), newest_checked("recipes")) if d is not None]
    return max(dates).isoformat() if dates else None


def _command_schema() -> Optional[str]:
    """The schema of the command now running (the command line names it: `running(name)`)."""
    return COMMAND_SCHEMAS.get(RUNNING[0]) if RUNNING else None


RUNNING: list[str] = []  # the command being run, set by envdoctor.cli


def running(command: str) -> None:
    RUNNING[:] = [command]
