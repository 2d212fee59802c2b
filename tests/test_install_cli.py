"""`envdoctor install` end to end: the real CLI in a subprocess, on recorded machines."""

import json
import os
import pty
import shlex
import subprocess
import sys

import pytest

from envdoctor.errors import UsageError
from envdoctor.facts import load_facts
from envdoctor.plan import PlanRequest, make_plan
from envdoctor.render.plan import shell_command
from tests.conftest import ROOT, FIXTURES, run_cli

MACHINES = FIXTURES / "machines"
PLAN_KEYS = {"framework", "version", "build", "python", "manager", "index_url", "commands", "reasons",
             "rejected", "warnings", "replaces", "steps"}


def machine(name):
    return str(MACHINES / f"{name}.json")


def plan_json(*args):
    result = run_cli("install", *args, "--json")
    assert result.returncode in (0, 1), result.stderr
    return json.loads(result.stdout), result.returncode


@pytest.mark.parametrize("framework", ["pytorch", "tensorflow", "jax", "paddle"])
def test_every_recorded_machine_gets_a_well_formed_plan(framework):
    """In-process over every recorded machine (the CLI path is covered below)."""
    for path in sorted(MACHINES.glob("*.json")):
        plan = make_plan(load_facts(path), PlanRequest(framework=framework)).to_dict()
        where = f"{framework} on {path.stem}"
        assert PLAN_KEYS <= set(plan) and plan["framework"] == framework, where
        assert bool(plan["version"] and plan["commands"]) or plan["steps"], where  # a plan, or what to change
        for argv in plan["commands"]:
            assert argv and all(isinstance(t, str) and t for t in argv), where
            assert not any(" install " in t for t in argv), where  # argv lists, never a shell string
        for r in plan["rejected"]:
            assert r["candidate"] and r["why"], where
        json.dumps(plan)


@pytest.mark.parametrize("name, version, build", [
    ("rtx5090-r570", None, "cu128"),  # Blackwell needs cu128+; cu129/cu130 need a newer driver here
    ("gtx1080-current", None, "cu126"),  # the newest driver, but CUDA 13 builds have no sm_61 kernels
    ("cpu-only", None, "cpu"),
])
def test_the_chosen_build_fits_the_machine(name, version, build):
    plan, code = plan_json("pytorch", "--facts", machine(name))
    assert code == 0 and plan["build"] == build
    assert plan["index_url"].endswith(f"/whl/{build}")


def test_console_commands_are_copy_pasteable():
    """Each `$ ` line, split like a shell would, is exactly the argv of the JSON plan."""
    plan, _ = plan_json("pytorch", "--facts", machine("gtx1080-current"))
    result = run_cli("install", "pytorch", "--facts", machine("gtx1080-current"))
    assert result.returncode == 0
    shown = [line.strip()[2:] for line in result.stdout.splitlines() if line.strip().startswith("$ ")]
    assert [shlex.split(line) for line in shown] == plan["commands"]
    assert any("'" in line for line in shown)  # a specifier with < or > is quoted
    assert f"PyTorch {plan['version']} ({plan['build']}) for Python 3.11" in result.stdout
    for r in plan["rejected"]:
        assert f"✗ {r['candidate']}: {r['why']}" in result.stdout


def test_windows_commands_are_quoted_for_windows_shells():
    result = run_cli("install", "pytorch", "--facts", machine("windows-tf"))
    line = next(line.strip()[2:] for line in result.stdout.splitlines() if line.strip().startswith("$ "))
    assert line.startswith("C:\\Users\\maria\\tf-env\\Scripts\\python.exe -m pip install")
    for token in line.split():
        assert not token.startswith(("<", ">")) and "'" not in token
    assert shell_command(["x", "torchvision>=0.29.1,<0.30"], windows=True) == 'x "torchvision>=0.29.1,<0.30"'


@pytest.mark.parametrize("alias, name", [("torch", "PyTorch"), ("tf", "tensorflow"), ("paddlepaddle", "paddle")])
def test_aliases_give_the_same_plan(alias, name):
    assert plan_json(alias, "--facts", machine("a100-current")) == plan_json(name, "--facts", machine("a100-current"))


@pytest.mark.parametrize("framework, name, build", [
    ("tensorflow", "rtx5090-r570", "cu125"),  # tensorflow[and-cuda] on Linux with a GPU
    ("tensorflow", "apple-silicon", "metal"),
    ("jax", "a100-current", "cuda13"),  # driver 580 runs the CUDA 13 plugin
    ("paddle", "t4-r550-py310", "cu126"),  # R550 cannot run cu129/cu130
])
def test_other_frameworks_end_to_end(framework, name, build):
    plan, code = plan_json(framework, "--facts", machine(name))
    assert code == 0 and plan["framework"] == framework and plan["build"] == build
    assert plan["commands"] and plan["reasons"]


