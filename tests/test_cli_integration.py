"""What ties the commands together: help texts that say what the code does (target order, exit
statuses, environment variables), -q on every command that prints a report, `--expect` on build
files, `--profile node` with `--build`, and one container-runtime rule for the host and container
probes. The real CLI in a subprocess."""

from __future__ import annotations

import json

import pytest

from conftest import FIXTURES, run_cli
from envdoctor.probe import container as probe_container
from envdoctor.probe import host
from probe_helpers import context, put

MACHINES = FIXTURES / "machines"
DOCKERFILES = FIXTURES / "dockerfiles"
POLICY = str(FIXTURES / "policies" / "gpu-node.toml")
HOST_570 = str(DOCKERFILES / "hosts" / "driver-570.json")
CPU_TORCH = str(DOCKERFILES / "made" / "cpu-torch.Dockerfile")
ENV = {"NO_COLOR": "1", "COLUMNS": "250", "ENVDOCTOR_NVML": "0"}


def one_line_error(result) -> str:
    assert result.returncode == 2 and result.stdout == "", result.stdout
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr, result.stderr
    return result.stderr


# --- help texts ----------------------------------------------------------------------------------

def test_python_help_names_the_target_order():
    text = " ".join(run_cli("check", "--help", env=ENV).stdout.split())
    order = [text.index(word) for word in ("VIRTUAL_ENV", "CONDA_PREFIX", ".venv", "python on PATH")]
    assert order == sorted(order)
    assert "else this interpreter" not in text  # the old rule: envdoctor's own interpreter is the last resort


def test_install_help_lists_the_signal_statuses_and_the_manager_variable():
    text = " ".join(run_cli("install", "--help", env=ENV).stdout.split())
    for status in ("130", "143", "129", "141"):
        assert f" {status} " in text, status
    assert "SIGTERM" in text and "SIGHUP" in text
    assert "ENVDOCTOR_MANAGER]" in text  # typer's own [env var: …], not a markup tag rich swallowed
    assert "conda ." not in text and "[env:" not in text
    other = " ".join(run_cli("check", "--help", env=ENV).stdout.split())
    assert " 143 " not in other  # only --run has a rollback stopped by a signal


def test_bad_manager_from_the_environment_names_the_variable():
    machine = str(MACHINES / "diag-driver-old.json")
    from_env = one_line_error(run_cli("install", "pytorch", "--facts", machine, env={**ENV, "ENVDOCTOR_MANAGER": "bogus"}))
    assert "ENVDOCTOR_MANAGER='bogus'" in from_env and "--manager" not in from_env
    toolkit = one_line_error(run_cli("install", "cuda-toolkit", "--facts", machine,
                                     env={**ENV, "ENVDOCTOR_MANAGER": "bogus"}))
    assert "ENVDOCTOR_MANAGER='bogus'" in toolkit and "apt" in toolkit
    given = one_line_error(run_cli("install", "pytorch", "--facts", machine, "--manager", "bogus",
                                   env={**ENV, "ENVDOCTOR_MANAGER": "uv"}))
    assert "--manager 'bogus'" in given
    good = run_cli("install", "pytorch", "--json", "--facts", machine, env={**ENV, "ENVDOCTOR_MANAGER": "uv"})
    assert good.returncode == 0 and json.loads(good.stdout)["manager"] == "uv"


# --- -q / ENVDOCTOR_QUIET -----------------------------------------------------------------------

def test_quiet_install_prints_the_verdict_and_the_commands_only():
    machine = str(MACHINES / "a100-current.json")
    full = run_cli("install", "pytorch", "--facts", machine, env=ENV)
    quiet = run_cli("-q", "install", "pytorch", "--facts", machine, env=ENV)
    after = run_cli("install", "-q", "pytorch", "--facts", machine, env=ENV)
    assert full.returncode == quiet.returncode == after.returncode == 0
    assert quiet.stdout == after.stdout and len(quiet.stdout) < len(full.stdout)
    assert "Why:" in full.stdout and "Why:" not in quiet.stdout
    assert quiet.stdout.splitlines()[0] == full.stdout.splitlines()[0]  # the verdict line
    commands = [line for line in full.stdout.splitlines() if line.lstrip().startswith("$ ")]
    assert commands and all(line in quiet.stdout.splitlines() for line in commands)


