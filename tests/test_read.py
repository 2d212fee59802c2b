"""envdoctor.read: the parsers that read a machine out of a pasted report, on verbatim fixtures
(tests/fixtures/pasted/, each naming its thread; tests/fixtures/raw/ for tool outputs)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from envdoctor.facts import Facts
from envdoctor.read import collect_env, issue_form, merge, misc, nvidia_smi, packages, read_machine, versions_quoted
from envdoctor.textnorm import normalise

PASTED = Path(__file__).parent / "fixtures" / "pasted"
RAW = Path(__file__).parent / "fixtures" / "raw"
PARSERS = (collect_env, nvidia_smi, packages, versions_quoted, misc)


def body(name: str) -> str:
    text = (PASTED / name).read_text(encoding="utf-8")
    return text.split("# ---\n", 1)[1]


def load(name: str) -> str:
    return normalise(body(name)).text


def raw(path: str) -> str:
    return normalise((RAW / path).read_text(encoding="utf-8")).text


def fold(text: str, width: int = 80) -> str:
    """`fold -w 80`: every line longer than `width` broken into pieces of `width` characters."""
    out = []
    for line in text.splitlines():
        out += [line[i:i + width] for i in range(0, len(line), width)] or [""]
    return "\n".join(out)


# --- fixtures -------------------------------------------------------------------------------------

def test_every_fixture_names_its_source():
    files = sorted(PASTED.glob("*.txt"))
    assert len(files) >= 40
    for path in files:
        first, second = path.read_text(encoding="utf-8").splitlines()[:2]
        assert first.startswith("# source: https://github.com/"), path.name
        assert second == "# ---", path.name


def test_every_fixture_reads_into_valid_facts():
    for path in sorted(PASTED.glob("*.txt")) + sorted(p for p in RAW.glob("*/*") if p.is_file() and p.suffix != ".md"):
        facts, notes = read_machine(normalise(path.read_text(encoding="utf-8", errors="replace")).text)
        if facts:
            assert facts["schema"] == "envdoctor.facts/1"
            Facts.from_dict(facts)  # spelled as the probes spell it
            assert notes, path.name


# --- collect_env ----------------------------------------------------------------------------------

def test_collect_env_old_layout_ubuntu():
    assert collect_env.parse(load("collect_env_1.7_ubuntu1804_t4.txt")) == {
        "frameworks": {"torch": {"version": "1.7.0+cu101", "cuda": "10.1", "device_available": True}},
        "python": {"packages": {"torch": "1.7.0+cu101"}, "version": "3.6"},
        "host": {"os": "linux", "distro": "Ubuntu 18.04", "arch": "x86_64"},
        "cuda_toolkit": {"version": "10.1"},
        "nvidia": {"gpus": [{"index": 0, "name": "Tesla T4"}], "driver_version": "418.67"},
    }


def test_collect_env_1_5_yes_no_and_windows_user_lines_ignored():
    facts = collect_env.parse(load("collect_env_1.5_windows.txt"))
    assert facts["frameworks"]["torch"] == {"version": "1.5.0+cu101", "cuda": "10.1", "device_available": True}
    assert facts["nvidia"] == {"gpus": [{"index": 0, "name": "Quadro P1000"}], "driver_version": "426.25"}
    assert "host" not in facts  # "OS: Could not collect"; the user's own "OS: windows 10" below is not read
    assert "cudnn" not in facts


def test_collect_env_new_layout_multi_gpu_and_cudnn_list():
    facts = collect_env.parse(load("collect_env_2.6dev_4xv100.txt"))
    assert facts["host"] == {"os": "linux", "distro": "Ubuntu 20.04", "arch": "x86_64", "glibc": "2.31",
                             "kernel": "5.4.0-200-generic"}
    assert facts["python"]["version"] == "3.12.7"
    assert facts["frameworks"]["torch"]["version"] == "2.6.0.dev20241205+cu124"
    assert facts["frameworks"]["torch"]["cuda"] == "12.4"
    assert facts["cuda_toolkit"] == {"version": "12.6"}
    assert [g["index"] for g in facts["nvidia"]["gpus"]] == [0, 1, 2, 3]
    assert {g["name"] for g in facts["nvidia"]["gpus"]} == {"Tesla V100-SXM2-32GB"}
    assert facts["nvidia"]["driver_version"] == "560.35.03"
    assert facts["cudnn"] == [{"version": "9.6.0", "source": "collect_env"}]


def test_collect_env_r570_cpu_block_not_read():
    facts = collect_env.parse(load("collect_env_2.7_2x2080ti.txt"))
    assert facts["nvidia"] == {"gpus": [{"index": 0, "name": "NVIDIA GeForce RTX 2080 Ti"},
                                        {"index": 1, "name": "NVIDIA GeForce RTX 2080 Ti"}],
                               "driver_version": "570.133.07"}
    assert "cuda_toolkit" not in facts  # "CUDA runtime version: Could not collect"
    assert facts["host"]["kernel"] == "5.15.0-139-generic"


def test_collect_env_windows_and_its_libraries():
    facts = collect_env.parse(load("collect_env_win11_2.0.1.txt"))
    assert facts["host"] == {"os": "windows", "os_version": "10.0.22621"}
    assert facts["python"] == {"packages": {"torch": "2.0.1+cu117", "numpy": "1.23.5", "torchaudio": "2.0.2+cu117",
                                            "torchvision": "0.15.2"}, "version": "3.9.16"}
    assert facts["nvidia"]["driver_version"] == "535.98"
    assert "cudnn" not in facts  # cudnn_ops_train64_8.dll names only the major version


def test_collect_env_cpu_build_is_marked_not_guessed():
    facts = collect_env.parse(load("collect_env_win11_cpu_2.8dev.txt"))
    torch = facts["frameworks"]["torch"]
    assert torch == {"version": "2.8.0.dev20250528+cpu", "extra": {"cuda_build": False}, "device_available": False}
    assert facts["python"]["packages"]["torch"] == "2.8.0.dev20250528+cpu"
    assert "nvidia" not in facts and "cuda_toolkit" not in facts  # "No CUDA" is unknown
    assert facts["host"] == {"os": "windows", "os_version": "10.0.22631"}


def test_collect_env_wsl2():
    facts = collect_env.parse(load("collect_env_wsl2_2.4.0.txt"))
    assert facts["host"] == {"os": "linux", "distro": "Ubuntu 22.04", "arch": "x86_64", "glibc": "2.35",
                             "kernel": "5.15.153.1-microsoft-standard-WSL2", "wsl": True}
    assert facts["nvidia"] == {"gpus": [{"index": 0, "name": "NVIDIA GeForce RTX 4070 Laptop GPU"}],
                               "driver_version": "551.88"}
    assert facts["cuda_toolkit"] == {"version": "12.4"}


def test_collect_env_macos_through_email_wrapping():
    facts = collect_env.parse(load("collect_env_macos_2.2.2_email.txt"))
    assert facts["host"] == {"os": "macos", "os_version": "14.5", "distro": "macOS 14.5", "arch": "x86_64"}
    assert facts["frameworks"]["torch"] == {"version": "2.2.2", "extra": {"cuda_build": False}, "device_available": False}
    assert facts["python"]["version"] == "3.10.13"
    assert facts["python"]["packages"] == {"torch": "2.2.2", "mypy-extensions": "1.0.0", "numpy": "1.26.4",
                                           "onnxruntime": "1.19.2"}


def test_collect_env_old_mac_and_conda_lines():
    facts = collect_env.parse(load("collect_env_macosx11_1.8dev.txt"))
    assert facts["host"]["os"] == "macos" and facts["host"]["os_version"] == "11.0"
    assert facts["python"]["version"] == "3.8"
    assert facts["python"]["conda_packages"]["mkl-service"] == "2.3.0"
    assert facts["python"]["conda_packages"]["_pytorch-select"] == "0.1"
    assert facts["python"]["packages"]["torchaudio"] == "0.8.0a0+2c68c50"


def test_collect_env_rocm_build():
    facts = collect_env.parse(load("collect_env_rocm_1.7.txt"))
    assert facts["frameworks"]["torch"] == {"version": "1.7.0a0+9ddd3df", "device_available": True,
                                            "extra": {"rocm": "3.7.20315", "hip_runtime": "3.18.2"}}
    assert "nvidia" not in facts and "amd" not in facts  # "Device 66a1" names no GPU; no NVIDIA driver
    assert "cuda" not in facts["frameworks"]["torch"]


def test_collect_env_folded_at_80_and_quoted_still_reads_key_lines():
    for name in ("collect_env_2.6dev_4xv100.txt", "collect_env_wsl2_2.4.0.txt"):
        whole = collect_env.parse(load(name))
        quoted = "\n".join("> " + line for line in fold(body(name)).splitlines())
        folded = collect_env.parse(normalise(quoted).text)
        for path in ("frameworks", "nvidia", "cuda_toolkit", "cudnn"):
            assert folded.get(path) == whole.get(path), (name, path)
        assert folded["python"]["version"] == whole["python"]["version"]
        assert folded["host"]["glibc"] == whole["host"]["glibc"]


def test_collect_env_needs_its_own_keys():
    assert collect_env.parse("OS: Ubuntu 22.04\nPython version: 3.10\nNvidia driver version: 535.1") == {}


# --- nvidia-smi -----------------------------------------------------------------------------------

def test_smi_r580_two_gpus_with_memory():
    assert nvidia_smi.parse(load("smi_r580_5090_4090.txt")) == {"nvidia": {
        "driver_version": "580.82.09", "driver_cuda": "13.0",
        "gpus": [{"index": 0, "name": "NVIDIA GeForce RTX 5090", "memory_total_mib": 32607},
                 {"index": 1, "name": "NVIDIA GeForce RTX 4090", "memory_total_mib": 24564}]}}


@pytest.mark.parametrize("name, driver, cuda, gpu", [
    ("smi_r595_5090.txt", "595.71.05", "13.2", {"index": 0, "name": "NVIDIA GeForce RTX 5090", "memory_total_mib": 32607}),
    ("smi_freebsd_cuda_na.txt", "575.64.03", None, {"index": 0, "name": "NVIDIA GeForce RTX 5070", "memory_total_mib": 12227}),
    ("smi_r470_a10g_kubectl.txt", "470.256.02", "11.4", {"index": 0, "name": "NVIDIA A10G", "memory_total_mib": 22731}),
    ("smi_tab_indented_gtx780.txt", "440.33.01", "10.2", {"index": 0, "name": "GeForce GTX 780", "memory_total_mib": 3016}),
    ("smi_wsl_cuda_err.txt", "546.80", None, {"index": 0, "memory_total_mib": 6144}),  # name cut by nvidia-smi
])
def test_smi_tables(name, driver, cuda, gpu):
    nvidia = nvidia_smi.parse(load(name))["nvidia"]
    assert nvidia["driver_version"] == driver
    assert nvidia.get("driver_cuda") == cuda
    assert nvidia["gpus"][0] == gpu


def test_smi_windows_wddm_table_and_wsl_failure_both_read():
    nvidia = nvidia_smi.parse(load("smi_windows_wddm_and_wsl_failure.txt"))["nvidia"]
    assert nvidia["driver_version"] == "517.48" and nvidia["driver_cuda"] == "11.7"
    assert nvidia["gpus"] == [{"index": 0, "memory_total_mib": 11264}]  # "NVIDIA GeForce ... WDDM": cut name
    assert nvidia["failure"] == "no-driver-communication"
    assert nvidia["failure_text"].startswith("NVIDIA-SMI has failed because it couldn't communicate")


def test_smi_windows_row_with_a_whole_name():
    table = ("| NVIDIA-SMI 552.22                 Driver Version: 552.22         CUDA Version: 12.4     |\n"
             "|   0  NVIDIA GeForce RTX 4090      WDDM  |   00000000:01:00.0  On |                  Off |\n"
             "|  0%   38C    P8             21W /  450W |    1205MiB /  24564MiB |      2%      Default |")
    assert nvidia_smi.parse(table)["nvidia"]["gpus"] == [{"index": 0, "name": "NVIDIA GeForce RTX 4090",
                                                         "memory_total_mib": 24564}]


def test_smi_list_with_mig_lines():
    gpus = nvidia_smi.parse(load("smi_L_mig_a100.txt"))["nvidia"]["gpus"]
    assert [(g["index"], g["name"]) for g in gpus] == [(i, "NVIDIA A100-SXM4-80GB") for i in range(4)]
    assert gpus[0]["uuid"] == "GPU-513536b6-7d19-9063-b049-1e69664bb298"


def test_smi_list_and_table_merge_per_gpu():
    nvidia = nvidia_smi.parse(load("smi_L_and_table_quadro.txt"))["nvidia"]
    assert nvidia["driver_version"] == "535.129.03"
    assert nvidia["gpus"][0] == {"index": 0, "name": "Quadro RTX 4000", "memory_total_mib": 8192,
                                 "uuid": "GPU-c7b57be0-94ff-d352-a59b-d0ee00aeed43"}
    assert nvidia["gpus"][1]["uuid"] == "GPU-d6de6afc-bdfe-75c4-5273-0544439153fc"


def test_smi_raw_fixtures():
    kmd = nvidia_smi.parse(raw("nvidia-smi/r610_kmd_rtx3080.txt"))["nvidia"]
    assert (kmd["driver_version"], kmd["driver_cuda"]) == ("610.43.03", "13.3")
    wsl = nvidia_smi.parse(raw("nvidia-smi/wsl2_r555.txt"))["nvidia"]
    assert wsl["driver_version"] == "555.99"  # the Windows driver, as the probe records it
    jetson = nvidia_smi.parse(raw("nvidia-smi/jetson_orin_jp621.txt"))["nvidia"]
    assert jetson["driver_kind"] == "jetson" and jetson["gpus"][0]["name"] == "Orin (nvgpu)"
    old = nvidia_smi.parse(raw("nvidia-smi/old_r450_titanxp.txt"))["nvidia"]
    assert old["gpus"] == [{"index": 0, "name": "TITAN Xp", "memory_total_mib": 12196}]


def test_smi_query_csv():
    triton = nvidia_smi.parse(raw("nvidia-smi/query_triton_2gpu.csv"))["nvidia"]
    assert triton == {"driver_version": "570.86.15", "gpus": [
        {"index": 0, "name": "NVIDIA TITAN V", "compute_capability": "7.0"},
        {"index": 1, "name": "NVIDIA RTX 5880 Ada Generation", "compute_capability": "8.9"}]}
    b300 = nvidia_smi.parse(raw("nvidia-smi/query_b300_7gpu.csv"))["nvidia"]
    assert b300["driver_version"] == "610.57.04" and len(b300["gpus"]) == 7
    assert {g["compute_capability"] for g in b300["gpus"]} == {"10.3"}
    assert nvidia_smi.parse(raw("nvidia-smi/query_compute_cap_snap.csv"))["nvidia"]["gpus"] == [
        {"index": 0, "compute_capability": "8.9"}]


@pytest.mark.parametrize("path, code", [
    ("nvidia-smi/error_no_driver_communication.txt", "no-driver-communication"),
    ("nvidia-smi/error_driver_library_mismatch.txt", "driver-library-mismatch"),
    ("nvidia-smi/error_nvml_unknown.txt", "nvml-unknown-error"),
])
def test_smi_failures(path, code):
    nvidia = nvidia_smi.parse(raw(path))["nvidia"]
    assert nvidia["failure"] == code and nvidia["failure_text"]
    assert set(nvidia) == {"failure", "failure_text"}


# --- packages -------------------------------------------------------------------------------------

def test_pip_list_with_header_and_excerpt_without():
    listed = packages.parse(load("pip_list_jetson_header.txt"))["python"]["packages"]
    assert len(listed) == 27
    assert listed["colcon-installed-package-information"] == "0.2.1" and listed["brlapi"] == "0.8.3"
    excerpt = packages.parse(load("pip_list_excerpt_cu13.txt"))["python"]["packages"]
    assert len(excerpt) == 38
    assert excerpt["nvidia-cudnn-cu13"] == "9.15.1.9" and excerpt["mistral-common"] == "1.8.5"
    assert excerpt["networkx"] == "3.6rc0" and excerpt["markupsafe"] == "3.0.3"


def test_pip_freeze_skips_source_tree_urls():
    listed = packages.parse(load("pip_freeze_file_urls.txt"))["python"]["packages"]
    assert listed == {"accelerate": "0.29.1", "aiohttp": "3.9.3", "aiosignal": "1.3.1", "astunparse": "1.6.3",
                      "async-timeout": "4.0.3", "bitsandbytes": "0.41.0"}


def test_freeze_url_with_a_wheel_name():
    line = "torch @ file:///tmp/wheels/torch-2.1.0%2Bcu121-cp310-cp310-linux_x86_64.whl"
    assert packages.parse(line) == {"python": {"packages": {"torch": "2.1.0+cu121"}}}


def test_conda_list_pytorch_build_strings():
    cpu = packages.parse(load("conda_list_grep_pytorch_cpu.txt"))
    assert cpu["python"]["conda_packages"]["pytorch"] == "1.11.0"
    assert cpu["frameworks"] == {"torch": {"extra": {"cuda_build": False}}}
    cuda = packages.parse(load("conda_list_grep_pytorch_cuda.txt"))
    assert cuda["frameworks"] == {"torch": {"cuda": "11.3", "cudnn": "8.2.0"}}
    assert cuda["python"]["conda_packages"] == {"ffmpeg": "4.3", "pytorch": "1.11.0", "pytorch-mutex": "1.0",
                                                "torchaudio": "0.11.0"}


def test_conda_list_header_pypi_rows_are_pip_packages():
    facts = packages.parse(load("conda_list_cudatoolkit_10.2.txt"))["python"]
    assert facts["conda_packages"]["cudatoolkit"] == "10.2.89"
    assert facts["conda_packages"]["_libgcc-mutex"] == "0.1"
    assert facts["packages"]["flake8-bugbear"] == "22.7.1" and "cudatoolkit" not in facts["packages"]
    rows = packages.parse(load("conda_list_pypi_nvidia.txt"))["python"]
    assert rows["packages"]["nvidia-cudnn-cu11"] == "8.7.0.84"
    assert rows["conda_packages"]["nsight-compute"] == "2022.4.0.15" and "openssl" not in rows["conda_packages"]


def test_install_log_pip_and_uv():
    facts = packages.parse(load("pip_uv_install_log.txt"))
    assert facts == {"python": {"packages": {"torch": "2.11.0", "triton": "3.5.1", "pydantic": "2.13.3",
                                             "pydantic-core": "2.46.3"}, "version": "3.12.10"}}


def test_install_log_lines():
    log = ("Successfully installed nvidia-cudnn-cu12-8.9.2.26 torch-2.1.0 torchvision-0.16.0\n"
           "Requirement already satisfied: numpy in ./venv/lib/python3.10/site-packages (1.26.4)\n"
           " + torch==2.5.1+cu124\n")
    assert packages.parse(log)["python"]["packages"] == {
        "nvidia-cudnn-cu12": "8.9.2.26", "torch": "2.5.1+cu124", "torchvision": "0.16.0", "numpy": "1.26.4"}


def test_packages_not_read_from_commands_or_errors():
    assert packages.parse(load("pip_install_commands_negative.txt")) == {}
    assert packages.parse(load("pip_install_tutorial_negative.txt")) == {}


# --- versions quoted in messages ------------------------------------------------------------------

@pytest.mark.parametrize("name, expected", [
    ("vq_too_old_11000_distpackages.txt", {"nvidia": {"driver_cuda": "11.0"}, "python": {"version": "3.10"}}),
    ("vq_too_old_9000_traceback.txt", {"nvidia": {"driver_cuda": "9.0"}, "python": {"version": "3.6"}}),
    ("vq_too_old_jetson_orin.txt", {"nvidia": {"driver_cuda": "11.4"}, "python": {"version": "3.10"}}),
    ("vq_torchvision_cuda_wrapped.txt", {"frameworks": {"torch": {"cuda": "11.7"}}}),
    ("vq_torchvision_cpp_extension.txt", {"frameworks": {"torch": {"cuda": "11.3"}}, "cuda_toolkit": {"version": "11.7"},
                                          "python": {"version": "3.8"}}),
    ("vq_tf_cudnn_8.0.4.txt", {"cudnn": [{"version": "8.0.4", "source": "log"}],
                               "frameworks": {"tensorflow": {"cudnn": "8.1.0"}}}),
    ("vq_tf_cudnn_9.1.0.txt", {"cudnn": [{"version": "9.1.0", "source": "log"}],
                               "frameworks": {"tensorflow": {"cudnn": "9.3.0"}}}),
    ("vq_jax_cudnn_xla.txt", {"cudnn": [{"version": "9.0.0", "source": "log"}], "frameworks": {"jax": {"cudnn": "9.1.1"}}}),
    ("vq_torch_cudnn_tuple.txt", {"frameworks": {"torch": {"cudnn": "8.5.0"}}, "cudnn": [{"version": "8.4.1", "source": "log"}],
                                  "python": {"version": "3.8"}}),
    ("vq_torch_cudnn_int.txt", {"frameworks": {"torch": {"cudnn": "7.1.2"}}, "cudnn": [{"version": "7.6.0", "source": "log"}]}),
    ("vq_jax_jaxlib_mt3.txt", {"python": {"packages": {"jaxlib": "0.3.20", "jax": "0.3.15"}, "version": "3.7"}}),
    ("vq_jax_plugin_wrapped.txt", {"python": {"packages": {"jax-cuda12-plugin": "0.9.2", "jaxlib": "0.9.0.1"}}}),
    ("vq_jax_ptxas_driver.txt", {"nvidia": {"driver_cuda": "12.4"}}),
    ("vq_macos_uv_platform.txt", {"host": {"os": "macos", "arch": "arm64"}}),
    ("vq_pip_download_win_amd64.txt", {"host": {"os": "windows", "arch": "x86_64"}, "python": {"version": "3.12"}}),
    ("vq_setuptools_build_dir_macos_x86_64.txt", {"host": {"os": "macos", "arch": "x86_64"}}),  # the building Python's platform
])
def test_versions_quoted(name, expected):
    assert versions_quoted.parse(load(name)) == expected


def test_sm120_gpu_and_arch_list():
    assert versions_quoted.parse(load("vq_sm120_rtx5090.txt")) == {
        "nvidia": {"gpus": [{"name": "NVIDIA GeForce RTX 5090", "compute_capability": "12.0"}]},
        "frameworks": {"torch": {"arch_list": ["sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86", "sm_90"]}}}


def test_found_gpu_on_windows():
    assert versions_quoted.parse(load("vq_found_gpu0_windows.txt")) == {
        "nvidia": {"gpus": [{"index": 0, "name": "GeForce GTX 670M", "compute_capability": "2.1"}]},
        "host": {"os": "windows"}}
    assert versions_quoted.parse(load("vq_found_gpu0_gt630m.txt"))["nvidia"]["gpus"] == [
        {"index": 0, "name": "GeForce GT 630M", "compute_capability": "2.1"}]


def test_message_templates_with_placeholders_are_not_read():
    assert versions_quoted.parse(load("vq_found_gpu_template_k20m.txt")) == {}  # "Found GPU%d %s … %d.%d"
    assert versions_quoted.parse("f'incompatible with jax version {jax_version}. Please '") == {}


def test_driver_too_old_next_to_a_header_line():
    facts, notes = read_machine(load("vq_too_old_11040_with_smi.txt"))
    assert facts["nvidia"] == {"driver_version": "470.86", "driver_cuda": "11.4",
                               "gpus": [{"name": "NVIDIA GeForce RTX 3050"}]}  # "Nvidia GeForce RTX 3050 laptop GPU" (stated)
    assert "driver 470.86 (nvidia-smi)" in notes


def test_paddle_messages():
    assert versions_quoted.parse(load("vq_paddle_runcheck_cudnn.txt")) == {
        "frameworks": {"paddle": {"cudnn": "8.2", "cuda": "11.2"}}, "cudnn": [{"version": "8.1", "source": "log"}],
        "nvidia": {"gpus": [{"index": 0, "compute_capability": "7.5"}], "driver_cuda": "11.2"}}
    windows = versions_quoted.parse(load("vq_paddle_windows_cudnn.txt"))
    assert windows["host"] == {"os": "windows"} and windows["frameworks"]["paddle"]["cudnn"] == "8.4"
    assert windows["nvidia"]["gpus"] == [{"index": 0, "compute_capability": "6.1"}]


def test_platform_hints_only_when_unambiguous():
    assert versions_quoted.parse("/usr/lib/python3/dist-packages/torch/__init__.py") == {}
    assert versions_quoted.parse('File "C:\\Users\\me\\AppData\\Local\\Programs\\Python\\Python311\\Lib\\site-packages'
                                 '\\torch\\__init__.py"') == {"host": {"os": "windows"}, "python": {"version": "3.11"}}
    mixed = "/a/python3.10/site-packages/x.py\n/b/python3.11/site-packages/y.py"
    assert versions_quoted.parse(mixed) == {}
    assert versions_quoted.parse("OSError: [WinError 126] The specified module could not be found") == {
        "host": {"os": "windows"}}
    assert versions_quoted.parse("ImportError: /usr/lib/aarch64-linux-gnu/libgomp.so.1: cannot allocate") == {
        "host": {"os": "linux", "arch": "aarch64"}}


# --- misc -----------------------------------------------------------------------------------------

def test_nvcc():
    assert misc.parse(load("misc_nvcc_11.0.txt")) == {"cuda_toolkit": {"version": "11.0"}}
    assert misc.parse(raw("nvcc/12.4.131.txt")) == {"cuda_toolkit": {"version": "12.4"}}


def test_an_hpc_jobs_module_load_names_its_toolkit():
    # verbatim from a Slurm script in a report (tests/fixtures/reports/350-*): Spack's module name
    job = "#SBATCH --gres=gpu:4\n\nmodule load cuda-10.2.89-gcc-9.2.0-fa5atrg\nnvidia-smi\npython test.py"
    assert misc.parse(job) == {"cuda_toolkit": {"version": "10.2"}}
    assert misc.parse("ml load CUDA/12.1.1 cuDNN/8.9.2.26-CUDA-12.1.1") == {"cuda_toolkit": {"version": "12.1"}}
    assert misc.parse("module load cuda/11.8\nmodule load cuda/12.1") == {}  # two toolkits: which one ran is unknown
    assert misc.parse("module avail cuda/11.8") == {}


def test_jax_environment_info():
    facts = misc.parse(load("misc_jax_env_info_a10g.txt"))
    assert facts == {"python": {"version": "3.10.12", "packages": {"jax": "0.4.33", "jaxlib": "0.4.33", "numpy": "1.26.4"}},
                     "frameworks": {"jax": {"version": "0.4.33", "device_available": True, "device_count": 8}},
                     "host": {"os": "linux", "kernel": "6.8.0-1017-aws", "arch": "x86_64"}}
    colab = read_machine(load("misc_jax_env_info_colab_gpu.txt"))[0]
    assert colab["python"]["packages"] == {"jax": "0.3.17", "jaxlib": "0.3.15", "numpy": "1.21.6"}
    assert colab["nvidia"] == {"driver_version": "460.32.03", "driver_cuda": "11.2",
                               "gpus": [{"index": 0, "name": "Tesla T4"}]}


def test_uname_result_in_a_system_info_line():
    assert misc.parse(load("misc_jax_issue_system_info.txt")) == {
        "host": {"os": "linux", "kernel": "5.15.0-91-generic", "arch": "x86_64"}}


def test_tf_build_info_and_repl_lines():
    assert misc.parse(load("misc_tf_build_info_pprint.txt")) == {"frameworks": {"tensorflow": {
        "arch_list": ["sm_35", "sm_50", "sm_60", "sm_62", "sm_70", "sm_72", "sm_75", "sm_80", "sm_86", "compute_86"],
        "cuda": "11.2", "cudnn": "8", "extra": {"cuda_build": True}}}}
    assert misc.parse(load("misc_tf_built_with_cuda_false.txt")) == {
        "frameworks": {"tensorflow": {"extra": {"cuda_build": False}}}}
    windows = "{'cuda_version': '64_112', 'cudnn_version': '64_8', 'is_cuda_build': True}"
    assert misc.parse(windows)["frameworks"]["tensorflow"] == {"cuda": "11.2", "cudnn": "8", "extra": {"cuda_build": True}}
    repl = ">>> tf.config.list_physical_devices('GPU')\n[]\n>>> tf.__version__\n'2.15.0'"
    assert misc.parse(repl) == {"frameworks": {"tensorflow": {"device_available": False, "version": "2.15.0"}}}


def test_repl_answers_in_prose():
    facts = misc.parse(load("vq_found_gpu0_windows.txt"))
    assert facts == {"frameworks": {"torch": {"cuda": "8.0", "device_available": True}}}


def test_paddle_run_check_and_ipython_version():
    assert misc.parse(load("misc_paddle_runcheck_gpu.txt")) == {"frameworks": {"paddle": {"device_available": True}}}
    assert misc.parse(load("misc_paddle_fluid_ipython.txt")) == {"frameworks": {"paddle": {"version": "1.4.1"}}}
    quoted = read_machine(load("misc_paddle_runcheck_gpu.txt"))[0]
    assert quoted["nvidia"] == {"gpus": [{"index": 0, "compute_capability": "6.1"}], "driver_cuda": "10.1"}
    assert quoted["cudnn"] == [{"version": "7.6", "source": "paddle"}]


def test_paddle_version_show_format():
    # the lines paddle/version/__init__.py's show() prints: print('full_version:', …), print('cuda:', …)
    shown = "full_version: 2.6.1\nmajor: 2\nminor: 6\npatch: 1\nrc: 0\ncuda: 11.8\ncudnn: 8.6.0"
    assert misc.parse(shown) == {"frameworks": {"paddle": {"version": "2.6.1", "cuda": "11.8", "cudnn": "8.6.0"}}}
    cpu = "commit: cbf3469113cd76b7d5f4cba7b8d7d5f55d9e9911\ncuda: False\ncudnn: False"
    assert misc.parse(cpu) == {"frameworks": {"paddle": {"extra": {"compiled_with_cuda": False}}}}


def test_paddle_summary_env_says_whether_it_is_compiled_with_cuda():
    # tools/summary_env.py: "Paddle With CUDA: {paddle.base.core.is_compiled_with_cuda()}"
    assert misc.parse(load("misc_paddle_summary_env_cpu.txt"))["frameworks"] == {"paddle": {"extra": {"compiled_with_cuda": False}}}
    facts = read_machine(load("misc_paddle_summary_env_cpu.txt"))[0]
    assert facts["frameworks"]["paddle"]["version"] == "2.2.1" and facts["nvidia"]["driver_version"] == "495.44"
    assert misc.parse("Paddle version: 2.6.1\nPaddle With CUDA: True")["frameworks"]["paddle"]["extra"] == {"compiled_with_cuda": True}


def test_jetson_release():
    assert misc.parse(load("misc_jetson_release_orin_nx.txt")) == {
        "jetson": {"model": "NVIDIA Jetson Orin NX Engineering Reference Developer Kit", "l4t": "36.4.3", "cuda": "12.6"},
        "cuda_toolkit": {"version": "12.6"}, "cudnn": [{"version": "9.3.0", "source": "jetson_release"}],
        "host": {"distro": "Ubuntu 22.04", "kernel": "5.15.148-tegra", "os": "linux", "arch": "aarch64"}}
    line = "Model: NVIDIA Jetson AGX Orin Developer Kit - Jetpack 6.0 [L4T 36.3.0]"
    assert misc.parse(line)["jetson"] == {"jetpack": "6.0", "l4t": "36.3.0", "model": "NVIDIA Jetson AGX Orin Developer Kit"}


def test_tegra_release_and_proc_version():
    assert misc.parse(raw("nv_tegra_release/jp62_orin_nx.txt")) == {
        "jetson": {"l4t": "36.4.3"}, "host": {"os": "linux", "arch": "aarch64"}}
    assert misc.parse(raw("proc/driver_nvidia_version_open_565.txt")) == {
        "nvidia": {"driver_version": "565.57.01"}, "host": {"os": "linux", "arch": "x86_64"}}
    # On Jetson the module prints the L4T release, which is no driver version
    assert misc.parse(raw("proc/driver_nvidia_version_jetson_jp511.txt")) == {"host": {"os": "linux", "arch": "aarch64"}}


def test_distro_and_kernel_outputs():
    assert misc.parse(load("misc_lsb_release_2204.txt")) == {"host": {"os": "linux", "distro": "Ubuntu 22.04"}}
    assert misc.parse(load("misc_lsb_release_wsl_2004.txt")) == {"host": {"os": "linux", "distro": "Ubuntu 20.04"}}
    assert misc.parse(load("misc_os_release_debian10.txt")) == {"host": {"os": "linux", "distro": "Debian 10"}}
    assert misc.parse(load("misc_uname_wsl1.txt")) == {
        "host": {"os": "linux", "kernel": "4.4.0-17763-Microsoft", "arch": "x86_64", "wsl": True}}


def test_python_version_and_banner():
    assert misc.parse("Python 3.12.3") == {"python": {"version": "3.12.3"}}
    assert misc.parse(load("vq_torch_cudnn_tuple.txt")) == {"python": {"version": "3.8.12"}, "host": {"os": "linux"}}
    assert misc.parse("Python 3.12.3 is what I use") == {}


# --- negatives, merging, notes --------------------------------------------------------------------

def test_prose_reads_nothing():
    text = load("prose_negative.txt")
    for parser in PARSERS:
        assert parser.parse(text) == {}, parser.__name__
    assert read_machine(text) == ({}, [])
    assert read_machine("") == ({}, [])


def test_read_machine_trust_order_and_notes():
    text = load("collect_env_2.7_2x2080ti.txt") + "\nThe NVIDIA driver on your system is too old (found version 11040)\n" \
        + "RuntimeError: Detected that PyTorch and torchvision were compiled with different CUDA versions. " \
        + "PyTorch has CUDA Version=11.8 and torchvision has CUDA Version=12.1."
    facts, notes = read_machine(text)
    assert facts["schema"] == "envdoctor.facts/1"
    assert facts["frameworks"]["torch"]["cuda"] == "12.6"  # collect_env beats the quoted 11.8
    assert facts["nvidia"]["driver_cuda"] == "11.4"  # only the message said it
    assert "torch 2.7.0+cu126 (collect_env)" in notes
    assert "driver 570.133.07 (collect_env)" in notes
    assert "NVIDIA GeForce RTX 2080 Ti (collect_env)" in notes
    assert "driver supports CUDA 11.4 (quoted)" in notes


def test_a_report_that_records_no_wsl_is_not_noted_as_wsl():
    from envdoctor.read import _notes

    assert _notes({}, {"host": {"wsl": False, "os": "linux"}}) == ["OS linux"]
    assert _notes({}, {"host": {"wsl": True}}) == ["WSL"]


def test_read_machine_merges_gpus_from_table_and_message():
    text = load("smi_r580_5090_4090.txt") + "\n" + load("vq_sm120_rtx5090.txt")
    facts, notes = read_machine(text)
    assert facts["nvidia"]["gpus"][0] == {"index": 0, "name": "NVIDIA GeForce RTX 5090", "memory_total_mib": 32607,
                                          "compute_capability": "12.0"}
    assert len(facts["nvidia"]["gpus"]) == 2
    assert notes[:2] == ["driver 580.82.09 (nvidia-smi)", "driver supports CUDA 13.0 (nvidia-smi)"]
    assert "NVIDIA GeForce RTX 5090 (nvidia-smi)" in notes


def test_merge():
    base = {"nvidia": {"driver_version": "570.1", "gpus": [{"index": 0, "name": "A"}]},
            "cudnn": [{"version": "9.1.0", "source": "collect_env"}]}
    extra = {"nvidia": {"driver_version": "999", "driver_cuda": "12.8",
                        "gpus": [{"index": 0, "memory_total_mib": 1}, {"name": "A", "compute_capability": "9.0"},
                                 {"index": 1, "name": "B"}]},
             "cudnn": [{"version": "9.1.0", "source": "log"}, {"version": "8.9.2", "source": "log"}],
             "host": {"os": "linux"}}
    merged = merge(base, extra)
    assert merged == {"nvidia": {"driver_version": "570.1", "driver_cuda": "12.8",
                                 "gpus": [{"index": 0, "name": "A", "memory_total_mib": 1, "compute_capability": "9.0"},
                                          {"index": 1, "name": "B"}]},
                      "cudnn": [{"version": "9.1.0", "source": "collect_env"}, {"version": "8.9.2", "source": "log"}],
                      "host": {"os": "linux"}}
    assert base["nvidia"]["gpus"] == [{"index": 0, "name": "A"}]  # inputs untouched


def test_long_pathological_input_is_fast():
    text = ("NVIDIA GeForce " * 20000) + ("Found GPU0 " * 5000) + ("a==" * 20000) + ("| 0  x " * 20000)
    start = time.monotonic()
    read_machine(normalise(text).text)
    read_machine(normalise(text.replace(" ", "\n")).text)
    assert time.monotonic() - start < 10


def test_collect_env_single_values_spelled_without_lists():
    text = ("PyTorch version: 2.1.0+cu121\nIs debug build: False\nCUDA used to build PyTorch: 12.1\n"
            "OS: macOS 14.5 (arm64)\nGPU models and configuration: NVIDIA GeForce RTX 4090\n"
            "Nvidia driver version: N/A\ncuDNN version: 8.9.2\n")
    facts = collect_env.parse(text)
    assert facts["nvidia"] == {"gpus": [{"name": "NVIDIA GeForce RTX 4090"}]}
    assert facts["cudnn"] == [{"version": "8.9.2", "source": "collect_env"}]
    assert facts["host"] == {"os": "macos", "os_version": "14.5", "distro": "macOS 14.5", "arch": "arm64"}


# --- prose, application banners, conda twins (helper F, 2026-12-01) ---------------------------------

from envdoctor.read import prose  # noqa: E402


def test_yolo_banner_reads_python_torch_and_gpus():
    # ogkalu2/comic-translate#17 (Ultralytics' select_device banner, verbatim)
    got = versions_quoted.parse("Ultralytics YOLOv8.1.3 🚀 Python-3.10.11 torch-2.1.0+cpu\n"
                                "An Error occurred: Invalid CUDA 'device=0' requested.")
    assert got["python"] == {"version": "3.10.11", "packages": {"torch": "2.1.0+cpu"}}
    # the banner with its CUDA device lines, as ultralytics/utils/torch_utils.py select_device formats it
    got = versions_quoted.parse("Ultralytics 8.3.40 🚀 Python-3.11.9 torch-2.6.0+cu124 CUDA:0 (NVIDIA GeForce RTX 4090, 24564MiB)\n"
                                "                                                  CUDA:1 (NVIDIA GeForce RTX 4090, 24564MiB)")
    assert got["python"]["packages"] == {"torch": "2.6.0+cu124"}
    assert [(g["index"], g["name"], g["memory_total_mib"]) for g in got["nvidia"]["gpus"]] == [
        (0, "NVIDIA GeForce RTX 4090", 24564), (1, "NVIDIA GeForce RTX 4090", 24564)]


@pytest.mark.parametrize("text, engine", [
    # zzzyuqing/DreamMat#14
    ("I pulled the official docker image but after installing all the dependencies, I'm getting "
     "torch.cuda.is_available() = False.", "docker"),
    # open-edge-platform/anomalib#584 (docker's default host name is the container id)
    ("root@00921839c781:/anomalib# nvidia-smi\nbash: nvidia-smi: command not found", "docker"),
    # floydhub/dockerfiles#3
    ("$ sudo docker run  -t -i floydhub/pytorch:latest-gpu-py3 ipython", "docker"),
    # report 1954 (jetson-containers), 1959 and 1960 (PaddleSpeech)
    ("However, when using docker-compose to run the applications, I am getting errors like:", "docker"),
    ("docker 环境问题", "docker"),
    ("[S2T]基于Paddle nvidia-docker 启动时，无法正常检测到gpu", "docker"),
])
def test_prose_container(text, engine):
    assert prose.parse(text) == {"host": {"container": engine}}


@pytest.mark.parametrize("text", ["I use docker to deploy the model later", "see the Dockerfile", "pip install docker",
                                  "the container class in our code"])
def test_prose_container_needs_unambiguous_words(text):
    assert prose.parse(text) == {}


def test_prose_jetson():
    # pinokiocomputer/pinokio#1027 (Markdown bold around the keys)
    text = ("* **Hardware:** NVIDIA Jetson AGX Orin\n* **L4T Release:** R35.4.1 (Check via `cat /etc/nv_tegra_release`)\n"
            "* **JetPack Version:** 5.1.2\n")
    assert prose.parse(text) == {"jetson": {"jetpack": "5.1.2", "l4t": "35.4.1", "model": "Jetson AGX Orin"}}
    # dusty-nv/jetson-inference#1932: only the word JetPack — a Jetson, nothing else known
    assert prose.parse("I need python>10 to run Llama and Jetpack<6 to support ubuntu20.") == {"jetson": {}}
    assert Facts.from_dict(read_machine("Jetpack<6 to support ubuntu20")[0]).jetson is not None


def test_conda_twins_are_two_copies_of_torch():
    # pytorch/pytorch#12031: `conda list` after installing pytorch-nightly next to pytorch
    text = ("conda list\npytorch                   0.4.1           py37_cuda0.0_cudnn0.0_1    pytorch\n"
            "pytorch-nightly           1.0.0.dev20180921         py3.7_0    pytorch\n")
    got = packages.parse(text)["python"]
    assert got["conda_packages"] == {"pytorch": "0.4.1", "pytorch-nightly": "1.0.0.dev20180921"}
    assert got["packages"] == {"torch": "0.4.1|1.0.0.dev20180921"}


def test_conda_same_version_twins_are_one_install():
    text = ("pytorch                   2.1.0           py3.10_cuda12.1_cudnn8.9.2_0    pytorch\n"
            "pytorch-cpu               2.1.0           py3.10_cpu_0    pytorch\n")
    assert "packages" not in packages.parse(text)["python"]


@pytest.mark.parametrize("text, version", [
    ("CUDA Version: 11.6\nPython 3.8.15\npytorch 1.13.1+cpu", "1.13.1+cpu"),  # ultralytics/ultralytics#227
    (">>> torch.__version__\n'2.6.0+cu124'", "2.6.0+cu124"),
    ("torch version: 2.0.1+cu117", "2.0.1+cu117"),
])
def test_prose_torch_with_build_tag(text, version):
    assert prose.parse(text)["python"]["packages"]["torch"] == version


@pytest.mark.parametrize("text", ["pip install torch==2.1.0+cu121 -f https://download.pytorch.org/whl/torch_stable.html",
                                  "requires torch>=2.0", "torch 2.1 is slow"])
def test_prose_torch_needs_an_installed_tagged_version(text):
    assert prose.parse(text) == {}


# --- pip show blocks, facts stated in a sentence, collect_env's "Could not collect" build, xFormers' "(you have …)"

def test_pip_show_block_is_a_package():
    assert packages.parse(load("pip_show_onnxruntime_latentsync.txt")) == {"python": {"packages": {"onnxruntime": "1.21.1"}}}
    assert packages.parse(load("pip_show_bitsandbytes_572.txt")) == {"python": {"packages": {"bitsandbytes": "0.39.1"}}}


def test_a_name_line_without_a_version_line_is_not_a_package():
    assert packages.parse("Name: onnxruntime\nSummary: ONNX Runtime\nVersion: 1.21.1") == {}


def test_stated_facts_in_a_sentence():
    from envdoctor.read import stated

    assert stated.parse("I'm running TF 2.12 on Windows 11 with an RTX 3060") == {
        "python": {"packages": {"tensorflow": "2.12"}}, "host": {"os": "windows"},
        "nvidia": {"gpus": [{"name": "NVIDIA RTX 3060"}]}}
    assert stated.parse(load("stated_tf_issue_61689.txt")) == {"python": {"version": "3.8.10"}}
    assert stated.parse(load("stated_win11_python312_fbgemm.txt")) == {"host": {"os": "windows"}}  # "环境win11"


def test_stated_requirements_commands_and_two_systems_are_not_read():
    from envdoctor.read import stated

    assert stated.parse(load("stated_requirements_not_read.txt")) == {}
    assert stated.parse("pip install tensorflow 2.15 on my Windows 11 box but it runs in WSL") == {}
    # NVIDIA/nvidia-docker#1071: an image's tag is the image's release, not TensorFlow's version
    assert stated.parse("I am using the following image: `nvcr.io/nvidia/tensorflow:19.08-py3`") == {}


def test_stated_gpu_only_where_no_output_names_one():
    facts, _ = read_machine(load("collect_env_cuda_build_could_not_collect_win.txt"))
    assert [g["name"] for g in facts["nvidia"]["gpus"]] == ["NVIDIA GeForce RTX 4080 Laptop GPU"]


def test_collect_env_cuda_build_could_not_collect_is_a_cpu_build():
    # collect_env prints every None as "Could not collect"; the field is torch.version.cuda itself
    facts = collect_env.parse(load("collect_env_cuda_build_could_not_collect_win.txt"))
    assert facts["frameworks"]["torch"] == {"version": "2.2.2", "device_available": False, "extra": {"cuda_build": False}}
    assert "frameworks" not in collect_env.parse(load("collect_env_torch_not_importable_133397.txt"))


def test_xformers_built_for_line_reads_the_installed_torch():
    assert prose.parse(load("xformers_built_for_cpu_torch_982.txt")) == {"python": {"packages": {"torch": "2.2.0+cpu"}}}


# --- pins of a pip command the text says was run; conda's CPU selector packages -------------------

def test_a_pip_command_the_text_says_was_run_gives_its_build_tagged_pins():
    got = prose.parse(load("install_line_torch_cu102_85332.txt"))  # pytorch/pytorch#85332
    assert got["python"]["packages"] == {"torch": "1.8.1+cu102", "torchvision": "0.9.1+cu102"}  # untagged pins not read
    facts, _ = read_machine(load("install_line_torch_cu102_85332.txt"))
    assert facts["python"]["packages"]["torch"] == "1.8.1+cu102"


@pytest.mark.parametrize("text, expected", [
    ("I installed jaxlib with pip install jaxlib==0.1.70+cuda101", {"jaxlib": "0.1.70+cuda101"}),
    ("(venv) user@host:~$ pip install torch==2.1.0+cu118", {"torch": "2.1.0+cu118"}),
    ("We ran `pip install torch==2.0.1+cu117`", {"torch": "2.0.1+cu117"}),
])
def test_installed_pin_statements(text, expected):
    assert prose.parse(text)["python"]["packages"] == expected


@pytest.mark.parametrize("text", [
    "should I install pip install torch==2.1.0+cu118",
    "Try pip install torch==2.1.0+cu118",
    "I have installed it: pip install jaxlib==0.1.70+cuda101?",
    "pip install torch==2.1.0+cu121 -f https://download.pytorch.org/whl/torch_stable.html",  # advice or a step: unsaid
    "I ran pip install torch==2.1.0",  # no build tag: may not have resolved
])
def test_pins_in_questions_advice_or_untagged_are_not_the_machine(text):
    assert prose.parse(text) == {}


def test_conda_cpu_selector_packages_mark_torch_a_cpu_build():
    rows = [line for line in load("conda_list_grep_pytorch_cpu.txt").splitlines()
            if line.startswith(("cpuonly", "pytorch-mutex"))]  # meta-pytorch/data#315, its verbatim rows
    for row in rows:
        assert packages.parse(row)["frameworks"] == {"torch": {"extra": {"cuda_build": False}}}
    cuda = packages.parse(load("conda_list_grep_pytorch_cuda.txt"))
    assert "extra" not in cuda["frameworks"]["torch"]


# --- sentences that end a version with a full stop, "X version is: V", bare data-centre GPU names --

def test_stated_versions_end_at_a_full_stop_and_read_is_and_colon_forms():
    from envdoctor.read import stated

    assert stated.parse(load("stated_tf_windows_spyder_60269.txt")) == {
        "python": {"packages": {"tensorflow": "2.12.0"}}, "host": {"os": "windows"},
        "nvidia": {"gpus": [{"name": "NVIDIA GeForce RTX 2060"}]}, "cuda_toolkit": {"version": "12.1"}}  # "My NVIDIA CUDA version is 12.1."
    assert stated.parse(load("stated_versions_vitis_torchvision.txt")) == {
        "python": {"packages": {"torchvision": "0.11.2+cu102", "torch": "1.10.1"}}}


@pytest.mark.parametrize("text", [
    "This project requires PyTorch 2.1 or later", "please upgrade to torch 2.2", "Python 3.8+ is needed",
    "works with jax 0.4.x", "TF >= 2.11", "we recommend paddle 2.5", "torch 2.1 to 2.3 are supported",
])
def test_stated_requirements_and_ranges_are_not_what_is_installed(text):
    from envdoctor.read import stated

    assert "python" not in stated.parse(text)


def test_stated_wsl_is_the_machine_unless_named_as_what_was_not_used():
    from envdoctor.read import stated

    assert stated.parse(load("stated_wsl_driver_5848.txt"))["host"] == {"os": "linux", "wsl": True}
    for text in ("it works natively on Windows 11 but not in WSL", "should I use WSL2 instead?", "you could try WSL"):
        assert "wsl" not in stated.parse(text).get("host", {}), text


def test_stated_bare_datacentre_gpu_needs_its_memory_or_form_factor():
    from envdoctor.read import stated

    assert stated.parse("V100/16GB")["nvidia"]["gpus"] == [{"name": "NVIDIA V100"}]
    assert stated.parse("one H100 SXM node")["nvidia"]["gpus"] == [{"name": "NVIDIA H100"}]
    assert stated.parse("MSI P100 motherboard") == {}  # a board's model name, not a GPU


def test_nvidia_smi_header_pasted_a_field_a_line_is_the_drivers_cuda():
    facts = issue_form.parse(load("smi_header_field_a_line_paddleocr_16093.txt"))
    assert facts["nvidia"] == {"driver_version": "525.60.13", "driver_cuda": "12.0"}
    assert "cuda_toolkit" not in facts


def test_yolo_banner_the_last_run_is_the_one_reported_and_any_gpu_is_the_machines():
    assert versions_quoted.parse(load("yolo_banner_cpu_torch_1495.txt")) == {
        "python": {"version": "3.10.6", "packages": {"torch": "2.0.0+cpu"}},
        "nvidia": {"gpus": [{"index": 0, "name": "NVIDIA GeForce RTX 3070", "memory_total_mib": 8192}]}}


def test_collect_env_apple_chip_under_an_x86_64_python_is_rosetta():
    host = collect_env.parse(load("collect_env_macos_x86_64_on_m2_146236.txt"))["host"]
    assert (host["arch"], host["machine_arch"]) == ("x86_64", "arm64")
    facts, _ = read_machine(load("collect_env_macos_x86_64_on_m2_146236.txt"))
    from envdoctor.diagnose import diagnose

    assert "rosetta-python" in {f.code for f in diagnose(Facts.from_dict(facts))}


def test_in_the_container_counts_where_the_text_names_the_engine():
    assert prose.parse("examples of docker19.03 worked. In the container, nvidia-smi worked") == {"host": {"container": "docker"}}
    assert prose.parse("In the container, nvidia-smi worked") == {}


@pytest.mark.parametrize("text, runtime", [
    ("I run it using a singularity container (handled by nextflow)", "apptainer"),
    ("deploy TensorFlow on kubernetes with this device plugin", "kubernetes"),
    ("podman 4.9 here. In the container, nvidia-smi fails", "podman"),
])
def test_container_runtimes_named_in_words_as_the_container_probe_names_them(text, runtime):
    assert prose.parse(text) == {"host": {"container": runtime}}


# --- a terminal's hard wrap (words broken at the width) is rejoined; tables and soft wraps are not ---

def _hard_fold(text: str, width: int) -> str:
    out = []
    for line in text.splitlines():
        while len(line) > width:
            out.append(line[:width])
            line = line[width:]
        out.append(line)
    return "\n".join(out)


def test_hard_wrapped_lines_are_rejoined_without_a_space():
    from envdoctor.textnorm import rejoin_hard_wraps

    message = ("ImportError: /usr/local/lib/python3.10/dist-packages/torchaudio/lib/libtorchaudio.so: undefined symbol: "
               "_ZN3c104cuda9SetDeviceEi and a second sentence long enough to wrap onto a third line of the terminal")
    assert rejoin_hard_wraps(_hard_fold(message, 80)) == message
    assert rejoin_hard_wraps(_hard_fold("short first line\n" + message, 100)) == "short first line\n" + message


def test_text_wrapped_at_spaces_narrower_than_a_terminal_is_not_rejoined():
    from envdoctor.textnorm import rejoin_hard_wraps

    # wrapped at 60 columns with the spaces at the breaks dropped: two lines happen to be 62 long
    text = ("> ResourceExhaustedError: Out of memory error on GPU 0. Cannot\n"
            "> allocate 27.000000MB memory on GPU 0, 10.906372GB memory has\n"
            "> been allocated and available memory is only 4.062500MB.")
    assert rejoin_hard_wraps(text) == text


@pytest.mark.parametrize("name", ["conda_list_grep_pytorch_cpu.txt", "conda_list_cudatoolkit_10.2.txt", "smi_L_mig_a100.txt"])
def test_tables_are_never_rejoined(name):
    from envdoctor.textnorm import rejoin_hard_wraps

    text = body(name)
    assert rejoin_hard_wraps(text) == text


def test_text_wrapped_at_spaces_is_left_as_it_is():
    import textwrap

    from envdoctor.textnorm import rejoin_hard_wraps

    prose = ("After updating the NVIDIA driver to 550 the training script still fails at start-up. I reinstalled torch "
             "from the cu121 index, removed the old conda environment, rebooted twice and checked that nvidia-smi lists "
             "both cards, yet torch.cuda.is_available() keeps returning False inside the virtual environment while the "
             "system python sees the GPUs without any complaint about the installation at all.")
    wrapped = textwrap.fill(prose, 72)
    assert len({len(line) for line in wrapped.splitlines()}) > 1
    assert rejoin_hard_wraps(wrapped) == wrapped


def test_conda_install_plan_rows_are_packages_with_their_build():
    plan = ("The following NEW packages will be INSTALLED:\n\n"
            "  cpuonly            pytorch/noarch::cpuonly-2.0-0\n"
            "  pytorch            pytorch/win-64::pytorch-1.10.0-py3.6_cpu_0\n"
            "  torchvision        pytorch/win-64::torchvision-0.11.0-py36_cpu\n")  # rows of https://github.com/conda/conda/issues/11001
    facts = packages.parse(plan)
    assert facts["python"]["conda_packages"] == {"cpuonly": "2.0", "pytorch": "1.10.0", "torchvision": "0.11.0"}
    assert facts["frameworks"]["torch"]["extra"]["cuda_build"] is False
    cuda = packages.parse("  pytorch            pytorch/linux-64::pytorch-1.11.0-py3.8_cuda11.3_cudnn8.2.0_0\n")
    assert cuda["frameworks"]["torch"]["cuda"] == "11.3"


def test_stated_amd_gpu_only_where_no_nvidia_one_is_named():
    from envdoctor.read import stated

    assert stated.parse("Here is the dump for AMD 3800 / 32GB /  RX 6800 / 10 x64 22H2") == {"amd": {"gpus": [{"name": "AMD RX 6800"}]}}
    assert "amd" not in stated.parse("AMD Ryzen 9 5900X and an RTX 3090")


def test_stated_amd_gpu_named_by_series_or_vega():
    from envdoctor.read import stated

    assert stated.parse("My GPU is an AMD 570 series 4GB, can anyone help me?")["amd"] == {"gpus": [{"name": "AMD 570"}]}
    assert stated.parse("- GPU model and memory: AMD Vega RX 64")["amd"] == {"gpus": [{"name": "AMD Vega RX 64"}]}
    assert "amd" not in stated.parse("AMD 3990 with 256GB RAM and an RTX A6000")  # a CPU beside the NVIDIA GPU


def test_stated_gpu_written_with_a_hyphen_next_to_cjk_text():
    from envdoctor.read import stated

    assert stated.parse("显卡是 RTX-3060的 系统是win11")["nvidia"]["gpus"] == [{"name": "NVIDIA RTX 3060"}]


def test_stated_amd_gpu_named_by_make_only():
    from envdoctor.read import stated

    assert stated.parse("Hi, I have errors with cupy on amd gpu.")["amd"] == {"gpus": [{"name": "AMD GPU"}]}
    assert stated.parse("I have an AMD graphics card in this laptop")["amd"] == {"gpus": [{"name": "AMD GPU"}]}
    assert "amd" not in stated.parse("Is there a version for AMD GPUs planned?")  # a question, no machine
    assert "amd" not in stated.parse("I have an AMD GPU and an RTX 3090; the RTX is used")


@pytest.mark.parametrize("text, version", [
    ("Version of Tensorflow - 2.1.0", "2.1.0"),
    ("the version of tensorflow is 2.4.1.", "2.4.1"),
])
def test_stated_version_of_a_framework_in_other_word_orders(text, version):
    from envdoctor.read import stated

    assert stated.parse(text)["python"]["packages"]["tensorflow"] == version


def test_a_stated_range_with_a_dash_is_no_installed_version():
    from envdoctor.read import stated

    assert stated.parse("tensorflow 2.1 - 2.3 are supported") == {}


@pytest.mark.parametrize("name, expected", [
    ("lightning_env_quadro_rtx5000_16816.txt", {
        "nvidia": {"gpus": [{"index": 0, "name": "Quadro RTX 5000"}]},
        "frameworks": {"torch": {"device_available": True, "cuda": "11.7"}},
        "python": {"packages": {"lightning-utilities": "0.6.0.post0", "pytorch-lightning": "1.9.2", "torch": "1.13.1",
                                "torchmetrics": "0.11.1", "aiohttp": "3.8.4", "aiosignal": "1.3.1", "alembic": "1.9.4"}}}),
    ("lightning_env_4x4090_spaces_20682.txt", None),
    ("lightning_env_macos_cpu_17.txt", None),
])
def test_lightning_environment_report(name, expected):
    from envdoctor.read import lightning_env

    facts = lightning_env.parse(load(name))
    if expected is not None:
        assert facts == expected
    elif "4x4090" in name:
        assert [g["name"] for g in facts["nvidia"]["gpus"]] == ["NVIDIA GeForce RTX 4090"] * 4
        assert facts["frameworks"]["torch"] == {"device_available": True, "cuda": "11.8"}
        assert facts["python"]["packages"]["torch"] == "2.6.0+cu118" and facts["python"]["packages"]["pytorch3d"] == "0.7.8"
    else:  # no GPU, a CPU build of torch: GPU "None" is no device name
        assert "nvidia" not in facts
        assert facts["frameworks"]["torch"] == {"device_available": False, "extra": {"cuda_build": False}}
        assert facts["python"]["packages"]["torch"] == "1.13.0" and facts["python"]["packages"]["pytorch-lightning"] == "0.8.5"


def test_lightning_system_block_tells_an_x86_64_python_on_apple_silicon():
    from envdoctor.read import lightning_env

    text = ("* CUDA:\n\t- GPU:               None\n\t- available:         False\n\t- version:           None\n"
            "* System:\n\t- OS:                Darwin\n\t- architecture:\n\t\t- 64bit\n\t\t- \n"
            "\t- processor:         i386\n\t- python:            3.10.8\n"
            "\t- version:           Darwin Kernel Version 22.1.0: Sun Oct  9 20:15:09 PDT 2022; root:xnu-8792.41.9~2/RELEASE_ARM64_T6000\n")
    assert lightning_env.parse(text)["host"] == {"os": "macos", "arch": "x86_64", "machine_arch": "arm64"}


def test_a_pytorch_lightning_field_is_not_torch():
    assert issue_form.parse("- pytorch-lightning: 0.8.5\n- PyTorch Version (e.g., 1.10): 1.13\n") == {
        "python": {"packages": {"torch": "1.13"}}}


def test_a_tensorflow_js_field_is_not_tensorflow_and_python_2_is_read():
    assert issue_form.parse("- TensorFlow.js version: ^3.13.0\n") == {}
    assert issue_form.parse("### Python version\n\n2.7.5\n")["python"]["version"] == "2.7.5"


def test_an_os_field_listing_several_answers_names_the_os_not_a_distribution():
    # xorbitsai/inference #2836: "centos x84_64 、xinference:1.21 、cuda 12.4": CentOS, no macOS in "os x84"
    assert issue_form.parse("### System Info\n\ncentos x84_64 、xinference:1.21 、cuda 12.4 、GPU: P40*4\n") == {
        "host": {"os": "linux"}}
    assert issue_form.parse("### OS\n\nUbuntu 22.04, x86_64\n")["host"] == {"os": "linux", "distro": "Ubuntu 22.04"}
    assert issue_form.parse("### OS\n\nMac OS X 10.13\n")["host"] == {"os": "macos"}


def test_a_cudnn_version_the_reporter_states_is_the_machines():
    from envdoctor.read import stated

    # onnxruntime #22809: "The cuda is 12.6 and the cudnn is 9.3"
    assert stated.parse("The cuda is 12.6 and the cudnn is 9.3. I find")["cudnn"] == [{"version": "9.3", "source": "stated"}]
    assert stated.parse("cudnn版本8.2")["cudnn"][0]["version"] == "8.2"
    for other in ("requires cuDNN 8.9 or later", "PyTorch built with cuDNN 8.9", "Require cuDNN 8.* and CUDA 12.*"):
        assert "cudnn" not in stated.parse(other), other
    # onnxruntime's issue form
    assert issue_form.parse("### Execution Provider Library Version\n\ncuda 12.6, cudnn 9.3, jetpack 6.1\n")["cudnn"] == [
        {"version": "9.3", "source": "issue form"}]


def test_a_command_in_a_sentence_hides_only_itself():
    from envdoctor.read import stated

    # scverse/scvi-tools #1929: the machine stays readable around the command
    text = "Our work-issued laptops are Mac M1, and so we cannot `pip install scvi-tools` anymore due to the Jax requirement."
    assert stated.parse(text)["host"] == {"os": "macos", "machine_arch": "arm64"}
    assert stated.parse("then `pip install torch==2.1.0` fails") == {}  # the command's pin is no installed version
    assert stated.parse("pip install tensorflow==2.15") == {}


def test_a_field_in_markdown_italics_is_a_field():
    # bitsandbytes #1537: "_OS: CentOS Linux 7 (Core)"
    assert issue_form.parse("_OS: CentOS Linux 7 (Core)\nNVIDIA-SMI 550.144.03\n")["host"] == {"os": "linux", "distro": "CentOS Linux 7"}


def test_geforces_counted_in_the_plural_name_the_product():
    from envdoctor.read import stated

    # gpustack #2731: "My main machine has 2x 5090s and 1x RTX PRO 6000"
    assert stated.parse("My main machine has 2x 5090s and 1x RTX PRO 6000 GPU")["nvidia"]["gpus"] == [{"name": "NVIDIA RTX 5090"}]
    assert "nvidia" not in stated.parse("GPU prices in the 2050s")


def test_an_unticked_checkbox_states_nothing():
    from envdoctor.read import stated

    assert stated.parse("What OS are you using?\n- [ ] Linux\n- [ ] Linux in WSL\n- [+] Windows\n- [ ] Mac\n") == {}
    assert stated.parse("What OS are you using?\n- [ ] Linux\n- [x] Linux in WSL\n- [ ] Windows\n") == {
        "host": {"os": "linux", "wsl": True}}


def test_a_colab_or_kaggle_runtime_is_linux_unless_another_os_is_named():
    from envdoctor.read import stated

    assert stated.parse("TensorFlow 2.14.0 is unable to detect the GPU on Google Colab.")["host"] == {"os": "linux"}
    assert "host" not in stated.parse("It works on Colab but not on my Windows 10 laptop")


def test_what_pip_uninstalled_is_not_the_installed_torch():
    log = ("Attempting uninstall: torch\n    Found existing installation: torch 1.13.1+cu117\n"
           "    Uninstalling torch-1.13.1+cu117:\n      Successfully uninstalled torch-1.13.1+cu117\n")
    assert prose.parse(log) == {}


def test_a_jetson_named_by_its_module_alone():
    assert prose.parse("when I repeated the process on my agx orin (latest software)") == {
        "jetson": {"model": "Jetson AGX Orin"}}
    assert prose.parse("Orin is a codename") == {}


def test_a_stated_absence_of_an_nvidia_gpu_is_recorded_as_none():
    from envdoctor.read import stated

    # roop-unleashed#586, storytoolkitai-type reports: the reporter says there is no NVIDIA GPU
    assert stated.parse("I do not have an nvidia card (I have an Intel(R) HD graphics 530)") == {"nvidia": {"gpus": []}}
    assert stated.parse("when device is set to cpu in colab and hardware accelerator is none")["nvidia"] == {"gpus": []}
    assert stated.parse("I don't have a GPU with enough memory for the 13B model") == {}
    named = stated.parse("I don't have an nvidia card here, the RTX 3060 is at work")  # a GPU named: not "none"
    assert named["nvidia"]["gpus"] == [{"name": "NVIDIA RTX 3060"}]


def test_a_mac_named_by_its_chip_or_model_is_macos():
    from envdoctor.read import stated

    for text in ("Python 3.10.13\nApple M2", "MacBook Pro M1 14\" - MacOS 12.5.1", "Mac M3，运行报错", "run it on my Mac",
                 "coda is not supported on Mac", "On Mac Silicon tensor rendering works faster"):
        assert stated.parse(text)["host"]["os"] == "macos", text
    assert stated.parse("this MacBook vs the Ubuntu 22.04 server") == {}  # two machines: nothing


def test_python_platform_strings_of_environment_dumps():
    """platform.platform() as `transformers-cli env` / `accelerate env` / Langchain-Chatchat print it."""
    from envdoctor.read import misc

    assert misc.parse("- Platform: Linux-5.15.0-91-generic-x86_64-with-glibc2.35")["host"] == {
        "os": "linux", "kernel": "5.15.0-91-generic", "arch": "x86_64", "glibc": "2.35"}
    wsl = misc.parse("- Platform: Linux-5.15.133.1-microsoft-standard-WSL2-x86_64-with-glibc2.35")["host"]
    assert wsl["wsl"] is True and wsl["os"] == "linux"
    assert misc.parse("操作系统:macOS-14.2.1-arm64-arm-64bit.")["host"] == {"os": "macos", "arch": "arm64"}
    assert misc.parse("- Platform: Windows-10-10.0.19045-SP0")["host"] == {"os": "windows"}
    assert misc.parse("see Linux-kernel docs") == {}


# --- the OS a traceback's paths show; a version written "2.8.0 + cu129"

@pytest.mark.parametrize("text, system", [
    ('Cannot import /Users/oliver/ComfyUI/custom_nodes/ComfyUI-Ovi module for custom nodes', "macos"),
    ('File "C:\\Users\\DJscy\\AppData\\Roaming\\SpleeterGUI\\python\\Lib\\site-packages\\tensorflow_core\\python\\x.py"', "windows"),
    ('  File "/home/ann/miniconda3/envs/t/lib/python3.10/site-packages/torch/__init__.py", line 1', "linux"),
    ('  File "/content/drive/MyDrive/train.py", line 4, in <module>', "linux"),
    ("/private/var/folders/0d/nlq/T/pip-install-nq6/flash-attn_ed14/setup.py:78: UserWarning: nvcc was not found", "macos"),
])
def test_the_os_a_paths_shows(text, system):
    from envdoctor.read import paths

    assert paths.parse(text) == {"host": {"os": system}}


@pytest.mark.parametrize("text", [
    "/Users/ann/project/run.py on my laptop, then /home/ann/run.py on the server",  # two systems: nothing
    "see https://example.org/Users/guide/ for details",  # a URL's path is nobody's machine
    "no paths at all",
])
def test_paths_that_say_nothing_or_too_much(text):
    from envdoctor.read import paths

    assert paths.parse(text) == {}


def test_a_windows_drive_under_mnt_is_wsl():
    from envdoctor.read import paths

    prompt = "(textgen) eugeo@DESKTOP-88L7K4D:/mnt/c/Users/eugeo/Documents/dev$ python server.py\n"
    assert paths.parse(prompt + "/home/eugeo/miniconda3/envs/textgen/lib/python3.10/site-packages/x.py") == {
        "host": {"os": "linux", "wsl": True}}


def test_a_stated_version_with_a_spaced_local_tag():
    from envdoctor.read import stated

    assert stated.parse("**Versions:** PyTorch 2.8.0 + cu129, GTX 1070")["python"]["packages"]["torch"] == "2.8.0+cu129"


def test_stated_machine_of_a_reporters_sentence():
    # verbatim sentences of real reports (tests/fixtures/reports/ 325, 3303, 3004, 3206, 3508, 2802)
    from envdoctor.read import stated

    intel = stated.parse("I'm using a integrated Intel GPU(iris xe graphics). os is win 11, torch==2.0.0+cu118")
    assert intel["nvidia"]["gpus"] == [] and intel["host"]["os"] == "windows"
    assert stated.parse("we are currently using Intel (r) UHD Graphics 630")["nvidia"]["gpus"] == []
    # stable-diffusion-webui-forge #3060: "run Forge on Windows 11 with an Intel R GPU"
    assert stated.parse("I'm attempting to run Forge on Windows 11 with an Intel R GPU")["nvidia"]["gpus"] == []
    assert stated.parse("a laptop with an Intel UHD GPU and an RTX 3060")["nvidia"]["gpus"] != []
    assert stated.parse("I am on Linux on a virtual machine, and i really don't understand this error") == {"host": {"os": "linux"}}
    assert stated.parse("Platform: macbook pro 16in") == {"host": {"os": "macos"}}
    assert stated.parse("on MAC pro M1") == {"host": {"os": "macos"}}
    assert stated.parse("宿主机的驱动版本是：NVIDIA-SMI 384.66，显卡型号：Nvidia Tesla K40m.")["nvidia"]["driver_version"] == "384.66"
    # an Intel CPU is no Intel GPU; an NVIDIA GPU named beside Intel graphics is the machine's GPU
    assert "nvidia" not in stated.parse("I'm on an Intel i7-12700 with Ubuntu 22.04")
    assert stated.parse("I'm using Intel UHD graphics and an RTX 3060")["nvidia"]["gpus"] != []


# --- a GeForce by its number, "==" and "(" before a version, IPEX, an AMD card as the GPU, an Apple chip

@pytest.mark.parametrize("text, name", [
    ("I try to deploy it in my 5070ti machine", "NVIDIA RTX 5070 Ti"),
    ("I'm on an NVIDIA GeForce 3090 GPU.", "NVIDIA RTX 3090"),
    ("training on a 4060 GPU", "NVIDIA RTX 4060"),
    ("GeForce 1080 Ti, driver 470", "NVIDIA GTX 1080 Ti"),
    ("RVC1006Nvidia not working with 5090 rtx ?", "NVIDIA RTX 5090"),  # the line after the number
    ("i have cuda 9.1 ( GeForce GT 625M ).", "NVIDIA GeForce GT 625M"),  # the low-end GeForce GT line
    ("GTS 450 here", "NVIDIA GTS 450"),
])
def test_stated_geforce_by_its_number(text, name):
    from envdoctor.read import stated

    assert stated.parse(text)["nvidia"]["gpus"] == [{"name": name}]


@pytest.mark.parametrize("text", ["ran 3000 epochs on 1080 images with the GPU", "since 2080 the GPU lags", "batch 4096 on the GPU"])
def test_stated_a_bare_number_that_is_not_a_gpu(text):
    from envdoctor.read import stated

    assert "nvidia" not in stated.parse(text)


def test_stated_version_after_double_equals_or_a_bracket_and_ipex():
    from envdoctor.read import stated

    assert stated.parse("- TensorFlow==2.3.\n- pytorch version(2.1.2)\ntorch 2.7.1, ipex 2.8")["python"]["packages"] == {
        "tensorflow": "2.3", "torch": "2.1.2", "intel-extension-for-pytorch": "2.8"}


def test_stated_amd_card_in_the_gpu_field_means_no_nvidia_gpu():
    from envdoctor.read import stated

    assert stated.parse("Windows 11 Pro\nGPU: Radeon RX 580 Series\nCPU: AMD Ryzen 5 3600")["nvidia"] == {"gpus": []}
    # the Radeon of the CPU's integrated graphics is not the GPU field
    assert "nvidia" not in stated.parse("CPU: AMD Ryzen 5 3400G with Radeon Vega Graphics, RAM 16 GB")


def test_stated_apple_chip_is_arm64_hardware():
    from envdoctor.read import stated

    assert stated.parse("on my MacBook Pro M1")["host"] == {"os": "macos", "machine_arch": "arm64"}
    assert stated.parse("on my MacBook Pro")["host"] == {"os": "macos"}


@pytest.mark.parametrize("line", [
    "uname : Linux systest 6.14.0-24-generic #24-Ubuntu SMP PREEMPT_DYNAMIC Sun Jun 15 11:18:07 UTC 2025 x86_64 x86_64 x86_64 GNU/Linux",
    "$ uname -a Linux systest 6.14.0-24-generic #24-Ubuntu SMP PREEMPT_DYNAMIC Sun Jun 15 11:18:07 UTC 2025 x86_64 GNU/Linux",
])
def test_uname_after_its_label(line):
    from envdoctor.read import read_machine

    assert read_machine(line)[0]["host"] == {"os": "linux", "kernel": "6.14.0-24-generic", "arch": "x86_64"}


@pytest.mark.parametrize("text, torch", [
    ("I tried Pytorch1.7.1 + Cuda10.1 and it does not work", "1.7.1+cu101"),
    ("torch 1.13 with CUDA 11.7", "1.13+cu117"),
    ("pytorch 2.1 with cuda 11.8.0", "2.1+cu118"),
    ("PyTorch 2.0, CUDA 12.2", "2.0"),  # a list: the CUDA may be the system's
])
def test_stated_torch_with_the_cuda_it_was_built_with(text, torch):
    from envdoctor.read import stated

    assert stated.parse(text)["python"]["packages"]["torch"] == torch


def test_stated_gpu_replaced_is_not_the_machines():
    from envdoctor.read import stated

    # the wording of lllyasviel/Fooocus#3849 and its mirror image
    assert stated.parse("just upgraded from an 1080TI to RTX 5070")["nvidia"]["gpus"] == [{"name": "NVIDIA RTX 5070"}]
    assert stated.parse("I replaced my GTX 1080 with an RTX 4090 yesterday")["nvidia"]["gpus"] == [{"name": "NVIDIA RTX 4090"}]
    assert stated.parse("My RTX 3090 works, but an RTX 4090 fails")["nvidia"]["gpus"] == [{"name": "NVIDIA RTX 3090"}]


def test_stated_amd_gpu_that_is_mine_means_no_nvidia_one():
    from envdoctor.read import stated

    # carson-katri/dream-textures: "I can't generate textures on windows with my rx570 4gb"
    facts = stated.parse("I can't generate textures on windows with my rx570 4gb. Probably because it doesn't have cuda support.")
    assert facts["amd"] == {"gpus": [{"name": "AMD rx570"}]} and facts["nvidia"]["gpus"] == []
    assert "gpus" not in stated.parse("Is the RX 570 supported?").get("nvidia", {})


def test_stated_compute_capability_of_the_reporters_gpu():
    from envdoctor.read import stated

    assert stated.parse("because of my old GPU and the number of my compute capability (2.1).")["nvidia"]["gpus"] == [
        {"compute_capability": "2.1"}]
    assert "nvidia" not in stated.parse("vLLM requires compute capability 7.0 or higher")  # the software's, not the GPU's


def test_stated_no_nvidia_gpu_by_an_intel_card_or_the_question_whether_one_is_needed():
    from envdoctor.read import stated

    # isaac-sim/IsaacSim: "Intel XE Graphics card"; comic-translate: "Or do I need a nvidia GPU to use this application?"
    assert stated.parse("GPU Information: Intel XE Graphics card")["nvidia"]["gpus"] == []
    assert stated.parse("Or do I need a nvidia GPU to use this application?")["nvidia"]["gpus"] == []
    assert "nvidia" not in stated.parse("Do you need a bigger GPU for the 70B model?")
    # SunOner/sunone_aimbot, in Russian: "how to run it on amd"
    assert stated.parse("Подскажи пожалуйста, как запустить на amd, что скачать")["amd"] == {"gpus": [{"name": "AMD GPU"}]}


def test_stated_no_nvidia_gpu_by_a_node_that_lacks_one_or_a_notebook_on_the_cpu():
    from envdoctor.read import stated

    # openmm/openmm: "My head node lacks a GPU"; detectron2: "I tried to run the code on colab with CPU mode"
    assert stated.parse("My head node lacks a GPU, which would explain the error")["nvidia"]["gpus"] == []
    assert stated.parse("I tried to run the code on colab with CPU mode and in the end")["nvidia"]["gpus"] == []
    assert "nvidia" not in stated.parse("the model lacks a GPU kernel for this op")  # not the machine
    assert "nvidia" not in stated.parse("the CPU mode of the program is slow")  # no notebook named


def test_names_right_before_chinese_characters():
    from envdoctor.read import stated

    # PaddlePaddle/Paddle: "请问jetson xavier nx上可以直接安装paddlepaddle吗"; zai-org/GLM-TTS: "我用的是苹果M1芯片"
    assert prose.parse("请问jetson xavier nx上可以直接安装paddlepaddle吗")["jetson"]["model"] == "Jetson Xavier NX"
    assert stated.parse("我用的是苹果M1芯片，已经将前面问题都跑通了。")["host"] == {"os": "macos", "machine_arch": "arm64"}


def test_visual_studio_with_its_year_is_windows():
    from envdoctor.read import stated

    # DeepLabCut/napari-deeplabcut: "I have VS 2022, and CUDA 11.8, cudnn 9.5"
    assert stated.parse("My Graphic card is NVIDIA RTX A5000. I have VS 2022, and CUDA 11.8")["host"]["os"] == "windows"
    assert "host" not in stated.parse("I edit it in VS Code 1.85 on my GPU box")
    assert "host" not in stated.parse("built with Visual Studio 2022 for Mac on my gpu")


def test_no_nvidia_gpu_by_asking_whether_one_is_a_must_or_saying_cpu_only():
    from envdoctor.read import stated

    # r9y9/deepvoice3_pytorch: "Is GPU a must requirement on the machine?"; xtts2-ui: "(I am using CPU only)"
    assert stated.parse("Is GPU a must requirement on the machine?")["nvidia"]["gpus"] == []
    assert stated.parse("I did everything in the README. (I am using CPU only) and torch")["nvidia"]["gpus"] == []
    assert "nvidia" not in stated.parse("I am using CPU-only torch on purpose")  # a build, not the machine
    assert "nvidia" not in stated.parse("I am using CPU only mode of torch for now")


def test_no_nvidia_gpu_by_an_amd_card_in_chinese_an_intel_laptop_or_a_cpu_only_machine():
    from envdoctor.read import stated

    # YaoFANGUK/video-subtitle-extractor: "A卡提示没有发现显卡，是不是只支持N卡？" (an AMD card says no GPU found)
    facts = stated.parse("A卡提示没有发现显卡，是不是只支持N卡？")
    assert facts["amd"]["gpus"] == [{"name": "AMD GPU"}] and facts["nvidia"]["gpus"] == []
    # lllyasviel/Fooocus: "My laptop used Intel(R) Irish(R) Xe Graphics"; hkchengrex/Cutie: "i only have cpu in my computer"
    assert stated.parse("Not work with other GPU. My laptop used Intel(R) Irish(R) Xe Graphics")["nvidia"]["gpus"] == []
    assert stated.parse("i only have cpu in my computer, the torch load fails")["nvidia"]["gpus"] == []
    assert "nvidia" not in stated.parse("I only have CPU torch installed for now")  # a build, not the machine


def test_a_mac_by_its_chip_after_on_an_or_by_working_on_macos():
    from envdoctor.read import stated

    # maszhongming/UniEval: "for those of us on an M1"; bitsandbytes: "I am working on macos"
    assert stated.parse("a check for cuda (else mps, for those of us on an M1) in the torch code")["host"] == {
        "os": "macos", "machine_arch": "arm64"}
    assert stated.parse("However, I am working on macos and pytorch has no cuda")["host"]["os"] == "macos"


def test_no_nvidia_gpu_said_of_the_laptop_as_it():
    from envdoctor.read import stated

    # IDEA-Research/Grounded-Segment-Anything: "I also can't enable CUDA on my Laptop since it doesn't have an NVIDIA graphics card"
    assert stated.parse("I can't enable CUDA on my Laptop since it doesn't have an NVIDIA graphics card")["nvidia"]["gpus"] == []
    assert stated.parse("I have a MacBookPro with the M1 chip")["host"] == {"os": "macos", "machine_arch": "arm64"}


@pytest.mark.parametrize("text, toolkit", [
    ("paddle=2.2.2\ncuda 10.2\ncudnn 7.6.5\nNVIDIA A30", "10.2"),  # PaddlePaddle/Paddle#56514
    ("服务器显卡是rtx3070，安装paddle后运行模型出错\ncuda装的是10.0版本", "10.0"),  # PaddlePaddle/Paddle#30092
    ("GPU：RTX 3090，CUDA11.2 CUDNN 8.2，完全对应的官方版本", "11.2"),  # PaddlePaddle/Paddle#40021
    ("My CUDA version is 11.7.", "11.7"),
    ("| NVIDIA-SMI 535.86.05   Driver Version: 535.86.05   CUDA Version: 12.2 |", None),  # the driver's CUDA
    ("I installed PyTorch 2.1 + CUDA 12.1", None),  # torch's build
    ("torch was built with CUDA 11.8", None),
    ("this repo requires CUDA 11.8", None), ("CUDA 12.1 or later", None), ("cuda 11.x", None),
])
def test_stated_cuda_is_the_toolkit_only_where_nothing_else_owns_it(text, toolkit):
    from envdoctor.read import stated

    assert (stated.parse(text).get("cuda_toolkit") or {}).get("version") == toolkit


def test_a_stated_cuda_that_cannot_build_for_the_stated_gpu_is_the_cause_of_a_text_without_a_message():
    from envdoctor.complete import complete
    from envdoctor.explain import explain
    from envdoctor.facts import Facts

    text = "服务器显卡是rtx3070，安装paddle后运行模型出错\ncuda装的是10.0版本\n想问下，rtx3070是否支持现有的paddle版本？"
    facts, _ = read_machine(text)
    result = explain(text, complete(Facts.from_dict(facts)), machine_described=True)
    assert result.diagnosis[:1] == ("gpu-arch-unsupported",)
    facts, _ = read_machine(text.replace("10.0", "11.2"))  # CUDA 11.1+ builds for sm_86
    assert explain(text, complete(Facts.from_dict(facts)), machine_described=True).diagnosis == ()
