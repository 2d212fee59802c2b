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


MAX_LINE = 65_536  # characters of one streamed output line
MAX_OUTPUT_BYTES = 32_000_000  # what one command may print (each stream): a probe prints kilobytes


def run(
    argv: Sequence[str],
    timeout: float,
    env: Optional[Mapping[str, str]] = None,
    input_text: Optional[str] = None,
    cwd: Optional[str] = None,
    max_output: int = MAX_OUTPUT_BYTES,
) -> RunResult:
    """Run a command with a hard timeout and a cap on what it may print; never raises. A process group
    that runs past the timeout, or prints more than `max_output` bytes on a stream (`yes`), is killed."""
    argv = tuple(str(a) for a in argv)
    try:
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE if input_text is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=dict(env) if env is not None else None,
            cwd=cwd,
            start_new_session=(os.name == "posix"),
        )
    except FileNotFoundError:
        return RunResult(argv, None, error=f"{argv[0]}: not found")
    except PermissionError:
        return RunResult(argv, None, error=f"{argv[0]}: permission denied")
    except OSError as exc:
        return RunResult(argv, None, error=f"{argv[0]}: {exc.strerror or exc}")
    try:
        return _collect(proc, argv, timeout, input_text, max_output)
    except BaseException:  # Ctrl-C: the child runs in its own session and would not see the signal
        kill_group(proc)
        raise


class _Capture:
    """One output stream read on a thread into a bounded buffer; over the cap it kills the group."""

    def __init__(self, proc: subprocess.Popen, stream, limit: int) -> None:
        import threading

        self.proc, self.stream, self.limit = proc, stream, limit
        self.chunks: list[bytes] = []
        self.size = 0
        self.overflow = False
        self.thread = threading.Thread(target=self._pump, daemon=True)
        self.thread.start()

    def _pump(self) -> None:
        try:
            while True:
                chunk = self.stream.read1(65536) if hasattr(self.stream, "read1") else self.stream.read(65536)
                if not chunk:
                    return
                room = self.limit - self.size
                self.chunks.append(chunk[:max(room, 0)])
                self.size += len(chunk)
                if self.size > self.limit:
                    self.overflow = True
                    kill_group(self.proc)
                    return
        except (OSError, ValueError):
            return

    def text(self) -> str:
        data = b"".join(self.chunks).decode("utf-8", errors="replace")
        return data.replace("\r\n", "\n").replace("\r", "\n")  # universal newlines, as text mode reads


def _feed(proc: subprocess.Popen, input_text: str) -> None:
    import threading

    def write() -> None:
        try:
            proc.stdin.write(input_text.encode("utf-8", errors="replace"))  # type: ignore[union-attr]
            proc.stdin.close()  # type: ignore[union-attr]
        except (OSError, ValueError):
            pass

    threading.Thread(target=write, daemon=True).start()


def _collect(proc: subprocess.Popen, argv: tuple[str, ...], timeout: float, input_text: Optional[str],
             max_output: int) -> RunResult:
    import time

    deadline = time.monotonic() + timeout
    if input_text is not None:
        _feed(proc, input_text)
    captures = [_Capture(proc, proc.stdout, max_output), _Capture(proc, proc.stderr, max_output)]
    timed_out = False
    # The pipes first: a thread join wakes at once at end of output, where Popen.wait(timeout) polls
    # with sleeps of up to 50 ms (30 ms a call, measured). A child left in the background may hold the
    # pipes: the same deadline bounds both.
    for capture in captures:
        capture.thread.join(timeout=max(deadline - time.monotonic(), 0))
    try:
        proc.wait(timeout=max(deadline - time.monotonic(), 0))
    except subprocess.TimeoutExpired:
        timed_out = True
    if timed_out or any(c.thread.is_alive() for c in captures):
        timed_out = not any(c.overflow for c in captures)
        kill_group(proc)
        for capture in captures:
            capture.thread.join(timeout=1)
        _reap(proc)
    out, err = (c.text() for c in captures)
    name = Path(argv[0]).name
    if any(c.overflow for c in captures):
        _reap(proc)
        return RunResult(argv, None, out, err, error=f"{name} printed more than {max_output // 1_000_000} MB")
    if timed_out:
        return RunResult(argv, None, out, err, error=f"{name} timed out after {timeout:g} s")
    return RunResult(argv, proc.returncode, out, err)


def _reap(proc: subprocess.Popen) -> None:
    try:
        proc.wait(timeout=1)
    except (subprocess.TimeoutExpired, OSError):
        pass
    for stream in (proc.stdout, proc.stderr):
        try:
            stream.close()  # type: ignore[union-attr]
        except (OSError, ValueError, AttributeError):
            pass


def kill_group(proc: subprocess.Popen) -> None:
    """SIGKILL the process group a command started here leads (start_new_session), so that its
    children stop too; on Windows the process itself. A process already gone is no error."""
    try:
        if os.name == "posix":
            os.killpg(proc.pid, signal.SIGKILL)
        else:
            proc.kill()
    except (ProcessLookupError, PermissionError, OSError):
        pass


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
        # readline(limit): an installer printing without newlines (a progress bar gone wrong) is cut in
        # pieces of MAX_LINE characters, never gathered into one unbounded line
        for line in iter(lambda: proc.stdout.readline(MAX_LINE), ""):  # type: ignore[union-attr]
            line = line.rstrip("\r\n")
            tail.append(line)
            on_line(line)

    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        kill_group(proc)
        proc.wait()
        reader.join(timeout=1)
        return RunResult(argv, None, "\n".join(tail), error=f"{Path(argv[0]).name} timed out after {timeout:g} s")
    except KeyboardInterrupt:  # the child is in its own session: Ctrl-C reached only us
        kill_group(proc)
        proc.wait()
        raise
    reader.join(timeout=5)
    return RunResult(argv, proc.returncode, "\n".join(tail))
