"""envdoctor.smoke without frameworks: the data file, the runner's reading of a check's output, and
the judgement of results against recorded machines (tests/fixtures/machines/)."""

import json
import sys
import textwrap
import time

import pytest

from conftest import FIXTURES
from envdoctor import proc
from envdoctor.facts import load_facts
from envdoctor.smoke import evaluate
from envdoctor.smoke.catalog import FrameworkSpec, catalog
from envdoctor.smoke.results import SmokeResult, document, exit_code
from envdoctor.smoke.runner import CheckRun, interpret, run_check
from envdoctor.smoke.suite import SmokeRequest, make_plan

# What torch_checks.py --check devices printed with torch 2.13.0+cpu on the 2-core dev box (2026-11-29).
TORCH_CPU_DEVICES = json.loads('{"status": "pass", "device": "cpu", "details": {"version": "2.13.0+cpu", '
                               '"cuda_build": null, "gpus": [], "gpu_count": 0, "cpu_threads": 2, '
                               '"import_seconds": 1.738}, "reason": null}')


def machine(name):
    return load_facts(FIXTURES / "machines" / f"{name}.json")


def devices_result(recorded, **details):
    return SmokeResult("torch", "devices", recorded["status"], device=recorded["device"],
                       details=dict(recorded["details"], **details), reason=recorded["reason"])


def never():
    raise AssertionError("diagnose must not run here")


@pytest.fixture
def harness():
    """checks/_harness.py, the stdlib module the check scripts import in the target interpreter."""
    sys.path.insert(0, str(catalog().frameworks[0].script.parent))
    try:
        import _harness
    finally:
        sys.path.pop(0)
    return _harness


# --- the data file -------------------------------------------------------------------------------

def test_catalog_names_every_framework_with_an_existing_script():
    cat = catalog()
    assert cat.checks == ("devices", "cnn", "oom", "repro", "amp", "multi")
    assert [f.name for f in cat.frameworks] == ["torch", "tensorflow", "jax", "paddle"]
    for spec in cat.frameworks:
        assert spec.script.is_file()
        assert spec.install == f"envdoctor install {spec.name}"
    assert cat.framework("PyTorch").name == "torch" and cat.framework("tf").name == "tensorflow"
    assert cat.framework("paddlepaddle").name == "paddle" and cat.framework("mxnet") is None


@pytest.mark.parametrize("text, code", [
    # Error lines as the frameworks print them (the texts issue 4 lists as known signatures).
    ("RuntimeError: CUDA error: no kernel image is available for execution on the device", "gpu-arch-unsupported"),
    ("NVIDIA GeForce RTX 5090 with CUDA capability sm_120 is not compatible with the current PyTorch installation.",
     "gpu-arch-unsupported"),
    ("RuntimeError: The NVIDIA driver on your system is too old (found version 11040).", "driver-too-old"),
    ("AssertionError: Torch not compiled with CUDA enabled", "cpu-only-build"),
    ("W tensorflow/core/common_runtime/gpu/gpu_device.cc:2256] Cannot dlopen some GPU libraries. Please make sure "
     "the missing libraries mentioned above are installed properly", "cuda-libs-missing"),
    ("E external/local_xla/xla/stream_executor/cuda/cuda_dnn.cc:535] Loaded runtime CuDNN library: 8.6.0 but source "
     "was compiled with: 8.9.4.", "cudnn-mismatch"),
    ("RuntimeError: jaxlib version 0.4.30 is newer than and incompatible with jax version 0.4.26. Please update your jax",
     "jax-version-skew"),
    ("A module that was compiled using NumPy 1.x cannot be run in\nNumPy 2.0.0 as it may crash.", "numpy-abi-mismatch"),
    ("ImportError: /lib64/libc.so.6: version `GLIBC_2.28' not found", "glibc-too-old"),
])
def test_failure_rows_name_the_code_for_real_error_texts(text, code):
    facts = machine("diag-clean-rtx4090")
    spec = catalog().framework("torch")
    failed = SmokeResult("torch", "cnn", "fail", device="cuda:0", reason=text.splitlines()[0],
                         details={"output_tail": text})
    assert evaluate.explain_failure(failed, spec, catalog(), facts, {}, never).code == code


