"""`install --run` for real: a throwaway venv, real pip, small real wheels built here (offline).

The plans below are InstallPlans like the planners make, with commands that install tiny wheels
from a local folder (`--no-index --find-links`), so the run machinery — snapshot, streaming,
failure, rollback, verification — runs end to end in a few seconds without a network.
"""

import io
import subprocess
import sys

import pytest
from rich.console import Console

from envdoctor import proc
from envdoctor.errors import UsageError
from envdoctor.facts import Facts, PythonEnv, load_facts
from envdoctor.plan import InstallPlan
from envdoctor.plan import run as runmod
from tests.conftest import FIXTURES, build_wheel, run_cli


@pytest.fixture(scope="module")
def wheels(tmp_path_factory):
    folder = tmp_path_factory.mktemp("wheels")
    for name, version in [("demo-pkg", "1.0"), ("demo-pkg", "2.0"), ("demo-extra", "1.0")]:
        build_wheel(folder, name, version)
    return folder


@pytest.fixture(scope="module")
def venv(tmp_path_factory):
    path = tmp_path_factory.mktemp("target") / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(path)], check=True, timeout=120)
    return path / ("Scripts/python.exe" if sys.platform == "win32" else "bin/python")


@pytest.fixture(autouse=True)
def state_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("ENVDOCTOR_STATE_DIR", str(tmp_path / "state"))
    return tmp_path / "state"


def pip(python, *args, wheels=None):
    argv = [str(python), "-m", "pip", *args, "--disable-pip-version-check", "--quiet"]
    if wheels is not None:
        argv += ["--no-index", "--find-links", str(wheels)]
    subprocess.run(argv, check=True, timeout=120)


def freeze(python):
    return runmod.parse_freeze(subprocess.run([str(python), "-m", "pip", "freeze"], capture_output=True,
                                              text=True, check=True).stdout)


def start_with(python, wheels, **versions):
    """Put the venv in a known state: exactly these demo packages installed."""
    present = [n for n in freeze(python)]
    if present:
        pip(python, "uninstall", "--yes", *present)
    if versions:
        pip(python, "install", *[f"{n.replace('_', '-')}=={v}" for n, v in versions.items()], wheels=wheels)


def facts_for(python, env_kind="venv"):
    return Facts(python=PythonEnv(executable=str(python), version="3.11", env_kind=env_kind, env_path=str(python.parent.parent)))


def plan(python, wheels, *extra_commands, framework="demo_pkg", version="2.0"):
    install = (str(python), "-m", "pip", "install", "demo-pkg==2.0", "demo-extra==1.0",
               "--no-index", "--find-links", str(wheels))
    return InstallPlan(framework=framework, version=version, build="cpu", python="3.11", manager="pip",
                       commands=(install, *extra_commands))


def recording_console():
    return Console(file=io.StringIO(), width=200, no_color=True)


def test_a_plan_runs_streams_and_is_verified(venv, wheels, state_dir):
    start_with(venv, wheels, demo_pkg="1.0")
    con = recording_console()

    code = runmod.run_plan(con, plan(venv, wheels), facts_for(venv), assume_yes=True)

    out = con.file.getvalue()
    assert code == 0, out
    assert {n: v for n, (v, _) in freeze(venv).items()} == {"demo-pkg": "2.0", "demo-extra": "1.0"}
    assert "Successfully installed" in out  # the installer's own output, streamed
    assert "✓ demo-pkg 2.0" in out and "✓ import demo_pkg 2.0" in out
    saved = list(state_dir.glob("before-demo_pkg-*.txt"))
    assert len(saved) == 1 and "demo-pkg==1.0" in saved[0].read_text()
    assert f"-m pip install --no-deps -r {saved[0]}" in out  # how to restore by hand


def test_a_failing_installer_is_reported_and_the_environment_restored(venv, wheels):
    start_with(venv, wheels, demo_pkg="1.0")
    failing = (str(venv), "-m", "pip", "install", "./does-not-exist")
    con = recording_console()

    code = runmod.run_plan(con, plan(venv, wheels, failing), facts_for(venv), assume_yes=True)

    out = con.file.getvalue()
    assert code == 1
    assert "the installer failed: exit status 1" in out
    assert "does-not-exist" in out.split("Its last lines:")[1]  # pip's own error, quoted
    # the first command had upgraded demo-pkg and added demo-extra: both undone
    assert {n: v for n, (v, _) in freeze(venv).items()} == {"demo-pkg": "1.0"}
    assert "uninstall --yes demo-extra" in out and "demo-pkg==1.0 --no-index --find-links" in out
    assert "✓ restored" in out


