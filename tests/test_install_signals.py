"""SIGTERM and SIGHUP roll `install --run` back like Ctrl-C (issue 10 §1), with a real signal sent
to a real `envdoctor install --run` subprocess.

The target venv holds a tiny `torch 2.13.0` wheel from the default registry (PIP_INDEX_URL, served
on 127.0.0.1). The plan for the CPU build first uninstalls it, then asks the vendor's index
(ENVDOCTOR_INDEX, another server on 127.0.0.1) — which never answers, like a stalled download. The
signal arrives while pip waits: envdoctor must stop pip's process group, put torch back from the
default registry (never from the stalled vendor index) and exit 128+N.
"""

import http.server
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.test_install_restore import (IndexServer, Quiet, installed, isolated_pip_env, make_venv, pip,
                                        simple_index)

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
WAIT = 120  # seconds any one step may take before the test gives up (a bound, not a timing)


class StalledIndex:
    """An index on 127.0.0.1 that accepts every request and never answers (until closed)."""

    def __init__(self):
        self.asked = threading.Event()
        self.release = threading.Event()
        self.seen = []
        outer = self

        class Handler(Quiet):
            def do_GET(self):
                outer.seen.append(self.path)
                outer.asked.set()
                outer.release.wait(WAIT * 3)

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/simple/"

    def close(self):
        self.release.set()
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def registry(tmp_path):
    server = IndexServer(simple_index(tmp_path / "registry", ("torch", "2.13.0")))
    yield server
    server.close()


@pytest.fixture
def stalled():
    server = StalledIndex()
    yield server
    server.close()


@pytest.fixture
def target(tmp_path, registry):
    venv = make_venv(tmp_path / "venv")
    pip(venv, "install", "torch==2.13.0", env=isolated_pip_env(PIP_INDEX_URL=registry.url))
    return venv


def start_install(venv: Path, tmp_path: Path, registry_url: str, vendor_url: str) -> tuple[subprocess.Popen, Path]:
    log = tmp_path / "out.txt"
    env = isolated_pip_env(PIP_INDEX_URL=registry_url, ENVDOCTOR_INDEX=vendor_url, NO_COLOR="1",
                           ENVDOCTOR_STATE_DIR=str(tmp_path / "state"), PYTHONPATH=str(ROOT))
    argv = [sys.executable, "-m", "envdoctor", "install", "pytorch", "--python", str(venv), "--cuda", "cpu",
            "--version", "2.13.0", "--run", "--yes"]
    with open(log, "w") as out:
        child = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, env=env,
                                 cwd=tmp_path)
    return child, log


def wait_for(event: threading.Event, child: subprocess.Popen, log: Path) -> None:
    if not event.wait(WAIT):
        child.kill()
        pytest.fail("the installer never reached the index:\n" + log.read_text())


def installers_of(venv: Path) -> list[int]:
    """Processes still running a pip of this venv (read from /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if cmdline and cmdline[0] == str(venv).encode() and b"pip" in cmdline:
            found.append(int(entry.name))
    return found


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
def test_a_stop_signal_stops_the_installer_and_restores(target, tmp_path, registry, stalled, signum):
    child, log = start_install(target, tmp_path, registry.url, stalled.url)
    wait_for(stalled.asked, child, log)  # torch is uninstalled, pip waits on the vendor's index
    assert "torch" not in installed(target)
    asked_before = len(stalled.seen)

    child.send_signal(signum)
    code = child.wait(WAIT)

    out = log.read_text()
    name = signal.Signals(signum).name
    assert code == 128 + signum, out
    assert f"✗ interrupted: the installer was stopped ({name})." in out
    assert "✓ restored: the environment has the same packages as before." in out
    assert installed(target) == {"torch": "2.13.0"}  # back, from the default registry
    assert len(stalled.seen) == asked_before  # the restore never asked the plan's (stalled) index
    assert not installers_of(target)  # pip's process group was stopped, not left running
    assert "Traceback" not in out


def test_a_second_signal_lets_the_restore_finish_and_a_third_says_exactly_what_is_left(target, tmp_path, stalled):
    """The default registry stalls too: the restore waits on it. A second SIGTERM is noted and the
    restore goes on; a third stops it, and envdoctor lists what is still not as before."""
    registry = StalledIndex()
    try:
        child, log = start_install(target, tmp_path, registry.url, stalled.url)
        wait_for(stalled.asked, child, log)
        child.send_signal(signal.SIGTERM)
        wait_for(registry.asked, child, log)  # the restore is asking the default registry
        child.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + WAIT
        while "finishing the restore first" not in log.read_text() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert child.poll() is None, log.read_text()  # still restoring after the second signal
        child.send_signal(signal.SIGTERM)
        code = child.wait(WAIT)
    finally:
        registry.close()

    out = log.read_text()
    assert code == 143, out
    assert "! SIGTERM during the restore: finishing the restore first" in out
    assert "✗ interrupted while restoring: the environment may be half restored." in out
    assert "Still different from before: torch (removed, was 2.13.0)" in out
    assert not installers_of(target)
    assert "Traceback" not in out
