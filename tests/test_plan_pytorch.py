"""The PyTorch planner on recorded machines (tests/fixtures/machines/*.json)."""

import json
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from envdoctor.errors import UsageError
from envdoctor.facts import load_facts
from envdoctor.plan import PlanRequest, common, evaluate_all, make_plan
from envdoctor.plan.pytorch import version_spec, wanted_tag

MACHINES = Path(__file__).parent / "fixtures" / "machines"
TORCH_INDEX = "https://download.pytorch.org/whl/"


def plan(machine, **request):
    return make_plan(load_facts(MACHINES / f"{machine}.json"), PlanRequest("pytorch", **request))


def assert_well_formed(p, facts_python):
    assert p.ok and p.commands
    for argv in p.commands:
        assert all(isinstance(t, str) and t for t in argv), argv
        if p.manager == "pip":
            assert argv[:4] == (facts_python, "-m", "pip", "install")
        elif p.manager == "uv":
            assert argv[:5] == ("uv", "pip", "install", "--python", facts_python)
        else:
            assert argv[0] == "conda" and argv[1] in ("install", "create")
        if p.index_url:
            assert argv[argv.index("--index-url") + 1] == p.index_url
            assert "--extra-index-url" not in argv
        else:
            assert "--index-url" not in argv
        for token in argv:
            if token.startswith(("torch", "torchvision", "torchaudio")) and not token.startswith("http"):
                Requirement(token)  # a valid requirement


# machine, expected version, build, index (None = the registry's default wheel)
CASES = [
    ("rtx5090-r570", "2.11.0", "cu128", TORCH_INDEX + "cu128"),
    ("gtx1080-current", "2.14.1", "cu126", TORCH_INDEX + "cu126"),
    ("t4-r550-py310", "2.14.1", "cu126", TORCH_INDEX + "cu126"),
    ("a100-current", "2.15.0", "cu132", None),
    ("gh200", "2.15.0", "cu132", None),
    ("jetson-thor", "2.15.0", "cu130", TORCH_INDEX + "cu130"),
    ("wsl2", "2.14.1", "cu126", TORCH_INDEX + "cu126"),
    ("windows-tf", "2.14.1", "cu126", TORCH_INDEX + "cu126"),
    ("apple-silicon", "2.15.0", "mps", None),
    ("macos-rosetta", "2.2.2", "cpu", None),
    ("cpu-only", "2.15.0", "cpu", TORCH_INDEX + "cpu"),
    ("amd-mi300", "2.14.1", "rocm7.2", TORCH_INDEX + "rocm7.2"),
]


@pytest.mark.parametrize("machine, version, build, index", CASES)
@pytest.mark.parametrize("manager", ["pip", "uv"])
def test_auto_plans_on_recorded_machines(machine, version, build, index, manager):
    facts = load_facts(MACHINES / f"{machine}.json")
    p = make_plan(facts, PlanRequest("pytorch", manager=manager))
    assert (p.version, p.build, p.index_url) == (version, build, index)
    assert p.python == ".".join(facts.python.version.split(".")[:2])
    assert_well_formed(p, facts.python.executable)
    assert f"torch=={version}" in p.commands[0]
    assert p.reasons


def test_rtx5090_r570_says_why():
    p = plan("rtx5090-r570")
    rejected = {r.candidate: r.why for r in p.rejected}
    assert rejected["torch 2.15.0 cu132"] == "needs driver ≥ 580, you have 570.124.04"
    assert "no kernels for sm_120" in rejected["torch 2.14.1 cu126"]
    assert any("sm_120" in r and "has sm_120 kernels" in r for r in p.reasons)
    assert any("driver ≥ 580 you could install torch 2.15.0 cu132" in r for r in p.reasons)
    assert "torchvision==0.26.0" in p.commands[0] and "torchaudio==2.11.0" in p.commands[0]


def test_gtx1080_rejects_builds_without_pascal_kernels():
    p = plan("gtx1080-current")
    assert "no kernels for sm_61" in p.rejected[0].why
    assert any("sm_60 kernels run on sm_61" in r for r in p.reasons)


def test_t4_replaces_installed_torch_and_warns_about_weights_only():
    p = plan("t4-r550-py310")
    assert p.replaces == ("torch 2.3.1+cu121", "torchvision 0.18.1+cu121")
    assert any("weights_only=True" in w for w in p.warnings)
    assert "no wheel for Python 3.10" in p.rejected[0].why
    assert "torchvision>=0.29.1,<0.30" in p.commands[0]