# --- devices against NVML ------------------------------------------------------------------------

def test_cpu_build_on_a_gpu_machine_fails_devices_with_cpu_only_build():
    facts = machine("diag-torch-cpu-gpu")  # RTX 4090 with torch 2.6.0+cpu
    result = evaluate.compare_devices(devices_result(TORCH_CPU_DEVICES), facts, "auto")
    assert result.status == "fail"
    assert result.reason == "torch sees 0 of the 1 GPU(s) NVML lists (NVIDIA GeForce RTX 4090)"
    explained = evaluate.explain_failure(result, catalog().framework("torch"), catalog(), facts, {}, never)
    assert explained.code == "cpu-only-build"
    assert explained.reason.endswith(": the installed build has no CUDA support")


def test_hidden_gpus_fail_devices_with_cuda_visible_devices():
    facts = machine("diag-cvd-empty")
    recorded = devices_result(TORCH_CPU_DEVICES, cuda_build="12.4", version="2.6.0+cu124")
    result = evaluate.compare_devices(recorded, facts, "auto")
    explained = evaluate.explain_failure(result, catalog().framework("torch"), catalog(), facts,
                                         {"CUDA_VISIBLE_DEVICES": ""}, never)
    assert (explained.status, explained.code) == ("fail", "cuda-visible-devices")


def test_gpus_selected_on_purpose_with_cuda_visible_devices_are_not_a_failure():
    facts = machine("a100-current")  # two A100s
    one = devices_result(TORCH_CPU_DEVICES, cuda_build="12.8", gpu_count=1, gpus=[{"name": "NVIDIA A100-SXM4-80GB"}])
    result = evaluate.compare_devices(one, facts, "auto", {"CUDA_VISIBLE_DEVICES": "1"})
    assert result.status == "pass"
    assert result.details["note"] == "CUDA_VISIBLE_DEVICES=1 selects 1 of the 2 GPU(s)"
    # Without the variable the same view is a GPU missing.
    assert evaluate.compare_devices(one, facts, "auto", {}).status == "fail"


def test_devices_passes_when_the_framework_sees_every_gpu_or_the_run_is_cpu():
    facts = machine("diag-torch-cpu-gpu")
    assert evaluate.compare_devices(devices_result(TORCH_CPU_DEVICES), facts, "cpu").status == "pass"
    assert evaluate.compare_devices(devices_result(TORCH_CPU_DEVICES), machine("cpu-only"), "auto").status == "pass"
    seen = devices_result(TORCH_CPU_DEVICES, gpu_count=1, gpus=[{"name": "NVIDIA GeForce RTX 4090"}])
    result = evaluate.compare_devices(seen, facts, "auto")
    assert result.status == "pass" and result.details["nvml_gpus"] == ["NVIDIA GeForce RTX 4090"]


def test_unmatched_gpu_failure_takes_the_code_from_the_diagnosis_of_the_machine():
    facts = machine("diag-gtx1080-cu128")  # torch 2.8.0+cu128 on a GTX 1080 (sm_61): no kernels
    cat = catalog()
    failure = SmokeResult("torch", "cnn", "fail", device="cuda:0", reason="RuntimeError: CUDA error: unspecified launch failure")
    diagnosis = evaluate_diagnosis(facts)
    assert evaluate.explain_failure(failure, cat.framework("torch"), cat, facts, {}, diagnosis).code == "gpu-arch-unsupported"
    # The same finding is about torch: it does not explain a TensorFlow failure.
    tf_failure = failure.with_(framework="tensorflow")
    assert evaluate.explain_failure(tf_failure, cat.framework("tensorflow"), cat, facts, {}, diagnosis).code is None
    # A CPU failure (a loss that does not fall) is not blamed on the GPU.
    cpu_failure = failure.with_(device="cpu", reason="loss did not fall: first 2.3000, last 2.3100")
    assert evaluate.explain_failure(cpu_failure, cat.framework("torch"), cat, facts, {}, never).code is None