def test_a_plan_whose_result_does_not_import_fails_the_check(venv, wheels):
    start_with(venv, wheels)
    con = recording_console()

    code = runmod.run_plan(con, plan(venv, wheels, framework="pytorch"), facts_for(venv), assume_yes=True)

    assert code == 1
    assert "import torch failed: ModuleNotFoundError" in con.file.getvalue()


def test_system_and_conda_base_interpreters_are_refused_unless_allowed():
    for kind in ("system", "conda-base"):
        env = PythonEnv(executable="/usr/bin/python3", env_kind=kind)
        assert "refusing to install into" in runmod.refusal(env, allow_system=False)
        assert runmod.refusal(env, allow_system=True) is None
    assert runmod.refusal(PythonEnv(executable="/v/bin/python", env_kind="venv"), allow_system=False) is None

    jetson = load_facts(FIXTURES / "machines" / "jetson-orin-jp62.json")
    with pytest.raises(UsageError, match="system interpreter"):
        runmod.run_plan(recording_console(), InstallPlan("pytorch", "2.8.0", "jp6-cu126", "3.10", "pip", commands=(("true",),)), jetson)


def test_without_a_terminal_and_without_yes_nothing_runs(tmp_path):
    marker = tmp_path / "ran"
    touch = InstallPlan("demo", "1", "cpu", "3.11", "pip", commands=((sys.executable, "-c", f"open({str(marker)!r}, 'w')"),))
    with pytest.raises(UsageError, match="stdin is not a terminal; pass --yes"):
        runmod.run_plan(recording_console(), touch, facts_for(tmp_path / "bin" / "python"), interactive=False)
    assert not marker.exists()


def test_restoring_a_local_torch_build_adds_its_index():
    before = runmod.Snapshot(runmod.parse_freeze("torch==2.3.1+cu121\ntorchvision==0.18.1+cu121\nsix==1.16.0\n"))
    assert runmod.previous_build_indexes(before) == ["--extra-index-url", "https://download.pytorch.org/whl/cu121"]
    assert runmod.previous_build_indexes(runmod.Snapshot(runmod.parse_freeze("torch==2.9.1\n"))) == []


def test_index_options_and_pins_come_from_the_plans_commands():
    p = InstallPlan("pytorch", "2.9.1", "cu128", "3.12", "pip", commands=(
        ("/v/bin/python", "-m", "pip", "install", "torch==2.9.1", "torchvision==0.24.1", "tensorflow[and-cuda]==2.20.0",
         "--index-url", "https://example.invalid/whl/cu128"),
        ("conda", "install", "-y", "cuda-version=12.8"),
    ))
    assert runmod.index_options(p) == ["--index-url", "https://example.invalid/whl/cu128"]
    assert runmod.planned_pins(p) == {"torch": "2.9.1", "torchvision": "0.24.1", "tensorflow": "2.20.0"}
    assert runmod.version_matches("2.9.1+cu128", "2.9.1") and not runmod.version_matches("2.9.0", "2.9.1")


def test_streaming_runner_passes_every_line_and_stops_a_hung_command():
    seen = []
    result = proc.run_streaming([sys.executable, "-c", "import sys; print('out'); print('err', file=sys.stderr); sys.exit(3)"], 30, seen.append)
    assert seen == ["out", "err"] and result.returncode == 3 and not result.ok
    hung = proc.run_streaming([sys.executable, "-c", "print('started', flush=True); import time; time.sleep(60)"], 1, seen.append)
    assert hung.error.endswith("timed out after 1 s") and "started" in hung.stdout