def test_wsl_driver_is_read_as_a_windows_driver():
    p = plan("wsl2")
    assert any(r.why == "needs driver ≥ 580, you have 573.24" for r in p.rejected)
    assert any("573.24 ≥ 528.33" in r for r in p.reasons)


def test_registry_default_is_preferred_when_it_fits():
    p = plan("a100-current")
    assert p.index_url is None and p.rejected == ()
    assert any("no extra index" in r for r in p.reasons)


def test_jetson_orin_jp62_uses_the_jetpack_index():
    p = plan("jetson-orin-jp62")
    assert p.build == "jp6-cu126" and p.index_url == "https://pypi.jetson-ai-lab.io/jp6/cu126"
    argv = p.commands[0]
    assert argv[:4] == ("/usr/bin/python3", "-m", "pip", "install") and "download.pytorch.org" not in " ".join(argv)
    assert any("apt-get install" in s for s in p.steps)
    assert any("system Python" in w for w in p.warnings)


def test_jetson_orin_jp51_uses_nvidias_wheel():
    p = plan("jetson-orin-jp51")
    assert p.version == "2.1.0a0+41361538.nv23.06" and p.build == "jp5-cu114"
    assert p.commands[0][-1].startswith("https://developer.download.nvidia.com/compute/redist/jp/v512/pytorch/")
    assert p.commands[0][-1].endswith("cp38-cp38-linux_aarch64.whl")


def test_jetson_with_the_wrong_python_says_which_python():
    facts = load_facts(MACHINES / "jetson-orin-jp62.json")
    facts = type(facts).from_dict({**facts.to_dict(), "python": {**facts.to_dict()["python"], "version": "3.12.3"}})
    p = make_plan(facts, PlanRequest("pytorch"))
    assert p.version is None and not p.commands
    assert any("built for Python 3.10" in r.why for r in p.rejected)
    assert any("use Python 3.10" in s for s in p.steps)


def test_jetson_never_gets_conda():
    p = plan("jetson-orin-jp62", manager="conda")
    assert p.version is None and any("not packaged for conda" in r.why for r in p.rejected)


def test_cuda_cpu_on_a_gpu_machine():
    p = plan("rtx5090-r570", cuda="cpu")
    assert (p.version, p.build, p.index_url) == ("2.15.0", "cpu", TORCH_INDEX + "cpu")


@pytest.mark.parametrize("cuda", ["12.8", "cu128"])
def test_cuda_version_request(cuda):
    p = plan("a100-current", cuda=cuda)
    assert (p.version, p.build) == ("2.11.0", "cu128")  # the newest release with a cu128 build


def test_explicit_cuda_the_driver_cannot_run_comes_with_a_warning():
    p = plan("rtx5090-r570", cuda="cu130")
    assert (p.version, p.build) == ("2.15.0", "cu130")
    assert any("cu130, as asked: needs driver ≥ 580" in w for w in p.warnings)
    assert "as asked (--cuda cu130), though it does not fit" in p.reasons[0]


def test_explicit_rocm_without_an_amd_gpu_says_so():
    p = plan("a100-current", cuda="rocm6.4")
    assert p.build == "rocm6.4"
    assert "rocm6.4, as asked: no AMD GPU found" in p.warnings
    assert "kernels for every AMD GPU" not in p.reasons[0]
    assert all(r.strip() != "rocm6.4: has kernels for" for r in p.reasons)


def test_rocm_request():
    p = plan("amd-mi300", cuda="rocm6.4")
    assert (p.version, p.build, p.index_url) == ("2.9.1", "rocm6.4", TORCH_INDEX + "rocm6.4")


@pytest.mark.parametrize("spec, version", [("2.6", "2.6.0"), ("2.7.0", "2.7.0"), (">=2.5,<2.8", "2.7.1")])
def test_version_request(spec, version):
    p = plan("a100-current", version=spec)
    assert p.version == version


def test_nothing_fits_says_what_to_change():
    p = plan("t4-r550-py310", version="2.15")
    assert p.version is None and p.commands == ()
    assert "use Python 3.11–3.15 for torch 2.15.0" in p.steps
    assert "update the NVIDIA driver to ≥ 580 for torch 2.15.0 cu132" in p.steps
    assert p.to_dict()["rejected"][0]["candidate"] == "torch 2.15.0 cu132"