def evaluate_diagnosis(facts):
    from envdoctor.diagnose import diagnose

    return lambda: diagnose(facts)


# --- what runs where -----------------------------------------------------------------------------

def test_oom_is_skipped_without_a_gpu_and_on_jetson_and_bounded_to_one_device():
    assert evaluate.pre_skip("oom", "auto", machine("cpu-only")) == evaluate.NO_GPU_OOM
    assert "shares host memory" in evaluate.pre_skip("oom", "auto", machine("jetson-orin-jp62"))
    assert evaluate.pre_skip("oom", "cpu", machine("a100-current")).startswith("--device cpu")
    assert evaluate.pre_skip("oom", "auto", machine("a100-current")) is None
    assert evaluate.pre_skip("cnn", "auto", machine("cpu-only")) is None
    assert evaluate.oom_env({})["CUDA_VISIBLE_DEVICES"] == "0"
    assert evaluate.oom_env({"CUDA_VISIBLE_DEVICES": "3, 1"})["CUDA_VISIBLE_DEVICES"] == "3"


def test_plan_lists_installed_frameworks_check_by_check():
    facts = machine("diag-clean-rtx4090")
    plan = make_plan(SmokeRequest(frameworks=("torch", "jax"), checks=("cnn", "repro")), facts)
    rows = [(r.framework, r.check, r.state) for r in plan.rows]
    assert rows[:2] == [("torch", "cnn", "pending"), ("torch", "repro", "pending")]
    assert rows[2] == ("jax", "all", "done")
    assert "envdoctor install jax" in plan.rows[2].result.reason


# --- the runner on real subprocesses -------------------------------------------------------------

def script_spec(tmp_path, body):
    script = tmp_path / "fake_checks.py"
    script.write_text(textwrap.dedent(body))
    return FrameworkSpec("fake", (), script, ("fake",), "envdoctor install fake")


def test_a_check_that_prints_no_result_is_an_error(tmp_path):
    spec = script_spec(tmp_path, """
        import sys
        print("#envdoctor phase=imported")
        print("some chatter")
        sys.stderr.write("Traceback...\\nRuntimeError: boom\\n")
        sys.exit(3)
    """)
    result = run_check(CheckRun(spec, "cnn", sys.executable, timeout=30))
    assert result.status == "error"
    assert result.reason == "exited with status 3: Traceback... without printing a result during the check"
    assert "RuntimeError: boom" in result.details["output_tail"]


def test_the_last_json_line_is_the_result_even_after_framework_output(tmp_path):
    spec = script_spec(tmp_path, """
        print('{"not": "a result"}')
        print('{"status": "fail", "device": "cpu", "details": {"loss_first": 2.3}, "reason": "loss did not fall"}')
    """)
    result = run_check(CheckRun(spec, "cnn", sys.executable, timeout=30))
    assert (result.status, result.device, result.reason) == ("fail", "cpu", "loss did not fall")
    assert result.details["loss_first"] == 2.3


def test_interpreter_that_cannot_start_is_an_error(tmp_path):
    spec = script_spec(tmp_path, "")
    job = CheckRun(spec, "cnn", str(tmp_path / "no-python"), timeout=5)
    result = interpret(job, proc.run(job.argv(), timeout=5), 0.0)
    assert result.status == "error" and "not found" in result.reason


