"""The diagnosis rules on edge cases of real facts: each test starts from a recorded machine and
changes the one fact the rule is about."""

import dataclasses
from pathlib import Path

import pytest

from envdoctor.diagnose import diagnose
from envdoctor.diagnose._common import cuda_of_tag, driver_at_least, local_tag
from envdoctor.diagnose.cuda_libs import _fits
from envdoctor.facts import CudaToolkit, Cudnn, Facts, load_facts

MACHINES = Path(__file__).resolve().parent / "fixtures" / "machines"


def machine(name: str) -> Facts:
    return load_facts(MACHINES / f"{name}.json")


def with_env(facts: Facts, **env) -> Facts:
    return dataclasses.replace(facts, env={**facts.env, **env})


def with_packages(facts: Facts, **packages) -> Facts:
    merged = {**facts.python.packages, **{k.replace("_", "-"): v for k, v in packages.items()}}
    return dataclasses.replace(facts, python=dataclasses.replace(facts.python, packages={k: v for k, v in merged.items() if v}))


def codes(facts: Facts, severity=None) -> list[str]:
    return [f.code for f in diagnose(facts) if severity is None or f.severity == severity]


def finding(facts: Facts, code: str):
    return next(f for f in diagnose(facts) if f.code == code)


@pytest.mark.parametrize("value, expected", [
    ("", "error"), ("-1", "error"), ("NoDevFiles", "error"), ("1", "error"), ("GPU-ffff", "error"),
    ("0", None), ("GPU-5c1d7a9e", None), ("MIG-GPU-5c1d7a9e/1/0", None), ("0,5", "warning"),
])
def test_cuda_visible_devices_values(value, expected):
    facts = with_env(machine("diag-clean-rtx4090"), CUDA_VISIBLE_DEVICES=value)
    got = [f.severity for f in diagnose(facts) if f.code == "cuda-visible-devices"]
    assert got == ([expected] if expected else [])


def test_cuda_visible_devices_is_not_judged_without_a_usable_gpu():
    assert "cuda-visible-devices" not in codes(with_env(machine("diag-cpu-box"), CUDA_VISIBLE_DEVICES=""))


def test_cuda_visible_devices_fix_lists_the_real_gpus():
    fixes = finding(machine("diag-cvd-partial"), "cuda-visible-devices").fix
    assert any("CUDA_VISIBLE_DEVICES=0,1" in f for f in fixes)


def test_library_path_shadowing_names_the_conflicting_cudnn():
    f = finding(machine("diag-ldpath-old-cudnn"), "library-path-shadowing")
    assert f.severity == "error" and "8.9.7" in f.detail and "/usr/local/cuda-12.2/lib64" in f.detail


def test_library_path_of_another_cuda_major_is_not_shadowing():
    facts = machine("diag-ldpath-toolkit")
    toolkit = dataclasses.replace(facts.cuda_toolkit, version="11.8")
    facts = dataclasses.replace(facts, cuda_toolkit=toolkit, cuda_toolkits=[toolkit])
    assert "library-path-shadowing" not in codes(facts)


def test_library_path_is_ignored_without_pip_cuda_libraries():
    facts = with_packages(machine("diag-ldpath-toolkit"), torch="2.6.0+cpu", torchvision="0.21.0+cpu",
                          nvidia_cudnn_cu12=None, nvidia_cuda_runtime_cu12=None, nvidia_cublas_cu12=None, nvidia_nccl_cu12=None)
    assert "library-path-shadowing" not in codes(facts)


def test_torch_cpu_build_fix_comes_from_the_planner():
    f = finding(machine("diag-torch-cpu-gpu"), "cpu-only-build")
    commands = [c for c in f.fix if isinstance(c, tuple)]
    assert commands, f.fix
    assert any("torch" in " ".join(c) and "download.pytorch.org/whl/cu" in " ".join(c) for c in commands)


def test_driver_too_old_names_the_minimum_from_the_drivers_matrix():
    f = finding(machine("diag-driver-old"), "driver-too-old")
    assert "525.60.13" in f.title and "470.182.03" in f.title


def test_registry_torch_uses_its_default_build_for_the_driver_check():
    f = finding(machine("diag-driver-old-registry"), "driver-too-old")
    assert "CUDA 13.0" in f.title and ">= 580" in f.title


def test_gpu_arch_uses_the_deep_arch_list_when_present():
    f = finding(machine("diag-rtx5090-deep-old"), "gpu-arch-unsupported")
    assert "sm_120" in f.title and "get_arch_list" in f.detail


