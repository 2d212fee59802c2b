"""The TensorFlow planner on recorded machines (tests/fixtures/machines/*.json)."""

import dataclasses
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from envdoctor.errors import UsageError
from envdoctor.facts import load_facts
from envdoctor.plan import PlanRequest, evaluate_all, make_plan

MACHINES = Path(__file__).parent / "fixtures" / "machines"


def facts_of(machine, **packages):
    facts = load_facts(MACHINES / f"{machine}.json")
    if packages:
        merged = {**facts.python.packages, **{k.replace("_", "-"): v for k, v in packages.items()}}
        facts = dataclasses.replace(facts, python=dataclasses.replace(facts.python, packages=merged))
    return facts


def plan(machine, facts=None, **request):
    return make_plan(facts or facts_of(machine), PlanRequest("tensorflow", **request))


def assert_well_formed(p, python):
    assert p.ok and p.commands
    for argv in p.commands:
        assert all(isinstance(t, str) and t for t in argv), argv
        if p.manager == "pip":
            assert argv[:3] == (python, "-m", "pip") and argv[3] in ("install", "uninstall")
        else:
            assert argv[:3] == ("uv", "pip", argv[2]) and argv[2] in ("install", "uninstall")
            assert argv[argv.index("--python") + 1] == python
        assert "--index-url" not in argv  # TensorFlow lives on the registry
        for token in argv[4:]:
            if not token.startswith("-") and not token.startswith(("http", python)):
                Requirement(token)
    install = p.commands[-1]
    assert any(t.startswith("tensorflow") and f"=={p.version}" in t for t in install)


CASES = [
    # machine, version, build, the requirement installed
    ("rtx5090-r570", "2.21.0", "cu125", "tensorflow[and-cuda]==2.21.0"),
    ("gtx1080-current", "2.21.0", "cu125", "tensorflow[and-cuda]==2.21.0"),
    ("t4-r550-py310", "2.21.0", "cu125", "tensorflow[and-cuda]==2.21.0"),
    ("a100-current", "2.21.0", "cu125", "tensorflow[and-cuda]==2.21.0"),
    ("wsl2", "2.21.0", "cu125", "tensorflow[and-cuda]==2.21.0"),
    ("gh200", "2.21.0", "cpu", "tensorflow==2.21.0"),
    ("windows-tf", "2.21.0", "cpu", "tensorflow==2.21.0"),
    ("apple-silicon", "2.18.1", "metal", "tensorflow==2.18.1"),
    ("macos-rosetta", "2.16.2", "cpu", "tensorflow==2.16.2"),
    ("cpu-only", "2.21.0", "cpu", "tensorflow==2.21.0"),
    ("amd-mi300", "2.21.0", "cpu", "tensorflow==2.21.0"),
]


@pytest.mark.parametrize("machine, version, build, requirement", CASES)
@pytest.mark.parametrize("manager", ["pip", "uv"])
def test_plans_on_recorded_machines(machine, version, build, requirement, manager):
    facts = facts_of(machine)
    p = plan(machine, facts, manager=manager)
    assert (p.version, p.build, p.manager) == (version, build, manager)
    assert_well_formed(p, facts.python.executable)
    assert requirement in p.commands[-1]
    assert p.reasons and p.reasons[0].startswith(f"tensorflow {version} is the newest release")


def test_gpu_plan_explains_driver_and_kernels():
    p = plan("rtx5090-r570")
    assert any("driver 570.124.04 ≥ 525.60.13" in r for r in p.reasons)
    assert any("compute_90 PTX" in r and "sm_120" in r for r in p.reasons)
    assert any("nvidia-cudnn-cu12" in r for r in p.reasons)


def test_apple_silicon_gets_metal_and_says_why_newer_ones_were_rejected():
    p = plan("apple-silicon")
    assert p.commands[-1][-2:] == ("tensorflow==2.18.1", "tensorflow-metal==1.2.0")
    rejected = {r.candidate: r.why for r in p.rejected}
    assert "no tensorflow-metal release is documented" in rejected["tensorflow 2.21.0 metal"]
    cpu = plan("apple-silicon", cuda="cpu")
    assert (cpu.version, cpu.build) == ("2.21.0", "cpu") and "tensorflow-metal" not in " ".join(cpu.commands[-1])


def test_metal_without_a_wheel_for_this_python_falls_back_to_the_cpu_build():
    facts = facts_of("apple-silicon")
    facts = dataclasses.replace(facts, python=dataclasses.replace(facts.python, version="3.13.1"))
    p = plan("apple-silicon", facts)
    assert (p.version, p.build) == ("2.21.0", "cpu")
    assert any("no Metal (GPU) build fits" in w and "Python 3.13" in w for w in p.warnings)


