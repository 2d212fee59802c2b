"""NVIDIA probe: parsers on verbatim outputs, NVML child process, sysfs/PCI trees, fake nvidia-smi."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from envdoctor.probe import nvidia
from probe_helpers import FAKEBIN, SYSTEM_PATH, context, link, put, raw

# --- nvidia-smi header (every verbatim layout) --------------------------------------------------

HEADERS = [
    # fixture, driver, CUDA, NVIDIA-SMI build, [(index, name, bus id)]
    ("classic_r580_gtx960.txt", "580.82.09", "13.0", "580.82.09", [(0, "NVIDIA GeForce GTX 960", "00000000:03:00.0")]),
    ("old_r450_titanxp.txt", "450.57", "11.0", "450.57", [(0, "TITAN Xp", "00000000:17:00.0")]),
    ("r610_kmd_rtx3080.txt", "610.43.03", "13.3", "610.43.03", [(0, "NVIDIA GeForce RTX 3080 ...", "00000000:01:00.0")]),
    ("jetson_orin_jp621.txt", "540.4.0", "12.6", "540.4.0", [(0, "Orin (nvgpu)", None)]),
    ("wsl2_r555.txt", "555.99", "12.5", "555.52.01", [(0, "NVIDIA GeForce RTX 4070 ...", "00000000:01:00.0")]),
    ("multi_gpu_r580_2xa100.txt", "580.159.04", "13.0", "580.159.04",
     [(0, "NVIDIA A100-SXM4-80GB", "00000000:81:00.0"), (1, "NVIDIA A100-SXM4-80GB", "00000000:C1:00.0")]),
]


@pytest.mark.parametrize("fixture,driver,cuda,smi,gpus", HEADERS)
def test_header_layouts(fixture, driver, cuda, smi, gpus):
    header = nvidia.parse_smi_header(raw(f"nvidia-smi/{fixture}"))
    assert (header.driver_version, header.cuda_version, header.smi_version) == (driver, cuda, smi)
    assert [(g.index, g.name, g.pci_bus_id) for g in header.gpus] == gpus


def test_header_cuda_err_and_na_are_unknown():
    # WSL prints "CUDA Version: ERR!", Jetson in a Nix build "CUDA Version: N/A" (nvidia_jetson.md 3.3)
    text = raw("nvidia-smi/wsl2_r555.txt").replace("CUDA Version: 12.5", "CUDA Version: ERR!")
    assert nvidia.parse_smi_header(text).cuda_version is None
    assert nvidia.parse_smi_header(text).driver_version == "555.99"


@pytest.mark.parametrize("fixture", ["error_no_driver_communication.txt", "error_driver_library_mismatch.txt",
                                     "error_nvml_unknown.txt", "error_compute_cap_field.txt"])
def test_error_texts_have_no_header(fixture):
    assert nvidia.parse_smi_header(raw(f"nvidia-smi/{fixture}")).driver_version is None


# --- failure texts ----------------------------------------------------------------------------------

@pytest.mark.parametrize("fixture,code", [
    ("error_no_driver_communication.txt", "no-driver-communication"),
    ("error_driver_library_mismatch.txt", "driver-library-mismatch"),
    ("error_nvml_unknown.txt", "nvml-unknown-error"),
])
def test_known_failures(fixture, code):
    text = raw(f"nvidia-smi/{fixture}")
    assert nvidia.classify_failure(text) == (code, text.strip())


@pytest.mark.parametrize("fixture", ["classic_r580_gtx960.txt", "jetson_orin_jp621.txt", "error_compute_cap_field.txt"])
def test_normal_output_is_no_failure(fixture):
    assert nvidia.classify_failure(raw(f"nvidia-smi/{fixture}")) is None


def test_unknown_field_message():
    m = nvidia.UNKNOWN_FIELD.search(raw("nvidia-smi/error_compute_cap_field.txt"))
    assert m and m.group(1) == "compute_cap"


# --- CSV query ----------------------------------------------------------------------------------------

def test_query_csv_with_header_line():
    fields = ("compute_cap", "compute_mode", "driver_version", "name", "index")
    rows = nvidia.parse_query_csv(raw("nvidia-smi/query_triton_2gpu.csv"), fields)
    assert rows == [
        {"compute_cap": "7.0", "compute_mode": "Default", "driver_version": "570.86.15", "name": "NVIDIA TITAN V", "index": "0"},
        {"compute_cap": "8.9", "compute_mode": "Default", "driver_version": "570.86.15",
         "name": "NVIDIA RTX 5880 Ada Generation", "index": "1"},
    ]


def test_query_csv_seven_gpus():
    rows = nvidia.parse_query_csv(raw("nvidia-smi/query_b300_7gpu.csv"), ("driver_version", "name", "compute_cap"))
    assert len(rows) == 7
    assert {(r["driver_version"], r["name"], r["compute_cap"]) for r in rows} == {("610.57.04", "NVIDIA B300 SXM6 AC", "10.3")}


def test_query_csv_single_field():
    assert nvidia.parse_query_csv(raw("nvidia-smi/query_compute_cap_snap.csv"), ("compute_cap",)) == [{"compute_cap": "8.9"}]


def test_query_csv_not_available_values_and_garbage():
    rows = nvidia.parse_query_csv("0, Orin (nvgpu), [N/A], [Not Supported]\n", ("index", "name", "compute_cap", "memory.total"))
    assert rows == [{"index": "0", "name": "Orin (nvgpu)", "compute_cap": None, "memory.total": None}]
    with pytest.raises(ValueError):
        nvidia.parse_query_csv(raw("nvidia-smi/classic_r580_gtx960.txt"), nvidia.QUERY_FIELDS)


def test_memory_units():
    assert nvidia.memory_mib("24576 MiB") == 24576
    assert nvidia.memory_mib("81920") == 81920
    assert nvidia.memory_mib(None) is None


# --- /proc/driver/nvidia/version ------------------------------------------------------------------

@pytest.mark.parametrize("fixture,version", [
    ("driver_nvidia_version_open_565.txt", "565.57.01"),
    ("driver_nvidia_version_375.txt", "375.74"),
    ("driver_nvidia_version_515.txt", "515.76"),
    ("driver_nvidia_version_jetson_jp511.txt", "35.3.1"),  # on Jetson: the L4T version
])
def test_proc_driver_version(fixture, version):
    assert nvidia.parse_proc_driver_version(raw(f"proc/{fixture}")) == version


def test_cuda_from_nvml_integer():
    assert nvidia.cuda_from_int(12040) == "12.4"
    assert nvidia.cuda_from_int(13000) == "13.0"
    assert nvidia.cuda_from_int(11040) == "11.4"
    assert nvidia.cuda_from_int(0) is None


# --- NVML in a child process ------------------------------------------------------------------------

def test_nvml_worker_runs_here_and_finds_no_library(tmp_path):
    """This machine has no libnvidia-ml: the real worker says so, and that is not a failure."""
    ctx = context(tmp_path)
    seen = nvidia.nvml(ctx)
    assert seen.failure is None and seen.driver_version is None
    assert ctx.errors == []


def test_nvml_child_that_segfaults_is_recorded(tmp_path):
    crash = put(tmp_path, "/crash.py", "import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)\n")
    ctx = context(tmp_path)
    seen = nvidia.nvml(ctx, worker=crash)
    assert seen.driver_version is None
    assert [(e.probe, e.message) for e in ctx.errors] == [("nvml", "the NVML query killed by signal SIGSEGV")]


def test_nvml_child_that_hangs_is_killed(tmp_path):
    hang = put(tmp_path, "/hang.py", "import time\ntime.sleep(60)\n")
    ctx = context(tmp_path, timeout=0.5)
    nvidia.nvml(ctx, worker=hang)
    assert [e.message for e in ctx.errors] == ["the NVML query timed out after 0.5 s (a hung driver?)"]


def test_nvml_answer_with_gpus(tmp_path):
    ctx = context(tmp_path)
    seen = nvidia.nvml_seen(ctx, {"driver_version": "570.124.04", "cuda_driver_version": 12080, "errors": [],
                                  "gpus": [{"index": 0, "name": "NVIDIA GeForce RTX 5090", "compute_capability": "12.0",
                                            "memory_total_mib": 32607, "uuid": "GPU-x", "pci_bus_id": "00000000:01:00.0"}]})
    assert (seen.driver_version, seen.cuda) == ("570.124.04", "12.8")
    assert seen.gpus[0].compute_capability == "12.0" and seen.gpus[0].memory_total_mib == 32607


@pytest.mark.parametrize("kind,error,code", [
    ("NVMLError_LibRmVersionMismatch", "RM has detected an NVML/RM version mismatch.", "driver-library-mismatch"),
    ("NVMLError_DriverNotLoaded", "Driver Not Loaded", "no-driver-communication"),
    ("NVMLError_Unknown", "Unknown Error", "nvml-unknown-error"),
])
def test_nvml_failures(tmp_path, kind, error, code):
    seen = nvidia.nvml_seen(context(tmp_path), {"error": error, "kind": kind})
    assert seen.failure == (code, f"NVML: {error}")


def test_nvml_library_missing_is_silent(tmp_path):
    ctx = context(tmp_path)
    seen = nvidia.nvml_seen(ctx, {"error": "NVML Shared Library Not Found", "kind": "NVMLError_LibraryNotFound"})
    assert seen.failure is None and not seen.ran and ctx.errors == []


def test_nvml_only_where_a_driver_can_be(tmp_path):
    assert not nvidia.nvml_wanted(context(tmp_path))
    put(tmp_path, "/dev/nvidiactl")
    assert nvidia.nvml_wanted(context(tmp_path, ENVDOCTOR_NVML=""))
    assert not nvidia.nvml_wanted(context(tmp_path, ENVDOCTOR_NVML="0"))


# --- sysfs / PCI / kind -------------------------------------------------------------------------------

def _pci(root, address, vendor, klass, device, driver=None):
    base = f"/sys/bus/pci/devices/{address}"
    put(root, f"{base}/vendor", vendor + "\n")
    put(root, f"{base}/class", klass + "\n")
    put(root, f"{base}/device", device + "\n")
    if driver:
        link(root, f"{base}/driver", f"../../../bus/pci/drivers/{driver}")


def test_gpu_on_pci_bus_without_driver(tmp_path):
    _pci(tmp_path, "0000:01:00.0", "0x10de", "0x030000", "0x2684")  # RTX 4090, nothing bound
    _pci(tmp_path, "0000:01:00.1", "0x10de", "0x040300", "0x22ba", "snd_hda_intel")  # its audio function
    _pci(tmp_path, "0000:00:02.0", "0x8086", "0x030000", "0x46a6", "i915")
    nv = nvidia.probe(context(tmp_path))
    assert nv is not None and nv.driver_version is None
    assert [(d.address, d.device_id, d.driver) for d in nv.pci_devices] == [("0000:01:00.0", "0x2684", None)]


def test_gpu_bound_to_nouveau(tmp_path):
    _pci(tmp_path, "0000:2b:00.0", "0x10de", "0x030200", "0x1eb8", "nouveau")
    put(tmp_path, "/proc/modules", "nouveau 2367488 1 - Live 0x0000000000000000\nvideo 65536 1 nouveau, Live 0x0\n")
    nv = nvidia.probe(context(tmp_path))
    assert nv.pci_devices[0].driver == "nouveau" and nv.nouveau_loaded


def test_kernel_module_without_nvidia_smi(tmp_path):
    put(tmp_path, "/sys/module/nvidia/version", "550.144.03\n")
    put(tmp_path, "/proc/driver/nvidia/version", raw("proc/driver_nvidia_version_open_565.txt"))
    nv = nvidia.probe(context(tmp_path))
    assert (nv.driver_version, nv.source, nv.kernel_module, nv.driver_cuda) == ("550.144.03", "sysfs", "550.144.03", None)


def test_nothing_nvidia_is_none(tmp_path):
    _pci(tmp_path, "0000:00:02.0", "0x8086", "0x030000", "0x46a6", "i915")
    assert nvidia.probe(context(tmp_path)) is None


def test_driver_kind(tmp_path):
    assert nvidia.driver_kind(context(tmp_path)) == "desktop"
    put(tmp_path, "/proc/version", "Linux version 5.15.153.1-microsoft-standard-WSL2 (root@941d701f84f1) (gcc (GCC) 12.2.0)\n")
    assert nvidia.driver_kind(context(tmp_path)) == "wsl"
    put(tmp_path, "/etc/nv_tegra_release", raw("nv_tegra_release/jp62_orin_nx.txt"))
    assert nvidia.driver_kind(context(tmp_path)) == "jetson"


# --- the whole probe with fake nvidia-smi ---------------------------------------------------------------

def _with_fake(tmp_path, scenario, **env):
    return context(tmp_path, path=f"{FAKEBIN / scenario}:{SYSTEM_PATH}", **env)


def test_probe_classic(tmp_path):
    ctx = _with_fake(tmp_path, "classic")
    nv = nvidia.probe(ctx)
    assert (nv.driver_version, nv.driver_cuda, nv.source, nv.driver_kind) == ("580.82.09", "13.0", "nvidia-smi", "desktop")
    g = nv.gpus[0]
    assert (g.index, g.name, g.compute_capability, g.memory_total_mib, g.pci_bus_id) == (
        0, "NVIDIA GeForce GTX 960", "5.2", 2048, "00000000:03:00.0")
    assert ctx.errors == []


def test_probe_old_driver_retries_without_compute_cap(tmp_path):
    ctx = _with_fake(tmp_path, "old-driver")
    nv = nvidia.probe(ctx)
    assert nv.driver_version == "450.57" and nv.gpus[0].name == "TITAN Xp"
    assert nv.gpus[0].memory_total_mib == 12196 and nv.gpus[0].compute_capability is None
    assert ctx.errors == []


def test_probe_wsl_finds_nvidia_smi_off_path(tmp_path):
    put(tmp_path, "/proc/version", "Linux version 5.15.153.1-microsoft-standard-WSL2 (root@941d701f84f1)\n")
    put(tmp_path, "/usr/lib/wsl/lib/nvidia-smi", (FAKEBIN / "wsl2" / "nvidia-smi").read_text()
        .replace('raw="$(dirname "$0")/../../fixtures/raw/nvidia-smi"', f'raw="{FAKEBIN.parent / "fixtures/raw/nvidia-smi"}"'),
        mode=0o755)
    nv = nvidia.probe(context(tmp_path))  # PATH has no nvidia-smi
    assert (nv.driver_version, nv.driver_kind, nv.driver_cuda) == ("555.99", "wsl", "12.5")


def test_probe_jetson_compute_capability_from_soc(tmp_path):
    put(tmp_path, "/etc/nv_tegra_release", raw("nv_tegra_release/jp62_orin_nx.txt"))
    put(tmp_path, "/proc/device-tree/compatible", (FAKEBIN.parent / "fixtures/raw/device-tree/agx_orin_compatible").read_bytes())
    put(tmp_path, "/proc/driver/nvidia/version", raw("proc/driver_nvidia_version_jetson_jp511.txt"))
    nv = nvidia.probe(_with_fake(tmp_path, "jetson"))
    assert (nv.driver_version, nv.driver_kind) == ("540.4.0", "jetson")
    assert nv.gpus[0].name == "Orin (nvgpu)" and nv.gpus[0].compute_capability == "8.7"
    assert nv.kernel_module == "35.3.1"  # the L4T number, kept apart from the driver version


@pytest.mark.parametrize("scenario,failure", [("no-driver", "no-driver-communication"), ("mismatch", "driver-library-mismatch")])
def test_probe_failures(tmp_path, scenario, failure):
    ctx = _with_fake(tmp_path, scenario)
    nv = nvidia.probe(ctx)
    assert nv.failure == failure and nv.driver_version is None
    assert ctx.errors == []  # a recognised failure is a fact, not a probe error


def test_probe_hang_times_out(tmp_path):
    ctx = _with_fake(tmp_path, "hang", timeout=0.5)
    nv = nvidia.probe(ctx)
    assert nv is not None and nv.driver_version is None
    assert sorted(e.message for e in ctx.errors) == ["`nvidia-smi --query-gpu` timed out after 0.5 s",
                                                    "`nvidia-smi` timed out after 0.5 s"]


def test_probe_garbage(tmp_path):
    ctx = _with_fake(tmp_path, "garbage")
    nv = nvidia.probe(ctx)
    assert nv.driver_version is None and nv.gpus == []
    assert len(ctx.errors) == 2 and all(e.probe == "nvidia-smi" for e in ctx.errors)


@pytest.mark.skipif(sys.platform != "linux", reason="sysfs")
def test_real_machine_probe_does_not_raise():
    from envdoctor.probe import ProbeContext

    ctx = ProbeContext(python=sys.executable)
    nvidia.probe(ctx)
    assert all(e.probe in ("nvidia-smi", "nvml") for e in ctx.errors)


def test_nvml_worker_logic_with_a_stand_in_library(monkeypatch):
    """The worker's use of the nvidia-ml-py API (libnvidia-ml itself cannot run on a machine without a GPU)."""
    import types

    sys.path.insert(0, str(nvidia.WORKER.parent))
    try:
        import nvml_worker
    finally:
        sys.path.pop(0)

    class NVMLError(Exception):
        pass

    class GpuIsLost(NVMLError):
        def __str__(self):
            return "GPU is lost"

    fake = types.SimpleNamespace(
        NVMLError=NVMLError,
        nvmlInit=lambda: None, nvmlShutdown=lambda: None,
        nvmlSystemGetDriverVersion=lambda: b"570.124.04",  # old bindings return bytes
        nvmlSystemGetCudaDriverVersion=lambda: 12080,
        nvmlDeviceGetCount=lambda: 2,
        nvmlDeviceGetHandleByIndex=lambda i: i,
        nvmlDeviceGetName=lambda h: "NVIDIA GeForce RTX 5090",
        nvmlDeviceGetCudaComputeCapability=lambda h: (12, 0),
        nvmlDeviceGetMemoryInfo=lambda h: types.SimpleNamespace(total=32607 * 1024 * 1024),
        nvmlDeviceGetUUID=lambda h: f"GPU-{h}",
        nvmlDeviceGetPciInfo=lambda h: (_ for _ in ()).throw(GpuIsLost()) if h == 1 else types.SimpleNamespace(busId="00000000:01:00.0"),
    )
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    out = nvml_worker.main()
    assert out["driver_version"] == "570.124.04" and out["cuda_driver_version"] == 12080
    assert out["gpus"][0] == {"index": 0, "name": "NVIDIA GeForce RTX 5090", "compute_capability": "12.0",
                              "memory_total_mib": 32607, "uuid": "GPU-0", "pci_bus_id": "00000000:01:00.0"}
    assert "pci_bus_id" not in out["gpus"][1] and out["errors"] == ["GPU 1 pci_bus_id: GPU is lost"]
    seen = nvidia.nvml_seen(context(Path("/nonexistent")), out)
    assert [g.memory_total_mib for g in seen.gpus] == [32607, 32607] and seen.cuda == "12.8"


def test_mismatch_keeps_the_loaded_module_version(tmp_path):
    """After an upgrade without reboot the old module still answers /sys; the failure stays."""
    put(tmp_path, "/sys/module/nvidia/version", "570.133.07\n")
    nv = nvidia.probe(_with_fake(tmp_path, "mismatch"))
    assert (nv.driver_version, nv.source, nv.failure) == ("570.133.07", "sysfs", "driver-library-mismatch")
