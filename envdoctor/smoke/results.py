"""SmokeResult: what one check of one framework found. Schema `envdoctor.smoke/1`."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Optional

SCHEMA = "envdoctor.smoke/1"
STATUSES = ("pass", "fail", "skip", "error")
ALL_CHECKS = "all"  # the `check` of a framework-wide result (not installed)


@dataclass(frozen=True)
class SmokeResult:
    framework: str
    check: str
    status: str  # pass | fail | skip | error
    device: Optional[str] = None  # what it ran on: "cpu", "cuda:0", "cpu (2 logical devices)"
    seconds: float = 0.0  # wall time of its subprocess, import included
    details: dict[str, Any] = field(default_factory=dict)
    reason: Optional[str] = None  # why it failed, errored or was skipped
    code: Optional[str] = None  # the finding code that explains a failure, when one is known
    fix: Optional[str] = None  # what to do about a failure (a command or a step), when one is known
    output: str = field(default="", repr=False)  # what a failed check printed (for matching; not in JSON)

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"bad status {self.status!r}")

    @property
    def ok(self) -> bool:
        return self.status in ("pass", "skip")

    def with_(self, **changes: Any) -> "SmokeResult":
        return replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        return {"framework": self.framework, "check": self.check, "device": self.device, "status": self.status,
                "seconds": round(self.seconds, 3), "details": self.details, "reason": self.reason, "code": self.code, "fix": self.fix}


def document(results: list[SmokeResult]) -> dict[str, Any]:
    return {"schema": SCHEMA, "results": [r.to_dict() for r in results]}


def exit_code(results: list[SmokeResult]) -> int:
    """0 when every check passed or was skipped for a stated reason; 1 when any failed or errored."""
    return 0 if all(r.ok and (r.status != "skip" or r.reason) for r in results) else 1
