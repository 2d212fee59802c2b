"""Run check scripts in subprocesses of the target interpreter and read their results.

`run_batch` runs several checks of one framework in ONE process (the framework is imported once) and
reads each check's result as it comes; a check that hangs past its timeout, dies by a signal or
ends the process without a result is reported, and the checks it did not reach are returned as not
run, for the caller to start in a fresh process. `run_check` is one check alone.
Whatever the subprocess does — hang, die by a signal, fail to import the framework, print garbage —
the answer is a SmokeResult with a reason; nothing here raises or waits past the timeout.
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import threading
import time
from dataclasses import dataclass, field, replace
from typing import Callable, Mapping, Optional

from envdoctor import proc
from envdoctor.smoke.catalog import FrameworkSpec
from envdoctor.smoke.results import SmokeResult

PHASE_PREFIX = "#envdoctor phase="  # printed by checks/_harness.py
CHECK_PREFIX = "#envdoctor check="  # printed by checks/_harness.py before each check, on stdout and stderr
LINE_CHARS = 65_536  # a line longer than this is read in pieces
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


@dataclass
class _Segment:
    """What one check of a batch printed, and when it started."""

    started: float
    stdout: list[str] = field(default_factory=list)
    stderr: list[str] = field(default_factory=list)
    chars: int = 0

    def add(self, stream: str, line: str) -> None:
        lines = self.stdout if stream == "stdout" else self.stderr
        lines.append(line)
        self.chars += len(line)
        while self.chars > 2 * OUTPUT_CHARS and len(lines) > 1:  # keep the end, bounded
            self.chars -= len(lines.pop(0))


def run_batch(job: CheckRun, checks: list[str], on_start: Callable[[str], None] = lambda check: None
              ) -> list[SmokeResult]:
    """Run `checks` one after another in one process; returns the results of the checks it reached,
    in order. The last one may be an error (timeout, signal, no result): the checks after it were not
    run. Never raises, never waits past `job.timeout` for any one check."""
    argv = replace(job, check=",".join(checks)).argv()
    started = time.perf_counter()
    try:
        child = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 env=dict(job.env) if job.env is not None else None, text=True, encoding="utf-8",
                                 errors="replace", start_new_session=(os.name == "posix"))
    except OSError:
        return [run_check(replace(job, check=checks[0]))]  # proc.run words why it cannot start
    lines: queue.Queue = queue.Queue()
    readers = [threading.Thread(target=_read, args=(stream, name, lines), daemon=True)
               for stream, name in ((child.stdout, "stdout"), (child.stderr, "stderr"))]
    for reader in readers:
        reader.start()
    try:
        return _collect(job, checks, child, lines, started, on_start)
    finally:
        try:
            child.wait(timeout=2)  # the harness exits by itself after its last result
        except subprocess.TimeoutExpired:
            proc.kill_group(child)
            try:
                child.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
        for reader in readers:
            reader.join(timeout=5)


def _read(stream, name: str, lines: queue.Queue) -> None:
    try:
        while True:
            line = stream.readline(LINE_CHARS)
            if not line:
                break
            lines.put((name, line.rstrip("\n")))
    except (OSError, ValueError):
        pass
    lines.put((name, None))


def _collect(job: CheckRun, checks: list[str], child: subprocess.Popen, lines: queue.Queue, started: float,
             on_start: Callable[[str], None]) -> list[SmokeResult]:
    results: list[SmokeResult] = []
    segments: dict[str, _Segment] = {}
    current = {"stdout": checks[0], "stderr": checks[0]}  # whose output a line is
    segments[checks[0]] = _Segment(started)
    on_start(checks[0])
    open_streams = 2
    while open_streams:
        check = current["stdout"]
        left = segments[check].started + job.timeout - time.perf_counter()
        try:
            stream, line = lines.get(timeout=max(0.0, left))
        except queue.Empty:
            proc.kill_group(child)
            results.append(_ended(job, check, segments[check], None, f"timed out after {job.timeout:g} s"))
            return results
        if line is None:
            open_streams -= 1
            continue
        if line.startswith(CHECK_PREFIX):
            name = line[len(CHECK_PREFIX):].strip()
            if name in checks:
                current[stream] = name
                if name not in segments:
                    segments[name] = _Segment(time.perf_counter())
                    if name != checks[0]:
                        on_start(name)
            continue
        segments.setdefault(current[stream], _Segment(time.perf_counter())).add(stream, line)
        found = _result_line(line) if stream == "stdout" else None
        if found is not None and found.get("check", check) == check:
            results.append(_ended(job, check, segments[check], 0, None))
            if len(results) == len(checks) or did_not_import(results[-1]):
                return results
    try:
        returncode = child.wait(timeout=max(1.0, segments[current["stdout"]].started + job.timeout - time.perf_counter()))
    except subprocess.TimeoutExpired:
        proc.kill_group(child)
        returncode = None
    check = current["stdout"]
    if len(results) < len(checks) and (not results or results[-1].check != check):
        error = None if returncode is not None else f"timed out after {job.timeout:g} s"
        results.append(_ended(job, check, segments[check], returncode, error))
    return results


def did_not_import(result: SmokeResult) -> bool:
    return result.status == "error" and result.details.get("phase") in (None, "start", "import")


def _ended(job: CheckRun, check: str, segment: _Segment, returncode: Optional[int], error: Optional[str]) -> SmokeResult:
    seconds = time.perf_counter() - segment.started
    run = proc.RunResult(tuple(job.argv()), returncode, "\n".join(segment.stdout), "\n".join(segment.stderr), error)
    return interpret(replace(job, check=check), run, seconds)


def _result_line(line: str) -> Optional[dict]:
    return last_result(line)


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
