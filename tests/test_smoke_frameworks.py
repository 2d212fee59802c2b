"""`envdoctor smoke` for real, on the CPU, with the CPU builds of requirements-frameworks.txt.

One `envdoctor smoke --json` run (module-scoped) is shared by every assertion: each framework's
checks run once. A framework that the target interpreter (this one) lacks is skipped, not failed.
"""

import json
import subprocess
import sys

import pytest

from conftest import run_cli

MODULES = {"torch": "torch", "tensorflow": "tensorflow", "jax": "jax", "paddle": "paddle"}

pytestmark = pytest.mark.slow


def installed_in_target(module):
    probe = f"import importlib.util, sys; sys.exit(0 if importlib.util.find_spec({module!r}) else 1)"
    return subprocess.run([sys.executable, "-c", probe], timeout=60).returncode == 0


INSTALLED = [name for name, module in MODULES.items() if installed_in_target(module)]


@pytest.fixture(scope="module")
def run():
    if not INSTALLED:
        pytest.skip("no framework installed in the target interpreter (pip install -r requirements-frameworks.txt)")
    proc = run_cli("smoke", *INSTALLED, "--python", sys.executable, "--json", timeout=900)
    return proc, json.loads(proc.stdout)


def result(run, framework, check):
    if framework not in INSTALLED:
        pytest.skip(f"{framework} is not installed in {sys.executable}")
    matches = [r for r in run[1]["results"] if r["framework"] == framework and r["check"] == check]
    assert len(matches) == 1, run[1]
    return matches[0]


FRAMEWORKS = pytest.mark.parametrize("framework", list(MODULES))


def test_every_check_passed_or_was_skipped_for_a_reason(run):
    proc, doc = run
    bad = [(r["framework"], r["check"], r["reason"]) for r in doc["results"] if r["status"] in ("fail", "error")]
    assert bad == []
    assert proc.returncode == 0
    assert doc["schema"] == "envdoctor.smoke/1"
    assert all(r["reason"] for r in doc["results"] if r["status"] == "skip")


@FRAMEWORKS
def test_devices_sees_the_cpu_and_agrees_with_nvml(run, framework):
    r = result(run, framework, "devices")
    assert r["status"] == "pass", r
    assert r["details"]["gpu_count"] == 0 and r["details"]["gpus"] == []
    assert r["details"]["nvml_gpus"] == []  # no GPU on this machine, and the framework sees none
    assert r["details"]["cuda_build"] is False or r["details"]["cuda_build"] is None


@FRAMEWORKS
def test_cnn_trains_loss_finite_and_falling(run, framework):
    r = result(run, framework, "cnn")
    assert r["status"] == "pass", r
    d = r["details"]
    assert r["device"] == "cpu"
    assert d["steps"] == 10 and d["batch"] == 64
    assert d["loss_last"] < d["loss_first"]
    assert d["step_ms"] > 0


@FRAMEWORKS
def test_oom_is_skipped_on_the_cpu_without_starting_anything(run, framework):
    r = result(run, framework, "oom")
    assert r["status"] == "skip"
    assert r["reason"] == "no GPU: an out-of-memory round trip on the CPU would exhaust host memory"
    assert r["seconds"] == 0


@FRAMEWORKS
def test_repro_is_bit_identical_and_reports_the_defaults(run, framework):
    r = result(run, framework, "repro")
    assert r["status"] == "pass", r
    assert r["details"]["deterministic_identical"] is True
    assert isinstance(r["details"]["defaults_identical"], bool)
    assert len(r["details"]["param_digest"]) == 16


@FRAMEWORKS
def test_amp_runs_a_bfloat16_step_or_says_why_not(run, framework):
    r = result(run, framework, "amp")
    if framework == "paddle":  # Paddle's auto_cast is a no-op on the CPU
        assert r["status"] == "skip" and "auto_cast does nothing on the CPU" in r["reason"]
        return
    assert r["status"] == "pass", r
    assert r["details"]["compute_dtype"] == "bfloat16"
    assert r["details"]["grads_finite"] is True


def test_torch_multi_runs_ddp_over_gloo_with_two_processes(run):
    r = result(run, "torch", "multi")
    assert r["status"] == "pass", r
    d = r["details"]
    assert (d["backend"], d["world_size"], d["replicas_in_sync"]) == ("gloo", 2, True)
    assert d["max_diff_vs_single_process"] < 1e-5
    assert len(d["losses"]) == 2


@pytest.mark.parametrize("framework, what", [("jax", "2 virtual devices"), ("tensorflow", "2 logical devices")])
def test_jax_and_tf_multi_split_the_batch_over_two_cpu_devices(run, framework, what):
    r = result(run, framework, "multi")
    assert r["status"] == "pass", r
    assert r["device"] == f"cpu ({what})"
    assert r["details"]["max_diff_vs_single_device"] < 1e-5


def test_paddle_multi_needs_two_gpus(run):
    r = result(run, "paddle", "multi")
    assert r["status"] == "skip" and "needs two or more GPUs" in r["reason"]


def test_device_cuda_without_a_gpu_fails_with_the_reason():
    if "torch" not in INSTALLED:
        pytest.skip(f"torch is not installed in {sys.executable}")
    proc = run_cli("smoke", "torch", "--checks", "cnn", "--device", "cuda", "--python", sys.executable, "--json")
    (r,) = json.loads(proc.stdout)["results"]
    assert proc.returncode == 1
    assert r["status"] == "fail"
    assert r["reason"] == "--device cuda, but torch sees no CUDA device"
    assert r["details"]["cuda_build"] is None  # the +cpu build, reported for the diagnosis


def test_device_cpu_skips_oom_and_keeps_devices_informational():
    if "jax" not in INSTALLED:
        pytest.skip(f"jax is not installed in {sys.executable}")
    proc = run_cli("smoke", "jax", "--checks", "devices,oom", "--device", "cpu", "--python", sys.executable, "--json")
    devices, oom = json.loads(proc.stdout)["results"]
    assert proc.returncode == 0
    assert devices["status"] == "pass" and devices["details"]["platforms"] == ["cpu"]
    assert oom["status"] == "skip"
    assert oom["reason"] == "--device cpu: an out-of-memory round trip on the CPU would exhaust host memory"


def test_oom_script_refuses_to_fill_host_memory_even_when_asked_directly():
    """The guard inside the check script, behind envdoctor's own pre-skip: no CUDA device, no allocation loop."""
    if "torch" not in INSTALLED:
        pytest.skip(f"torch is not installed in {sys.executable}")
    from envdoctor.smoke.catalog import catalog

    script = str(catalog().framework("torch").script)
    out = subprocess.run([sys.executable, script, "--check", "oom"], capture_output=True, text=True, timeout=120).stdout
    result = json.loads(out.strip().splitlines()[-1])
    assert result["status"] == "skip"
    assert result["reason"] == "no CUDA device: an out-of-memory round trip on the CPU would exhaust host memory"
