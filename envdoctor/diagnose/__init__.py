"""diagnose: Facts (+ matrices) → Findings. One small rule per failure class.

A rule is a function `rule(facts) -> Iterable[Finding]` registered with `@rule`; the modules that
hold rules are listed in RULE_MODULES. A rule that crashes becomes an `internal-error` finding
instead of taking the report down.
"""

from __future__ import annotations

import importlib
from typing import Callable, Iterable

from envdoctor.facts import Facts
from envdoctor.findings import SEVERITIES, Finding
from envdoctor.matrix.loader import MatrixError

Rule = Callable[[Facts], Iterable[Finding]]
RULES: list[Rule] = []

RULE_MODULES = ("envdoctor.diagnose.driver", "envdoctor.diagnose.environment", "envdoctor.diagnose.platform",
                "envdoctor.diagnose.python", "envdoctor.diagnose.frameworks", "envdoctor.diagnose.gpu_arch",
                "envdoctor.diagnose.cuda_libs", "envdoctor.diagnose.jetson", "envdoctor.diagnose.imports",
                "envdoctor.diagnose.container", "envdoctor.diagnose.build", "envdoctor.diagnose.staleness")


def rule(fn: Rule) -> Rule:
    RULES.append(fn)
    return fn


def _load_rules() -> None:
    for name in RULE_MODULES:
        importlib.import_module(name)


def prepare() -> None:
    """Import the rules and the matrix accessors they consult, e.g. while the probes run."""
    from envdoctor.diagnose import knowledge

    _load_rules()
    knowledge.import_accessors()


def diagnose(facts: Facts) -> list[Finding]:
    _load_rules()
    findings: list[Finding] = []
    for check in RULES:
        try:
            findings.extend(check(facts))
        except MatrixError:
            raise  # broken data is the user's (or packager's) problem to see: exit 2 naming the file
        except Exception as exc:  # a buggy rule must not hide the others
            findings.append(Finding(
                code="internal-error", severity="warning", section="platform",
                title=f"rule {check.__name__} failed: {type(exc).__name__}: {exc}",
                detail="This is a bug in envdoctor; the other checks still ran. Please report it with `envdoctor facts` output.",
            ))
    order = {s: i for i, s in enumerate(SEVERITIES)}
    return sorted(_unique(findings), key=lambda f: order[f.severity])


def _unique(findings: list[Finding]) -> list[Finding]:
    seen: set[tuple[str, str]] = set()
    unique = []
    for f in findings:
        if (f.code, f.title) not in seen:
            seen.add((f.code, f.title))
            unique.append(f)
    return unique