def test_native_windows_gpu_gets_the_cpu_build_wsl2_and_the_2_10_limit():
    p = plan("windows-tf")
    assert any("no CUDA build for native Windows since 2.11" in w for w in p.warnings)
    assert any("WSL2" in s and "tensorflow[and-cuda]" in s for s in p.steps)
    assert any("2.10.1" in s and "tensorflow<2.11" in s for s in p.steps)
    assert any("needs Python 3.7–3.10; this interpreter is 3.11" in w for w in p.warnings)
    # tensorflow-intel held the 2.15 install; the 2.21 Windows wheel is complete: it goes first.
    assert p.commands[0][-1] == "tensorflow-intel" and "uninstall" in p.commands[0]
    assert set(p.replaces) == {"tensorflow 2.15.0", "tensorflow-intel 2.15.0"}
    assert any("Keras 3" in w for w in p.warnings) and any("tf.estimator" in w for w in p.warnings)


def test_native_windows_2_10_asked_for_by_version_needs_its_python():
    p = plan("windows-tf", version="2.10")
    assert p.version is None and not p.commands
    assert "use Python 3.7–3.10 for tensorflow 2.10.1 cu112" in p.steps


def test_old_release_without_and_cuda_needs_cuda_by_hand():
    p = plan("t4-r550-py310", version="2.13")
    assert (p.version, p.build) == ("2.13.1", "cu118")
    assert p.commands[-1][-1] == "tensorflow==2.13.1"
    assert any("install CUDA 11.8 and cuDNN 8.6" in s for s in p.steps)


def with_driver(machine, driver, cuda):
    facts = facts_of(machine)
    return dataclasses.replace(facts, nvidia=dataclasses.replace(facts.nvidia, driver_version=driver, driver_cuda=cuda))


def test_an_r470_driver_gets_the_last_cuda_11_release():
    p = plan("t4-r550-py310", with_driver("t4-r550-py310", "470.82.01", "11.4"))
    assert (p.version, p.build) == ("2.14.1", "cu118")
    assert p.commands[-1][-1] == "tensorflow[and-cuda]==2.14.1"
    assert "with an NVIDIA driver ≥ 525.60.13 you could install tensorflow 2.21.0 cu125" in p.reasons
    assert p.rejected[0].why == "needs driver ≥ 525.60.13, you have 470.82.01"


def test_driver_too_old_for_every_release_says_what_to_change():
    p = plan("t4-r550-py310", with_driver("t4-r550-py310", "418.67", "10.1"))
    assert p.version is None and not p.commands
    assert "update the NVIDIA driver to ≥ 525.60.13 for tensorflow 2.21.0 cu125" in p.steps
    assert "or install the CPU build: --cuda cpu" in p.steps
    assert any("needs driver ≥ 525.60.13" in r.why for r in p.rejected)


def test_jetson_gets_nvidias_jetpack_wheel():
    p = plan("jetson-orin-jp62")
    assert (p.version, p.build) == ("2.16.1+nv24.08", "jp6-cu126")
    assert p.commands[-1] == ("/usr/bin/python3", "-m", "pip", "install", "--extra-index-url",
                              "https://developer.download.nvidia.com/compute/redist/jp/v61", "tensorflow==2.16.1+nv24.08")
    assert any("apt-get install" in s for s in p.steps)
    old = plan("jetson-orin-jp51")
    assert (old.version, old.build) == ("2.12.0+nv23.06", "jp5-cu114")


def test_jetson_without_a_build_says_so_plainly():
    p = plan("jetson-thor")
    assert p.version is None and not p.commands
    assert p.steps[0].startswith("there is no TensorFlow GPU build for JetPack 7.0")
    cpu = plan("jetson-thor", cuda="cpu")
    assert (cpu.version, cpu.build) == ("2.21.0", "cpu")


def test_replaces_tensorflow_cpu_and_warns_about_numpy2_on_old_tf():
    facts = facts_of("cpu-only", tensorflow_cpu="2.15.0", numpy="2.1.3")
    p = plan("cpu-only", facts)
    assert p.commands[0] == (facts.python.executable, "-m", "pip", "uninstall", "--yes", "tensorflow-cpu")
    assert "tensorflow-cpu 2.15.0" in p.replaces
    old = plan("cpu-only", facts, version="2.17")
    assert any("NumPy 1.x" in w for w in old.warnings)
    assert not any("NumPy 1.x" in w for w in p.warnings)


def test_bad_cuda_value_is_a_usage_error():
    with pytest.raises(UsageError):
        plan("a100-current", cuda="rocm6.4")


def test_candidates_agree_with_the_plan():
    facts = facts_of("rtx5090-r570")
    cands = evaluate_all(facts, PlanRequest("tensorflow"))
    fitting = [c for c in cands if c.fits and c.build.startswith("cu")]
    assert (fitting[0].version, fitting[0].build) == ("2.21.0", "cu125")
    mac = evaluate_all(facts_of("apple-silicon"), PlanRequest("tensorflow"))
    assert next(c for c in mac if c.build == "metal" and c.fits).version == "2.18.1"


