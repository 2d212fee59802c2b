"""The checks of one framework share one process; a crash or hang loses only the check it happened in.

Real subprocesses of this interpreter run check scripts built on the real checks/_harness.py; the
check functions crash (SIGSEGV), hang or pass on purpose. One test builds a real venv with torch and
without numpy (torch does not need numpy, so smoke must not either).
"""

import json
import subprocess
import sys
import textwrap

import pytest

from conftest import FIXTURES, run_cli
from envdoctor.facts import load_facts
from envdoctor.smoke.catalog import CHECKS_DIR, FrameworkSpec
from envdoctor.smoke.runner import CheckRun, run_batch
from envdoctor.smoke.suite import SmokeRequest, make_plan, run_plan

SCRIPT = """
import os, signal, sys, time
sys.path.insert(0, {checks_dir!r})
import _harness as h

def passing(ctx):
    ctx.load("json")  # the "framework": marks the import phase as the real checks do
    return {{"pid": os.getpid()}}

def crashing(ctx):
    ctx.load("json")
    os.kill(os.getpid(), signal.SIGSEGV)

def hanging(ctx):
    ctx.load("json")
    time.sleep(600)

CHECKS = {{"devices": passing, "cnn": {cnn}, "oom": passing, "repro": {repro}, "amp": passing, "multi": passing}}
h.main("fake", CHECKS)
"""


def spec_for(tmp_path, cnn="passing", repro="passing"):
    script = tmp_path / "fake_checks.py"
    script.write_text(SCRIPT.format(checks_dir=str(CHECKS_DIR), cnn=cnn, repro=repro))
    return FrameworkSpec("fake", (), script, ("fake",), "envdoctor install fake")


def machine():
    return load_facts(FIXTURES / "machines" / "diag-clean-rtx4090.json")


def run_suite(spec, checks, timeout=60.0):
    """The suite over a hand-made plan for the fake framework (on the GPU machine's facts: oom is not pre-skipped)."""
    facts = machine()
    request = SmokeRequest(checks=checks, timeout=timeout)
    plan = make_plan(SmokeRequest(frameworks=("torch",), checks=checks), facts)
    for row in plan.rows:
        row.framework = spec.name
    plan.specs = {spec.name: spec}
    return {r.check: r for r in run_plan(plan, request, facts, sys.executable, environ={})}


def test_the_checks_of_a_framework_run_in_one_process(tmp_path):
    spec = spec_for(tmp_path)
    job = CheckRun(spec, "devices", sys.executable, timeout=60)
    started = []
    results = run_batch(job, ["devices", "cnn", "repro"], started.append)
    assert [(r.check, r.status) for r in results] == [("devices", "pass"), ("cnn", "pass"), ("repro", "pass")]
    assert len({r.details["pid"] for r in results}) == 1
    assert started == ["devices", "cnn", "repro"]


def test_a_crash_loses_only_its_check_and_the_rest_run_in_a_fresh_process(tmp_path):
    results = run_suite(spec_for(tmp_path, repro="crashing"), ("cnn", "repro", "amp", "multi"))
    assert results["repro"].status == "error"
    assert results["repro"].reason == "killed by signal SIGSEGV during the check"
    assert [results[c].status for c in ("cnn", "amp", "multi")] == ["pass"] * 3
    before, after = results["cnn"].details["pid"], results["amp"].details["pid"]
    assert before != after  # the checks after the crash moved to a new process ...
    assert after == results["multi"].details["pid"]  # ... and share it


def test_a_hang_is_stopped_by_its_own_timeout_and_the_rest_still_run(tmp_path):
    results = run_suite(spec_for(tmp_path, repro="hanging"), ("cnn", "repro", "amp"), timeout=4.0)
    assert results["repro"].status == "error"
    assert results["repro"].reason == "timed out after 4 s during the check"
    assert [results[c].status for c in ("cnn", "amp")] == ["pass"] * 2
    assert results["amp"].details["pid"] != results["cnn"].details["pid"]


