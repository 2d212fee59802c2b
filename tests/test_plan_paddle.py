"""The PaddlePaddle planner on recorded machines (tests/fixtures/machines/*.json)."""

import dataclasses
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from envdoctor.errors import UsageError
from envdoctor.facts import CudaToolkit, load_facts
from envdoctor.plan import PlanRequest, evaluate_all, make_plan

MACHINES = Path(__file__).parent / "fixtures" / "machines"
PADDLE_INDEX = "https://www.paddlepaddle.org.cn/packages/stable/"


def facts_of(machine, **packages):
    facts = load_facts(MACHINES / f"{machine}.json")
    if packages:
        merged = {**facts.python.packages, **{k.replace("_", "-"): v for k, v in packages.items()}}
        facts = dataclasses.replace(facts, python=dataclasses.replace(facts.python, packages=merged))
    return facts


def plan(machine, facts=None, **request):
    return make_plan(facts or facts_of(machine), PlanRequest("paddle", **request))


def assert_well_formed(p, python):
    assert p.ok and p.commands
    for argv in p.commands:
        assert all(isinstance(t, str) and t for t in argv), argv
        if p.manager == "pip":
            assert argv[:3] == (python, "-m", "pip") and argv[3] in ("install", "uninstall")
        else:
            assert argv[:3] == ("uv", "pip", argv[2]) and argv[argv.index("--python") + 1] == python
        assert "--extra-index-url" not in argv
    install = p.commands[-1]
    if p.index_url:
        assert install[install.index("--index-url") + 1] == p.index_url
        requirement = Requirement(install[install.index("--index-url") - 1])
    else:
        assert "--index-url" not in install
        requirement = Requirement(install[-1])
    assert requirement.name == ("paddlepaddle" if p.build == "cpu" else "paddlepaddle-gpu")
    assert str(requirement.specifier).startswith(f"=={p.version}")


CASES = [
    ("gtx1080-current", "3.3.1", "cu129"),  # sm_61: cu130 (CUDA 13) cannot build for it
    ("t4-r550-py310", "3.3.1", "cu126"),  # driver 550.54.15 ≥ 550.54.14, < 575 for cu129
    ("a100-current", "3.3.1", "cu130"),
    ("wsl2", "3.3.1", "cu126"),  # Windows host driver 573.24 < 576.02 for cu129
    ("windows-tf", "3.3.1", "cu129"),
    ("gh200", "3.2.2", "cpu"),  # no GPU build for aarch64; 3.3 has no aarch64 wheel on the registry
    ("apple-silicon", "3.3.1", "cpu"),
    ("macos-rosetta", "3.0.0", "cpu"),
    ("cpu-only", "3.3.1", "cpu"),
    ("amd-mi300", "3.3.1", "cpu"),
]


@pytest.mark.parametrize("machine, version, build", CASES)
@pytest.mark.parametrize("manager", ["pip", "uv"])
def test_plans_on_recorded_machines(machine, version, build, manager):
    facts = facts_of(machine)
    p = plan(machine, facts, manager=manager)
    assert (p.version, p.build) == (version, build)
    assert p.index_url == (None if build == "cpu" else f"{PADDLE_INDEX}{build}/")
    assert_well_formed(p, facts.python.executable)


def test_rtx5090_on_r570_has_no_fitting_build_and_is_told_the_smallest_driver_update():
    p = plan("rtx5090-r570")
    assert p.version is None and not p.commands
    assert p.steps == ("update the NVIDIA driver to ≥ 575.51.03 for paddle 3.3.1 cu129",
                       "or install the CPU build: --cuda cpu")
    rejected = {r.candidate: r.why for r in p.rejected}
    assert rejected["paddle 3.3.1 cu126"] == "CUDA 12.6 cannot build kernels for sm_120"
    assert "needs driver ≥ 575.51.03" in rejected["paddle 3.3.1 cu129"]


def test_undocumented_driver_minimums_are_flagged():
    p = plan("a100-current")
    assert any("UNCONFIRMED" in w for w in p.warnings)
    assert not any("UNCONFIRMED" in w for w in plan("t4-r550-py310").warnings)


def test_gpu_plan_removes_the_cpu_package_first():
    facts = facts_of("t4-r550-py310", paddlepaddle="3.0.0")
    p = plan("t4-r550-py310", facts)
    assert p.commands[0] == (facts.python.executable, "-m", "pip", "uninstall", "--yes", "paddlepaddle")
    assert p.replaces == ("paddlepaddle 3.0.0",)
    assert any("never keep both" in w for w in p.warnings)
    cpu = plan("t4-r550-py310", facts_of("t4-r550-py310", paddlepaddle_gpu="3.0.0"), cuda="cpu")
    assert cpu.commands[0][-1] == "paddlepaddle-gpu" and cpu.build == "cpu"


