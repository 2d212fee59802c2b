"""contrib/nhc/envdoctor.nhc under NHC's documented contract (die / log / return codes).

NHC is not packaged here, so tests/fixtures/fleet/nhc/mini-nhc implements the part of mej/nhc's
`nhc` a check file relies on (its `die` and `log`, checks run by `eval`); envdoctor runs for real."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
MACHINES = ROOT / "tests" / "fixtures" / "machines"
HARNESS = ROOT / "tests" / "fixtures" / "fleet" / "nhc" / "mini-nhc"
CHECK_FILE = ROOT / "contrib" / "nhc" / "envdoctor.nhc"


def nhc(envdoctor_args: str, **settings) -> subprocess.CompletedProcess:
    env = dict(os.environ, ENVDOCTOR=f"{sys.executable} -m envdoctor", ENVDOCTOR_ARGS=envdoctor_args,
               ENVDOCTOR_NVML="0", PYTHONPATH=str(ROOT), **settings)
    return subprocess.run(["bash", str(HARNESS), str(CHECK_FILE), "check_envdoctor"], capture_output=True, text=True,
                          timeout=120, env=env)


def unjudgeable(tmp_path: Path) -> Path:
    facts = json.loads((MACHINES / "a100-current.json").read_text())
    facts["errors"] = [{"probe": "nvml", "message": "timed out after 5 s"}]
    path = tmp_path / "hung-nvml.json"
    path.write_text(json.dumps(facts))
    return path


def test_healthy_node_passes():
    result = nhc(f"--facts {MACHINES / 'a100-current.json'}")
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.strip().endswith("completed successfully.")


def test_problem_dies_with_the_oneline_verdict():
    result = nhc(f"--facts {MACHINES / 'diag-driver-old.json'}")
    assert result.returncode == 1
    [line] = result.stdout.splitlines()
    assert line.startswith("ERROR:  nhc:  Health check failed:  envdoctor: driver-too-old: ")
    assert len(line.split("Health check failed:  ", 1)[1]) <= len("envdoctor: ") + 80


def test_cannot_judge_logs_and_passes_unless_fail_closed(tmp_path):
    path = unjudgeable(tmp_path)
    passed = nhc(f"--facts {path}")
    assert passed.returncode == 0
    assert "envdoctor: cannot judge this node (exit 2): unknown: nvml: timed out after 5 s" in passed.stdout
    closed = nhc(f"--facts {path}", ENVDOCTOR_FAIL_CLOSED="1")
    assert closed.returncode == 1
    assert closed.stdout.strip() == "ERROR:  nhc:  Health check failed:  envdoctor: unknown: nvml: timed out after 5 s"


def test_envdoctor_missing_is_cannot_judge():
    result = subprocess.run(["bash", str(HARNESS), str(CHECK_FILE), "check_envdoctor"], capture_output=True, text=True,
                            timeout=60, env=dict(os.environ, ENVDOCTOR="/nonexistent/envdoctor"))
    assert result.returncode == 0 and "unknown: /nonexistent/envdoctor not found" in result.stdout


@pytest.mark.parametrize("timeout_s", ["1"])
def test_a_hung_envdoctor_is_killed_and_judged_unknown(tmp_path, timeout_s):
    hung = tmp_path / "envdoctor"
    hung.write_text("#!/bin/sh\nexec sleep 30\n")
    hung.chmod(0o755)
    result = subprocess.run(["bash", str(HARNESS), str(CHECK_FILE), "check_envdoctor"], capture_output=True, text=True,
                            timeout=60, env=dict(os.environ, ENVDOCTOR=str(hung), ENVDOCTOR_TIMEOUT=timeout_s))
    assert result.returncode == 0 and f"unknown: envdoctor timed out after {timeout_s} s" in result.stdout