def test_oom_runs_in_a_process_of_its_own(tmp_path):
    results = run_suite(spec_for(tmp_path), ("cnn", "oom", "amp"))
    assert [results[c].status for c in ("cnn", "oom", "amp")] == ["pass"] * 3
    assert results["cnn"].details["pid"] == results["amp"].details["pid"] != results["oom"].details["pid"]


@pytest.fixture(scope="module")
def bare_python(tmp_path_factory):
    where = tmp_path_factory.mktemp("bare") / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(where)], check=True, timeout=120)
    return str(where / "bin" / "python")


def test_a_named_framework_that_is_not_installed_is_a_failure_with_its_fix(bare_python):
    proc = run_cli("smoke", "jax", "--python", bare_python, "--json")
    assert proc.returncode == 1
    (result,) = json.loads(proc.stdout)["results"]
    assert (result["framework"], result["check"], result["status"]) == ("jax", "all", "fail")
    assert result["fix"] == "envdoctor install jax"
    # Looking at every known framework, a missing one is a skip, not a failure.
    assert run_cli("smoke", "--python", bare_python, "--json").returncode == 0


# --- torch without numpy, in a real venv -----------------------------------------------------------

@pytest.fixture(scope="module")
def torch_without_numpy(tmp_path_factory):
    """A venv with torch and its own dependencies only (numpy is not one of them)."""
    found = subprocess.run([sys.executable, "-c", "import torch; print(torch.__version__.split('+')[0])"],
                           capture_output=True, text=True, timeout=120)
    if found.returncode != 0:
        pytest.skip("torch is not installed in this interpreter")
    where = tmp_path_factory.mktemp("nonumpy") / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(where)], check=True, timeout=120)
    python = str(where / "bin" / "python")
    install = subprocess.run([python, "-m", "pip", "install", "-q", f"torch=={found.stdout.strip()}"],
                             capture_output=True, text=True, timeout=600)
    if install.returncode != 0:
        pytest.skip("torch could not be installed into a fresh venv here: " + install.stderr.strip()[-200:])
    assert subprocess.run([python, "-c", "import numpy"], capture_output=True, timeout=120).returncode != 0
    return python


@pytest.mark.slow
def test_torch_without_numpy_passes_every_check(torch_without_numpy):
    proc = run_cli("smoke", "torch", "--python", torch_without_numpy, "--json", timeout=600)
    results = {r["check"]: r for r in json.loads(proc.stdout)["results"]}
    assert proc.returncode == 0, results
    assert [results[c]["status"] for c in ("devices", "cnn", "repro", "amp", "multi")] == ["pass"] * 5
    assert not any("numpy" in (r["reason"] or "").lower() for r in results.values())


@pytest.mark.slow
def test_a_missing_optional_dependency_of_the_framework_is_named_with_its_install(torch_without_numpy, tmp_path):
    """A check that needs what torch itself only optionally uses (tensor.numpy()) says so, and how to fix it."""
    script = tmp_path / "numpy_checks.py"
    script.write_text(textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(CHECKS_DIR)!r})
        import _harness as h

        def cnn(ctx):
            torch = ctx.load("torch")
            return {{"values": torch.zeros(2).numpy().tolist()}}

        h.main("torch", {{"cnn": cnn}})
    """))
    spec = FrameworkSpec("torch", (), script, ("torch",), "envdoctor install torch")
    from envdoctor.probe import collect

    facts = collect(python=torch_without_numpy)[0]  # the real target: torch, and no numpy
    plan = make_plan(SmokeRequest(frameworks=("torch",), checks=("cnn",)), facts)
    plan.specs = {"torch": spec}
    (result,) = run_plan(plan, SmokeRequest(checks=("cnn",)), facts, torch_without_numpy, environ={})
    assert result.status == "fail"
    assert result.reason.startswith("torch needs the optional module 'numpy' here, which is not installed")
    assert result.fix == f"{torch_without_numpy} -m pip install numpy"
