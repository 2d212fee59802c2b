"""--deep: import each installed framework in the target interpreter and record its build.

Each framework runs in its own subprocess (deep_script.py), all in parallel, each bounded by
ctx.deep_timeout (ENVDOCTOR_DEEP_TIMEOUT overrides it). An import that crashes (SIGSEGV, SIGILL) or
hangs is recorded as Framework(import_error="killed by signal SIGSEGV" / "timed out after N s"); a crash
keeps the last line the process printed ("killed by signal SIGABRT (last output: ...)"). On a terminal,
an import still running after 5 s gets one "waiting for torch to import (5 s)…" line on stderr.
"""

from __future__ import annotations

import json
import sys
from concurrent.futures import ThreadPoolExecutor, wait
from pathlib import Path
from typing import Any, Optional, TextIO

from envdoctor import proc
from envdoctor.facts import FactsError, Framework, PythonEnv, _build

SCRIPT = Path(__file__).with_name("deep_script.py")
MARKER = "@@envdoctor-deep@@"

# framework key -> distributions that install it (any one is enough)
DISTRIBUTIONS = {
    "torch": ("torch",),
    "tensorflow": ("tensorflow", "tensorflow-cpu", "tensorflow-gpu", "tensorflow-macos", "tf-nightly", "tf-nightly-cpu"),
    "jax": ("jax",),
    "paddle": ("paddlepaddle", "paddlepaddle-gpu"),
}


def installed(python_env: PythonEnv) -> dict[str, Optional[str]]:
    """Framework key → the installed distribution's version, for the frameworks present."""
    found = {}
    for key, names in DISTRIBUTIONS.items():
        for name in names:
            if name in python_env.packages:
                found[key] = python_env.packages[name]
                break
    return found


def probe(ctx, python_env: PythonEnv) -> dict[str, Framework]:
    present = installed(python_env)
    if not present:
        return {}
    with ThreadPoolExecutor(max_workers=len(present)) as pool:
        futures = {key: pool.submit(inspect, ctx, key, version) for key, version in present.items()}
        _say_when_slow(futures)
        return {key: future.result() for key, future in futures.items()}


PROGRESS_AFTER = 5.0  # seconds: an import still running then gets one line on a terminal


def _say_when_slow(futures: dict, after: Optional[float] = None, stream: Optional[TextIO] = None) -> None:
    """Once, after PROGRESS_AFTER seconds, name the imports still running (on a terminal only: a hung
    import waits up to the deep timeout, and a silent minute looks like envdoctor hung)."""
    stream = stream if stream is not None else sys.stderr
    after = PROGRESS_AFTER if after is None else after
    try:
        if stream is None or not stream.isatty():
            return
    except (AttributeError, ValueError, OSError):
        return
    _, pending = wait(list(futures.values()), timeout=after)
    names = [key for key, future in futures.items() if future in pending]
    if names:
        try:
            stream.write(f"waiting for {', '.join(names)} to import ({after:g} s)…\n")
            stream.flush()
        except (OSError, ValueError, UnicodeEncodeError):
            pass


def inspect(ctx, key: str, version: Optional[str] = None) -> Framework:
    env = dict(ctx.environ)
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    result = proc.run([ctx.python, str(SCRIPT), key], timeout=ctx.deep_timeout, env=env)
    data = _payload(result.stdout)
    if data is not None and result.returncode == 0:
        return _framework(ctx, key, data, version)
    reason = result.describe_failure() if not result.ok else "printed no result"
    if result.error and "timed out" in result.error:
        reason = f"timed out after {ctx.deep_timeout:g} s"
    elif result.returncode is not None and result.returncode < 0:
        last = _last_line(result.stderr)  # what a native library printed before it died
        if last:
            reason = f"{reason} (last output: {last})"
    if data is not None and data.get("import_error"):
        reason = data["import_error"]
    return Framework(version=version, import_error=reason)


def _last_line(text: str, limit: int = 200) -> str:
    lines = [line.strip() for line in (text or "").splitlines() if line.strip()]
    return lines[-1][:limit] if lines else ""


def _payload(stdout: str) -> Optional[dict[str, Any]]:
    for line in reversed(stdout.splitlines()):
        if line.startswith(MARKER):
            try:
                data = json.loads(line[len(MARKER):])
            except ValueError:
                return None
            return data if isinstance(data, dict) else None
    return None


def _framework(ctx, key: str, data: dict[str, Any], version: Optional[str]) -> Framework:
    if data.get("import_error"):
        return Framework(version=version, import_error=str(data["import_error"]))
    data = {k: v for k, v in data.items() if v is not None}
    for k in ("cuda", "cudnn"):
        if k in data:
            data[k] = str(data[k])
    try:
        return _build(Framework, data, f"frameworks.{key}")
    except FactsError as exc:
        ctx.error("deep", f"{key}: unexpected build info: {exc}")
        return Framework(version=version, extra={"raw": data})
