"""Container and build rules on partial facts: silent where a deciding fact is unknown, firing where
it is recorded (absent included), and naming every deciding fact as `path=value` the way
Facts.to_dict() spells it, so that the partial-facts benchmark can tell what a finding rested on.

A document "as the probe writes it" keeps `collected_at` and `recorded` (its lists name all there
is); "hand-written" drops both (a missing key is unknown, a list names what someone saw)."""

from __future__ import annotations

import copy
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from envdoctor.complete import complete
from envdoctor.diagnose import diagnose
from envdoctor.facts import BLOCKS, Facts

ROOT = Path(__file__).resolve().parent.parent
MACHINES = ROOT / "tests" / "fixtures" / "machines"
CONTAINER_AND_BUILD = sorted(p.stem for p in MACHINES.glob("*.json") if p.stem.startswith(("container-", "build-")))
CODES = ("container-gpu-missing", "shm-too-small", "driver-too-old", "extension-build-mismatch",
         "build-toolchain-missing", "build-jobs-memory")


def recorded(name: str) -> dict:
    return json.loads((MACHINES / f"{name}.json").read_text())


def hand_written(name: str) -> dict:
    doc = recorded(name)
    for key in ("collected_at", "recorded", "frameworks"):
        doc.pop(key, None)
    return doc


def drop(doc: dict, *paths: str) -> dict:
    doc = copy.deepcopy(doc)
    for path in paths:
        *parents, last = path.split(".")
        node = doc
        for part in parents:
            node = node[part]
        node.pop(last, None)
    return doc


def put(doc: dict, path: str, value) -> dict:
    doc = copy.deepcopy(doc)
    *parents, last = path.split(".")
    node = doc
    for part in parents:
        node = node[part]
    node[last] = value
    return doc


def found(doc: dict, code: str, severity: str = "error") -> list:
    return [f for f in diagnose(complete(Facts.from_dict(doc))) if f.code == code and f.severity == severity]


# --- evidence names real facts ----------------------------------------------------------------------

_PATH = re.compile(rf"^((?:{'|'.join(BLOCKS)})(?:\.[\w\-]+|\[\d+\])*)=(.*)$")


def value_at(data, path: str):
    node = data
    for key, index in re.findall(r"([\w\-]+)|\[(\d+)\]", path):
        if index:
            node = node[int(index)] if isinstance(node, list) and len(node) > int(index) else KeyError
        else:
            node = node.get(key, KeyError) if isinstance(node, dict) else KeyError
        if node is KeyError:
            return KeyError
    return node


def spelled(value) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, list):
        return ",".join(map(str, value)) or "[]"
    return str(value)


@pytest.mark.parametrize("name", CONTAINER_AND_BUILD)
def test_every_path_a_finding_names_is_a_fact_with_that_value(name):
    facts = complete(Facts.from_dict(recorded(name)))
    data = facts.to_dict()
    for finding in diagnose(facts):
        if finding.code not in CODES:
            continue
        paths = [m.groups() for m in map(_PATH.match, finding.evidence) if m]
        assert paths, (finding.code, finding.evidence)
        for path, text in paths:
            value = value_at(data, path)
            assert value is not KeyError, f"{finding.code}: {path} is no fact path"
            assert spelled(value) == text, f"{finding.code}: {path}={text} but the fact is {spelled(value)}"


# --- container-gpu-missing without device nodes -------------------------------------------------------

def test_no_device_nodes_recorded_as_none_fires_in_a_hand_written_file():
    (finding,) = found(hand_written("container-docker-no-gpus"), "container-gpu-missing")
    assert {"container.in_container=true", "container.device_nodes=[]",
            "python.packages.torch=2.6.0+cu124"} <= set(finding.evidence)


def test_device_nodes_not_recorded_is_silent():
    assert found(drop(hand_written("container-docker-no-gpus"), "container.device_nodes"), "container-gpu-missing") == []
    assert found(put(hand_written("container-docker-no-gpus"), "container.device_nodes", None), "container-gpu-missing") == []


def test_a_hand_written_node_list_without_a_gpu_node_is_not_all_there_is():
    doc = put(hand_written("container-docker-no-gpus"), "container.device_nodes", ["/dev/nvidia-uvm"])
    assert found(doc, "container-gpu-missing") == []
    probed = put(recorded("container-docker-no-gpus"), "container.device_nodes", ["/dev/nvidia-uvm"])
    assert len(found(probed, "container-gpu-missing")) == 1  # a probe lists every node: no GPU node is there


def test_inside_a_container_from_the_probes_markers_when_in_container_is_unknown():
    doc = drop(hand_written("container-docker-no-gpus"), "container.in_container", "container.runtime",
               "container.detected_by")
    (finding,) = found(doc, "container-gpu-missing")
    assert "host.container=docker" in finding.evidence
    doc = drop(hand_written("container-visible-void"), "container.in_container", "container.detected_by")
    (finding,) = found(doc, "container-gpu-missing")
    assert "container.runtime=docker" in finding.evidence and "container.nvidia_visible_devices=void" in finding.evidence


