"""Finding: one diagnosed problem (or piece of information), with why and how to fix it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Union

SEVERITIES = ("error", "warning", "info")

# A fix is a command (argv list, rendered with shell quoting) or a plain step in words.
Fix = Union[tuple[str, ...], str]

# The report section a finding belongs under.
SECTIONS = ("platform", "python", "nvidia", "toolkit", "cudnn", "jetson", "frameworks")


@dataclass(frozen=True)
class Finding:
    code: str  # stable kebab-case id, e.g. "driver-too-old"
    severity: str  # error | warning | info
    title: str  # one line
    detail: str  # the why, one paragraph
    section: str = "nvidia"
    fix: tuple[Fix, ...] = ()
    evidence: tuple[str, ...] = ()  # facts the rule used, e.g. "nvidia.driver_version=570.124.04"

    def __post_init__(self) -> None:
        if self.severity not in SEVERITIES:
            raise ValueError(f"bad severity {self.severity!r}")
        if self.section not in SECTIONS:
            raise ValueError(f"bad section {self.section!r}")

    def to_dict(self) -> dict:
        return {
            "code": self.code,
            "severity": self.severity,
            "section": self.section,
            "title": self.title,
            "detail": self.detail,
            "fix": [list(f) if isinstance(f, tuple) else f for f in self.fix],
            "evidence": list(self.evidence),
        }


def render_fix(fix: Fix, windows: bool = False) -> str:
    """A fix as a person types it: commands quoted for the target's shell (POSIX, or cmd/PowerShell
    on a Windows target, as `envdoctor install` prints them), steps as they are."""
    if not isinstance(fix, tuple):
        return fix
    from envdoctor.render.plan import shell_command

    return shell_command(fix, windows)


def worst_severity(findings: list[Finding]) -> str | None:
    for severity in SEVERITIES:
        if any(f.severity == severity for f in findings):
            return severity
    return None