def test_ctrl_c_stops_the_installer_too():
    """The installer runs in its own session, so Ctrl-C reaches only envdoctor: it must stop the child."""
    import os
    import signal
    import threading

    started = []

    def interrupt_once_started():
        while not started:
            threading.Event().wait(0.05)
        os.kill(os.getpid(), signal.SIGINT)

    threading.Thread(target=interrupt_once_started, daemon=True).start()
    with pytest.raises(KeyboardInterrupt):
        proc.run_streaming([sys.executable, "-c", "import os, time; print(os.getpid(), flush=True); time.sleep(60)"],
                           30, started.append)
    child = int(started[0])
    with pytest.raises(ProcessLookupError):
        os.kill(child, 0)


def test_cli_refuses_run_with_a_recorded_machine():
    result = run_cli("install", "pytorch", "--run", "--facts", str(FIXTURES / "machines" / "a100-current.json"))
    assert result.returncode == 2
    assert result.stderr.strip() == "envdoctor: error: --run installs into this machine; it cannot be combined with --facts FILE"


def test_quiet_install_keeps_the_warnings_and_the_target(venv):
    """-q drops the reasons, never what --run would change: the warnings and which environment it writes to."""
    machine = str(FIXTURES / "machines" / "a100-current.json")
    full = run_cli("install", "pytorch", "--facts", machine)
    quiet = run_cli("install", "-q", "pytorch", "--facts", machine)
    assert full.returncode == quiet.returncode == 0 and "Why:" not in quiet.stdout
    warnings = full.stdout[full.stdout.index("Warnings:"):].split("\n\n")[0]
    assert warnings.count("!") >= 1 and warnings in quiet.stdout
    env_root = str(venv.parent.parent)
    live = run_cli("-q", "install", "pytorch", env={"VIRTUAL_ENV": env_root})
    assert live.returncode == 0, live.stderr
    assert "target: the active virtual environment (VIRTUAL_ENV)" in live.stdout


def test_a_plan_that_creates_a_conda_env_is_checked_there_and_not_refused():
    conda_plan = InstallPlan("pytorch", "2.13", "cu130", "3.12", "conda", commands=(
        ("conda", "create", "--yes", "--name", "torch", "--channel", "conda-forge", "python=3.12", "pytorch=2.13=cuda*"),))
    system = Facts(python=PythonEnv(executable="/usr/bin/python3", env_kind="system"))
    target = runmod.target_of(conda_plan, system)
    assert target.python == ("conda", "run", "--name", "torch", "python")
    assert target.new_conda_env == ("--name", "torch") and target.describe == "a new conda environment torch"
    # installing into the probed interpreter instead: that one is the target
    pip_plan = InstallPlan("pytorch", "2.13.0", "cpu", "3.11", "pip", commands=(("/usr/bin/python3", "-m", "pip", "install", "torch==2.13.0"),))
    assert runmod.target_of(pip_plan, system) == runmod.Target(("/usr/bin/python3",))


FAKE_CONDA = """#!{python}
import json, os, sys
log = os.environ["FAKE_CONDA_LOG"]
with open(log, "a") as fh:
    fh.write(" ".join(sys.argv[1:]) + "\\n")
if sys.argv[1:3] == ["env", "list"]:
    print(json.dumps({{"envs": ["/opt/conda"] + [os.path.join("/opt/conda/envs", e) for e in os.environ.get("FAKE_CONDA_ENVS", "").split()]}}))
elif sys.argv[1] == "create":
    print("Solving environment: failed", flush=True)
    sys.exit(1)
"""


@pytest.fixture
def fake_conda(tmp_path, monkeypatch):
    """A `conda` that lists FAKE_CONDA_ENVS, fails every `create` and logs every call."""
    script = tmp_path / "conda"
    script.write_text(FAKE_CONDA.format(python=sys.executable))
    script.chmod(0o755)
    log = tmp_path / "conda.log"
    monkeypatch.setenv("FAKE_CONDA_LOG", str(log))
    return script, log


def conda_create_plan(conda):
    return InstallPlan("pytorch", "2.13", "cu130", "3.12", "conda", commands=(
        (str(conda), "create", "--yes", "--name", "torch", "--channel", "conda-forge", "python=3.12"),))


def test_a_conda_env_that_exists_already_is_not_replaced(fake_conda, monkeypatch):
    """`conda create --yes --name torch` would delete an existing env named torch: refuse before asking."""
    conda, log = fake_conda
    monkeypatch.setenv("FAKE_CONDA_ENVS", "torch")
    with pytest.raises(UsageError, match="the plan creates the conda environment torch, but it exists already"):
        runmod.run_plan(recording_console(), conda_create_plan(conda), facts_for(conda), assume_yes=True)
    assert log.read_text().splitlines() == ["env list --json"]  # nothing created, nothing removed


