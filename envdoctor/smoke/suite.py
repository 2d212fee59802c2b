"""Run the smoke suite: frameworks × checks, the checks of a framework in one subprocess, one at a time.

Scheduling: every check runs alone, frameworks one after another; a framework's checks share one
process, so its import and warm-up are paid once (a crash moves the rest to a fresh process). Checks of one framework share
its device; checks of different frameworks could overlap on a CPU, but then they compete for the
cores and the step times they report would be wrong (this is a 2-core CI box), and two frameworks
that both grab the GPU's memory would fail each other. So nothing runs in parallel; the cost is the
sum of the checks, which is also what the user pays in their own scripts.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from typing import Callable, Mapping, Optional

from envdoctor.facts import Facts
from envdoctor.smoke import evaluate
from envdoctor.smoke.catalog import Catalog, FrameworkSpec, catalog
from envdoctor.smoke.results import ALL_CHECKS, SmokeResult
from envdoctor.smoke.runner import CheckRun, did_not_import, run_batch

DEVICES = ("auto", "cpu", "cuda")


@dataclass(frozen=True)
class SmokeRequest:
    frameworks: tuple[str, ...] = ()  # canonical names; empty: every known framework
    checks: tuple[str, ...] = ()  # empty: every check
    device: str = "auto"
    timeout: float = 300.0  # per check
    steps: int = 10


@dataclass
class Row:
    """One line of the live view: a framework × check, pending, running or done."""

    framework: str
    check: str
    state: str = "pending"  # pending | running | done
    started: Optional[float] = None
    result: Optional[SmokeResult] = None


@dataclass
class Plan:
    """What will run, in order; rows of frameworks that are not installed are done already."""

    rows: list[Row] = field(default_factory=list)
    specs: dict[str, FrameworkSpec] = field(default_factory=dict)


def installed(spec: FrameworkSpec, facts: Facts) -> Optional[str]:
    """The installed distribution (name==version) of a framework in the target, or None."""
    for dist in spec.distributions:
        version = facts.python.packages.get(dist)
        if version:
            return f"{dist}=={version}"
    return None


def make_plan(request: SmokeRequest, facts: Facts, cat: Optional[Catalog] = None) -> Plan:
    cat = cat or catalog()
    names = request.frameworks or tuple(spec.name for spec in cat.frameworks)
    checks = request.checks or cat.checks
    plan = Plan()
    for name in names:
        spec = cat.framework(name)
        plan.specs[spec.name] = spec
        if not installed(spec, facts):
            # Named on the command line, a framework that cannot run is a failure; found missing while
            # looking at every known framework, it is a skip.
            where = facts.python.executable or "the target interpreter"
            status = "fail" if request.frameworks else "skip"
            plan.rows.append(Row(spec.name, ALL_CHECKS, "done", result=SmokeResult(
                spec.name, ALL_CHECKS, status, reason=f"{spec.name} is not installed in {where}; install it with `{spec.install}`",
                fix=spec.install)))
            continue
        plan.rows.extend(Row(spec.name, check) for check in checks)
    return plan


def run_plan(plan: Plan, request: SmokeRequest, facts: Facts, python: str,
             on_change: Callable[[], None] = lambda: None,
             environ: Optional[Mapping[str, str]] = None) -> list[SmokeResult]:
    """Run the pending rows, framework by framework; `on_change` is called when a row starts and ends.

    The checks of one framework share one process (one import, one warm-up); the oom check, which
    fills the GPU and touches only the first one, gets its own. After a check that crashed, hung or
    ended its process, the checks it did not reach run in a fresh process; after one whose framework
    did not import, they are not run (and say so).
    """
    environ = dict(os.environ if environ is None else environ)
    cat = catalog()
    diagnosis = _lazy_diagnosis(facts)
    for framework, rows in _pending_by_framework(plan):
        spec = plan.specs[framework]
        runnable = []
        for row in rows:
            why = evaluate.pre_skip(row.check, request.device, facts)
            if why:
                _finish(row, SmokeResult(framework, row.check, "skip", reason=why), on_change)
            else:
                runnable.append(row)
        shared = [r for r in runnable if r.check != "oom"]
        alone = [r for r in runnable if r.check == "oom"]
        for batch, env in ((shared, environ), (alone, evaluate.oom_env(environ))):
            _run_rows(batch, spec, request, facts, python, env, environ, cat, diagnosis, on_change)
    return [row.result for row in plan.rows]


def _pending_by_framework(plan: Plan) -> list[tuple[str, list[Row]]]:
    groups: dict[str, list[Row]] = {}
    for row in plan.rows:
        if row.state != "done":
            groups.setdefault(row.framework, []).append(row)
    return list(groups.items())


def _run_rows(rows: list[Row], spec: FrameworkSpec, request: SmokeRequest, facts: Facts, python: str,
              env: Mapping[str, str], environ: Mapping[str, str], cat: Catalog, diagnosis, on_change) -> None:
    by_check = {row.check: row for row in rows}
    pending = [row.check for row in rows]
    job = CheckRun(spec, pending[0], python, request.device, request.timeout, request.steps, env) if rows else None

    def started(check: str) -> None:
        row = by_check[check]
        row.state, row.started = "running", time.monotonic()
        on_change()

    while pending:
        results = run_batch(job, pending, started)
        for result in results:
            result = evaluate.compare_devices(result, facts, request.device, environ)
            result = evaluate.explain_failure(result, spec, cat, facts, environ, diagnosis)
            _finish(by_check[result.check], result, on_change)
            pending.remove(result.check)
        if results and did_not_import(results[-1]):
            why = f"not run: {spec.name} did not import (see its {results[-1].check} check)"
            for check in pending:
                _finish(by_check[check], SmokeResult(spec.name, check, "skip", reason=why), on_change)
            return


def _finish(row: Row, result: SmokeResult, on_change: Callable[[], None]) -> None:
    row.result, row.state = result, "done"
    on_change()


def _lazy_diagnosis(facts: Facts) -> Callable[[], list]:
    """diagnose(facts), run once and only when a failure needs it; a broken rule set gives nothing."""
    cache: list = []

    def get() -> list:
        if not cache:
            try:
                from envdoctor.diagnose import diagnose

                cache.append(diagnose(facts))
            except Exception:
                cache.append([])
        return cache[0]

    return get