def test_nothing_fits_exits_1_and_says_what_to_change():
    result = run_cli("install", "pytorch", "--facts", machine("cpu-only"), "--version", "2.0", "--cuda", "cu132")
    assert result.returncode == 1
    assert result.stdout.startswith("No PyTorch build fits this machine")
    assert "What to change:" in result.stdout


@pytest.mark.parametrize("args, message", [
    (["torchh"], "unknown framework 'torchh' (choose pytorch, tensorflow, jax or paddle); did you mean 'torch'?"),
    (["pytorch", "--cuda", "12"], "--cuda '12': PyTorch builds name a CUDA minor too: 12.8 or cu128"),
    (["pytorch", "--cuda", "twelve"], "--cuda 'twelve': use auto, cpu, a CUDA version (12.8), a tag (cu128) or rocmX.Y"),
    (["pytorch", "--manager", "poetry"], "--manager 'poetry' is not one of: pip, uv, conda"),
    (["pytorch", "--version", "two"], "--version 'two' is neither a version (2.6) nor a specifier ('>=2.5,<2.8')"),
    (["pytorch", "--facts", "x.json", "--python", "/usr/bin/python3"], "--facts and --python name two different targets; give one of them"),
    (["pytorch", "--run", "--json"], "--run asks before it runs; it cannot be combined with --json"),
    (["pytorch", "--facts", "/nonexistent.json"], "cannot read facts file /nonexistent.json: No such file or directory"),
])
def test_usage_errors_are_one_line_and_exit_2(args, message):
    result = run_cli("install", *args)
    assert result.returncode == 2
    assert result.stderr == f"envdoctor: error: {message}\n"
    assert result.stdout == ""


@pytest.mark.parametrize("command", ["install", "matrix"])
@pytest.mark.parametrize("cuda, version", [("99.9", "99.9"), ("cu999", "99.9"), ("6.5", "6.5"), ("cu1210", "12.10")])
def test_a_cuda_version_no_driver_table_row_knows_is_a_usage_error(command, cuda, version):
    result = run_cli(command, "pytorch", "--facts", machine("a100-current"), "--cuda", cuda)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.startswith(f"envdoctor: error: --cuda '{cuda}': CUDA {version} is not a CUDA version envdoctor knows (")
    assert len(result.stderr.splitlines()) == 1


@pytest.mark.parametrize("command", ["install", "matrix"])
def test_a_malformed_facts_file_is_one_line(command, tmp_path):
    broken = tmp_path / "machine.json"
    broken.write_text('{"schema": "envdoctor.facts/1", "python": ')
    result = run_cli(command, "pytorch", "--facts", str(broken))
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.startswith(f"envdoctor: error: facts file {broken} is not valid JSON")
    assert len(result.stderr.splitlines()) == 1


@pytest.mark.parametrize("cuda", ["cpu", "12.6", "cu126"])
def test_cuda_choices_are_accepted(cuda):
    plan, code = plan_json("pytorch", "--facts", machine("t4-r550-py310"), "--cuda", cuda)
    assert code == 0 and plan["build"] == ("cpu" if cuda == "cpu" else "cu126")


def test_a_missing_planner_is_one_line_not_a_traceback():
    from envdoctor.commands.install import plan_for

    with pytest.raises(UsageError, match="planning for nosuch is not available in this build of envdoctor yet"):
        plan_for(load_facts(machine("cpu-only")), PlanRequest(framework="nosuch"))


# --- --run refusals through the CLI (nothing is installed) ---------------------------------------

@pytest.fixture(scope="module")
def bare_venv(tmp_path_factory):
    """A venv without pip: even a bug that ran the installer could not change anything."""
    path = tmp_path_factory.mktemp("bare") / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(path)], check=True, timeout=60)
    return path / "bin" / "python"


def test_run_refuses_a_system_interpreter(tmp_path):
    system = "/usr/bin/python3"
    if not os.path.exists(system) or load_facts_kind(system) != "system":
        pytest.skip("no system interpreter at /usr/bin/python3")
    result = run_cli("install", "pytorch", "--python", system, "--run", "--yes",
                     env={"VIRTUAL_ENV": "", "ENVDOCTOR_STATE_DIR": str(tmp_path)})
    assert result.returncode == 2
    assert "$ /usr/bin/python3 -m pip install" in result.stdout  # the plan is shown first
    assert result.stderr.startswith("envdoctor: error: refusing to install into a system interpreter (/usr/bin/python3)")
    assert not any(tmp_path.iterdir())  # nothing recorded, nothing run


