"""`envdoctor smoke` output: a live view on stderr while the checks run (only when stderr is a terminal
and not --quiet), then the table once on stdout (with --quiet only the failed checks and the verdict)."""

from __future__ import annotations

import sys
import time
from contextlib import contextmanager
from typing import Callable, Iterator

from rich.markup import escape
from rich.spinner import Spinner
from rich.table import Table
from rich.text import Text

from envdoctor.smoke.results import SmokeResult
from envdoctor.smoke.suite import Row

MARKS = {"pass": ("✓", "green"), "fail": ("✗", "red"), "error": ("✗", "red"), "skip": ("–", "yellow")}


def summary(result: SmokeResult) -> str:
    """One line about what a check showed: its numbers when it passed, its reason otherwise."""
    if result.status != "pass":
        text = (result.reason or result.status) + (f" [{result.code}]" if result.code else "")
        shown = result.fix and result.status in ("fail", "error") and result.fix not in text
        return text + (f" — fix: {result.fix}" if shown else "")
    d = result.details
    describe = SUMMARIES.get(result.check)
    try:
        return describe(d) if describe else ""
    except (KeyError, TypeError, ValueError):
        return ""


def _devices(d: dict) -> str:
    gpus = d.get("gpus") or []
    if not gpus:
        return f"CPU only ({d.get('version', '?')})"
    names = ", ".join(f"{g.get('name')} cc {g.get('compute_capability')}" for g in gpus)
    return f"{len(gpus)} GPU(s): {names}"


def _cnn(d: dict) -> str:
    return f"loss {d['loss_first']:.3f} → {d['loss_last']:.3f} in {d['steps']} steps, {d['step_ms']:.1f} ms/step"


def _oom(d: dict) -> str:
    total = d.get("total_mib")
    reached = f"{d['reached_mib']} MiB" + (f" of {total} MiB" if total else "")
    return f"OOM raised at {reached}, recovered"


def _repro(d: dict) -> str:
    defaults = "defaults too" if d.get("defaults_identical") else "defaults differ"
    return f"bit-identical with deterministic settings ({defaults})"


def _amp(d: dict) -> str:
    return f"{d.get('compute_dtype') or d.get('dtype')} step, loss {d['loss']:.3f}"


def _multi(d: dict) -> str:
    what = d.get("backend") or d.get("strategy") or d.get("sharding", "")
    count = d.get("world_size") or d.get("replicas") or d.get("devices")
    compared = any(key.startswith("max_diff_vs_") for key in d)  # Paddle's check compares the replicas only
    return f"{what} × {count}, one data-parallel step " + (
        "matches the single-device step" if compared else "leaves the replicas in sync")


SUMMARIES: dict[str, Callable[[dict], str]] = {"devices": _devices, "cnn": _cnn, "oom": _oom, "repro": _repro,
                                               "amp": _amp, "multi": _multi}


def results_table(rows: list[Row], now: Callable[[], float] = time.monotonic, stream=None) -> Table:
    """The rows as a table; `stream` (default stdout) decides whether the marks need their ASCII form."""
    table = Table(box=None, pad_edge=False, show_edge=False, header_style="bold")
    table.add_column("")
    table.add_column("framework")
    table.add_column("check")
    table.add_column("device")
    table.add_column("time", justify="right")
    table.add_column("result", overflow="fold")
    for row in rows:
        table.add_row(*_cells(row, now, stream))
    return table


def _cells(row: Row, now: Callable[[], float], stream=None) -> list:
    if row.state == "running":
        elapsed = now() - (row.started or now())
        return [Spinner("dots", style="cyan"), row.framework, row.check, "", f"{elapsed:.1f} s", Text("running", style="cyan")]
    if row.state == "pending" or row.result is None:
        return [Text("·", style="dim"), row.framework, row.check, "", "", Text("waiting", style="dim")]
    r = row.result
    mark, colour = MARKS[r.status]
    from envdoctor.render.marks import fit

    mark = fit(mark, stream)
    seconds = f"{r.seconds:.1f} s" if r.seconds else ""
    return [Text(mark, style=f"bold {colour}"), r.framework, r.check, escape(r.device or ""), seconds,
            Text(summary(r), style=colour if r.status != "pass" else "")]


def totals_line(results: list[SmokeResult], seconds: float) -> str:
    counts = {s: sum(r.status == s for r in results) for s in ("pass", "fail", "error", "skip")}
    return (f"smoke: {counts['pass']} ok · {counts['fail']} failing · {counts['error']} errors · "
            f"{counts['skip']} skipped · {seconds:.1f} s")


def live_wanted() -> bool:
    """The live view is progress: only on a terminal stderr, and not with -q / ENVDOCTOR_QUIET=1."""
    from envdoctor.render import _isatty, quiet

    return not quiet() and _isatty(sys.stderr)


@contextmanager
def live_view(rows: list[Row], enabled: bool) -> Iterator[Callable[[], None]]:
    """While the suite runs: a row per framework × check with a spinner and elapsed time, drawn on
    stderr and erased when done (stdout gets only the final table).

    Yields the callback the suite calls when a row changes.
    """
    if not enabled:
        yield lambda: None
        return
    from rich.live import Live

    from envdoctor.render import console

    with Live(get_renderable=lambda: results_table(rows, stream=sys.stderr), console=console(stderr=True),
              refresh_per_second=8, transient=True, redirect_stdout=False, redirect_stderr=True) as live:
        yield live.refresh


def print_results(con, rows: list[Row], results: list[SmokeResult], seconds: float) -> None:
    """The table on `con` (stdout), then the verdict line; with -q only the rows that failed."""
    from envdoctor.render import quiet

    if quiet():
        rows = [row for row in rows if row.result is not None and row.result.status in ("fail", "error")]
    if rows:
        con.print(results_table(rows))
    colour = "green" if all(r.ok for r in results) else "red"
    con.print(f"[bold {colour}]{escape(totals_line(results, seconds))}[/]")
