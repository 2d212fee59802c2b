"""Typed access to matrices/smoke.toml: the frameworks smoke knows, its checks, failure → code rows."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from envdoctor.matrix.loader import MatrixError, load

CHECKS_DIR = Path(__file__).with_name("checks")
FILE = "smoke.toml"


@dataclass(frozen=True)
class FrameworkSpec:
    name: str
    aliases: tuple[str, ...]
    script: Path
    distributions: tuple[str, ...]
    install: str  # the envdoctor command that installs it


@dataclass(frozen=True)
class FailureRule:
    code: str
    explanation: str
    fix: str = ""
    symptoms: frozenset[str] = frozenset()
    pattern: Optional[re.Pattern] = None

    def matches(self, symptoms: set[str], text: str) -> bool:
        if self.symptoms:
            return self.symptoms <= symptoms
        return bool(self.pattern and self.pattern.search(text))


@dataclass(frozen=True)
class OptionalDependency:
    """A module the framework itself uses only for some calls, recognised by the error it raises without it."""

    framework: str
    module: str
    distribution: str
    pattern: re.Pattern


@dataclass(frozen=True)
class Catalog:
    checks: tuple[str, ...]
    frameworks: tuple[FrameworkSpec, ...]
    failures: tuple[FailureRule, ...]
    framework_codes: tuple[str, ...]
    machine_codes: tuple[str, ...]
    optional: tuple[OptionalDependency, ...] = ()

    def framework(self, name: str) -> Optional[FrameworkSpec]:
        key = name.strip().lower()
        for spec in self.frameworks:
            if key == spec.name or key in spec.aliases:
                return spec
        return None


@functools.lru_cache(maxsize=None)
def catalog() -> Catalog:
    data = load("smoke")
    checks = tuple(data.get("checks", ()))
    if not checks or not all(isinstance(c, str) for c in checks):
        raise MatrixError(f"{FILE}: 'checks' must be a list of check names")
    frameworks = tuple(_framework(row) for row in data.get("framework", ()))
    failures = tuple(_failure(row) for row in data.get("failure", ()))
    diag = data.get("diagnose", {})
    optional = tuple(OptionalDependency(row["framework"], row["module"], row["distribution"],
                                        _compile(row["pattern"], row["module"])) for row in data.get("optional", ()))
    return Catalog(checks, frameworks, failures, tuple(diag.get("framework_codes", ())),
                   tuple(diag.get("machine_codes", ())), optional)


def _compile(pattern: str, what: str) -> re.Pattern:
    try:
        return re.compile(pattern, re.IGNORECASE)
    except re.error as exc:
        raise MatrixError(f"{FILE}: ({what}): bad pattern: {exc}") from None


def _framework(row: dict) -> FrameworkSpec:
    script = CHECKS_DIR / row["script"]
    if not script.is_file():
        raise MatrixError(f"{FILE}: framework {row['name']}: no check script {row['script']}")
    return FrameworkSpec(row["name"], tuple(row.get("aliases", ())), script, tuple(row["distributions"]), row["install"])


def _failure(row: dict) -> FailureRule:
    code = row.get("code")
    if not code or ("symptoms" in row) == ("pattern" in row):
        raise MatrixError(f"{FILE}: [[failure]] ({code}): needs a code and exactly one of 'symptoms' or 'pattern'")
    pattern = None
    if "pattern" in row:
        try:
            pattern = re.compile(row["pattern"], re.IGNORECASE)
        except re.error as exc:
            raise MatrixError(f"{FILE}: [[failure]] ({code}): bad pattern: {exc}") from None
    return FailureRule(code, row.get("explanation", ""), row.get("fix", ""), frozenset(row.get("symptoms", ())), pattern)