def test_a_cuda_version_picks_the_releases_built_with_it():
    p = plan("t4-r550-py310", cuda="11.8")
    assert (p.version, p.build) == ("2.14.1", "cu118")
    assert p.commands[-1][-1] == "tensorflow[and-cuda]==2.14.1"
    none = plan("a100-current", cuda="13.0")
    assert none.version is None
    assert none.steps == ("no TensorFlow release is built with CUDA 13; TensorFlow's CUDA builds use CUDA 11 and 12",)


def test_an_old_glibc_keeps_the_manylinux_2_27_release_out():
    facts = facts_of("cpu-only")
    facts = dataclasses.replace(facts, host=dataclasses.replace(facts.host, glibc="2.17"))
    p = plan("cpu-only", facts)
    assert p.version == "2.20.0"
    assert p.rejected[0].why == "needs glibc ≥ 2.27, you have 2.17"


def test_conda_has_no_tensorflow_build_and_says_so_with_the_pip_command():
    facts = facts_of("gtx1080-current")
    p = plan("gtx1080-current", facts, manager="conda")
    assert p.version is None and not p.commands and p.manager == "conda"
    assert p.reasons[0].startswith("TensorFlow publishes no conda packages")
    assert p.steps[0] == ("inside the conda environment, use pip (--manager pip): "
                          f"{facts.python.executable} -m pip install --upgrade 'tensorflow[and-cuda]==2.21.0'")


@pytest.mark.parametrize("machine", sorted(p.stem for p in MACHINES.glob("*.json")))
def test_every_recorded_machine_gets_commands_or_steps(machine):
    facts = facts_of(machine)
    for manager in ("pip", "uv", "conda"):
        for cuda in ("auto", "cpu"):
            p = plan(machine, facts, manager=manager, cuda=cuda)
            assert (p.ok and p.version) or (p.version is None and not p.commands and p.steps), (manager, cuda)


def test_ptx_only_gpu_needs_the_driver_of_the_toolkit_that_wrote_the_ptx():
    """sm_120 runs TF's compute_90 PTX: the driver JIT-compiles it, so minor-version compatibility
    (≥ 525 for CUDA 12) is not enough; a CUDA 12.5 build needs the 12.5 driver (555.42.02)."""
    facts = facts_of("rtx5090-r570")
    facts = dataclasses.replace(facts, nvidia=dataclasses.replace(facts.nvidia, driver_version="550.54.15"))
    p = plan("rtx5090-r570", facts)
    assert p.ok and p.build == "cu123"  # 12.3's driver is 545.23.06
    newest = next(r for r in p.rejected if r.candidate.endswith("cu125"))
    assert "compute_90 PTX" in newest.why and "needs driver ≥ 555.42.02" in newest.why
    assert "with an NVIDIA driver ≥ 555.42.02 you could install tensorflow 2.21.0 cu125" in p.reasons
    old = dataclasses.replace(facts, nvidia=dataclasses.replace(facts.nvidia, driver_version="520.61.05"))
    nothing = plan("rtx5090-r570", old, version="2.21")
    assert "update the NVIDIA driver to ≥ 555.42.02 for tensorflow 2.21.0 cu125" in nothing.steps
    assert plan("rtx5090-r570").build == "cu125"  # the recorded 570 driver runs it


def test_jetson_honours_the_version_request_and_the_matrix_shows_its_pick():
    p = plan("jetson-orin-jp62")
    cells = evaluate_all(facts_of("jetson-orin-jp62"), PlanRequest("tensorflow"))
    assert any((c.version, c.build, c.verdict) == (p.version, p.build, "fits") for c in cells)
    assert (p.version, p.build) == ("2.16.1+nv24.08", "jp6-cu126")
    other = plan("jetson-orin-jp62", version="2.15")
    assert not other.ok and "none matching ==2.15.*" in other.rejected[0].why
    assert plan("jetson-orin-jp62", version="2.16").version == "2.16.1+nv24.08"


def test_removing_another_provider_reinstalls_tensorflow_of_the_same_version():
    """tensorflow-cpu and tensorflow share the module's files: after removing tensorflow-cpu, pip
    would keep the damaged tensorflow 2.17.1 for tensorflow==2.17.1, so it goes too."""
    facts = facts_of("diag-dup-tf-cpu")  # tensorflow 2.17.1 + tensorflow-cpu 2.17.1
    same = plan("diag-dup-tf-cpu", facts, version="2.17")
    assert same.commands[0][3:] == ("uninstall", "--yes", "tensorflow-cpu", "tensorflow")
    newer = plan("diag-dup-tf-cpu", facts)
    assert newer.commands[0][3:] == ("uninstall", "--yes", "tensorflow-cpu")