def test_not_known_to_be_inside_or_recorded_outside_is_silent():
    bare = drop(hand_written("container-docker-no-gpus"), "container.in_container", "container.runtime",
                "container.detected_by", "host.container")
    assert found(bare, "container-gpu-missing") == []
    outside = put(hand_written("container-docker-no-gpus"), "container.in_container", False)
    assert found(outside, "container-gpu-missing") == []


def test_the_gpu_is_wanted_only_on_a_fact_that_says_so():
    doc = put(hand_written("container-docker-no-gpus"), "python.packages", {"torchvision": "0.21.0+cu124"})
    (finding,) = found(doc, "container-gpu-missing")
    assert "python.packages.torchvision=0.21.0+cu124" in finding.evidence
    cpu = put(put(hand_written("container-docker-no-gpus"), "python.packages", {"numpy": "2.1.3"}),
              "container.nvidia_visible_devices", None)
    assert found(cpu, "container-gpu-missing") == []  # nothing known asks for a GPU


# --- container-gpu-missing: libraries -------------------------------------------------------------

def test_driver_libs_recorded_as_none_fires_and_not_recorded_is_silent():
    (finding,) = found(hand_written("container-libs-missing"), "container-gpu-missing")
    assert "container.driver_libs=[]" in finding.evidence and "container.device_nodes[1]=/dev/nvidia0" in finding.evidence
    assert found(drop(hand_written("container-libs-missing"), "container.driver_libs"), "container-gpu-missing") == []


def test_a_hand_written_library_list_does_not_say_libcuda_is_absent():
    nvml_only = ["libnvidia-ml.so.1"]
    doc = put(put(hand_written("container-libs-missing"), "container.driver_libs", nvml_only),
              "container.nvidia_driver_capabilities", "compute,utility")
    assert found(doc, "container-gpu-missing") == []
    probed = put(put(recorded("container-libs-missing"), "container.driver_libs", nvml_only),
                 "container.nvidia_driver_capabilities", "compute,utility")
    assert len(found(probed, "container-gpu-missing")) == 1


def test_capabilities_without_compute_decide_without_the_library_list():
    doc = drop(hand_written("container-caps-utility"), "container.driver_libs")
    (finding,) = found(doc, "container-gpu-missing")
    assert {"container.nvidia_driver_capabilities=utility", "container.runtime=docker"} <= set(finding.evidence)
    assert "NVIDIA_DRIVER_CAPABILITIES does not include `compute`" in finding.detail
    # CDI (podman) injects every library whatever the variable says; an unknown runtime is unknown
    assert found(put(doc, "container.runtime", "podman"), "container-gpu-missing") == []
    assert found(drop(doc, "container.runtime"), "container-gpu-missing") == []
    assert found(drop(doc, "container.nvidia_driver_capabilities"), "container-gpu-missing") == []


def test_nvidia_smi_answering_inside_stands_for_unrecorded_device_nodes():
    doc = drop(hand_written("container-caps-utility"), "container.device_nodes")
    assert doc["nvidia"]["source"] == "nvidia-smi" and doc["nvidia"]["gpus"]
    (finding,) = found(doc, "container-gpu-missing")
    assert {"nvidia.source=nvidia-smi", "nvidia.driver_version=570.124.04"} <= set(finding.evidence)
    assert found(drop(doc, "nvidia.source"), "container-gpu-missing") == []
    probed = put(recorded("container-caps-utility"), "container.device_nodes", [])
    assert not [f for f in found(probed, "container-gpu-missing") if "libcuda" in f.title]  # the list decides


# --- shm-too-small ----------------------------------------------------------------------------------

def test_shm_names_its_size_and_who_needs_it_and_an_unknown_size_is_silent():
    (finding,) = found(hand_written("container-shm-64m"), "shm-too-small", "warning")
    assert "container.shm_bytes=67108864" in finding.evidence
    assert any(e.startswith("python.packages.torch=") for e in finding.evidence)
    assert found(drop(hand_written("container-shm-64m"), "container.shm_bytes"), "shm-too-small", "warning") == []


# --- NVIDIA_REQUIRE_CUDA ------------------------------------------------------------------------------

def without_driver(name: str) -> dict:
    """The driver version unknown: neither recorded nor completed from the loaded kernel module's."""
    return drop(hand_written(name), "nvidia.driver_version", "nvidia.kernel_module")


def test_requirement_with_driver_alternatives_needs_the_driver_version():
    doc = without_driver("container-require-newer")
    assert found(doc, "driver-too-old") == []  # the brand=… alternatives are judged on the driver version


def test_a_cuda_only_requirement_is_decided_from_the_driver_cuda_alone():
    doc = put(without_driver("container-require-newer"), "container.nvidia_require_cuda", "cuda>=12.8")
    (finding,) = found(doc, "driver-too-old")
    assert "nvidia.driver_cuda=12.4" in finding.evidence
    assert not any(e.startswith("nvidia.driver_version=") for e in finding.evidence)
    assert found(drop(doc, "nvidia.driver_cuda"), "driver-too-old") == []


