"""Run one check script in its own subprocess of the target interpreter and read its result.

Whatever the subprocess does — hang, die by a signal, fail to import the framework, print garbage —
the answer is a SmokeResult with a reason; nothing here raises or waits past the timeout.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Mapping, Optional

from envdoctor import proc
from envdoctor.smoke.catalog import FrameworkSpec
from envdoctor.smoke.results import SmokeResult

PHASE_PREFIX = "#envdoctor phase="  # printed by checks/_harness.py
OUTPUT_CHARS = 50_000  # how much of a failed check's output is kept for matching error texts
TAIL_CHARS = 2_000  # how much of it the result shows (details.output_tail)
PHASE_WORDS = {"start": "before importing {fw}", "import": "while importing {fw}", "imported": "during the check"}


@dataclass(frozen=True)
class CheckRun:
    """One check to run: what, where, with which limits."""

    framework: FrameworkSpec
    check: str
    python: str
    device: str = "auto"  # auto | cpu | cuda
    timeout: float = 300.0
    steps: int = 10
    env: Optional[Mapping[str, str]] = None

    def argv(self) -> list[str]:
        oom_seconds = max(5.0, min(60.0, self.timeout / 3))
        return [self.python, str(self.framework.script), "--check", self.check, "--device", self.device,
                "--steps", str(self.steps), "--oom-seconds", f"{oom_seconds:g}"]


def run_check(job: CheckRun) -> SmokeResult:
    start = time.perf_counter()
    result = proc.run(job.argv(), timeout=job.timeout, env=job.env)
    seconds = time.perf_counter() - start
    return interpret(job, result, seconds)


def interpret(job: CheckRun, result: proc.RunResult, seconds: float) -> SmokeResult:
    name = job.framework.name
    phase = last_phase(result.stdout)
    base = SmokeResult(name, job.check, "error", device=job.device if job.device != "auto" else None, seconds=seconds)
    where = PHASE_WORDS.get(phase or "start", "").format(fw=name)
    text = output(result)
    if result.error and result.returncode is None and "timed out" in result.error:
        return base.with_(reason=f"timed out after {job.timeout:g} s {where}".strip(), output=text,
                          details={"phase": phase, "output_tail": text[-TAIL_CHARS:]})
    if result.returncode is not None and result.returncode < 0:
        signal = proc.signal_name(-result.returncode)
        return base.with_(reason=f"killed by signal {signal} {where}".strip(), output=text,
                          details={"phase": phase, "signal": signal, "output_tail": text[-TAIL_CHARS:]})
    if result.error:  # the interpreter could not be started at all
        return base.with_(reason=result.error, details={"phase": phase})
    found = last_result(result.stdout)
    if found is None:
        return base.with_(reason=f"{result.describe_failure()} without printing a result {where}".strip(), output=text,
                          details={"phase": phase, "output_tail": text[-TAIL_CHARS:]})
    details = found.get("details") if isinstance(found.get("details"), dict) else {}
    failed = found["status"] in ("fail", "error")
    if failed:
        details = dict(details, output_tail=text[-TAIL_CHARS:])
    return SmokeResult(name, job.check, found["status"], device=found.get("device"), seconds=seconds,
                       details=details, reason=found.get("reason"), output=text)


def last_phase(stdout: str) -> Optional[str]:
    phase = None
    for line in stdout.splitlines():
        if line.startswith(PHASE_PREFIX):
            phase = line[len(PHASE_PREFIX):].strip()
    return phase


def last_result(stdout: str) -> Optional[dict]:
    """The last stdout line that is a JSON object with a valid status (frameworks may print before it)."""
    for line in reversed(stdout.splitlines()):
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            data = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(data, dict) and data.get("status") in ("pass", "fail", "skip", "error"):
            return data
    return None


def output(result: proc.RunResult) -> str:
    """The end of what the check printed (stderr, then stdout without markers and result)."""
    out = "\n".join(l for l in result.stdout.splitlines() if not l.startswith(PHASE_PREFIX) and not l.startswith("{"))
    text = (result.stderr.strip() + "\n" + out.strip()).strip()
    return text[-OUTPUT_CHARS:]
