"""contrib/ansible with the real ansible-core: facts.d through `setup` on localhost (local
connection), `--tree` gathered and fed to `envdoctor fleet`, and the example playbook."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import run_cli

ROOT = Path(__file__).resolve().parent.parent
MACHINES = ROOT / "tests" / "fixtures" / "machines"
BIN = Path(sys.executable).parent
ANSIBLE = shutil.which("ansible", path=f"{BIN}:{os.environ.get('PATH', '')}")
PLAYBOOK = shutil.which("ansible-playbook", path=f"{BIN}:{os.environ.get('PATH', '')}")

pytestmark = pytest.mark.skipif(ANSIBLE is None, reason="ansible-core not installed (pip install ansible-core)")


def ansible_env(tmp_path: Path, envdoctor_args: str = "") -> dict:
    env = dict(os.environ)
    env.update({
        "ENVDOCTOR": f"{sys.executable} -m envdoctor",  # what the facts.d script runs
        "ENVDOCTOR_ARGS": envdoctor_args,
        "ENVDOCTOR_NVML": "0",
        "PYTHONPATH": str(ROOT),
        "ANSIBLE_HOME": str(tmp_path / "ansible-home"),
        "ANSIBLE_LOCAL_TEMP": str(tmp_path / "ansible-tmp"),
        "ANSIBLE_REMOTE_TEMP": str(tmp_path / "ansible-remote-tmp"),
        "ANSIBLE_LOCALHOST_WARNING": "False",
        "ANSIBLE_INVENTORY_UNPARSED_WARNING": "False",
        "ANSIBLE_DEPRECATION_WARNINGS": "False",
        "ANSIBLE_NOCOLOR": "1",
        "ANSIBLE_PYTHON_INTERPRETER": sys.executable,
    })
    return env


def facts_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "facts.d"
    folder.mkdir()
    shutil.copy(ROOT / "contrib" / "ansible" / "envdoctor.fact", folder / "envdoctor.fact")
    return folder


def setup_tree(tmp_path: Path, envdoctor_args: str = "") -> Path:
    tree = tmp_path / "tree"
    result = subprocess.run(
        [ANSIBLE, "localhost", "-i", "localhost,", "-c", "local", "-m", "setup",
         "-a", f"filter=ansible_local fact_path={facts_dir(tmp_path)}", "--tree", str(tree)],
        capture_output=True, text=True, timeout=180, env=ansible_env(tmp_path, envdoctor_args))
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    return tree


def test_setup_module_reads_the_facts_d_script(tmp_path):
    tree = setup_tree(tmp_path)
    result = json.loads((tree / "localhost").read_text())
    fact = result["ansible_facts"]["ansible_local"]["envdoctor"]
    assert isinstance(fact, dict), fact  # a failing script would be an error string here
    assert fact["schema"] == "envdoctor.ansible-fact/1"
    assert set(fact) >= {"ok", "exit", "summary", "facts", "findings"}
    assert fact["ok"] == (fact["exit"] == 0) and len(fact["summary"]) <= 80
    assert fact["facts"]["schema"] == "envdoctor.facts/1"


def test_tree_of_a_bad_machine_feeds_fleet(tmp_path):
    tree = setup_tree(tmp_path, f"--facts {MACHINES / 'diag-driver-old.json'}")
    fact = json.loads((tree / "localhost").read_text())["ansible_facts"]["ansible_local"]["envdoctor"]
    assert (fact["ok"], fact["exit"]) == (False, 1) and fact["summary"].startswith("driver-too-old: ")
    result = run_cli("fleet", str(tree), "--expect-hosts", "localhost,gpu07", "--json", env={"NO_COLOR": "1"})
    assert result.returncode == 1, result.stderr
    report = json.loads(result.stdout)
    assert report["nodes"] == 1 and report["unhealthy"][0]["nodes"] == "localhost"
    assert report["unhealthy"][0]["verdict"] == fact["summary"]
    assert report["silent"]["nodes"] == "gpu07"


@pytest.mark.skipif(PLAYBOOK is None, reason="ansible-playbook not installed")
def test_example_playbook_gathers_into_one_folder(tmp_path):
    out = tmp_path / "gathered"
    extra = {"envdoctor_fact_path": str(tmp_path / "facts.d"), "envdoctor_become": False, "envdoctor_out": str(out),
             "envdoctor_controller_command": [sys.executable, "-m", "envdoctor"]}
    result = subprocess.run(
        [PLAYBOOK, "-i", "localhost,", "-c", "local", str(ROOT / "contrib" / "ansible" / "gather-envdoctor.yml"),
         "-e", json.dumps(extra)],
        capture_output=True, text=True, timeout=300, env=ansible_env(tmp_path))
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    saved = json.loads((out / "localhost.json").read_text())
    assert saved["schema"] == "envdoctor.ansible-fact/1" and "summary" in saved
    assert "envdoctor fleet: 1 node" in result.stdout