def load_facts_kind(python):
    out = subprocess.run([python, str(FIXTURES.parent.parent / "envdoctor" / "probe" / "target_script.py")],
                         capture_output=True, text=True, timeout=60)
    return json.loads(out.stdout)["env_kind"] if out.returncode == 0 else None


def test_run_without_a_terminal_and_without_yes_refuses(bare_venv, tmp_path):
    result = run_cli("install", "pytorch", "--python", str(bare_venv), "--run", "--cuda", "cpu",
                     env={"ENVDOCTOR_STATE_DIR": str(tmp_path)}, input_text="y\n")
    assert result.returncode == 2
    assert result.stderr == ("envdoctor: error: --run needs a confirmation but stdin is not a terminal; "
                             "pass --yes to run without asking\n")
    assert not any(tmp_path.iterdir())
    assert result.stdout == ""  # refused before probing, in one line


def test_run_asks_on_a_terminal_and_does_nothing_when_told_no(bare_venv, tmp_path):
    main, secondary = pty.openpty()
    env = dict(os.environ, ENVDOCTOR_STATE_DIR=str(tmp_path), NO_COLOR="1")
    proc = subprocess.Popen([sys.executable, "-m", "envdoctor", "install", "pytorch", "--python", str(bare_venv),
                             "--run", "--cuda", "cpu"], stdin=secondary, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)
    os.close(secondary)
    os.write(main, b"n\n")
    out, err = proc.communicate(timeout=120)
    os.close(main)
    assert proc.returncode == 0, err
    assert f"Run 1 command(s) in {bare_venv}? [y/N]:" in out
    assert out.rstrip().endswith("Nothing was run.")
    assert not any(tmp_path.iterdir())


@pytest.mark.parametrize("command", ["install", "matrix"])
def test_a_target_interpreter_that_cannot_run_is_a_usage_error(command):
    result = run_cli(command, "pytorch", "--python", "/nonexistent/bin/python")
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.startswith("envdoctor: error: cannot run target interpreter /nonexistent/bin/python")
    assert len(result.stderr.splitlines()) == 1


def test_a_plan_that_creates_a_conda_env_names_it_in_the_headline():
    """The probed interpreter is a venv; the conda plan installs into a new environment, not there."""
    result = run_cli("install", "jax", "--facts", machine("gh200"), "--manager", "conda")
    assert result.returncode == 0
    plan, _ = plan_json("jax", "--facts", machine("gh200"), "--manager", "conda")
    assert plan["commands"][0][:2] == ["conda", "create"]
    assert result.stdout.splitlines()[0] == (f"JAX {plan['version']} ({plan['build']}) for Python 3.12 in a new conda "
                                             "environment jax")


def test_version_is_checked_the_way_the_planners_read_it():
    """'v2.6' is a valid PEP 440 version but no planner reads it: the CLI says so in its own words."""
    result = run_cli("install", "pytorch", "--facts", machine("a100-current"), "--version", "v2.6")
    assert result.returncode == 2
    assert result.stderr == "envdoctor: error: --version 'v2.6' is neither a version (2.6) nor a specifier ('>=2.5,<2.8')\n"
    plan, code = plan_json("pytorch", "--facts", machine("a100-current"), "--version", "2.6.*")
    assert code == 0 and plan["version"].startswith("2.6.")


def test_run_without_a_target_does_not_default_to_envdoctors_own_interpreter(tmp_path):
    """No --python, no active environment, no .venv here or above, no other python on PATH: the target
    would be envdoctor's own interpreter, and --run refuses before probing (without --yes, so even a
    regression would stop at the missing terminal, not install)."""
    work = tmp_path / "work"
    work.mkdir()
    env = dict(os.environ, VIRTUAL_ENV="", CONDA_PREFIX="", ENVDOCTOR_STATE_DIR=str(tmp_path / "state"),
               PATH=os.path.dirname(sys.executable), PYTHONPATH=str(ROOT))
    result = subprocess.run([sys.executable, "-m", "envdoctor", "install", "pytorch", "--run"], cwd=work, env=env,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr == (f"envdoctor: error: --run: the target would be envdoctor's own interpreter ({sys.executable}, "
                             f"no other environment found); pass --python {sys.executable} if that is the environment to install "
                             "into, or activate another one\n")
    assert not (tmp_path / "state").exists()
