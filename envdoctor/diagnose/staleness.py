"""Rule: say when envdoctor's bundled knowledge (matrices/) is older than 120 days."""

from __future__ import annotations

from typing import Iterable

from envdoctor.diagnose import rule
from envdoctor.facts import Facts
from envdoctor.findings import Finding
from envdoctor.matrix import freshness, loader


@rule
def matrices_stale(facts: Facts) -> Iterable[Finding]:
    if not freshness.is_stale():
        return
    (checked, name), days = loader.least_recently_checked(), freshness.age_days()
    yield Finding(
        code="matrices-stale", severity="info", section="platform",
        title=f"envdoctor's compatibility data is old: {name} was last checked {checked} ({days} days ago)",
        detail=("Framework releases, CUDA builds and driver minimums published since then are unknown to it; "
                "its findings and install plans describe the world as of that date."),
        fix=(f"Upgrade envdoctor: {freshness.UPGRADE}",),
        evidence=(f"matrices.least_recently_checked={name}:{checked}",),
    )