def test_gpu_arch_uses_the_matrix_without_deep():
    f = finding(machine("diag-gtx1080-cu128"), "gpu-arch-unsupported")
    assert "sm_61" in f.title and "pytorch matrix" in f.detail


def test_companion_of_another_cuda_major_is_an_error_and_another_minor_a_warning():
    assert finding(machine("diag-companion-cuda"), "companion-mismatch").severity == "error"
    facts = with_packages(machine("diag-clean-rtx4090"), torchvision="0.21.0+cu126")
    assert finding(facts, "companion-mismatch").severity == "warning"


def test_jax_skew_reports_the_plugin_version():
    f = finding(machine("diag-jax-skew"), "jax-version-skew")
    assert "0.5.0" in f.detail and "0.4.35" in f.detail


def test_duplicate_paddle_fix_uninstalls_both():
    f = finding(machine("diag-dup-paddle"), "duplicate-install")
    assert f.fix[0][-2:] == ("paddlepaddle", "paddlepaddle-gpu")


def test_conda_and_pip_of_the_same_version_is_one_install():
    assert "duplicate-install" not in codes(machine("diag-conda-pip-same"))


def test_numpy_static_check_uses_the_tensorflow_pins():
    f = finding(machine("diag-tf-numpy2"), "numpy-abi-mismatch")
    assert "<2.0.0" in " ".join(f.evidence)
    assert "numpy-abi-mismatch" not in codes(with_packages(machine("diag-tf-numpy2"), numpy="1.26.4"))


def test_jetson_wheel_of_this_jetpack_is_accepted_and_of_another_is_not():
    assert "jetson-wrong-wheel" not in codes(machine("diag-jetson-nv-torch"))
    f = finding(machine("diag-jetson-jp5-wheel"), "jetson-wrong-wheel")
    assert "JetPack 5" in f.detail


def test_thor_accepts_the_official_cu130_sbsa_wheel():
    facts = machine("jetson-thor")
    facts = with_packages(facts, torch="2.11.0+cu130")
    assert "jetson-wrong-wheel" not in codes(facts)


def test_wsl_linux_driver_is_an_error():
    assert finding(machine("diag-wsl-linux-driver"), "wsl-gpu-setup").severity == "error"


def test_glibc_from_the_deep_import_error():
    f = finding(machine("diag-glibc-deep"), "glibc-too-old")
    assert "2.27" in f.title and "2.17" in f.title


def test_rules_survive_an_empty_machine():
    assert [f.code for f in diagnose(Facts())] == []  # nothing recorded: nothing concluded


@pytest.mark.parametrize("text, tag, cuda", [("2.6.0+cu124", "cu124", "12.4"), ("2.7.1+cu118", "cu118", "11.8"),
                                             ("2.6.0", None, None), ("2.6.0+cpu", "cpu", None), ("2.13.0+cu130", "cu130", "13.0")])
def test_build_tags(text, tag, cuda):
    assert local_tag(text) == tag and cuda_of_tag(tag) == cuda


@pytest.mark.parametrize("loaded, built, ok", [("9.3.0", "9.3", True), ("9.1.0", "9.3", False), ("8.9.7", "9.3", False),
                                               ("9.10.2", "9.3", True), ("9.5.1", ">=9.8,<10", False), ("9.8.0", ">=9.8,<10", True)])
def test_cudnn_rule(loaded, built, ok):
    assert _fits(loaded, built) is ok


def test_driver_versions_compare_numerically():
    assert driver_at_least("570.124.04", "525.60.13") and not driver_at_least("470.182.03", "525.60.13")
    assert driver_at_least("572.83", "528.33") and driver_at_least("580.95.05", "580")


def test_a_conda_torch_is_not_judged_by_the_pip_index_arch_lists():
    facts = machine("diag-gtx1080-cu128")
    conda_python = dataclasses.replace(facts.python, env_kind="conda",
                                       conda_packages={"pytorch": "2.8.0", "cuda-version": "12.8"},
                                       packages={"torch": "2.8.0", "numpy": "2.1.3"})
    assert "gpu-arch-unsupported" not in codes(dataclasses.replace(facts, python=conda_python))


def test_a_conda_torch_still_gets_its_driver_checked():
    facts = machine("diag-driver-old")
    conda_python = dataclasses.replace(facts.python, env_kind="conda",
                                       conda_packages={"pytorch": "2.5.1", "pytorch-cuda": "12.4"},
                                       packages={"torch": "2.5.1", "numpy": "2.1.3"})
    assert "driver-too-old" in codes(dataclasses.replace(facts, python=conda_python))


def test_an_unused_system_cudnn_next_to_torchs_pip_cudnn_is_not_an_alarm():
    facts = with_packages(machine("diag-two-cudnn"), paddlepaddle_gpu=None)
    assert "cudnn-mismatch" not in codes(facts)


