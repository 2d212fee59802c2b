"""Every recorded machine is valid Facts and replays through `envdoctor check --facts`."""

import json
import subprocess
import sys

import pytest

from envdoctor.facts import Facts, load_facts
from tests.conftest import FIXTURES

MACHINES = sorted((FIXTURES / "machines").glob("*.json"))
REQUIRED = {"rtx5090-r570", "gtx1080-current", "t4-r550-py310", "a100-current", "gh200", "jetson-orin-jp62",
            "jetson-orin-jp51", "jetson-thor", "wsl2", "windows-tf", "apple-silicon", "cpu-only", "amd-mi300",
            "macos-rosetta"}


def test_the_machines_the_plans_are_tested_on_are_all_recorded():
    assert REQUIRED <= {p.stem for p in MACHINES}


@pytest.mark.parametrize("path", MACHINES, ids=lambda p: p.stem)
def test_machine_loads_and_round_trips(path):
    facts = load_facts(path)
    assert Facts.from_dict(json.loads(json.dumps(facts.to_dict()))) == facts
    assert facts.host.os in ("linux", "windows", "macos")
    assert facts.host.arch in ("x86_64", "aarch64", "arm64")
    assert facts.python.executable and facts.python.version and facts.python.env_kind
    for gpu in facts.gpus:
        major, minor = gpu.compute_capability.split(".")
        assert major.isdigit() and minor.isdigit()


def test_every_machine_replays_through_check():
    """In-process for every recorded machine (others add theirs here too)."""
    from typer.testing import CliRunner

    from envdoctor.cli import app

    runner = CliRunner()
    for path in MACHINES:
        result = runner.invoke(app, ["check", "--json", "--facts", str(path)])
        assert result.exit_code in (0, 1), (path.name, result.output)
        replayed = Facts.from_dict(json.loads(result.stdout)["facts"])
        assert replayed == load_facts(path), path.name


def test_platform_machines_replay_through_the_real_cli():
    """The real CLI in subprocesses (side by side) on a few very different recorded machines."""
    procs = {name: subprocess.Popen([sys.executable, "-m", "envdoctor", "check", "--json", "--facts",
                                     str(FIXTURES / "machines" / f"{name}.json")],
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for name in ("jetson-orin-jp51", "windows-tf", "wsl2", "macos-rosetta")}
    for name, proc in procs.items():
        out, err = proc.communicate(timeout=120)
        assert proc.returncode in (0, 1), (name, err)
        assert json.loads(out)["facts"]["python"]["executable"], name


def test_jetson_machines_say_what_their_driver_number_means():
    for name in ("jetson-orin-jp62", "jetson-orin-jp51", "jetson-thor"):
        facts = load_facts(FIXTURES / "machines" / f"{name}.json")
        assert facts.jetson is not None and facts.nvidia.driver_kind == "jetson"
    assert load_facts(FIXTURES / "machines" / "wsl2.json").nvidia.driver_kind == "wsl"


def test_every_machine_renders_every_finding_on_the_console():
    """The console report (with -v) of every recorded machine shows each finding of its JSON report."""
    from typer.testing import CliRunner

    from envdoctor.cli import app

    runner = CliRunner()
    for path in MACHINES:
        findings = json.loads(runner.invoke(app, ["check", "--json", "--facts", str(path)]).stdout)["findings"]
        console = runner.invoke(app, ["check", "-v", "--facts", str(path)], env={"NO_COLOR": "1", "COLUMNS": "1000"})
        assert console.exit_code in (0, 1) and isinstance(console.exception, (SystemExit, type(None))), (path.name, console.output)
        for finding in findings:
            assert f"[{finding['code']}]" in console.stdout, (path.name, finding["code"])
        problems = [f for f in findings if f["severity"] in ("error", "warning")]
        assert ("No problems found." in console.stdout) == (not problems), path.name