def test_quiet_install_keeps_what_to_change_when_nothing_fits():
    machine = str(MACHINES / "diag-driver-old.json")
    quiet = run_cli("install", "pytorch", "--version", "1.0", "--facts", machine, env={**ENV, "ENVDOCTOR_QUIET": "1"})
    assert quiet.returncode == 1 and quiet.stdout.strip()


def test_quiet_matrix_prints_the_cells_that_fit_and_the_verdict():
    machine = str(MACHINES / "a100-current.json")
    full = run_cli("matrix", "jax", "--facts", machine, env=ENV)
    quiet = run_cli("-q", "matrix", "jax", "--facts", machine, env=ENV)
    assert full.returncode == quiet.returncode == 0
    assert 0 < len(quiet.stdout) < len(full.stdout)
    lines = quiet.stdout.splitlines()
    assert lines[0] == full.stdout.splitlines()[0]  # the machine line
    assert lines[-1].endswith(")") and "`envdoctor install jax` installs " in lines[-1]  # the verdict
    cells = lines[1:-1]
    assert cells and all(line.startswith("  ") and ": " in line for line in cells)  # "  0.10.2: cpu, cuda12, cuda13"
    assert "release" not in quiet.stdout  # no table header, no legend


def test_quiet_dockerfile_and_compose_print_errors_and_the_verdict():
    full = run_cli("dockerfile", CPU_TORCH, "--facts", HOST_570, env=ENV)
    quiet = run_cli("-q", "dockerfile", CPU_TORCH, "--facts", HOST_570, env=ENV)
    assert full.returncode == quiet.returncode == 1
    assert "base " in full.stdout and "base " not in quiet.stdout
    assert "[host-driver-required]" in full.stdout and "[host-driver-required]" not in quiet.stdout  # info
    assert "[cpu-only-build]" in quiet.stdout
    assert quiet.stdout.splitlines()[-1] == full.stdout.splitlines()[-1]  # the verdict line
    compose = str(DOCKERFILES / "compose" / "gpu-missing" / "compose.yaml")
    full = run_cli("compose", compose, env=ENV)
    quiet = run_cli("compose", compose, env={**ENV, "ENVDOCTOR_QUIET": "1"})
    assert full.returncode == quiet.returncode == 1
    assert "service(s)" in full.stdout and "service(s)" not in quiet.stdout
    assert quiet.stdout.splitlines()[-1] == full.stdout.splitlines()[-1]


def test_quiet_fleet_prints_the_headline_and_the_problem_nodes():
    nodes = [str(MACHINES / "diag-driver-old.json"), str(MACHINES / "a100-current.json")]
    full = run_cli("fleet", *nodes, env=ENV)
    quiet = run_cli("fleet", "-q", *nodes, env=ENV)
    assert full.returncode == quiet.returncode == 1
    lines = quiet.stdout.splitlines()
    assert lines[0] == full.stdout.splitlines()[0] and lines[0].startswith("envdoctor fleet: 2 nodes")
    assert len(lines) == 2 and "driver-too-old" in lines[1]
    assert "DRIFT" in full.stdout and "DRIFT" not in quiet.stdout


# --- --profile node with --build ------------------------------------------------------------------

def test_node_profile_refuses_probing_the_build_tools():
    error = one_line_error(run_cli("check", "--profile", "node", "--build", env=ENV))
    assert "--build" in error and "--profile node" in error
    assert "node" in " ".join(run_cli("check", "--help", env=ENV).stdout.split()).split("--build", 1)[1][:400]


def test_node_profile_judges_a_recorded_build_block():
    result = run_cli("check", "--profile", "node", "--build", "--format", "oneline", "--facts",
                     str(MACHINES / "build-nvcc-major.json"), env=ENV)
    assert result.returncode == 1 and result.stdout.startswith("extension-build-mismatch"), result.stdout


# --- --expect on build files -------------------------------------------------------------------------

def codes(document) -> list[tuple[str, str]]:
    return [(f["code"], f["severity"]) for f in document["findings"]]