def test_gpu_without_driver_gets_no_cuda_plan():
    p = plan("diag-nouveau")
    assert p.version is None
    assert any(s.startswith("install a working NVIDIA driver") for s in p.steps)
    assert "or install the CPU build: --cuda cpu" in p.steps


def test_old_glibc_stays_on_manylinux2014():
    p = plan("diag-glibc-old")
    assert p.version == "2.6.0"
    assert any("needs glibc ≥ 2.28" in r.why for r in p.rejected)


def test_conda_uses_conda_forge_with_cuda_version():
    p = plan("a100-current", manager="conda")
    assert (p.version, p.build) == ("2.13", "cu130")
    argv = p.commands[0]
    assert argv[:2] == ("conda", "create")  # the target is a uv venv, not a conda env
    assert argv[argv.index("--channel") + 1] == "conda-forge" and "--override-channels" in argv
    assert "pytorch=2.13=cuda*" in argv and "cuda-version=13.0" in argv
    assert "-c" not in argv and argv.count("--channel") == 1  # never the `pytorch` channel


def test_conda_into_an_existing_conda_env():
    p = plan("gtx1080-current", manager="conda")
    argv = p.commands[0]
    assert argv[:4] == ("conda", "install", "--yes", "--prefix")
    assert "cuda-version=12.9" in argv  # conda-forge's 12.9 build still carries sm_60


def test_conda_has_no_rocm():
    p = plan("amd-mi300", manager="conda")
    assert p.version is None and any("no ROCm build" in s for s in p.steps)


def test_bad_requests_are_usage_errors():
    with pytest.raises(UsageError):
        version_spec("two point six")
    with pytest.raises(UsageError):
        wanted_tag("cuda twelve")
    assert wanted_tag("12.8") == "cu128" and wanted_tag("auto") is None and wanted_tag("CPU") == "cpu"


def test_candidates_agree_with_choose():
    facts = load_facts(MACHINES / "rtx5090-r570.json")
    table = evaluate_all(facts, PlanRequest("pytorch"))
    first_fit = next(c for c in table if c.fits and c.why != "CPU only")
    assert (first_fit.version, first_fit.build) == ("2.11.0", "cu128")
    verdicts = {(c.version, c.build): (c.verdict, c.why) for c in table}
    assert verdicts[("2.15.0", "cu132")][0] == "driver"
    assert verdicts[("2.15.0", "cpu")] == ("fits", "CPU only")
    assert verdicts[("2.9.1", "rocm6.4")][0] == "platform"
    assert verdicts[("2.14.1", "cu126")][0] == "gpu"


def test_cli_json(cli):
    result = cli("install", "pytorch", "--facts", str(MACHINES / "rtx5090-r570.json"), "--json")
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    assert (doc["version"], doc["build"], doc["index_url"]) == ("2.11.0", "cu128", TORCH_INDEX + "cu128")
    assert doc["rejected"][0] == {"candidate": "torch 2.15.0 cu132", "why": "needs driver ≥ 580, you have 570.124.04"}


def test_mixed_generations_have_no_common_build():
    """An RTX 5090 (sm_120) and a GTX 1080 (sm_61) in one box: no pip build has kernels for both."""
    facts = load_facts(MACHINES / "rtx5090-r570.json").to_dict()
    facts["nvidia"]["driver_version"] = "580.95.05"
    facts["nvidia"]["gpus"].append({"index": 1, "name": "NVIDIA GeForce GTX 1080", "compute_capability": "6.1"})
    p = make_plan(type(load_facts(MACHINES / "rtx5090-r570.json")).from_dict(facts), PlanRequest("pytorch"))
    assert p.version is None
    assert p.steps[0] == "no PyTorch build has kernels for every GPU here (sm_120, sm_61)"
    assert "CUDA_VISIBLE_DEVICES" in p.steps[1]


def _orin_on(jetpack, l4t, python):
    facts = load_facts(MACHINES / "jetson-orin-jp62.json").to_dict()
    facts["jetson"].update(jetpack=jetpack, l4t=l4t)
    facts["python"]["version"] = python
    return type(load_facts(MACHINES / "jetson-orin-jp62.json")).from_dict(facts)


