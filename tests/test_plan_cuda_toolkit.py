"""`envdoctor install cuda-toolkit`: which CUDA release (torch's, --cuda, the driver's) and which recipe
(conda-forge into a conda env, NVIDIA's apt repository, the CUDA 13 wheels), on recorded machines and
through the real CLI."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import pytest

from envdoctor.complete import complete
from envdoctor.errors import UsageError
from envdoctor.facts import Facts, load_facts
from envdoctor.plan.cuda_toolkit import RUN_REFUSED, plan_toolkit, releases

ROOT = Path(__file__).resolve().parent.parent
MACHINES = ROOT / "tests" / "fixtures" / "machines"


def machine(name: str) -> Facts:
    return complete(load_facts(MACHINES / f"{name}.json"))


def conda_env(facts: Facts) -> Facts:
    return dataclasses.replace(facts, python=dataclasses.replace(
        facts.python, env_kind="conda", env_path="/home/ana/miniforge3/envs/ml", executable="/home/ana/miniforge3/envs/ml/bin/python"))


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "envdoctor", "install", "cuda-toolkit", *args], capture_output=True,
                          text=True, timeout=120, cwd=ROOT)


def test_the_toolkit_matches_torchs_cuda_from_nvidias_apt_repository():
    plan = plan_toolkit(machine("build-nvcc-major"))  # torch 2.6.0+cu124 on Ubuntu 24.04, a venv
    assert plan.ok and plan.version == "12.4" and plan.build == "apt-nvidia"
    assert plan.commands[0] == ("wget", "https://developer.download.nvidia.com/compute/cuda/repos/ubuntu2404/x86_64/"
                                        "cuda-keyring_1.1-1_all.deb")
    assert plan.commands[-1] == ("sudo", "apt-get", "install", "--yes", "cuda-toolkit-12-4")
    assert any("torch was built with CUDA 12.4" in r for r in plan.reasons)
    assert any("CUDA_HOME=/usr/local/cuda-12.4" in s for s in plan.steps)


def test_a_conda_env_gets_conda_forge_pinned_by_cuda_version():
    plan = plan_toolkit(conda_env(machine("build-nvcc-major")), manager="conda")
    assert plan.build == "conda-forge"
    assert plan.commands == (("conda", "install", "--yes", "--prefix", "/home/ana/miniforge3/envs/ml", "--channel",
                              "conda-forge", "--override-channels", "cuda-toolkit", "cuda-version=12.4"),)
    # pip cannot give CUDA 12.x a CUDA_HOME: the default manager falls to the conda env
    assert plan_toolkit(conda_env(machine("build-nvcc-major"))).build == "conda-forge"


def test_cuda_13_comes_as_wheels_into_the_venv():
    plan = plan_toolkit(machine("build-nvcc-major"), cuda="13.0")
    assert plan.build == "pip-cu13-wheels" and plan.manager == "pip"
    assert plan.commands[0][-5:] == ("nvidia-cuda-nvcc==13.0.*", "nvidia-cuda-runtime==13.0.*", "nvidia-cuda-cccl==13.0.*",
                                     "nvidia-cuda-crt==13.0.*", "nvidia-nvvm==13.0.*")
    assert any("nvidia.cu13" in s for s in plan.steps)
    assert any("refuses an nvcc of CUDA 13.0" in w for w in plan.warnings)  # torch is cu124


def test_a_bare_major_takes_its_newest_release_and_unknown_releases_are_refused():
    assert plan_toolkit(machine("build-nvcc-major"), cuda="12").version == max(
        (c for c in releases() if c.startswith("12.")), key=lambda c: tuple(map(int, c.split("."))))
    with pytest.raises(UsageError, match="no CUDA 12.7 toolkit"):
        plan_toolkit(machine("build-nvcc-major"), cuda="12.7")


def test_without_torch_the_driver_decides():
    facts = machine("build-nvcc-major")
    facts = dataclasses.replace(facts, python=dataclasses.replace(facts.python, packages={"numpy": "2.1.3"}))
    plan = plan_toolkit(facts)  # driver 570, CUDA 12.8
    assert plan.version == "12.8" and any("the driver" in r for r in plan.reasons)


def test_nothing_to_match_and_no_toolkit_platforms():
    cpu = machine("container-cpu-only")  # CPU torch, no driver
    plan = plan_toolkit(cpu)
    assert not plan.ok and "--cuda" in plan.steps[0]
    mac = dataclasses.replace(machine("build-nvcc-major"), host=dataclasses.replace(machine("build-nvcc-major").host, os="macos"))
    assert not plan_toolkit(mac).ok
    fedora = machine("build-gcc-too-new")  # no NVIDIA apt repository, not a conda env
    plan = plan_toolkit(fedora)
    assert not plan.ok and plan.version == "12.4"


def test_cli_prints_the_plan_and_json():
    result = cli("--facts", str(MACHINES / "build-nvcc-major.json"))
    assert result.returncode == 0, result.stderr
    assert "$ sudo apt-get install --yes cuda-toolkit-12-4" in result.stdout
    data = json.loads(cli("--facts", str(MACHINES / "build-nvcc-major.json"), "--json").stdout)
    assert data["framework"] == "cuda-toolkit" and data["version"] == "12.4"


def test_cli_nothing_fits_exits_1():
    assert cli("--facts", str(MACHINES / "container-cpu-only.json")).returncode == 1


@pytest.mark.parametrize("args, message", [
    (["--run", "--yes"], RUN_REFUSED.split(":")[0]),
    (["--cuda", "12.7"], "no CUDA 12.7 toolkit"),
    (["--cuda", "rocm6.4"], "a CUDA toolkit is a CUDA version"),
    (["--manager", "brew"], "--manager 'brew'"),
])
def test_cli_refusals_are_one_line_and_exit_2(args, message):
    result = cli("--facts", str(MACHINES / "build-nvcc-major.json"), *args) if args[0] != "--run" else cli(*args)
    assert result.returncode == 2
    assert message in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert "Traceback" not in result.stderr
