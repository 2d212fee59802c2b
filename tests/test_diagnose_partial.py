"""Partial facts, judged honestly: a finding names the facts that decided it (a whole list when it
concluded from something NOT in it), and the partial-facts benchmark counts an error against the
rules only while those facts remain."""

import json
import subprocess
import sys

import pytest

from conftest import ROOT
from envdoctor.complete import complete
from envdoctor.diagnose import diagnose
from envdoctor.facts import Facts

GPU = {"driver_version": "570.124.04", "gpus": [{"index": 0, "name": "NVIDIA GeForce RTX 4090", "compute_capability": "8.9"}]}


def probed(packages):
    """A document as the probe writes it: its lists name everything there is."""
    return {"schema": "envdoctor.facts/1", "collected_at": "2026-12-01T10:00:00Z",
            "recorded": ["host", "python", "nvidia", "cuda_toolkit", "cudnn", "env"],
            "host": {"os": "linux", "arch": "x86_64"}, "python": {"version": "3.12.3", "packages": packages},
            "nvidia": GPU, "cudnn": [], "cuda_toolkits": [], "env": {}}


def cpu_only(doc):
    return [f for f in diagnose(complete(Facts.from_dict(doc))) if f.code == "cpu-only-build"]


def test_a_conclusion_from_a_missing_package_names_the_whole_list():
    (finding,) = cpu_only(probed({"jax": "0.4.35", "jaxlib": "0.4.35"}))
    assert "python.packages=2 packages listed" in finding.evidence


def test_the_same_package_in_a_hand_written_file_decides_nothing():
    doc = probed({"jax": "0.4.35", "jaxlib": "0.4.35"})
    for key in ("collected_at", "recorded"):
        doc.pop(key)
    assert cpu_only(doc) == []  # the plugin may be installed and simply not written down


def test_a_platform_default_build_names_the_platform_it_was_read_for():
    doc = probed({"tensorflow": "2.20.0"})
    doc["host"]["arch"] = "aarch64"
    doc["nvidia"]["gpus"][0].update(name="NVIDIA GH200 480GB", compute_capability="9.0")
    (finding,) = cpu_only(doc)
    assert "host.arch=aarch64" in finding.evidence


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_partial_benchmark_finds_the_decidable_errors_without_false_alarms(seed):
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "diagnosis_accuracy.py"), "--partial",
                           "--seed", str(seed), "--json"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    report = json.loads(proc.stdout)
    assert report["new_false_alarms"] == 0
    # the measure: of the errors whose evidence facts all survived, the share found (never inflated by
    # codes found from other facts, which share_of_decidable counts as decidable)
    assert report["evidence_kept"] > 0 and report["share_with_evidence_kept"] >= 0.9
    assert report["found_with_evidence_kept"] + report["found_without_evidence_kept"] == report["found"]
    assert report["decidable"] == report["evidence_kept"] + report["found_without_evidence_kept"]
    assert report["share_of_decidable"] >= report["share_with_evidence_kept"] - 1e-9  # the upper bound it is


def driver_findings(nvidia, packages):
    doc = {"schema": "envdoctor.facts/1", "host": {"os": "linux", "arch": "x86_64"},
           "python": {"packages": packages}, "nvidia": nvidia}
    return [f for f in diagnose(complete(Facts.from_dict(doc))) if f.code == "driver-too-old"]


def test_driver_too_old_from_the_cuda_version_nvidia_smi_prints_when_the_driver_is_unknown():
    """torch 2.13.0's default Linux build is CUDA 13.0 (pytorch.toml), whose wheels need a 580 driver, a branch
    that supports CUDA 13.0 (drivers.toml); a driver that supports at most CUDA 12.8 is older than that."""
    from envdoctor.diagnose import knowledge

    minimum = knowledge.wheel_min_driver("13.0", "linux")
    assert knowledge.driver_branch_cuda(str(minimum)) == "13.0"
    (finding,) = driver_findings({"driver_cuda": "12.8", "gpus": [{"name": "NVIDIA L4"}]}, {"torch": "2.13.0"})
    assert "nvidia.driver_cuda=12.8" in finding.evidence
    assert finding.title.endswith("this machine has a driver for CUDA ≤ 12.8 (nvidia-smi's \"CUDA Version\")")


def test_no_driver_alarm_where_minor_version_compatibility_covers_the_build_or_nothing_is_known():
    gpu = [{"name": "NVIDIA L4"}]
    assert driver_findings({"driver_cuda": "12.2", "gpus": gpu}, {"torch": "2.6.0+cu124"}) == []  # same major
    assert driver_findings({"driver_cuda": "13.0", "gpus": gpu}, {"torch": "2.13.0"}) == []
    assert driver_findings({"gpus": gpu}, {"torch": "2.13.0"}) == []  # neither the driver nor its CUDA
