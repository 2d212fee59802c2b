"""Output that survives every terminal (the real CLI in a subprocess): encodings that cannot show the
marks, a reader that goes away, closed standard streams, Ctrl-C, hostile arguments; the exit-status
contract in every --help; -q/--quiet; shell completion."""

import importlib.util
import json
import os
import signal
import subprocess
import sys
import threading

import pytest

from conftest import FIXTURES, ROOT, run_cli

MACHINES = FIXTURES / "machines"
PROBLEMS = str(MACHINES / "diag-driver-old.json")  # one error (driver-too-old)
CLEAN = str(MACHINES / "diag-clean-rtx4090.json")
COMMANDS = ("check", "facts", "install", "matrix", "smoke", "explain")
HUGE = "9" * 5000


def envdoctor(*args: str) -> list[str]:
    return [sys.executable, "-m", "envdoctor", *args]


def bytes_run(*args: str, env=None, timeout=120) -> subprocess.CompletedProcess:
    full = {**os.environ, **(env or {})}
    full.pop("NO_COLOR", None)
    return subprocess.run(envdoctor(*args), capture_output=True, env=full, timeout=timeout, cwd=ROOT)


def assert_clean_failure(result, code=2):
    err = result.stderr if isinstance(result.stderr, str) else result.stderr.decode("utf-8", "replace")
    assert result.returncode == code, err
    assert "Traceback" not in err and "internal error" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("envdoctor: error: ") and len(lines[0]) < 600, err


# --- encodings ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("encoding", ["cp1252", "ascii", "latin-1"])
def test_a_narrow_encoding_gets_ascii_marks(encoding):
    result = bytes_run("check", "--facts", PROBLEMS, env={"PYTHONIOENCODING": encoding})
    assert result.returncode == 1, result.stderr
    text = result.stdout.decode(encoding)  # every byte is in the stream's encoding
    assert "[x] NVIDIA driver & GPUs" in text and "[ok] Python" in text
    assert "-> or update the NVIDIA driver" in text
    assert "?" not in text  # no character without an ASCII stand-in


def test_a_table_in_ascii_keeps_its_columns():
    result = bytes_run("matrix", "pytorch", "--facts", PROBLEMS, env={"PYTHONIOENCODING": "ascii"})
    rows = [line for line in result.stdout.decode("ascii").splitlines() if line.count("|") > 3]
    assert len(rows) > 3 and any("[ok]" in row for row in rows)
    assert len({tuple(i for i, ch in enumerate(row) if ch == "|") for row in rows}) == 1


def test_utf8_keeps_the_marks():
    result = bytes_run("check", "--facts", PROBLEMS, env={"PYTHONIOENCODING": "utf-8"})
    assert "✗ NVIDIA driver & GPUs" in result.stdout.decode("utf-8")


@pytest.mark.parametrize("encoding", ["ascii", "cp1252"])
def test_json_is_valid_in_any_encoding_and_says_the_same(encoding):
    narrow = bytes_run("check", "--json", "--facts", PROBLEMS, env={"PYTHONIOENCODING": encoding})
    wide = bytes_run("check", "--json", "--facts", PROBLEMS, env={"PYTHONIOENCODING": "utf-8"})
    narrow.stdout.decode(encoding)
    assert json.loads(narrow.stdout) == json.loads(wide.stdout)


@pytest.mark.parametrize("command", COMMANDS)
def test_help_in_ascii(command):
    result = bytes_run(command, "--help", env={"PYTHONIOENCODING": "ascii"})
    assert result.returncode == 0, result.stderr
    result.stdout.decode("ascii")


# --- the reader goes away ----------------------------------------------------------------------------

def test_a_closed_pipe_exits_141_without_a_traceback():
    proc = subprocess.Popen(envdoctor("check", "--facts", PROBLEMS, "-v"), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, cwd=ROOT)
    proc.stdout.close()  # the reader is gone before the first line is written
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 141, err
    assert err == ""


def test_head_of_a_clean_report_is_not_problems_found():
    script = f"set -o pipefail; {' '.join(envdoctor('check', '--facts', CLEAN))} | head -1 >/dev/null"
    result = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert result.returncode in (0, 141), result.stderr
    assert "Traceback" not in result.stderr and "Exception ignored" not in result.stderr


# --- closed standard streams -------------------------------------------------------------------------

def shell(command: str) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", "-c", command], capture_output=True, text=True, timeout=120, cwd=ROOT)


def test_closed_stdin():
    cmd = " ".join(envdoctor("explain", "-", "--facts", PROBLEMS))
    result = shell(f"{cmd} <&-")  # reads as empty: judged like no text at all
    assert result.returncode in (0, 1, 2), result.stderr
    assert "Traceback" not in result.stderr
    result = shell(" ".join(envdoctor("check", "--facts", PROBLEMS)) + " <&-")
    assert result.returncode == 1 and "driver-too-old" in result.stdout


def test_closed_stdout_and_stderr():
    result = shell(" ".join(envdoctor("check", "--facts", PROBLEMS)) + " >&-")
    assert result.returncode == 1 and "Traceback" not in result.stderr
    result = shell(" ".join(envdoctor("check", "--facts", "")) + " 2>&-")
    assert result.returncode == 2


# --- Ctrl-C ------------------------------------------------------------------------------------------

def test_ctrl_c_exits_130_in_one_line(tmp_path):
    """explain --file FIFO blocks in the command itself: opening the FIFO's other end proves it got
    there (no sleeping), then SIGINT is what Ctrl-C sends."""
    fifo = tmp_path / "log"
    os.mkfifo(fifo)
    proc = subprocess.Popen(envdoctor("explain", "--file", str(fifo), "--facts", PROBLEMS), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=ROOT)
    opened: list[int] = []
    opener = threading.Thread(target=lambda: opened.append(os.open(fifo, os.O_WRONLY)), daemon=True)
    opener.start()
    opener.join(timeout=120)  # returns once envdoctor opened the FIFO for reading
    try:
        assert opened, "envdoctor never opened the log"
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        for fd in opened:
            os.close(fd)
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    assert err.strip() == "envdoctor: interrupted"