@pytest.mark.parametrize("name, cudnn", [
    ("diag-win-tf-new", Cudnn(version="9.1.0", source="system", path="C:/cudnn/bin/cudnn64_9.dll")),  # TF > 2.10: CPU-only
    ("diag-gh200-tf", Cudnn(version="8.9.0", source="system", path="/usr/lib/aarch64-linux-gnu/libcudnn.so.8")),  # aarch64 wheel
])
def test_a_cpu_only_tensorflow_has_no_cudnn_to_mismatch(name, cudnn):
    facts = dataclasses.replace(machine(name), cudnn=[cudnn])
    assert "cudnn-mismatch" not in codes(facts)
    assert codes(facts, "error") == codes(machine(name), "error")  # the same problems as without that cuDNN


def test_a_cpu_only_tensorflow_needs_no_driver_for_the_cuda_wheels_of_another_framework():
    facts = machine("diag-win-tf-new")
    facts = with_packages(facts, nvidia_cuda_runtime_cu12="12.9.79")
    facts = dataclasses.replace(facts, nvidia=dataclasses.replace(facts.nvidia, driver_version="512.15"))
    assert "driver-too-old" not in codes(facts)


def test_a_wheel_listed_for_one_release_of_another_jetpack_line_is_named():
    facts = with_packages(machine("jetson-orin-jp51"), torch="2.4.0a0+07cecf4168.nv24.05.14710581")  # JetPack 6.0's
    f = finding(facts, "jetson-wrong-wheel")
    assert "JetPack 6.0, not for JetPack 5.1" in f.detail


def test_a_second_toolkit_of_the_right_major_is_found():
    facts = machine("diag-tf-no-cuda-libs")
    old, active = CudaToolkit(version="11.8", root="/usr/local/cuda-11.8"), CudaToolkit(version="12.3", root="/usr/local/cuda-12.3")
    assert "cuda-libs-missing" in codes(facts)
    assert "cuda-libs-missing" not in codes(dataclasses.replace(facts, cuda_toolkit=active, cuda_toolkits=[old, active]))


@pytest.mark.parametrize("kernel, wsl1", [("4.4.0-19041-Microsoft", True), ("4.19.128-microsoft-standard", False),
                                          ("5.15.153.1-microsoft-standard-WSL2", False)])
def test_wsl1_is_told_from_the_older_wsl2_kernels(kernel, wsl1):
    facts = machine("diag-wsl-ok")
    facts = dataclasses.replace(facts, host=dataclasses.replace(facts.host, kernel=kernel))
    titles = [f.title for f in diagnose(facts) if f.code == "wsl-gpu-setup"]
    assert any("WSL 1" in t for t in titles) is wsl1


def test_cuda_home_is_compared_with_the_default_build_of_an_untagged_torch():
    facts = machine("diag-cudahome-mismatch")
    assert "+cu" in facts.python.packages["torch"]
    untagged = with_packages(facts, torch=facts.python.packages["torch"].split("+")[0])
    assert [f.title for f in diagnose(untagged) if "CUDA_HOME" in f.title]


@pytest.mark.parametrize("toolkit, driver, driver_cuda, expected", [
    ("12.8", "550.120", "12.4", "warning"),  # one major: binaries run, the toolkit's PTX does not JIT
    ("12.1", "470.256.02", "11.4", "error"),  # below CUDA 12's minimum driver: nothing it builds starts
    ("9.1", "384.90", None, "error"),  # before CUDA 11 each release needs its own driver
    ("12.4", "550.120", "12.4", None),
    ("11.8", "570.124.04", "12.8", None),
])
def test_toolkit_newer_than_driver(toolkit, driver, driver_cuda, expected):
    base = machine("diag-clean-rtx4090")
    nvidia = dataclasses.replace(base.nvidia, driver_version=driver, driver_cuda=driver_cuda)
    facts = dataclasses.replace(base, nvidia=nvidia, cuda_toolkit=CudaToolkit(version=toolkit))
    got = [f.severity for f in diagnose(facts) if f.code == "driver-too-old" and f.section == "toolkit"]
    assert got == ([expected] if expected else [])


def test_toolkit_newer_than_driver_is_not_judged_on_a_jetson():
    facts = machine("diag-clean-rtx4090")
    facts = dataclasses.replace(facts, cuda_toolkit=CudaToolkit(version="13.0"),
                                nvidia=dataclasses.replace(facts.nvidia, driver_kind="jetson"))
    assert not [f for f in diagnose(facts) if f.section == "toolkit" and f.code == "driver-too-old"]
