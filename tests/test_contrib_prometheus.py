"""envdoctor's textfile in the real node_exporter (Debian's prometheus-node-exporter), started on
127.0.0.1 by the test, scraped over HTTP; `promtool check metrics` (Debian's prometheus) on what it served."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

from conftest import run_cli
from test_node_output import parse_exposition

ROOT = Path(__file__).resolve().parent.parent
MACHINES = ROOT / "tests" / "fixtures" / "machines"
EXPORTER = shutil.which("prometheus-node-exporter") or shutil.which("node_exporter")
ENV = {"ENVDOCTOR_NVML": "0", "NO_COLOR": "1"}

pytestmark = pytest.mark.skipif(EXPORTER is None, reason="node_exporter not installed (Debian package prometheus-node-exporter)")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def exporter(tmp_path):
    """node_exporter with only the textfile collector, reading tmp_path/textfile; yields (dir, scrape)."""
    textfile = tmp_path / "textfile"
    textfile.mkdir()
    port = free_port()
    proc = subprocess.Popen([EXPORTER, f"--web.listen-address=127.0.0.1:{port}", "--collector.disable-defaults",
                             "--collector.textfile", f"--collector.textfile.directory={textfile}"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)

    def scrape() -> str:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
            return response.read().decode()

    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                scrape()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"node_exporter did not start: {proc.stderr.read().decode()[-500:]}") from None
                time.sleep(0.1)
        yield textfile, scrape
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


def envdoctor_series(text: str) -> str:
    return "\n".join(line for line in text.splitlines() if "envdoctor_" in line) + "\n"


def test_node_exporter_serves_envdoctor_metrics(exporter):
    textfile, scrape = exporter
    result = run_cli("check", "--facts", str(MACHINES / "diag-driver-old.json"), "--profile", "node", "--format", "oneline",
                     "--textfile-dir", str(textfile), env=ENV)
    assert result.returncode == 1
    served = scrape()
    samples = parse_exposition(served)
    assert samples["node_textfile_scrape_error"] == [("", "0")]  # the collector read the file without complaint
    assert samples["envdoctor_healthy"] == [("", "0")]
    assert ('{code="driver-too-old",severity="error"}', "1") in samples["envdoctor_finding"]
    [(labels, value)] = samples["envdoctor_info"]
    assert value == "1" and 'driver_version="470.182.03"' in labels and 'torch="2.6.0+cu124"' in labels
    assert samples["envdoctor_gpus"] == [("", "1")]
    assert "envdoctor_last_run_timestamp_seconds" in samples

    healthy = run_cli("check", "--facts", str(MACHINES / "a100-current.json"), "--textfile-dir", str(textfile),
                      "--format", "oneline", env=ENV)
    assert healthy.returncode == 0 and healthy.stdout == "ok\n"
    samples = parse_exposition(scrape())
    assert samples["envdoctor_healthy"] == [("", "1")] and "envdoctor_finding" not in samples
    assert samples["node_textfile_scrape_error"] == [("", "0")]


@pytest.mark.skipif(not shutil.which("promtool"), reason="promtool not installed (Debian package prometheus)")
def test_promtool_accepts_what_node_exporter_served(exporter):
    textfile, scrape = exporter
    run_cli("check", "--facts", str(MACHINES / "diag-driver-old.json"), "--textfile-dir", str(textfile), env=ENV)
    served = envdoctor_series(scrape())
    assert "envdoctor_info{" in served
    result = subprocess.run(["promtool", "check", "metrics"], input=served, capture_output=True, text=True, timeout=30)
    assert result.returncode == 0, result.stdout + result.stderr
