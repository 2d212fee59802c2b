"""Bounded access to the outside world: subprocesses and file reads that never hang or raise."""

from __future__ import annotations

import os
import signal
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Mapping, Optional, Sequence


@dataclass(frozen=True)
class RunResult:
    argv: tuple[str, ...]
    returncode: Optional[int]  # None when it did not run to completion
    stdout: str = ""
    stderr: str = ""
    error: Optional[str] = None  # why it did not run or finish: "not found", "timed out after 5 s", ...

    @property
    def ok(self) -> bool:
        return self.error is None and self.returncode == 0

    def describe_failure(self) -> str:
        """One line that says why the command did not succeed."""
        if self.error:
            return self.error
        if self.returncode is not None and self.returncode < 0:
            return f"killed by signal {signal_name(-self.returncode)}"
        text = (self.stderr.strip() or self.stdout.strip()).splitlines()
        first = text[0][:200] if text else ""
        return f"exited with status {self.returncode}" + (f": {first}" if first else "")


def signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return str(number)


def run(
    argv: Sequence[str],
    timeout: float,
    env: Optional[Mapping[str, str]] = None,
    input_text: Optional[str] = None,
    cwd: Optional[str] = None,
) -> RunResult:
    """Run a command with a hard timeout; never raises. A timed-out process group is killed."""
    argv = tuple(str(a) for a in argv)
    try:
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE if input_text is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=dict(env) if env is not None else None,
            cwd=cwd,
            text=True,
            encoding="utf-8",
            errors="replace",
            start_new_session=(os.name == "posix"),
        )
    except FileNotFoundError:
        return RunResult(argv, None, error=f"{argv[0]}: not found")
    except PermissionError:
        return RunResult(argv, None, error=f"{argv[0]}: permission denied")
    except OSError as exc:
        return RunResult(argv, None, error=f"{argv[0]}: {exc.strerror or exc}")
    try:
        out, err = proc.communicate(input=input_text, timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill(proc)
        out, err = _drain(proc)
        return RunResult(argv, None, out, err, error=f"{Path(argv[0]).name} timed out after {timeout:g} s")
    except BaseException:  # Ctrl-C: the child runs in its own session and would not see the signal
        _kill(proc)
        raise
    return RunResult(argv, proc.returncode, out, err)


def _kill(proc: subprocess.Popen) -> None:
    try:
        if os.name == "posix":
            os.killpg(proc.pid, signal.SIGKILL)
        else:
            proc.kill()
    except (ProcessLookupError, PermissionError, OSError):
        pass


def _drain(proc: subprocess.Popen) -> tuple[str, str]:
    try:
        return proc.communicate(timeout=1)
    except (subprocess.TimeoutExpired, OSError, ValueError):
        return "", ""


def read_text(path: str | Path, limit: int = 1 << 20) -> Optional[str]:
    """Read a small text file; None when it is missing or unreadable.

    Files under /proc and /sys answer at once or fail; size is capped so a wrong path cannot
    load a huge file.
    """
    try:
        with open(path, "rb") as fh:
            data = fh.read(limit)
    except OSError:
        return None
    return data.decode("utf-8", errors="replace")


def run_streaming(
    argv: Sequence[str],
    timeout: float,
    on_line: Callable[[str], None],
    env: Optional[Mapping[str, str]] = None,
    keep_lines: int = 200,
) -> RunResult:
    """Run a long command (an installer) with a hard timeout, passing each output line to `on_line`
    as it comes; never raises. stdout and stderr are merged; the result keeps the last lines."""
    import collections
    import threading

    argv = tuple(str(a) for a in argv)
    try:
        proc = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            env=dict(env) if env is not None else None, text=True, encoding="utf-8", errors="replace",
            start_new_session=(os.name == "posix"),
        )
    except OSError as exc:
        reason = "not found" if isinstance(exc, FileNotFoundError) else (exc.strerror or str(exc))
        return RunResult(argv, None, error=f"{argv[0]}: {reason}")
    tail: collections.deque[str] = collections.deque(maxlen=keep_lines)

    def pump() -> None:
        for line in proc.stdout:  # type: ignore[union-attr]
            line = line.rstrip("\r\n")
            tail.append(line)
            on_line(line)

    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill(proc)
        proc.wait()
        reader.join(timeout=1)
        return RunResult(argv, None, "\n".join(tail), error=f"{Path(argv[0]).name} timed out after {timeout:g} s")
    except KeyboardInterrupt:  # the child is in its own session: Ctrl-C reached only us
        _kill(proc)
        proc.wait()
        raise
    reader.join(timeout=5)
    return RunResult(argv, proc.returncode, "\n".join(tail))
