"""contrib/slurm/envdoctor-healthcheck fits in Slurm's 60 s: Slurm kills a HealthCheckProgram that runs
longer, so the worst case of its bounded commands (envdoctor, then sinfo, then one scontrol) must stay
under it. Read from the script itself (no Slurm needed), so a changed default is caught everywhere."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WRAPPER = ROOT / "contrib" / "slurm" / "envdoctor-healthcheck"
SLURM_KILL_S = 60  # slurmd's limit for a HealthCheckProgram
BOUNDED = re.compile(r'timeout(?: -k (\d+))? "?\$?\{?([A-Z_]+|\d+)\}?"? "?\$\{?([A-Z_]+)')


def _defaults(text: str) -> dict[str, int]:
    found = {name: int(value) for name, value in re.findall(r'^([A-Z_]+)="\$\{\1:-(\d+)\}"', text, re.M)}
    found.update({name: int(value) for name, value in re.findall(r"^([A-Z_]+)=(\d+)\s*$", text, re.M)})
    return found


def test_worst_case_of_the_health_check_is_under_slurms_kill():
    text = WRAPPER.read_text()
    defaults = _defaults(text)
    worst: dict[str, int] = {}
    for kill, limit, command in BOUNDED.findall(text):
        seconds = int(limit) if limit.isdigit() else defaults[limit]
        worst[command] = max(worst.get(command, 0), seconds + int(kill or 0))
    assert set(worst) == {"ENVDOCTOR", "SINFO", "SCONTROL"}, worst
    assert worst["ENVDOCTOR"] >= 25, "envdoctor needs its node budget (20 s) and some start-up time"
    assert sum(worst.values()) < SLURM_KILL_S, worst  # one run calls each at most once
