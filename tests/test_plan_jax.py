"""The JAX planner on recorded machines (tests/fixtures/machines/*.json)."""

import dataclasses
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from envdoctor.errors import UsageError
from envdoctor.facts import load_facts
from envdoctor.plan import PlanRequest, evaluate_all, make_plan

MACHINES = Path(__file__).parent / "fixtures" / "machines"


def facts_of(machine, python_version=None, **packages):
    facts = load_facts(MACHINES / f"{machine}.json")
    env = facts.python
    if packages:
        env = dataclasses.replace(env, packages={**env.packages, **{k.replace("_", "-"): v for k, v in packages.items()}})
    if python_version:
        env = dataclasses.replace(env, version=python_version)
    return dataclasses.replace(facts, python=env)


def plan(machine, facts=None, **request):
    return make_plan(facts or facts_of(machine), PlanRequest("jax", **request))


def assert_well_formed(p, python):
    assert p.ok and p.commands and p.index_url is None
    for argv in p.commands:
        assert all(isinstance(t, str) and t for t in argv), argv
        if p.manager == "pip":
            assert argv[:3] == (python, "-m", "pip") and argv[3] in ("install", "uninstall")
        else:
            assert argv[:3] == ("uv", "pip", argv[2]) and argv[argv.index("--python") + 1] == python
        for token in argv[4:]:
            if not token.startswith("-") and token != python:
                Requirement(token)
    requirement = Requirement(p.commands[-1][-1])
    assert requirement.name == "jax" and str(requirement.specifier) == f"=={p.version}"
    assert requirement.extras == (set() if p.build == "cpu" else {p.build})


CASES = [
    ("rtx5090-r570", "0.12.0.1", "cuda12"),  # driver 570 < 580: no cuda13
    ("gtx1080-current", "0.10.2", "cuda12"),  # Python 3.11 (0.11 needs 3.12); sm_61 < 7.5: no cuda13
    ("t4-r550-py310", "0.6.2", "cuda12"),  # Python 3.10: the last release for it
    ("a100-current", "0.12.0.1", "cuda13"),
    ("gh200", "0.12.0.1", "cuda13"),  # aarch64 server wheels
    ("wsl2", "0.12.0.1", "cuda12"),  # Windows host driver 573 < 580
    ("windows-tf", "0.10.2", "cpu"),  # no CUDA plugin on native Windows
    ("apple-silicon", "0.12.0.1", "cpu"),
    ("macos-rosetta", "0.4.38", "cpu"),  # the last Intel-Mac jaxlib
    ("cpu-only", "0.10.2", "cpu"),
    ("amd-mi300", "0.12.0.1", "cpu"),
]


@pytest.mark.parametrize("machine, version, build", CASES)
@pytest.mark.parametrize("manager", ["pip", "uv"])
def test_plans_on_recorded_machines(machine, version, build, manager):
    facts = facts_of(machine)
    p = plan(machine, facts, manager=manager)
    assert (p.version, p.build) == (version, build)
    assert_well_formed(p, facts.python.executable)


def test_cuda13_needs_driver_580_and_says_so():
    p = plan("rtx5090-r570")
    assert p.rejected[0].candidate == "jax 0.12.0.1 cuda13"
    assert p.rejected[0].why == "needs driver ≥ 580, you have 570.124.04"
    assert "with an NVIDIA driver ≥ 580 you could install jax 0.12.0.1 cuda13" in p.reasons
    assert any("plugin must equal jaxlib" in r for r in p.reasons)


def test_old_gpu_is_kept_off_cuda13():
    p = plan("gtx1080-current")
    assert any("CUDA 13 JAX needs SM 7.5 or newer, this GPU is sm_61" in r.why for r in p.rejected)


def test_python_too_old_for_every_release():
    p = plan("cpu-only", facts_of("cpu-only", python_version="3.9.18"))
    assert p.version is None and not p.commands
    assert p.steps[0] == "use Python 3.12–3.15 for jax 0.12.0.1"


def test_windows_gets_cpu_and_the_wsl2_way():
    p = plan("windows-tf")
    assert any("no JAX CUDA plugin for windows_amd64" in w for w in p.warnings)
    assert any("WSL2" in s for s in p.steps)
    assert any("NumPy >= 2.0" in w for w in p.warnings)  # numpy 1.26.4 is installed there