def test_exit_code_and_document():
    ok = SmokeResult("torch", "cnn", "pass", device="cpu", seconds=1.23456)
    skipped = SmokeResult("torch", "oom", "skip", reason="no GPU")
    failed = SmokeResult("torch", "repro", "fail", reason="differ")
    assert exit_code([ok, skipped]) == 0
    assert exit_code([ok, failed]) == 1
    assert exit_code([SmokeResult("torch", "oom", "skip")]) == 1  # a skip must state its reason
    doc = document([ok])
    assert doc == {"schema": "envdoctor.smoke/1", "results": [
        {"framework": "torch", "check": "cnn", "device": "cpu", "status": "pass", "seconds": 1.235,
         "details": {}, "reason": None, "code": None, "fix": None}]}


def test_devices_failure_is_explained_by_what_the_framework_printed():
    """TensorFlow GPU build that cannot load CUDA: it sees no GPU and says why on stderr."""
    facts = machine("diag-clean-rtx4090")
    # As TensorFlow 2.15 logs it when the CUDA libraries are missing (the text issue 4 lists).
    stderr = ("2026-11-29 10:00:00.000000: W tensorflow/core/common_runtime/gpu/gpu_device.cc:2256] Cannot dlopen "
              "some GPU libraries. Please make sure the missing libraries mentioned above are installed properly if "
              "you would like to use GPU.\nSkipping registering GPU devices...")
    recorded = SmokeResult("tensorflow", "devices", "pass", device="cpu", output=stderr,
                           details={"version": "2.15.1", "cuda_build": True, "gpus": [], "gpu_count": 0})
    result = evaluate.compare_devices(recorded, facts, "auto")
    assert result.status == "fail" and "Cannot dlopen" in result.details["output_tail"]
    explained = evaluate.explain_failure(result, catalog().framework("tensorflow"), catalog(), facts, {}, never)
    assert explained.code == "cuda-libs-missing"
    assert "output" not in explained.to_dict()


def test_fill_until_oom_gets_close_to_the_limit_and_stops(harness):
    """The allocation loop the GPU OOM checks share, against an allocator with a 100 MiB budget."""
    _harness = harness
    budget = {"left": 100 << 20}

    def alloc(n):
        if n > budget["left"]:
            raise MemoryError(f"out of memory: tried to allocate {n} bytes")
        budget["left"] -= n
        return n

    blocks, reached, error = _harness.fill_until_oom(alloc, lambda e: isinstance(e, MemoryError), 32 << 20, 10,
                                                     min_chunk=1 << 20)
    assert (100 << 20) - reached < 1 << 20  # within the smallest block of the limit
    assert sum(blocks) == reached
    assert error == "MemoryError: out of memory: tried to allocate 33554432 bytes"
    # An error that is not an out-of-memory error is not swallowed.
    with pytest.raises(ValueError):
        _harness.fill_until_oom(lambda n: (_ for _ in ()).throw(ValueError("bad")), lambda e: False, 1, 10)


def budgeted_allocator(budget_bytes):
    """Blocks (their sizes) out of a fixed budget; settle() gives everything back, as an allocator cache does."""
    state = {"left": budget_bytes}

    def alloc(n):
        if n > state["left"]:
            raise MemoryError(f"out of memory: tried to allocate {n} bytes")
        state["left"] -= n
        return n

    def settle():
        state["left"] = budget_bytes

    return state, alloc, settle


def test_oom_round_trip_reports_the_reach_and_the_recovery(harness):
    state, alloc, settle = budgeted_allocator(100 << 20)
    ctx = harness.Context("fake", "auto", 10, oom_seconds=10)
    memory = lambda: {"free_mib": state["left"] >> 20}
    details = harness.oom_round_trip(ctx, alloc, lambda e: isinstance(e, MemoryError), 32 << 20, memory,
                                     ones_sum=lambda n: float(n), settle=settle, total=100 << 20)
    assert details["total_mib"] == 100 and details["reached_mib"] == 96  # 3 × 32 MiB; 32 MiB is below min_chunk
    assert details["reached_fraction"] == 0.96
    assert details["at_oom"] == {"free_mib": 4} and details["after_release"] == {"free_mib": 100}
    assert details["error"].startswith("MemoryError: out of memory")


