"""Where `envdoctor smoke` writes (the real CLI in a subprocess, a pseudo-terminal where a terminal is
needed): progress (the probe's spinner, the live rows) on stderr and only when stderr is a terminal
and not -q; the result table once on stdout; -q keeps the failed checks and the verdict line.

The cheapest real checks: torch's `devices` check on this machine's torch, and the fake paddle of
tests/fixtures/fakeframeworks/segfault, which dies by SIGSEGV on import (a failed row at no cost)."""

import json
import os
import pty
import select
import subprocess
import sys
import time

import pytest

from conftest import FIXTURES, ROOT, run_cli

SEGFAULT = str(FIXTURES / "fakeframeworks" / "segfault")
CHEAP = ("smoke", "torch", "--checks", "devices", "--python", sys.executable)
VERDICT = "smoke: 1 ok · 0 failing · 0 errors · 0 skipped"
CONTROL = "\x1b["  # any terminal control sequence (cursor moves, colours)


def on_a_terminal(args, terminal: str, env=None, timeout=120):
    """Run the CLI with `terminal` ("stdout" or "stderr") a pseudo-terminal and the other stream a
    pipe; returns (exit status, what the terminal showed, what the pipe got)."""
    master, slave = pty.openpty()
    full = dict(os.environ, COLUMNS="120", LINES="40", TERM="xterm-256color", **(env or {}))
    full.pop("NO_COLOR", None)
    streams = {"stdout": slave, "stderr": subprocess.PIPE} if terminal == "stdout" else \
        {"stdout": subprocess.PIPE, "stderr": slave}
    proc = subprocess.Popen([sys.executable, "-m", "envdoctor", *args], stdin=subprocess.DEVNULL,
                            env=full, cwd=ROOT, **streams)
    os.close(slave)
    piped = proc.stderr if terminal == "stdout" else proc.stdout
    shown, got = _drain(master, piped, time.monotonic() + timeout)
    os.close(master)
    return proc.wait(timeout=10), shown.decode("utf-8", "replace"), got.decode("utf-8", "replace")


def _drain(master: int, piped, deadline: float) -> tuple[bytes, bytes]:
    """Read the terminal and the pipe together (neither may fill up) until both are closed."""
    shown, got = b"", b""
    open_fds = {master, piped.fileno()}
    while open_fds and time.monotonic() < deadline:
        ready, _, _ = select.select(list(open_fds), [], [], 0.5)
        for fd in ready:
            try:
                chunk = os.read(fd, 65536)
            except OSError:  # EIO: the child closed the terminal
                chunk = b""
            if not chunk:
                open_fds.discard(fd)
            elif fd == master:
                shown += chunk
            else:
                got += chunk
    piped.close()
    return shown, got


def test_a_terminal_stdout_gets_the_table_once_and_no_progress():
    """The reported fault: with stdout a terminal the live rows were drawn on stdout."""
    code, stdout, stderr = on_a_terminal(CHEAP, terminal="stdout")
    assert code == 0, stdout + stderr
    assert "running" not in stdout and "waiting" not in stdout and "probing" not in stdout
    assert stdout.count("framework") == 1 and stdout.count(VERDICT) == 1
    assert "CPU only" in stdout
    assert stderr == ""  # a pipe: no progress there either


@pytest.mark.parametrize("output", ["table", "json"])
def test_a_terminal_stderr_gets_the_progress_and_stdout_stays_plain(output):
    args = CHEAP + (("--json",) if output == "json" else ())
    code, stderr, stdout = on_a_terminal(args, terminal="stderr")
    assert code == 0, stderr + stdout
    assert "probing this machine" in stderr and "running" in stderr and CONTROL in stderr
    assert CONTROL not in stdout and "running" not in stdout
    if output == "json":
        assert json.loads(stdout)["results"][0]["status"] == "pass"
    else:
        assert stdout.count("framework") == 1 and stdout.count(VERDICT) == 1


def test_quiet_on_a_terminal_draws_no_progress():
    code, stderr, stdout = on_a_terminal(CHEAP + ("-q",), terminal="stderr")
    assert code == 0, stderr + stdout
    assert stderr == ""
    assert stdout.strip().splitlines() == [next(line for line in stdout.splitlines() if VERDICT in line)]


@pytest.mark.parametrize("how", ["root", "command", "env"])
def test_quiet_prints_the_failed_checks_and_the_verdict(how):
    args = {"root": ["-q", *CHEAP], "command": [*CHEAP, "-q"], "env": list(CHEAP)}[how]
    args[args.index("torch") + 1:args.index("torch") + 1] = ["paddle"]  # the fake paddle: SIGSEGV on import
    env = {"PYTHONPATH": SEGFAULT, **({"ENVDOCTOR_QUIET": "1"} if how == "env" else {})}
    result = run_cli(*args, env=env)
    assert result.returncode == 1, result.stderr
    lines = result.stdout.strip().splitlines()
    assert "paddle" in lines[1] and "killed by signal SIGSEGV" in lines[1]  # the failed row, under the header
    assert "torch" not in result.stdout  # the check that passed is left out
    assert lines[-1].startswith("smoke: 1 ok · 0 failing · 1 errors · 0 skipped")
    assert result.stderr == ""