def test_dockerfile_expect_judges_the_described_machine_and_the_host(tmp_path):
    result = run_cli("dockerfile", CPU_TORCH, "--json", "--facts", HOST_570, "--expect", POLICY, env=ENV)
    assert result.returncode == 1, result.stderr
    document = json.loads(result.stdout)
    violations = [f for f in document["findings"] if f["code"] == "policy-violation"]
    titles = {f["title"] for f in violations}
    assert "policy torch_build cu128: cpu seen" in titles and "policy forbid: cpu-only-build found" in titles
    assert all(f["severity"] == "error" and f["file"] == CPU_TORCH and f["line"] == 2 for f in violations)
    assert not any("driver" in t for t in titles)  # the host's 570 driver meets ">=570"
    passing = tmp_path / "ok.toml"
    passing.write_text('driver = ">=570"\ntorch = "==2.6.*"\npython = "3.10"\n')
    ok = run_cli("dockerfile", CPU_TORCH, "--json", "--facts", HOST_570, "--expect", str(passing), env=ENV)
    assert ("policy-violation", "error") not in codes(json.loads(ok.stdout))
    newer = tmp_path / "newer.toml"
    newer.write_text('driver = ">=580"\n')
    seen = json.loads(run_cli("dockerfile", CPU_TORCH, "--json", "--facts", HOST_570, "--expect", str(newer),
                              env=ENV).stdout)
    assert any(f["code"] == "policy-violation" and "driver" in f["title"] and f["severity"] == "error"
               for f in seen["findings"])
    unknown = json.loads(run_cli("dockerfile", CPU_TORCH, "--json", "--expect", str(newer), env=ENV).stdout)
    assert ("policy-violation", "warning") in codes(unknown)  # no --facts HOST: the driver cannot be judged


def test_dockerfile_expect_bad_policy_is_one_line(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("gpu = 8\n")
    error = one_line_error(run_cli("dockerfile", CPU_TORCH, "--expect", str(bad), env=ENV))
    assert "line 1" in error and "gpu" in error
    assert "no such" in one_line_error(run_cli("compose", str(DOCKERFILES / "compose" / "gpu-missing"), "--expect",
                                               str(tmp_path / "missing.toml"), env=ENV)).lower()


def test_compose_expect_applies_to_each_built_service():
    compose = str(DOCKERFILES / "compose" / "gpu-missing" / "compose.yaml")
    plain = json.loads(run_cli("compose", compose, "--json", env=ENV).stdout)
    result = run_cli("compose", compose, "--json", "--expect", POLICY, env=ENV)
    assert result.returncode == 1
    document = json.loads(result.stdout)
    added = [f for f in document["findings"] if f["code"] == "policy-violation"]
    assert added and {f["service"] for f in added} == set(document["builds"]) == {"train"}
    assert len(document["findings"]) == len(plain["findings"]) + len(added)
    assert [f for f in document["builds"]["train"]["findings"] if f["code"] == "policy-violation"] == added


# --- one container-runtime rule -----------------------------------------------------------------------

@pytest.mark.parametrize("files,environ", [
    ({"/.dockerenv": ""}, {}),
    ({"/run/.containerenv": ""}, {}),
    ({}, {"KUBERNETES_SERVICE_HOST": "10.0.0.1"}),
    ({"/proc/1/cgroup": "12:pids:/docker/3f1c2a9e8b7d\n"}, {}),
    ({"/proc/1/cgroup": "0::/\n", "/proc/self/mountinfo":
      "612 598 254:1 /var/lib/docker/containers/3f1c2a9e8b7d/hostname /etc/hostname rw,relatime - ext4 /dev/vda1 rw\n"}, {}),
    ({"/proc/1/cgroup": "0::/init.scope\n"}, {"container": "LXC"}),
    ({"/proc/1/cgroup": "0::/init.scope\n"}, {}),
])
def test_host_probe_and_container_probe_name_the_same_runtime(tmp_path, files, environ):
    for path, content in files.items():
        put(tmp_path, path, content)
    ctx = context(tmp_path, **environ)
    assert host.detect_container(ctx) == probe_container.detect_runtime(ctx)[0]
