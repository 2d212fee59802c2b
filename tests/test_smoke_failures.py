"""`envdoctor smoke` failure paths with real failures: fake frameworks that raise on import, die by a
signal or hang (tests/fixtures/fakeframeworks/, first on PYTHONPATH of the target interpreter), a
target without frameworks, and bad options. The CLI runs in a subprocess, as a user runs it."""

import json
import os
import pty
import select
import subprocess
import sys
import time

import pytest

from conftest import FIXTURES, ROOT, run_cli

FAKES = FIXTURES / "fakeframeworks"


def smoke_json(*args, fake=None, timeout=120):
    env = {"PYTHONPATH": str(FAKES / fake)} if fake else None
    proc = run_cli("smoke", "--python", sys.executable, "--json", *args, env=env, timeout=timeout)
    return proc, json.loads(proc.stdout)


def by_check(doc):
    return {r["check"]: r for r in doc["results"]}


def test_import_error_is_an_error_with_its_reason_and_code():
    proc, doc = smoke_json("torch", fake="import_error")
    assert proc.returncode == 1
    assert doc["schema"] == "envdoctor.smoke/1"
    results = by_check(doc)
    devices = results["devices"]
    assert devices["status"] == "error"
    assert "import torch failed: ImportError: libcudnn.so.9: cannot open shared object file" in devices["reason"]
    assert devices["code"] == "cuda-libs-missing"  # matched through matrices/smoke.toml
    assert devices["fix"] == "Install the CUDA libraries this build needs (its pip extras): `envdoctor install torch`"
    assert devices["details"]["phase"] == "import"
    # The other checks are not run against a framework that does not import, and say so.
    rest = [r for c, r in results.items() if c != "devices"]
    assert [r["check"] for r in rest] == ["cnn", "oom", "repro", "amp", "multi"]
    assert all(r["status"] == "skip" for r in rest)
    # oom is skipped before anything starts on a machine without a GPU; the others because torch did not import.
    assert all("torch did not import" in r["reason"] for r in rest if r["check"] != "oom")
    assert set(doc["results"][0]) == {"framework", "check", "device", "status", "seconds", "details", "reason", "code", "fix"}


@pytest.mark.parametrize("fake, framework, signal", [("sigill", "tensorflow", "SIGILL"), ("segfault", "paddle", "SIGSEGV")])
def test_crash_by_signal_is_reported_not_propagated(fake, framework, signal):
    proc, doc = smoke_json(framework, "--checks", "devices,cnn", fake=fake)
    assert proc.returncode == 1
    first, second = doc["results"]
    assert first["status"] == "error"
    assert first["reason"] == f"killed by signal {signal} while importing {framework}"
    assert first["details"]["signal"] == signal
    assert second["status"] == "skip" and f"{framework} did not import" in second["reason"]
    assert proc.stderr == ""


def test_hang_is_stopped_by_the_timeout():
    start = time.monotonic()
    proc, doc = smoke_json("jax", "--checks", "devices,cnn", "--timeout", "3", fake="hang", timeout=60)
    elapsed = time.monotonic() - start
    assert proc.returncode == 1
    first, second = doc["results"]
    assert first["status"] == "error"
    assert first["reason"] == "timed out after 3 s while importing jax"
    # The hanging import is not waited for a second time.
    assert second["status"] == "skip" and "jax did not import" in second["reason"]
    assert elapsed < 50  # (bounded by run_cli's own 60 s timeout; a stuck envdoctor would raise there)


def test_console_table_names_failures_and_codes():
    proc = run_cli("smoke", "torch", "--python", sys.executable, "--checks", "devices",
                   env={"PYTHONPATH": str(FAKES / "import_error"), "COLUMNS": "200"})
    assert proc.returncode == 1
    assert "import torch failed" in proc.stdout and "[cuda-libs-missing]" in proc.stdout
    assert "smoke: 0 ok · 0 failing · 1 errors · 0 skipped" in proc.stdout
    assert "\x1b[" not in proc.stdout  # no live view, no colour when stdout is not a terminal


@pytest.fixture(scope="module")
def bare_python(tmp_path_factory):
    """A virtual environment without any framework: the target of the not-installed test."""
    where = tmp_path_factory.mktemp("bare") / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(where)], check=True, timeout=120)
    return str(where / "bin" / "python")


def test_frameworks_not_installed_are_skipped_with_the_install_command(bare_python):
    proc = run_cli("smoke", "--python", bare_python, "--json")
    doc = json.loads(proc.stdout)
    assert proc.returncode == 0
    assert [(r["framework"], r["check"], r["status"]) for r in doc["results"]] == [
        ("torch", "all", "skip"), ("tensorflow", "all", "skip"), ("jax", "all", "skip"), ("paddle", "all", "skip")]
    torch = doc["results"][0]
    assert torch["reason"] == f"torch is not installed in {bare_python}; install it with `envdoctor install torch`"


def test_named_framework_alias_not_installed(bare_python):
    proc = run_cli("smoke", "pytorch", "tf", "--python", bare_python, env={"COLUMNS": "200"})
    assert proc.returncode == 1  # named, so a framework that cannot run is a failure
    assert "envdoctor install torch" in proc.stdout and "envdoctor install tensorflow" in proc.stdout
    assert "jax" not in proc.stdout


@pytest.mark.parametrize("args, message", [
    (["--checks", "cnn,warp"], "unknown check 'warp' in --checks (choose from devices,cnn,oom,repro,amp,multi)"),
    (["--checks", ","], "--checks needs at least one of devices,cnn,oom,repro,amp,multi"),
    (["mxnet"], "unknown framework 'mxnet' (choose from torch, tensorflow, jax, paddle)"),
    (["--device", "tpu"], "--device must be one of auto, cpu, cuda, not 'tpu'"),
    (["--timeout", "-1"], "--timeout must be a positive number of seconds, not -1"),
    (["--timeout", "inf"], "--timeout must be a positive number of seconds, not inf"),
    (["--python", "/nonexistent/python"], "cannot run target interpreter /nonexistent/python"),
])
def test_bad_options_exit_2_with_one_line(args, message):
    proc = run_cli("smoke", *args)
    assert proc.returncode == 2
    assert proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("envdoctor: error: ") and message in lines[0]


def test_live_view_on_a_terminal():
    """On a terminal a live view shows each framework × check with a spinner while it runs."""
    master, slave = pty.openpty()
    env = dict(os.environ, PYTHONPATH=str(FAKES / "hang"), COLUMNS="120", LINES="40", TERM="xterm-256color")
    env.pop("NO_COLOR", None)
    proc = subprocess.Popen([sys.executable, "-m", "envdoctor", "smoke", "jax", "--python", sys.executable,
                             "--checks", "devices,cnn", "--timeout", "3"],
                            stdin=slave, stdout=slave, stderr=slave, env=env, cwd=ROOT)
    os.close(slave)
    output = b""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 0.5)
        if ready:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # the child closed the terminal
                break
            if not chunk:
                break
            output += chunk
        elif proc.poll() is not None:
            break
    os.close(master)
    assert proc.wait(timeout=10) == 1
    text = output.decode("utf-8", "replace")
    assert "running" in text  # the live row while the check ran
    assert "waiting" in text  # the next row, not started yet
    assert "timed out after 3 s while importing jax" in text  # the final table
    assert "\x1b[" in text  # drawn with terminal control codes