def test_oom_round_trip_fails_without_an_oom_or_when_memory_stays_broken(harness):
    ctx = harness.Context("fake", "auto", 10, oom_seconds=0.2)
    with pytest.raises(harness.Fail, match=r"no out-of-memory error within 0.2 s"):
        harness.oom_round_trip(ctx, lambda n: n, lambda e: True, 1, dict, ones_sum=float)
    state, alloc, settle = budgeted_allocator(8 << 20)
    with pytest.raises(harness.Fail, match="allocation after the out-of-memory error gave a wrong result"):
        harness.oom_round_trip(ctx, alloc, lambda e: isinstance(e, MemoryError), 4 << 20, dict,
                               ones_sum=lambda n: 0.0, settle=settle)


def test_oom_is_skipped_on_the_cpu_by_every_check_script(harness):
    with pytest.raises(harness.Skip, match="^--device cpu: an out-of-memory round trip"):
        harness.Context("fake", "cpu", 10).skip_oom_without_gpu(1)
    with pytest.raises(harness.Skip, match="^no GPU: an out-of-memory round trip"):
        harness.Context("fake", "auto", 10).skip_oom_without_gpu(0)
    harness.Context("fake", "cuda", 10).skip_oom_without_gpu(1)  # a GPU: runs


def test_repro_details_fail_only_when_the_deterministic_runs_differ(harness):
    same = (([2.3, 2.1], "abc"), ([2.3, 2.1], "abc"))
    differ = (([2.3, 2.1], "abc"), ([2.3, 2.1], "abd"))  # equal losses, one parameter bit apart
    details = harness.repro_details(5, differ, same, "seeded")
    assert (details["deterministic_identical"], details["defaults_identical"]) == (True, False)
    with pytest.raises(harness.Fail, match="two seeded runs with deterministic settings differ"):
        harness.repro_details(5, same, differ, "seeded")


def test_a_worker_that_dies_fails_multi_at_once(harness):
    """run_workers with a target that raises in the child (sys.exit takes one argument, not three)."""
    start = time.monotonic()
    with pytest.raises(harness.Fail, match=r"a worker process exited with status \[1, 1\] before reporting"):
        harness.run_workers(sys.exit, 2, timeout=60)
    assert time.monotonic() - start < 30  # not the reporting timeout


def test_multi_summary_claims_only_what_the_check_compared():
    from envdoctor.render.smoke import summary

    ddp = {"backend": "gloo", "world_size": 2, "max_diff_vs_single_process": 0.0}
    paddle = {"backend": "nccl", "world_size": 2, "replicas_in_sync": True}
    assert summary(SmokeResult("torch", "multi", "pass", details=ddp)).endswith("matches the single-device step")
    assert summary(SmokeResult("paddle", "multi", "pass", details=paddle)) == (
        "nccl × 2, one data-parallel step leaves the replicas in sync")


def test_a_failure_summary_names_its_code_and_fix_once():
    from envdoctor.render.smoke import summary

    failed = SmokeResult("torch", "cnn", "error", reason="import torch failed: libcudnn.so.9", code="cuda-libs-missing",
                         fix="Install the CUDA libraries this build needs (its pip extras): `envdoctor install torch`")
    assert summary(failed) == ("import torch failed: libcudnn.so.9 [cuda-libs-missing] — fix: Install the CUDA "
                               "libraries this build needs (its pip extras): `envdoctor install torch`")
    missing = SmokeResult("jax", "all", "fail", reason="jax is not installed; install it with `envdoctor install jax`",
                          fix="envdoctor install jax")
    assert summary(missing) == "jax is not installed; install it with `envdoctor install jax`"


def test_every_failure_row_of_smoke_toml_has_a_fix():
    assert all(rule.fix for rule in catalog().failures)