def test_the_requirement_finding_names_the_driver_facts_it_compared():
    (finding,) = found(hand_written("container-require-newer"), "driver-too-old")
    assert {"nvidia.driver_cuda=12.4", "nvidia.driver_version=550.54.15"} <= set(finding.evidence)


# --- podman host ----------------------------------------------------------------------------------

def test_podman_host_only_where_it_is_known_not_to_be_a_container():
    doc = hand_written("container-podman-host-no-cdi")
    assert len(found(doc, "container-gpu-missing", "warning")) == 1
    assert found(drop(doc, "container.in_container"), "container-gpu-missing", "warning") == []
    assert found(drop(doc, "container.cdi_specs"), "container-gpu-missing", "warning") == []


# --- build ----------------------------------------------------------------------------------------

def test_nvcc_mismatch_names_the_nvcc_it_compared_and_torch():
    (finding,) = found(hand_written("build-nvcc-major"), "extension-build-mismatch")
    assert {"build.cuda_home_version=11.8", "python.packages.torch=2.6.0+cu124"} <= set(finding.evidence)
    assert not any(e.startswith("build.nvcc_version=") for e in finding.evidence)  # not what torch compares


def test_the_path_nvcc_decides_only_where_it_is_known_to_be_torchs():
    base = drop(hand_written("build-nvcc-major"), "build.cuda_home_version")
    unknown_home = drop(base, "build.cuda_home", "build.cuda_home_from", "build.nvcc_root")
    assert found(unknown_home, "extension-build-mismatch") == []  # CUDA_HOME could be another toolkit
    (finding,) = found(put(unknown_home, "build.cuda_home_from", "PATH"), "extension-build-mismatch")
    assert {"build.nvcc_version=11.8", "build.cuda_home_from=PATH"} <= set(finding.evidence)
    assert found(drop(base, "python.packages.torch"), "extension-build-mismatch") == []


def test_no_toolkit_only_in_a_probe_recorded_build_block():
    assert len(found(recorded("build-no-toolkit"), "extension-build-mismatch")) == 1
    assert found(hand_written("build-no-toolkit"), "extension-build-mismatch") == []


def test_host_compiler_names_which_compiler_and_the_bound():
    (finding,) = found(hand_written("build-gcc-too-new"), "extension-build-mismatch")
    assert {"build.compilers[1].role=nvcc-host", "build.compilers[1].version=14.2.1"} <= set(finding.evidence)
    assert any(e.startswith(("build.gcc_max=", "build.cuda_home_version=", "build.nvcc_version=")) for e in finding.evidence)


def test_host_compiler_without_its_role_or_version_is_silent_and_gcc_max_alone_decides_too_new():
    doc = hand_written("build-gcc-too-new")
    compilers = doc["build"]["compilers"]
    no_role = put(doc, "build.compilers", [compilers[0], {k: v for k, v in compilers[1].items() if k != "role"}])
    assert found(no_role, "extension-build-mismatch") == []
    no_version = put(doc, "build.compilers", [compilers[0], {k: v for k, v in compilers[1].items() if k != "version"}])
    assert found(no_version, "extension-build-mismatch") == []
    if doc["build"].get("gcc_max") is not None:
        no_cuda = drop(doc, "build.cuda_home_version", "build.nvcc_version")
        (finding,) = found(no_cuda, "extension-build-mismatch")
        assert f"build.gcc_max={doc['build']['gcc_max']}" in finding.evidence


def test_an_unrecorded_max_jobs_is_not_unset():
    name = "build-tools-missing"
    probed = put(recorded(name), "build.max_jobs", None)
    (finding,) = found(probed, "build-jobs-memory", "warning")
    assert "build.max_jobs=null" in finding.evidence
    assert found(drop(hand_written(name), "build.max_jobs"), "build-jobs-memory", "warning") == []


def test_arch_list_names_the_gpu_it_lacks():
    (finding,) = found(hand_written("build-arch-missing"), "extension-build-mismatch")
    assert "nvidia.gpus[0].compute_capability=12.0" in finding.evidence
    assert found(drop(hand_written("build-arch-missing"), "build.torch_cuda_arch_list"), "extension-build-mismatch") == []


# --- the benchmark -----------------------------------------------------------------------------------

@pytest.mark.parametrize("seed", [4, 5, 6, 7, 8, 9, 10])
def test_no_false_alarm_on_half_the_facts_of_any_container_or_build_machine(seed):
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "diagnosis_accuracy.py"), "--partial",
                           "--seed", str(seed), "--json"], check=False, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    report = json.loads(proc.stdout)
    assert report["new_false_alarms"] == 0
    ours = [m for m in report["machines"] if m["file"].startswith(("container-", "build-"))]
    assert ours and all(not m["false_alarms"] for m in ours)
    assert all(set(m["found"]) <= set(m["full_errors"]) for m in ours)