# --- hostile arguments -------------------------------------------------------------------------------

HOSTILE = {
    "empty --facts": ["check", "--facts", ""],
    "blank --python": ["check", "--python", " "],
    "empty --facts (install)": ["install", "pytorch", "--facts", ""],
    "overlong --facts": ["check", "--facts", "a" * 5000],
    "huge --version": ["install", "pytorch", "--version", HUGE, "--facts", PROBLEMS],
    "huge --cuda": ["install", "pytorch", "--cuda", f"1{HUGE}.0", "--facts", PROBLEMS],
    "huge --cuda integer": ["install", "pytorch", "--cuda", "99999999999999999999999", "--facts", PROBLEMS],
    "huge matrix --version": ["matrix", "pytorch", "--version", f"{HUGE}.1", "--facts", PROBLEMS],
    "overlong framework": ["install", "x" * 100_000, "--facts", PROBLEMS],
    "infinite --timeout": ["smoke", "--timeout", "1e400"],
    "zero --timeout": ["smoke", "--timeout", "0"],
    "a --timeout no clock can wait for": ["smoke", "torch", "--checks", "devices", "--timeout", "1e308"],
    "overlong --checks": ["smoke", "--checks", "y" * 5000],
}


@pytest.mark.parametrize("name", list(HOSTILE))
def test_hostile_arguments_are_usage_errors(name):
    if "torch" in HOSTILE[name] and importlib.util.find_spec("torch") is None:
        pytest.skip("needs torch installed (the timeout is read when a check starts)")
    assert_clean_failure(run_cli(*HOSTILE[name]))


def test_an_overlong_error_text_is_not_an_internal_error():
    result = run_cli("explain", "--facts", PROBLEMS, "x" * 100_000)
    assert result.returncode in (0, 1) and "Traceback" not in result.stderr


# --- the contract, quiet, completion -----------------------------------------------------------------

@pytest.mark.parametrize("command", [None, *COMMANDS])
def test_every_help_states_the_exit_status(command):
    result = run_cli(*([command] if command else []), "--help", env={"COLUMNS": "200"})
    assert result.returncode == 0
    text = " ".join(result.stdout.split())
    assert "Exit status: 0" in text and "2 usage or input error" in text
    assert "130 interrupted" in text and "141 output pipe closed" in text


@pytest.mark.parametrize("how", ["root", "command", "env"])
def test_quiet_prints_the_errors_and_the_verdict(how):
    args = {"root": ["-q", "check"], "command": ["check", "-q"], "env": ["check"]}[how]
    env = {"ENVDOCTOR_QUIET": "1"} if how == "env" else None
    result = run_cli(*args, "--facts", PROBLEMS, env=env)
    assert result.returncode == 1
    assert "driver-too-old" in result.stdout and "1 error, 0 warnings." in result.stdout
    assert "Platform" not in result.stdout and "Python 3" not in result.stdout


def test_shell_completion_completes_commands_and_options():
    env = {"_ENVDOCTOR_COMPLETE": "complete_bash", "COMP_WORDS": "envdoctor install --man", "COMP_CWORD": "2"}
    assert run_cli(env=env).stdout.split() == ["--manager"]
    env.update(COMP_WORDS="envdoctor ch", COMP_CWORD="1")
    assert run_cli(env=env).stdout.split() == ["check"]
    assert "complete" in run_cli("--show-completion", "bash").stdout


# --- progress on stderr ------------------------------------------------------------------------------

def _read_all(fd: int) -> bytes:
    data = b""
    while True:
        try:
            chunk = os.read(fd, 65536)
        except OSError:  # EIO: the other end is closed
            return data
        if not chunk:
            return data
        data += chunk


def test_spinner_only_on_a_terminal_stderr():
    import pty

    master, slave = pty.openpty()
    try:
        result = subprocess.run(envdoctor("check", "--json"), stdout=subprocess.PIPE, stderr=slave,
                                stdin=subprocess.DEVNULL, timeout=120, cwd=ROOT)
        os.close(slave)
        slave = None
        on_terminal = _read_all(master).decode("utf-8", "replace")
    finally:
        if slave is not None:
            os.close(slave)
        os.close(master)
    assert "probing this machine" in on_terminal
    json.loads(result.stdout)  # stdout untouched by the spinner
    piped = run_cli("check", "--json")
    assert "probing" not in piped.stderr


def test_ctrl_c_while_the_probes_run(tmp_path):
    """The target interpreter is a script that blocks on a FIFO: once the test's end of the FIFO
    opens, the probes are running in their thread; SIGINT then ends envdoctor with 130 at once."""
    fifo = tmp_path / "gate"
    os.mkfifo(fifo)
    fake = tmp_path / "python3"
    fake.write_text(f"#!/bin/sh\nexec 3<'{fifo}'\ncat <&3 >/dev/null\nexit 1\n")
    fake.chmod(0o755)
    proc = subprocess.Popen(envdoctor("check", "--python", str(fake)), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=ROOT)
    opened: list[int] = []
    opener = threading.Thread(target=lambda: opened.append(os.open(fifo, os.O_WRONLY)), daemon=True)
    opener.start()
    opener.join(timeout=120)
    try:
        assert opened, "the probe never ran the target interpreter"
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        for fd in opened:
            os.close(fd)  # the fake interpreter reads EOF and exits
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    assert "Traceback" not in err and err.strip().splitlines()[-1] == "envdoctor: interrupted"
