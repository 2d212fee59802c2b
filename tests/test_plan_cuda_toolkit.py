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


def on_distro(facts: Facts, distro: str) -> Facts:
    return dataclasses.replace(facts, host=dataclasses.replace(facts.host, distro=distro))


def with_torch(facts: Facts, version: str) -> Facts:
    return dataclasses.replace(facts, python=dataclasses.replace(facts.python, packages={**facts.python.packages,
                                                                                       "torch": version}))


def nvcc_host_gcc(facts: Facts, version: str) -> Facts:
    compilers = [dataclasses.replace(c, version=version) if c.role == "nvcc-host" else c for c in facts.build.compilers]
    return dataclasses.replace(facts, build=dataclasses.replace(facts.build, compilers=compilers))


def test_the_toolkit_matches_torchs_cuda_from_nvidias_apt_repository():
    plan = plan_toolkit(on_distro(machine("build-nvcc-major"), "Ubuntu 22.04"))  # torch 2.6.0+cu124, a venv
    assert plan.ok and plan.version == "12.4" and plan.build == "apt-nvidia"
    assert plan.commands[0] == ("wget", "https://developer.download.nvidia.com/compute/cuda/repos/ubuntu2204/x86_64/"
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


def test_cli_prints_the_plan_and_json(tmp_path):
    data = json.loads((MACHINES / "build-nvcc-major.json").read_text())
    data["host"]["distro"] = "Ubuntu 22.04"
    jammy = tmp_path / "jammy.json"
    jammy.write_text(json.dumps(data))
    result = cli("--facts", str(jammy))
    assert result.returncode == 0, result.stderr
    assert "$ sudo apt-get install --yes cuda-toolkit-12-4" in result.stdout
    data = json.loads(cli("--facts", str(jammy), "--json").stdout)
    assert data["framework"] == "cuda-toolkit" and data["version"] == "12.4"
    # Ubuntu 24.04 (the recorded machine): NVIDIA's ubuntu2404 repository has no 12.4, so no apt command
    noble = cli("--facts", str(MACHINES / "build-nvcc-major.json"))
    assert noble.returncode == 1 and "cuda-toolkit-12-4" in noble.stdout and "apt-get install" not in noble.stdout
    assert "carries CUDA 12.5 and newer" in noble.stdout


# --- NVIDIA's apt repository only carries the releases qualified on the distribution ------------------

def test_a_release_the_distributions_repository_lacks_is_refused_with_the_reason():
    noble_cu118 = with_torch(machine("build-nvcc-major"), "2.3.1+cu118")  # Ubuntu 24.04
    plan = plan_toolkit(noble_cu118)
    assert not plan.ok and plan.version == "11.8" and not plan.commands
    assert any("ubuntu2404 repository has no cuda-toolkit-11-8" in r and "CUDA 12.5 and newer" in r for r in plan.reasons)
    # the newest releases of a dropped distribution are refused too (Ubuntu 20.04 has no CUDA 13)
    focal = plan_toolkit(on_distro(machine("build-nvcc-major"), "Ubuntu 20.04"), cuda="13.0", manager="apt")
    assert not focal.ok and any("CUDA 11.0 to 12.9" in r for r in focal.reasons)
    assert plan_toolkit(on_distro(machine("build-nvcc-major"), "Ubuntu 20.04"), cuda="12.8", manager="apt").ok


def test_outside_the_repository_a_conda_env_gets_nvidias_label_below_conda_forge():
    plan = plan_toolkit(conda_env(with_torch(machine("build-nvcc-major"), "2.3.1+cu118")))
    assert plan.ok and plan.build == "conda-nvidia"
    assert plan.commands[0][:6] == ("conda", "install", "--yes", "--prefix", "/home/ana/miniforge3/envs/ml", "--channel")
    assert plan.commands[0][6] == f"nvidia/label/cuda-{releases()['11.8']}"
    apt = plan_toolkit(conda_env(with_torch(machine("build-nvcc-major"), "2.3.1+cu118")), manager="apt")
    assert apt.build == "conda-nvidia"  # --manager apt asked for what the repository lacks: the conda env instead
    assert any("ubuntu2404 repository has no cuda-toolkit-11-8" in r for r in apt.reasons)
    assert plan_toolkit(conda_env(machine("build-nvcc-major"))).build == "conda-forge"  # 12.4: conda-forge has it


def test_a_repository_range_not_confirmed_is_used_with_a_warning():
    plan = plan_toolkit(on_distro(machine("build-nvcc-major"), "Ubuntu 22.04"))
    assert any("range of CUDA releases in NVIDIA's ubuntu2204 repository is not confirmed" in w for w in plan.warnings)
    confirmed = plan_toolkit(on_distro(machine("build-nvcc-major"), "Ubuntu 24.04"))
    assert not any("not confirmed" in w for w in confirmed.warnings)


def test_a_repository_without_a_known_range_is_used_with_a_warning():
    plan = plan_toolkit(on_distro(machine("build-nvcc-major"), "Debian 11"))
    assert plan.ok and plan.build == "apt-nvidia"
    assert any("no record of which CUDA releases NVIDIA's debian11 repository carries" in w for w in plan.warnings)


def test_the_system_gcc_is_checked_against_the_toolkits_range():
    jammy = on_distro(with_torch(machine("build-nvcc-major"), "2.3.1+cu118"), "Ubuntu 22.04")
    assert plan_toolkit(jammy).ok and not any("gcc" in w for w in plan_toolkit(jammy).warnings)  # gcc 11.4 fits 11.8
    plan = plan_toolkit(nvcc_host_gcc(jammy, "13.2.0"))
    assert plan.ok
    (warning,) = [w for w in plan.warnings if "gcc 13.2.0" in w]
    assert "CUDA 11.8" in warning and "unsupported GNU version" in warning
    # no recorded compiler: the distribution's own gcc (Ubuntu 24.04: gcc 13) against CUDA 12.8
    unrecorded = dataclasses.replace(machine("build-nvcc-major"), build=None)
    assert not any("gcc" in w for w in plan_toolkit(unrecorded, cuda="12.8").warnings)  # 12.8 accepts gcc < 15


def test_a_jetson_gets_jetpacks_apt_not_nvidias_desktop_repository():
    facts = machine("diag-jetson-generic-torch")
    plan = plan_toolkit(facts, cuda="12.6", manager="apt")
    assert plan.ok and plan.build == "jetson-jetpack"
    assert ("sudo", "apt-get", "install", "--yes", "nvidia-jetpack") in plan.commands
    assert not any("has no packages" in r for r in plan.reasons)
    assert any("JetPack" in r for r in plan.reasons)
    assert not any("JetPack's L4T" in w for w in plan.warnings)  # 12.6 is what this L4T carries
    other = plan_toolkit(facts, cuda="12.8", manager="apt")
    assert any("carries CUDA 12.6, not 12.8" in w for w in other.warnings)


# --- the build rules' fix: the planner's answer, and its own bugs are not hidden -----------------------

def test_toolkit_fix_says_it_in_words_only_when_nothing_fits_and_lets_bugs_through(monkeypatch):
    from envdoctor.diagnose import build as build_rules
    from envdoctor.plan import cuda_toolkit

    facts = on_distro(machine("build-nvcc-major"), "Ubuntu 22.04")
    assert ("sudo", "apt-get", "install", "--yes", "cuda-toolkit-12-4") in build_rules._toolkit_fix(facts, "12.4")
    assert "prints the commands" in build_rules._toolkit_fix(facts, "12.7")[0]  # UsageError: no such release

    def planner_bug(*args, **kwargs):  # stands for a defect in the planner, which no real input triggers
        raise KeyError("cuda_dash")

    monkeypatch.setattr(cuda_toolkit, "plan_toolkit", planner_bug)
    with pytest.raises(KeyError):
        build_rules._toolkit_fix(facts, "12.4")


# --- the report: a build section nothing was checked for has a neutral mark ----------------------------

def test_check_build_on_a_file_without_a_build_block_marks_the_section_as_not_checked():
    import os

    facts = MACHINES / "a100-current.json"
    assert "build" not in json.loads(facts.read_text()) or json.loads(facts.read_text())["build"] is None
    run = lambda **env: subprocess.run([sys.executable, "-m", "envdoctor", "check", "--facts", str(facts), "--build"],
                                       capture_output=True, text=True, timeout=120, cwd=ROOT,
                                       env={**os.environ, "NO_COLOR": "1", **env})
    lines = run(PYTHONIOENCODING="utf-8").stdout.splitlines()
    (header,) = [line for line in lines if line.endswith("CUDA extension builds")]
    assert header.startswith("–") and "not checked" in lines[lines.index(header) + 1]
    ascii_lines = run(PYTHONIOENCODING="ascii").stdout.splitlines()
    (header,) = [line for line in ascii_lines if line.endswith("CUDA extension builds")]
    assert header.startswith("- ") and "[ok]" not in header


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