def test_paddle_2_6_builds_need_the_matching_system_cuda():
    p = plan("t4-r550-py310", version="2.6")
    assert p.version is None
    assert any("needs CUDA 11.8 and cuDNN 8.6 on the system (found CUDA 12.4)" == r.why for r in p.rejected)
    facts = facts_of("t4-r550-py310")
    facts = dataclasses.replace(facts, cuda_toolkit=CudaToolkit(version="11.7", nvcc="/usr/local/cuda-11.7/bin/nvcc"))
    p = plan("t4-r550-py310", facts, version="2.6")
    assert (p.version, p.build) == ("2.6.2", "cu117")
    assert p.commands[-1][-3:] == ("paddlepaddle-gpu==2.6.2.post117", "--index-url", f"{PADDLE_INDEX}cu117/")
    assert any("install CUDA 11.7 and cuDNN 8.4" in s for s in p.steps)


def test_jetson_has_no_paddle_gpu_build():
    p = plan("jetson-orin-jp62")
    assert p.version is None and p.steps[0].startswith("there is no PaddlePaddle GPU build for Jetson")


def test_cuda_option_forms():
    assert plan("a100-current", cuda="12.6").build == "cu126"
    assert plan("a100-current", cuda="cu129").build == "cu129"
    with pytest.raises(UsageError):
        plan("a100-current", cuda="twelve")


def test_candidates_agree_with_the_plan():
    cands = evaluate_all(facts_of("t4-r550-py310"), PlanRequest("paddle"))
    first = next(c for c in cands if c.fits and c.build != "cpu")
    assert (first.version, first.build) == ("3.3.1", "cu126")
    assert {c.build for c in cands if c.version == "3.3.1"} == {"cu130", "cu129", "cu126", "cpu"}


def test_conda_has_no_paddle_build_and_says_so_with_the_pip_command():
    facts = facts_of("t4-r550-py310")
    p = plan("t4-r550-py310", facts, manager="conda")
    assert p.version is None and not p.commands
    assert p.reasons[0].startswith("PaddlePaddle publishes no conda packages")
    assert p.steps[0].endswith(f"{facts.python.executable} -m pip install --upgrade paddlepaddle-gpu==3.3.1 "
                               f"--index-url {PADDLE_INDEX}cu126/")


@pytest.mark.parametrize("machine", sorted(p.stem for p in MACHINES.glob("*.json")))
def test_every_recorded_machine_gets_commands_or_steps(machine):
    facts = facts_of(machine)
    for manager in ("pip", "uv", "conda"):
        for cuda in ("auto", "cpu"):
            p = plan(machine, facts, manager=manager, cuda=cuda)
            assert (p.ok and p.version) or (p.version is None and not p.commands and p.steps), (manager, cuda)


def test_python_fix_reads_the_target_platform(monkeypatch):
    """The Python range offered is the one of the target's platform, not Linux's."""
    from envdoctor.matrix import paddle as paddle_matrix

    real = paddle_matrix.releases()
    mac_only = tuple(dataclasses.replace(r, wheels={**r.wheels, "macos_x86_64": ("3.8", "3.9")}) for r in real)
    monkeypatch.setattr(paddle_matrix, "releases", lambda: mac_only)
    facts = load_facts(MACHINES / "macos-rosetta.json")
    facts = dataclasses.replace(facts, python=dataclasses.replace(facts.python, version="3.15.0"))
    p = make_plan(facts, PlanRequest("paddle"))
    assert not p.ok
    assert any(s.startswith("use Python 3.8–3.9 for paddle ") for s in p.steps), p.steps


def test_same_version_of_another_cuda_build_is_removed_first():
    """Paddle 3.x's CUDA builds share one version: an installed paddlepaddle-gpu 3.3.1 (of whatever
    build) satisfies paddlepaddle-gpu==3.3.1, so the plan removes it first."""
    p = plan("a100-current", facts_of("a100-current", paddlepaddle_gpu="3.3.1"))
    assert (p.version, p.build) == ("3.3.1", "cu130")
    assert p.commands[0][3:] == ("uninstall", "--yes", "paddlepaddle-gpu")
    assert any("share one version number" in r for r in p.reasons)
    older = plan("a100-current", facts_of("a100-current", paddlepaddle_gpu="3.2.2"))
    assert len(older.commands) == 1  # another version: the pin replaces it


def test_removing_the_cpu_build_reinstalls_the_gpu_build_too():
    """Both installed: removing paddlepaddle deletes files of the shared module that paddlepaddle-gpu
    also installed, so the GPU one is removed and installed again, even at the planned version."""
    p = plan("a100-current", facts_of("a100-current", paddlepaddle="3.3.1", paddlepaddle_gpu="3.3.1"))
    assert p.commands[0][3:] == ("uninstall", "--yes", "paddlepaddle", "paddlepaddle-gpu")
    assert p.commands[1][3] == "install"


def test_a_gtx_780_is_not_told_to_install_the_registrys_paddle_2_6_cu118_wheel():
    # paddlepaddle-gpu 2.6.x on the registry carries SASS from sm_61 only (libphi.so / libpaddle.so scan)
    for version in ("2.6.2", "2.6.1", "2.6.0"):
        p = plan("diag-paddle-kepler", version=version, cuda="cu118")
        assert not p.ok, version
        assert any("no kernels for sm_35" in r.why for r in p.rejected), p.rejected


def test_the_registrys_paddle_2_6_wheel_still_fits_a_gpu_it_has_kernels_for():
    p = plan("gtx1080-current", version="2.6.2", cuda="cu118")
    assert not any("no kernels" in r.why for r in p.rejected), p.rejected
