"""contrib/npd: the custom plugin monitor config and its script, against node-problem-detector's
documented plugin contract (exit 0 OK, 1 problem, other Unknown; message cut at max_output_length)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MACHINES = ROOT / "tests" / "fixtures" / "machines"
NPD = ROOT / "contrib" / "npd"


def plugin(envdoctor_args: str, envdoctor: str | None = None) -> subprocess.CompletedProcess:
    env = dict(os.environ, ENVDOCTOR=envdoctor or f"{sys.executable} -m envdoctor", ENVDOCTOR_ARGS=envdoctor_args,
               ENVDOCTOR_NVML="0", PYTHONPATH=str(ROOT))
    return subprocess.run(["bash", str(NPD / "check_envdoctor.sh")], capture_output=True, text=True, timeout=120, env=env)


def test_config_is_a_custom_plugin_monitor():
    config = json.loads((NPD / "envdoctor-plugin-monitor.json").read_text())
    assert config["plugin"] == "custom"
    assert config["pluginConfig"]["max_output_length"] == 80
    [condition] = config["conditions"]
    [rule] = config["rules"]
    assert rule["type"] == "permanent" and rule["condition"] == condition["type"]
    assert rule["path"].endswith("check_envdoctor.sh")
    seconds = lambda text: int(text.rstrip("s"))  # noqa: E731
    assert seconds(rule["timeout"]) <= seconds(config["pluginConfig"]["timeout"]) < seconds(config["pluginConfig"]["invoke_interval"])


def test_exit_codes_and_messages(tmp_path):
    ok = plugin(f"--facts {MACHINES / 'a100-current.json'}")
    assert (ok.returncode, ok.stdout) == (0, "envdoctor: ok\n")
    bad = plugin(f"--facts {MACHINES / 'diag-driver-old.json'}")
    assert bad.returncode == 1 and bad.stdout.startswith("driver-too-old: ") and len(bad.stdout.rstrip("\n")) <= 80
    facts = json.loads((MACHINES / "a100-current.json").read_text())
    facts["errors"] = [{"probe": "nvidia-smi", "message": "`nvidia-smi` timed out after 5 s"}]
    (tmp_path / "hung.json").write_text(json.dumps(facts))
    unknown = plugin(f"--facts {tmp_path / 'hung.json'}")
    assert unknown.returncode == 2 and unknown.stdout.startswith("unknown: nvidia-smi: ")
    missing = plugin("", envdoctor="/nonexistent/envdoctor")
    assert (missing.returncode, missing.stdout) == (2, "unknown: envdoctor not found\n")