def test_a_failed_new_conda_env_is_removed(fake_conda, monkeypatch):
    conda, log = fake_conda
    monkeypatch.setenv("FAKE_CONDA_ENVS", "other")
    con = recording_console()

    code = runmod.run_plan(con, conda_create_plan(conda), facts_for(conda), assume_yes=True)

    assert code == 1
    calls = log.read_text().splitlines()
    assert calls[0] == "env list --json" and calls[1].startswith("create --yes --name torch")
    assert calls[2:] == ["env remove --yes --name torch"]
    assert "removed the half-made environment torch" in con.file.getvalue()


def test_a_gpu_build_on_a_machine_without_a_gpu_is_not_a_failed_check():
    con = recording_console()
    plan = InstallPlan("pytorch", "2.11.0", "cu128", "3.11", "pip")
    assert runmod._check_device(con, plan, load_facts(FIXTURES / "machines" / "cpu-only.json"), {"gpus": 0})
    assert "this machine has no GPU" in con.file.getvalue()
    # where there is a GPU, a build that sees none fails
    assert not runmod._check_device(con, plan, load_facts(FIXTURES / "machines" / "a100-current.json"), {"gpus": 0})


def test_a_restore_from_the_probes_partial_list_says_what_it_left(venv, wheels):
    """Without a full `pip freeze` before, what the installer added cannot be told apart: it stays, and
    the report says so instead of claiming the environment is as before."""
    start_with(venv, wheels, demo_pkg="1.0")
    before = runmod.Snapshot(runmod.parse_freeze("demo-pkg==1.0\n"), source="facts")
    pip(venv, "install", "demo-pkg==2.0", "demo-extra==1.0", wheels=wheels)
    con = recording_console()

    assert runmod.roll_back(con, before, str(venv), "pip", plan(venv, wheels))

    assert {n: v for n, (v, _) in freeze(venv).items()} == {"demo-pkg": "1.0", "demo-extra": "1.0"}
    assert "✓ restored: the environment has the same packages as before (only the packages the probe recorded" in con.file.getvalue()


def test_ctrl_c_during_a_run_stops_it_and_restores(venv, wheels):
    """The first command upgrades demo-pkg; Ctrl-C arrives during the second: both are undone, exit 130."""
    start_with(venv, wheels, demo_pkg="1.0")
    interrupt = (sys.executable, "-c", "import os, signal, time; print('working', flush=True); "
                 "os.kill(os.getppid(), signal.SIGINT); time.sleep(60)")
    con = recording_console()

    code = runmod.run_plan(con, plan(venv, wheels, interrupt), facts_for(venv), assume_yes=True)

    out = con.file.getvalue()
    assert code == 130, out
    assert "interrupted: the installer was stopped" in out and "✓ restored" in out
    assert {n: v for n, (v, _) in freeze(venv).items()} == {"demo-pkg": "1.0"}


def test_a_second_ctrl_c_during_the_restore_is_reported():
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    con = recording_console()
    assert runmod._undo(con, interrupted, 1) == 130
    assert "interrupted while restoring" in con.file.getvalue()


def test_the_hand_restore_command_names_the_index_of_a_local_torch_build(monkeypatch, state_dir):
    frozen = "torch==2.3.1+cu121\nnumpy==1.26.4\n"
    monkeypatch.setattr(runmod, "take_snapshot", lambda python, manager, facts: runmod.Snapshot(
        runmod.parse_freeze(frozen), "pip freeze", frozen))
    con = recording_console()
    plan = InstallPlan("pytorch", "2.9.1", "cu128", "3.12", "pip", commands=(("/v/bin/python", "-m", "pip", "install", "torch==2.9.1"),))

    runmod._record(con, plan, "/v/bin/python", Facts())

    saved = next(state_dir.glob("before-pytorch-*.txt"))
    assert (f"To put these versions back by hand: /v/bin/python -m pip install --no-deps -r {saved} "
            "--extra-index-url https://download.pytorch.org/whl/cu121") in con.file.getvalue()