def test_jetson_orin_has_no_jax_gpu_build():
    p = plan("jetson-orin-jp62")
    assert p.version is None and not p.commands
    assert p.steps[0].startswith("there is no JAX GPU build for Jetson")
    cpu = plan("jetson-thor", cuda="cpu")
    assert (cpu.version, cpu.build) == ("0.12.0.1", "cpu")


def test_jetson_thor_gets_the_registry_cuda13_plugin_with_its_sm_110_kernels():
    # jetson.toml decides from the wheels: jax-cuda13-plugin 0.10.2+ aarch64 carries SASS sm_110
    p = plan("jetson-thor")
    assert (p.version, p.build) == ("0.12.0.1", "cuda13") and p.commands
    assert any("jax[cuda13]==0.12.0.1" in token for token in p.commands[-1])
    assert any("sm_110" in reason for reason in p.reasons)
    assert not plan("jetson-thor", cuda="12").ok  # JetPack 7 brings CUDA 13, not 12


def test_explicit_cuda_major():
    p = plan("a100-current", cuda="12")
    assert (p.version, p.build) == ("0.12.0.1", "cuda12")
    assert plan("a100-current", cuda="cu130").build == "cuda13"
    with pytest.raises(UsageError):
        plan("a100-current", cuda="11.8")


def test_switching_plugins_removes_the_stale_one():
    facts = facts_of("a100-current", jax="0.7.0", jaxlib="0.7.0", jax_cuda12_plugin="0.7.0", jax_cuda12_pjrt="0.7.0")
    p = plan("a100-current", facts)
    assert p.build == "cuda13"
    assert p.commands[0] == (facts.python.executable, "-m", "pip", "uninstall", "--yes",
                             "jax-cuda12-plugin", "jax-cuda12-pjrt")
    assert set(p.replaces) == {"jax 0.7.0", "jaxlib 0.7.0", "jax-cuda12-plugin 0.7.0", "jax-cuda12-pjrt 0.7.0"}
    assert any("jax.device_put_sharded" in w for w in p.warnings)  # 0.7 -> 0.12 crosses 0.10
    assert any("pmap" in w for w in p.warnings)


def test_conda_uses_conda_forge():
    facts = facts_of("gtx1080-current")
    p = plan("gtx1080-current", facts, manager="conda")
    assert p.commands == (("conda", "install", "--yes", "--prefix", facts.python.env_path, "--channel", "conda-forge",
                           "--override-channels", "jaxlib=0.10.2=*cuda*", "jax=0.10.2", "cuda-version=12"),)
    assert any("community-maintained" in w for w in p.warnings)


def test_candidates_agree_with_the_plan():
    cands = evaluate_all(facts_of("rtx5090-r570"), PlanRequest("jax"))
    first = next(c for c in cands if c.fits)
    assert (first.version, first.build) == ("0.12.0.1", "cuda12")
    assert next(c for c in cands if c.build == "cuda13").verdict == "driver"


def test_an_old_glibc_gets_an_older_patch_of_the_same_series():
    facts = facts_of("cpu-only")
    facts = dataclasses.replace(facts, host=dataclasses.replace(facts.host, glibc="2.17"))
    p = plan("cpu-only", facts)
    # jaxlib is tagged manylinux_2_27 from 0.7.1; 0.7.0 (manylinux2014) is the newest that installs
    assert (p.version, p.build) == ("0.7.0", "cpu")
    assert any(r.candidate == "jax 0.7.2 cpu" and "needs glibc ≥ 2.27" in r.why for r in p.rejected)


@pytest.mark.parametrize("machine", sorted(p.stem for p in MACHINES.glob("*.json")))
def test_every_recorded_machine_gets_commands_or_steps(machine):
    facts = facts_of(machine)
    for manager in ("pip", "uv", "conda"):
        for cuda in ("auto", "cpu"):
            p = plan(machine, facts, manager=manager, cuda=cuda)
            assert (p.ok and p.version) or (p.version is None and not p.commands and p.steps), (manager, cuda)