def test_orin_on_jetpack_72_gets_a_plain_statement():
    """JetPack 7.2 on Orin: no PyTorch build with sm_87 kernels; never the generic SBSA wheel."""
    p = make_plan(_orin_on("7.2", "39.2.0", "3.12.3"), PlanRequest("pytorch"))
    assert p.version is None and p.commands == ()
    assert p.steps[0].startswith("there is no PyTorch build for JetPack 7.2 on tegra234")
    assert "generic aarch64 wheel would not run" in p.steps[1]


def test_hazards_travel_only_where_they_apply():
    assert plan("cpu-only").warnings == ()  # fresh CPU install: no GPU-only or upgrade hazards
    t4 = plan("t4-r550-py310")  # 2.3.1 -> 2.14.1 crosses the torch.load and manylinux_2_28 changes
    assert any("weights_only=True" in w for w in t4.warnings)
    assert any("glibc ≥ 2.28" in w for w in t4.warnings)
    assert not any("glibc" in w for w in plan("windows-tf").warnings)  # a Linux-only hazard


def test_amd_gpu_on_windows_gets_the_cpu_build_with_a_warning():
    facts = load_facts(MACHINES / "amd-mi300.json").to_dict()
    facts["host"]["os"] = "windows"
    p = make_plan(type(load_facts(MACHINES / "amd-mi300.json")).from_dict(facts), PlanRequest("pytorch"))
    assert (p.version, p.build, p.index_url) == ("2.15.0", "cpu", None)  # the registry's Windows wheel is CPU
    assert p.warnings == ("PyTorch publishes no ROCm build for windows_amd64: this is the CPU build",)


def test_macos_13_stops_at_the_last_release_for_macos_11_wheels():
    facts = load_facts(MACHINES / "apple-silicon.json").to_dict()
    facts["host"]["os_version"] = "13.6.1"
    p = make_plan(type(load_facts(MACHINES / "apple-silicon.json")).from_dict(facts), PlanRequest("pytorch"))
    assert (p.version, p.build, p.index_url) == ("2.11.0", "mps", None)
    assert p.rejected[0].why == "needs macOS ≥ 14.0, you have 13.6.1"


# --- plan.common on recorded machines -------------------------------------------------------------


@pytest.mark.parametrize("machine, platform, driver_os, python", [
    ("rtx5090-r570", "linux_x86_64", "linux", "3.12"),
    ("wsl2", "linux_x86_64", "windows", "3.12"),
    ("windows-tf", "windows_amd64", "windows", "3.11"),
    ("gh200", "linux_aarch64", "linux", "3.12"),
    ("apple-silicon", "macos_arm64", "linux", "3.12"),
    ("macos-rosetta", "macos_x86_64", "linux", "3.11"),
])
def test_common_target(machine, platform, driver_os, python):
    facts = load_facts(MACHINES / f"{machine}.json")
    assert common.target_platform(facts) == platform
    assert common.driver_os(facts) == driver_os
    assert common.target_python(facts) == python


def test_common_driver_check():
    assert common.driver_check(load_facts(MACHINES / "rtx5090-r570.json"), "12.8")
    check = common.driver_check(load_facts(MACHINES / "rtx5090-r570.json"), "13.0")
    assert not check and check.minimum == "580" and check.why == "needs driver ≥ 580, you have 570.124.04"
    jetson = common.driver_check(load_facts(MACHINES / "jetson-orin-jp62.json"), "12.6")
    assert not jetson and "JetPack" in jetson.why  # 540.4.0 is not a desktop driver number
    assert common.driver_check(load_facts(MACHINES / "cpu-only.json"), "12.8").why == "no NVIDIA driver found"


def test_common_gpu_capabilities_fall_back_to_the_name():
    facts = load_facts(MACHINES / "t4-r550-py310.json").to_dict()
    facts["nvidia"]["gpus"][0]["compute_capability"] = None  # R470-era nvidia-smi has no compute_cap
    assert common.gpu_capabilities(type(load_facts(MACHINES / "cpu-only.json")).from_dict(facts)) == ["7.5"]


