import sys
import time

from envdoctor import proc


def test_run_captures_output_and_status():
    result = proc.run([sys.executable, "-c", "import sys; print('hi'); sys.exit(3)"], timeout=10)
    assert result.stdout.strip() == "hi"
    assert result.returncode == 3 and not result.ok
    assert result.describe_failure() == "exited with status 3: hi"


def test_missing_program_is_a_result_not_an_exception():
    result = proc.run(["/nonexistent/nvidia-smi"], timeout=1)
    assert result.error == "/nonexistent/nvidia-smi: not found"


def test_timeout_kills_the_whole_process_group():
    start = time.monotonic()
    # The child spawns a grandchild that would keep the pipes open if only the child were killed.
    code = "import subprocess, sys, time; subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); time.sleep(60)"
    result = proc.run([sys.executable, "-c", code], timeout=0.5)
    assert time.monotonic() - start < 10
    assert result.returncode is None
    assert result.error.endswith("timed out after 0.5 s")


def test_signal_death_is_named():
    result = proc.run([sys.executable, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGSEGV)"], timeout=10)
    assert result.describe_failure() == "killed by signal SIGSEGV"


def test_read_text_missing_file_is_none(tmp_path):
    assert proc.read_text(tmp_path / "nope") is None
    (tmp_path / "f").write_text("x")
    assert proc.read_text(tmp_path / "f") == "x"
