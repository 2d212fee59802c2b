"""`envdoctor smoke [FRAMEWORK…]`: a short, real workout of each installed framework on its device.

Exit codes: 0 every selected check passed or was skipped for a stated reason; 1 a check failed or
errored; 2 bad options (one line).

Output: progress (the probe's spinner, then a live row per check) on stderr, only when stderr is a
terminal and not -q; the result table (or --json) once on stdout; -q prints the failed checks and the
verdict line only.
"""

from __future__ import annotations

import os
from typing import List, Optional

import typer

from envdoctor.cli import QUIET_HELP
from envdoctor.commands.common import PythonOption
from envdoctor.errors import UsageError


def register(app: typer.Typer) -> None:
    app.command()(smoke)


def smoke(
    frameworks: Optional[List[str]] = typer.Argument(None, metavar="[FRAMEWORK]...", help="torch, tensorflow, jax, paddle (default: all installed)."),
    checks: Optional[str] = typer.Option(None, "--checks", metavar="LIST", help="Comma-separated: devices,cnn,oom,repro,amp,multi (default: all)."),
    device: str = typer.Option("auto", "--device", help="auto (the GPU when the framework sees one), cpu or cuda."),
    python: Optional[str] = PythonOption,
    json_out: bool = typer.Option(False, "--json", help="Print the results as JSON (schema envdoctor.smoke/1) and nothing else."),
    timeout: float = typer.Option(300.0, "--timeout", metavar="S", help="Seconds each check may take before it is stopped."),
    quiet: bool = typer.Option(False, "-q", "--quiet", help=QUIET_HELP),
) -> None:
    """Train a small CNN, round-trip an OOM, check reproducibility, AMP and data parallelism, per framework."""
    import time

    from envdoctor.smoke import DEVICES, SmokeRequest, document, exit_code, make_plan, run_plan
    from envdoctor.smoke.catalog import catalog

    cat = catalog()
    request = SmokeRequest(
        frameworks=_frameworks(frameworks or [], cat),
        checks=_checks(checks, cat.checks),
        device=_choice("--device", device, DEVICES),
        timeout=_timeout(timeout),
    )
    if quiet:  # like `envdoctor -q smoke` and ENVDOCTOR_QUIET=1
        os.environ["ENVDOCTOR_QUIET"] = "1"
    from envdoctor.render import console, print_json, progress
    from envdoctor.render.smoke import live_view, live_wanted, print_results

    start = time.monotonic()
    with progress("probing this machine..."):
        facts = _facts(python)
    plan = make_plan(request, facts, cat)
    with live_view(plan.rows, enabled=live_wanted()) as on_change:  # stderr: stdout gets one table
        results = run_plan(plan, request, facts, facts.python.executable, on_change)
    if json_out:
        print_json(document(results))
    else:
        print_results(console(), plan.rows, results, time.monotonic() - start)
    raise typer.Exit(exit_code(results))


def _frameworks(names: list[str], cat) -> tuple[str, ...]:
    chosen: list[str] = []
    for name in names:
        spec = cat.framework(name)
        if spec is None:
            known = ", ".join(s.name for s in cat.frameworks)
            raise UsageError(f"unknown framework '{name}' (choose from {known})")
        if spec.name not in chosen:
            chosen.append(spec.name)
    return tuple(chosen)


def _checks(text: Optional[str], known: tuple[str, ...]) -> tuple[str, ...]:
    if text is None:
        return ()
    wanted = [c.strip().lower() for c in text.split(",") if c.strip()]
    if not wanted:
        raise UsageError("--checks needs at least one of " + ",".join(known))
    for c in wanted:
        if c not in known:
            raise UsageError(f"unknown check '{c}' in --checks (choose from {','.join(known)})")
    return tuple(c for c in known if c in wanted)  # the canonical order


def _choice(option: str, value: str, allowed: tuple[str, ...]) -> str:
    if value.lower() not in allowed:
        raise UsageError(f"{option} must be one of {', '.join(allowed)}, not '{value}'")
    return value.lower()


def _timeout(seconds: float) -> float:
    if not 0 < seconds < float("inf"):
        raise UsageError(f"--timeout must be a positive number of seconds, not {seconds:g}")
    return seconds


def _facts(python: Optional[str]):
    """Probe this machine with the target interpreter; a target that cannot run is a usage error."""
    from envdoctor.probe import collect

    from envdoctor.complete import complete

    facts = complete(collect(python=python)[0])
    for error in facts.errors:
        if error.probe == "python":
            raise UsageError(error.message)
    return facts