def test_another_build_of_the_same_release_is_removed_first():
    """pip keeps an installed torch that satisfies the pin (2.6.0+cpu satisfies torch==2.6.0) and
    any torch satisfies an unpinned `torch`: the plan removes it first."""
    facts = load_facts(MACHINES / "diag-torch-cpu-gpu.json")  # torch 2.6.0+cpu, torchvision 0.21.0+cpu
    same = make_plan(facts, PlanRequest("pytorch", version="2.6"))
    assert same.version == "2.6.0"
    assert same.commands[0] == (facts.python.executable, "-m", "pip", "uninstall", "--yes", "torch", "torchvision")
    assert same.commands[1][3] == "install"
    uv = make_plan(facts, PlanRequest("pytorch", version="2.6", manager="uv"))
    assert uv.commands[0] == ("uv", "pip", "uninstall", "--python", facts.python.executable, "torch", "torchvision")
    newer = make_plan(facts, PlanRequest("pytorch"))  # 2.14.1: the pin itself replaces 2.6.0
    assert len(newer.commands) == 1 and newer.commands[0][3] == "install"

    jetson = load_facts(MACHINES / "diag-jetson-generic-torch.json")  # the registry's torch 2.8.0+cu128
    p = make_plan(jetson, PlanRequest("pytorch"))
    assert p.commands[0][-2:] == ("--yes", "torch") and p.commands[0][3] == "uninstall"
    assert "--index-url" in p.commands[1]


# --- floors per platform and architecture, and the cu129 aarch64 build (issue: matrix errors) -----

def _with_host(machine, **host):
    import dataclasses

    facts = load_facts(MACHINES / f"{machine}.json")
    return dataclasses.replace(facts, host=dataclasses.replace(facts.host, **host))


def test_gh200_gets_torch_2_8_from_the_cu129_aarch64_build():
    p = plan("gh200", version="2.8.0")
    assert (p.version, p.build, p.index_url) == ("2.8.0", "cu129", TORCH_INDEX + "cu129")


def test_install_cli_plans_cu129_aarch64_for_torch_2_8_on_a_gh200():
    import subprocess
    import sys

    result = subprocess.run([sys.executable, "-m", "envdoctor", "install", "pytorch", "--version", "2.8.0",
                             "--facts", str(MACHINES / "gh200.json"), "--json"],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    found = json.loads(result.stdout)
    assert (found["version"], found["build"]) == ("2.8.0", "cu129")


def test_a_glibc_2_27_aarch64_host_is_not_planned_torch_2_6s_manylinux_2_28_wheel():
    facts = _with_host("gh200", glibc="2.27")
    p = make_plan(facts, PlanRequest("pytorch", version="2.6.0", cuda="cpu"))
    assert not p.ok and p.version is None
    assert any("glibc ≥ 2.28" in r.why for r in p.rejected), p.rejected
    older = make_plan(facts, PlanRequest("pytorch", version="<2.7", cuda="cpu"))
    assert older.version == "2.5.1"  # manylinux2014_aarch64: glibc 2.17


def test_the_same_glibc_on_x86_64_may_install_torch_2_6():
    facts = _with_host("cpu-only", glibc="2.27")
    assert make_plan(facts, PlanRequest("pytorch", version="2.6.0", cuda="cpu")).version == "2.6.0"


@pytest.mark.parametrize("version", ["2.0.1", "2.1.2", "2.2.2"])
def test_an_intel_mac_on_10_15_may_install_torch_2_0_to_2_2(version):
    facts = _with_host("macos-rosetta", os="macos", arch="x86_64", machine_arch="x86_64", rosetta=False,
                       os_version="10.15.7")
    p = make_plan(facts, PlanRequest("pytorch", version=version))
    assert p.ok and (p.version, p.build) == (version, "cpu"), p.rejected


def test_an_intel_mac_older_than_10_9_is_refused():
    facts = _with_host("macos-rosetta", os="macos", arch="x86_64", machine_arch="x86_64", rosetta=False,
                       os_version="10.8")
    p = make_plan(facts, PlanRequest("pytorch", version="2.2.2"))
    assert not p.ok and any("macOS ≥ 10.9" in r.why for r in p.rejected)


def test_check_reads_the_glibc_floor_of_this_machines_architecture():
    import dataclasses

    from envdoctor.diagnose import diagnose

    def finding(machine, glibc):
        facts = _with_host(machine, glibc=glibc)
        facts = dataclasses.replace(facts, python=dataclasses.replace(
            facts.python, packages={**facts.python.packages, "torch": "2.6.0"}))
        return [f for f in diagnose(facts) if f.code == "glibc-too-old"]

    aarch64 = finding("gh200", "2.27")
    assert aarch64 and "needs glibc 2.28" in aarch64[0].title
    assert finding("cpu-only", "2.27") == []  # torch 2.6.0's x86_64 wheels need 2.17
