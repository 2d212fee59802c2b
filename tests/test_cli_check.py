"""`envdoctor check` end to end: the real CLI in a subprocess, a fake nvidia-smi first on PATH."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import run_cli
from probe_helpers import FAKEBIN, RAW, SYSTEM_PATH, put

BASE_ENV = {"ENVDOCTOR_NVML": "0", "NO_COLOR": "1", "COLUMNS": "200"}


def check_json(*args, scenario=None, path=None, **env):
    """Run `check --json` with nvidia-smi from tests/fakebin/<scenario>; return (exit code, report)."""
    path = path or (f"{FAKEBIN / scenario}:{SYSTEM_PATH}" if scenario else SYSTEM_PATH)
    result = run_cli("check", "--json", *args, env={**BASE_ENV, "PATH": path, **env})
    assert result.stderr == "" or "Traceback" not in result.stderr, result.stderr
    return result.returncode, json.loads(result.stdout)


def codes(report) -> set[str]:
    return {f["code"] for f in report["findings"]}


def gpus(report) -> list[tuple]:
    return [(g["index"], g["name"], g["compute_capability"], g["memory_total_mib"]) for g in report["facts"]["nvidia"]["gpus"]]


def test_report_shape():
    _, report = check_json(scenario="classic")
    assert report["schema"] == "envdoctor.report/1"
    assert set(report) >= {"schema", "facts", "findings", "summary", "timings"}
    assert report["facts"]["schema"] == "envdoctor.facts/1"
    assert set(report["timings"]) >= {"host", "python", "nvidia", "toolkit", "cudnn", "jetson", "amd", "env"}
    for finding in report["findings"]:
        assert set(finding) == {"code", "severity", "section", "title", "detail", "fix", "evidence"}
        assert finding["severity"] in ("error", "warning", "info")


def test_classic_header():
    _, report = check_json(scenario="classic")
    nv = report["facts"]["nvidia"]
    assert (nv["driver_version"], nv["driver_cuda"], nv["source"], nv["driver_kind"]) == ("580.82.09", "13.0", "nvidia-smi", "desktop")
    assert gpus(report) == [(0, "NVIDIA GeForce GTX 960", "5.2", 2048)]
    assert not codes(report) & {"no-nvidia-driver", "driver-library-mismatch", "toolkit-without-driver", "no-gpu-platform"}
    assert report["facts"]["errors"] == []


def test_r610_kmd_and_cuda_umd_version():
    _, report = check_json(scenario="r610")
    nv = report["facts"]["nvidia"]
    assert (nv["driver_version"], nv["driver_cuda"]) == ("610.43.03", "13.3")
    assert gpus(report) == [(0, "NVIDIA GeForce RTX 3080 Ti Laptop GPU", "8.6", 16384)]


def test_multi_gpu():
    _, report = check_json(scenario="multi-gpu")
    assert gpus(report) == [(0, "NVIDIA A100-SXM4-80GB", "8.0", 81920), (1, "NVIDIA A100-SXM4-80GB", "8.0", 81920)]
    assert [g["pci_bus_id"] for g in report["facts"]["nvidia"]["gpus"]] == ["00000000:81:00.0", "00000000:C1:00.0"]


def test_old_driver_without_compute_cap():
    _, report = check_json(scenario="old-driver")
    assert report["facts"]["nvidia"]["driver_version"] == "450.57"
    assert gpus(report) == [(0, "TITAN Xp", "6.1", 12196)]  # not printed by this driver: completed from the name
    assert "nvidia.gpus[0].compute_capability" in report["facts"]["inferred"]
    assert report["facts"]["errors"] == []  # the unknown field was retried without, not reported


def test_jetson(tmp_path):
    put(tmp_path, "/etc/nv_tegra_release", (RAW / "nv_tegra_release/jp62_orin_nx.txt").read_text())
    put(tmp_path, "/proc/device-tree/model", (RAW / "device-tree/agx_orin_model").read_bytes())
    put(tmp_path, "/proc/device-tree/compatible", (RAW / "device-tree/agx_orin_compatible").read_bytes())
    _, report = check_json(scenario="jetson", ENVDOCTOR_ROOT=str(tmp_path))
    facts = report["facts"]
    assert (facts["jetson"]["l4t"], facts["jetson"]["jetpack"], facts["jetson"]["cuda"], facts["jetson"]["soc"]) == (
        "36.4.3", "6.2", "12.6", "tegra234")
    assert (facts["nvidia"]["driver_version"], facts["nvidia"]["driver_kind"]) == ("540.4.0", "jetson")
    assert gpus(report) == [(0, "Orin (nvgpu)", "8.7", None)]
    console = run_cli("check", env={**BASE_ENV, "PATH": f"{FAKEBIN / 'jetson'}:{SYSTEM_PATH}", "ENVDOCTOR_ROOT": str(tmp_path)})
    assert "Jetson" in console.stdout and "L4T 36.4.3, JetPack 6.2" in console.stdout
    assert "Jetson integrated driver" in console.stdout


def test_wsl2_nvidia_smi_in_wsl_lib_off_path(tmp_path):
    put(tmp_path, "/proc/version", "Linux version 5.15.153.1-microsoft-standard-WSL2 (root@941d701f84f1) (gcc (GCC) 12.2.0)\n")
    fake = (FAKEBIN / "wsl2" / "nvidia-smi").read_text().replace(
        'raw="$(dirname "$0")/../../fixtures/raw/nvidia-smi"', f'raw="{RAW / "nvidia-smi"}"')
    put(tmp_path, "/usr/lib/wsl/lib/nvidia-smi", fake, mode=0o755)
    _, report = check_json(ENVDOCTOR_ROOT=str(tmp_path))  # PATH has no nvidia-smi
    facts = report["facts"]
    assert facts["host"]["wsl"] is True
    assert (facts["nvidia"]["driver_version"], facts["nvidia"]["driver_kind"], facts["nvidia"]["driver_cuda"]) == ("555.99", "wsl", "12.5")


def test_couldnt_communicate():
    code, report = check_json(scenario="no-driver")
    assert report["facts"]["nvidia"]["failure"] == "no-driver-communication"
    assert "no-nvidia-driver" in codes(report) and "toolkit-without-driver" not in codes(report)
    assert code == 1


def test_driver_library_mismatch():
    code, report = check_json(scenario="mismatch")
    assert report["facts"]["nvidia"]["failure"] == "driver-library-mismatch"
    assert "driver-library-mismatch" in codes(report) and "no-nvidia-driver" not in codes(report)
    assert code == 1


def test_hanging_nvidia_smi_times_out():
    code, report = check_json(scenario="hang", ENVDOCTOR_PROBE_TIMEOUT="1")
    messages = sorted(e["message"] for e in report["facts"]["errors"] if e["probe"] == "nvidia-smi")
    assert messages == ["`nvidia-smi --query-gpu` timed out after 1 s", "`nvidia-smi` timed out after 1 s"]
    assert "no-gpu-platform" not in codes(report)  # unknown, not "no GPU"
    assert code in (0, 1)
    console = run_cli("check", env={**BASE_ENV, "PATH": f"{FAKEBIN / 'hang'}:{SYSTEM_PATH}", "ENVDOCTOR_PROBE_TIMEOUT": "1"})
    assert "timed out after 1 s" in console.stdout and "Traceback" not in console.stderr


def test_garbage_output():
    _, report = check_json(scenario="garbage")
    errors = [e for e in report["facts"]["errors"] if e["probe"] == "nvidia-smi"]
    assert len(errors) == 2 and all("printed" in e["message"] for e in errors)
    assert report["facts"]["nvidia"]["driver_version"] is None


@pytest.mark.skipif(not Path("/usr/local/cuda-13.0/bin/nvcc").exists(), reason="the development machine's CUDA 13.0")
def test_this_machine_toolkit_without_driver():
    """No NVIDIA driver here, a real CUDA 13.0 toolkit: the real probe must find it and say so."""
    _, report = check_json(path=f"/usr/local/bin:{SYSTEM_PATH}")
    facts = report["facts"]
    assert facts["cuda_toolkit"]["version"] == "13.0" and facts["cuda_toolkit"]["root"] == "/usr/local/cuda-13.0"
    assert facts["nvidia"] is None or facts["nvidia"]["driver_version"] is None
    assert {"toolkit-without-driver", "no-gpu-platform"} <= codes(report)


def test_facts_round_trip(tmp_path):
    probed = run_cli("facts", env={**BASE_ENV, "PATH": f"{FAKEBIN / 'multi-gpu'}:{SYSTEM_PATH}"})
    assert probed.returncode == 0
    path = tmp_path / "machine.json"
    path.write_text(probed.stdout)
    replayed = run_cli("check", "--json", "--facts", str(path), env={**BASE_ENV, "PATH": SYSTEM_PATH})
    head = ("envdoctor_version", "matrices_checked")  # the document's head, not facts
    observed = {k: v for k, v in json.loads(probed.stdout).items() if k not in head}
    assert {k: v for k, v in json.loads(replayed.stdout)["facts"].items() if k not in head} == observed


@pytest.mark.parametrize("content,message", [
    ("{not json", "not valid JSON"),
    ('{"schema": "envdoctor.facts/99"}', "unknown facts schema"),
    ('{"schema": "envdoctor.facts/1", "nvidia": {"gpus": "many"}}', "facts.nvidia.gpus: expected a list"),
])
def test_bad_facts_file(tmp_path, content, message):
    path = tmp_path / "bad.json"
    path.write_text(content)
    result = run_cli("check", "--facts", str(path), env=BASE_ENV)
    assert result.returncode == 2
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0]


def _replay(tmp_path, facts: dict):
    path = tmp_path / "machine.json"
    path.write_text(json.dumps({"schema": "envdoctor.facts/1", **facts}))
    result = run_cli("check", "--json", "--facts", str(path), env=BASE_ENV)
    return result.returncode, json.loads(result.stdout)


def test_nvml_unknown_error_is_a_driver_that_does_not_answer(tmp_path):
    code, report = _replay(tmp_path, {"nvidia": {"failure": "nvml-unknown-error",
                                                 "failure_text": "Failed to initialize NVML: Unknown Error"}})
    [finding] = [f for f in report["findings"] if f["code"] == "no-nvidia-driver"]
    assert "Unknown Error" in finding["title"] and code == 1


def test_gpu_on_the_bus_without_driver_and_with_nouveau(tmp_path):
    code, report = _replay(tmp_path, {
        "nvidia": {"pci_devices": [{"address": "0000:01:00.0", "device_id": "0x2684", "driver": "nouveau"}],
                   "nouveau_loaded": True},
        "cuda_toolkit": {"version": "12.4", "root": "/usr/local/cuda-12.4"}})
    [finding] = [f for f in report["findings"] if f["code"] == "no-nvidia-driver"]
    assert "nouveau" in finding["detail"] and "nvidia.nouveau_loaded=true" in finding["evidence"]
    assert not codes(report) & {"toolkit-without-driver", "no-gpu-platform"}  # the GPU is there
    assert code == 1


def test_no_gpu_is_information_not_an_error(tmp_path):
    _, report = _replay(tmp_path, {"host": {"os": "linux", "arch": "x86_64"}, "nvidia": {"gpus": []}})
    assert [(f["code"], f["severity"]) for f in report["findings"] if f["section"] == "nvidia"] == [("no-gpu-platform", "info")]
    _, report = _replay(tmp_path, {"host": {"os": "linux", "arch": "x86_64"}})  # GPUs not recorded: unknown
    assert [f["code"] for f in report["findings"] if f["section"] == "nvidia"] == []


@pytest.mark.parametrize("command", ["check", "facts"])
def test_a_python_path_that_is_not_there_exits_2_with_one_line(command, tmp_path):
    result = run_cli(command, "--python", str(tmp_path / "bin" / "python"), env=BASE_ENV)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr == f"envdoctor: error: cannot run target interpreter {tmp_path / 'bin' / 'python'}: no such file\n"


def test_facts_and_python_together_are_a_usage_error():
    result = run_cli("check", "--facts", str(Path(__file__).parent / "fixtures/machines/wsl2.json"), "--python",
                     "/usr/bin/python3", env=BASE_ENV)
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr == "envdoctor: error: --facts and --python name two different targets; give one of them\n"


def test_a_hung_nvidia_smi_is_not_called_no_driver(tmp_path):
    """nvidia-smi timed out: whether a driver is there is unknown, so neither 'no driver' nor 'no GPU'."""
    _, report = _replay(tmp_path, {
        "nvidia": {"driver_kind": "desktop"},
        "cuda_toolkit": {"version": "12.4", "root": "/usr/local/cuda-12.4"},
        "errors": [{"probe": "nvidia-smi", "message": "`nvidia-smi` timed out after 5 s"}]})
    assert not codes(report) & {"toolkit-without-driver", "no-gpu-platform", "no-nvidia-driver"}
    _, report = _replay(tmp_path, {"cuda_toolkit": {"version": "12.4", "root": "/usr/local/cuda-12.4"},
                                   "recorded": ["nvidia", "cuda_toolkit"]})
    assert "toolkit-without-driver" in codes(report)  # the NVIDIA probe ran, found nothing, no error: no driver
    _, report = _replay(tmp_path, {"cuda_toolkit": {"version": "12.4", "root": "/usr/local/cuda-12.4"}})
    assert "toolkit-without-driver" not in codes(report)  # nobody recorded the driver: unknown


def _console_replay(tmp_path, facts: dict) -> str:
    path = tmp_path / "machine.json"
    path.write_text(json.dumps({"schema": "envdoctor.facts/1", **facts}))
    result = run_cli("check", "--facts", str(path), env=BASE_ENV)
    assert result.returncode in (0, 1) and result.stderr == "", result.stderr
    return result.stdout


def test_frameworks_section_lists_every_distribution_deep_inspects(tmp_path):
    out = _console_replay(tmp_path, {
        "python": {"packages": {"tensorflow-macos": "2.16.2", "jax": "0.4.35", "jaxlib": "0.4.35", "numpy": "1.26.4"}},
        "frameworks": {"tensorflow": {"version": "2.16.2"}, "jax": {"version": "0.4.35", "cuda": "12.6", "device_available": True},
                       "paddle": {"version": "3.0.0", "import_error": "killed by signal SIGILL"}}})
    section = out[out.index("Frameworks"):].splitlines()
    assert "    tensorflow-macos 2.16.2 — no CUDA, no GPU visible" in section
    assert "    jax 0.4.35 — CUDA 12.6, GPU available" in section
    assert "    jaxlib 0.4.35" in section  # jax's build is shown once, on jax
    # no package list names Paddle's (CPU or GPU) package: the record's framework is shown by its name
    assert "    paddle 3.0.0 — import failed: killed by signal SIGILL" in section


def test_a_multi_line_failure_text_stays_inside_its_section(tmp_path):
    out = _console_replay(tmp_path, {"nvidia": {
        "failure": "driver-library-mismatch",
        "failure_text": "Failed to initialize NVML: Driver/library version mismatch\nNVML library version: 570.133"}})
    assert "\n    NVML library version: 570.133\n" in out


def test_a_failed_probe_is_not_no_problems_and_fails_strict(tmp_path):
    machine = {"errors": [{"probe": "nvidia-smi", "message": "`nvidia-smi` timed out after 5 s"}]}
    out = _console_replay(tmp_path, machine)
    assert out.rstrip().splitlines()[-1] == "No problems found, but 1 probe error: see the ! lines above."
    path = tmp_path / "machine.json"
    assert run_cli("check", "--facts", str(path), env=BASE_ENV).returncode == 0
    assert run_cli("check", "--strict", "--facts", str(path), env=BASE_ENV).returncode == 1
    path.write_text(json.dumps({"schema": "envdoctor.facts/1"}))
    assert run_cli("check", "--strict", "--facts", str(path), env=BASE_ENV).returncode == 0


def test_fix_commands_on_a_windows_target_are_quoted_for_windows_as_install_prints_them():
    machine = str(Path(__file__).parent / "fixtures/machines/windows-tf.json")
    check = run_cli("check", "--facts", machine, env=BASE_ENV).stdout
    install = run_cli("install", "tensorflow", "--facts", machine, env=BASE_ENV).stdout
    commands = [line.strip() for line in check.splitlines() if line.strip().startswith("$ ")]
    assert commands and all(c in install for c in commands)
    assert "'C:\\Users" not in check  # not POSIX single quotes around a Windows path


def test_amd_gpus_are_shown_not_only_recorded():
    out = run_cli("check", "--facts", str(Path(__file__).parent / "fixtures/machines/amd-mi300.json"), env=BASE_ENV).stdout
    assert "    AMD GPU 0: AMD Instinct MI300X (gfx942)\n" in out and "    ROCm 6.4.1\n" in out


def test_facts_and_deep_together_are_a_usage_error():
    result = run_cli("check", "--deep", "--facts", str(Path(__file__).parent / "fixtures/machines/wsl2.json"), env=BASE_ENV)
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr.startswith("envdoctor: error: --deep imports the frameworks of this machine") and len(result.stderr.splitlines()) == 1


def test_an_error_of_a_probe_whose_section_is_not_shown_is_still_printed(tmp_path):
    out = _console_replay(tmp_path, {"errors": [{"probe": "jetson", "message": "internal error: OSError: boom"}]})
    assert "! jetson: internal error: OSError: boom" in out.split("Python")[0]  # under Platform


def test_verbose_cudnn_header_path_is_not_repeated():
    out = run_cli("check", "-v", "--facts", str(Path(__file__).parent / "fixtures/machines/jetson-orin-jp51.json"), env=BASE_ENV).stdout
    [line] = [l for l in out.splitlines() if l.startswith("    cuDNN ")]
    assert line.count("cudnn_version_v8.h") == 1


def test_a_gpu_bound_to_vfio_pci_is_not_told_to_install_the_driver(tmp_path):
    code, report = _replay(tmp_path, {"nvidia": {"pci_devices": [{"address": "0000:41:00.0", "device_id": "0x2330", "driver": "vfio-pci"}]}})
    [finding] = [f for f in report["findings"] if f["code"] == "no-nvidia-driver"]
    assert "vfio-pci" in finding["detail"] and "inside that VM" in finding["fix"][0] and code == 1


def test_a_jetson_without_nvidia_smi_is_not_told_no_driver_is_loaded(tmp_path):
    """JetPack 5 ships no nvidia-smi; the kernel module answers with the L4T version."""
    out = _console_replay(tmp_path, {"nvidia": {"driver_kind": "jetson", "kernel_module": "35.3.1"},
                                     "jetson": {"l4t": "35.3.1", "jetpack": "5.1.1", "soc": "tegra234"}})
    assert "Jetson integrated driver loaded (L4T 35.3.1)" in out and "no NVIDIA driver loaded" not in out


def test_verbose_report_says_how_recent_the_knowledge_is():
    from envdoctor.render import matrices_checked

    machine = Path(__file__).parent / "fixtures" / "machines" / "diag-rtx5090-deep-old.json"
    result = run_cli("check", "-v", "--facts", str(machine), env={**BASE_ENV, "PATH": SYSTEM_PATH})
    assert result.returncode == 1
    assert f"compatibility data checked up to {matrices_checked()}" in result.stdout
    quiet = run_cli("check", "--facts", str(machine), env={**BASE_ENV, "PATH": SYSTEM_PATH})
    assert "compatibility data checked" not in quiet.stdout
