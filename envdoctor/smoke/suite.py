"""Run the smoke suite: frameworks × checks, one subprocess per check, one check at a time.

Scheduling: every check runs alone, frameworks one after another. Checks of one framework share
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
from envdoctor.smoke.runner import CheckRun, run_check

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
            where = facts.python.executable or "the target interpreter"
            plan.rows.append(Row(spec.name, ALL_CHECKS, "done", result=SmokeResult(
                spec.name, ALL_CHECKS, "skip", reason=f"{spec.name} is not installed in {where}; install it with `{spec.install}`")))
            continue
        plan.rows.extend(Row(spec.name, check) for check in checks)
    return plan


def run_plan(plan: Plan, request: SmokeRequest, facts: Facts, python: str,
             on_change: Callable[[], None] = lambda: None,
             environ: Optional[Mapping[str, str]] = None) -> list[SmokeResult]:
    """Run the pending rows one at a time; `on_change` is called when a row starts and ends."""
    environ = dict(os.environ if environ is None else environ)
    cat = catalog()
    diagnosis = _lazy_diagnosis(facts)
    broken: dict[str, str] = {}  # framework -> why its remaining checks are not run
    for row in plan.rows:
        if row.state == "done":
            continue
        spec = plan.specs[row.framework]
        row.state, row.started = "running", time.monotonic()
        on_change()
        row.result = _one(row, spec, request, facts, python, environ, broken)
        row.result = evaluate.explain_failure(row.result, spec, cat, facts, environ, diagnosis)
        if _did_not_import(row.result):
            broken[row.framework] = f"not run: {row.framework} did not import (see its {row.check} check)"
        row.state = "done"
        on_change()
    return [row.result for row in plan.rows]


def _one(row: Row, spec: FrameworkSpec, request: SmokeRequest, facts: Facts, python: str,
         environ: Mapping[str, str], broken: dict[str, str]) -> SmokeResult:
    if row.framework in broken:
        return SmokeResult(row.framework, row.check, "skip", reason=broken[row.framework])
    why = evaluate.pre_skip(row.check, request.device, facts)
    if why:
        return SmokeResult(row.framework, row.check, "skip", reason=why)
    env = evaluate.oom_env(environ) if row.check == "oom" else environ
    job = CheckRun(spec, row.check, python, request.device, request.timeout, request.steps, env)
    result = run_check(job)
    return evaluate.compare_devices(result, facts, request.device, environ)


def _did_not_import(result: SmokeResult) -> bool:
    return result.status == "error" and result.details.get("phase") in (None, "start", "import")


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
