import json

import pytest

from envdoctor.facts import Facts, FactsError, Gpu, Nvidia, load_facts


def test_round_trip_keeps_every_value():
    facts = Facts(nvidia=Nvidia(driver_version="570.124.04", driver_cuda="12.8",
                                gpus=[Gpu(index=0, name="NVIDIA GeForce RTX 5090", compute_capability="12.0")]))
    again = Facts.from_dict(json.loads(facts.to_json()))
    assert again == facts


def test_design_example_loads():
    """The example document of DESIGN.md is a valid facts file."""
    doc = {
        "schema": "envdoctor.facts/1", "collected_at": "2026-11-29T14:00:00Z",
        "host": {"os": "linux", "distro": "Ubuntu 24.04", "kernel": "6.8.0-45-generic", "arch": "x86_64",
                 "glibc": "2.39", "wsl": False, "container": None},
        "python": {"executable": "/home/u/venv/bin/python", "version": "3.12.3", "implementation": "cpython",
                   "env_kind": "venv", "env_path": "/home/u/venv",
                   "packages": {"torch": "2.6.0+cu124", "nvidia-cudnn-cu12": "9.1.0.70"}},
        "nvidia": {"driver_version": "570.124.04", "driver_cuda": "12.8", "source": "nvml",
                   "gpus": [{"index": 0, "name": "NVIDIA GeForce RTX 5090", "compute_capability": "12.0",
                             "memory_total_mib": 32607}]},
        "cuda_toolkit": {"version": "12.4", "nvcc": "/usr/local/cuda/bin/nvcc", "root": "/usr/local/cuda"},
        "cudnn": [{"version": "9.1.0", "source": "pip:nvidia-cudnn-cu12"}],
        "jetson": None,
        "frameworks": {"torch": {"version": "2.6.0+cu124", "cuda": "12.4", "cudnn": "9.1.0",
                                 "arch_list": ["sm_50", "sm_90"], "device_available": True, "import_error": None}},
        "env": {"CUDA_VISIBLE_DEVICES": None},
        "errors": [{"probe": "nvidia-smi", "message": "timed out after 5 s"}],
    }
    facts = Facts.from_dict(doc)
    assert facts.gpus[0].compute_capability == "12.0"
    assert facts.frameworks["torch"].arch_list == ["sm_50", "sm_90"]
    assert facts.errors[0].message == "timed out after 5 s"


@pytest.mark.parametrize("doc, message", [
    ([], "must be a JSON object"),
    ({"schema": "envdoctor.facts/9"}, "unknown facts schema"),
    ({"schema": "envdoctor.facts/1", "nvidia": {"gpus": [{"index": "zero"}]}}, "nvidia.gpus[0].index"),
    ({"schema": "envdoctor.facts/1", "host": {"wsl": "yes"}}, "host.wsl"),
    ({"schema": "envdoctor.facts/1", "python": {"packages": ["torch"]}}, "python.packages"),
    ({"schema": "envdoctor.facts/1", "nvidia": {"gpus": [{"index": 0, "compute_capability": "garbage"}]}},
     "compute_capability: 'garbage' is not a version like '12.0'"),
    ({"schema": "envdoctor.facts/1", "nvidia": {"driver_version": "abc"}}, "driver_version: 'abc' is not a version"),
    ({"schema": None}, "no facts schema"),
    ({"schema": 5}, "unknown facts schema 5"),
])
def test_bad_documents_name_the_problem(doc, message):
    with pytest.raises(FactsError, match=message.replace("[", r"\[").replace("]", r"\]")):
        Facts.from_dict(doc)


def test_load_facts_reports_bad_json_with_line(tmp_path):
    path = tmp_path / "m.json"
    path.write_text('{"schema": "envdoctor.facts/1",\n "host": }')
    with pytest.raises(FactsError, match="not valid JSON.*line 2"):
        load_facts(path)


def test_load_facts_accepts_a_whole_report(tmp_path):
    path = tmp_path / "report.json"
    path.write_text(json.dumps({"schema": "envdoctor.report/1", "facts": Facts().to_dict(), "findings": []}))
    assert load_facts(path) == Facts()


@pytest.mark.parametrize("content, message", [
    ('{"schema": null}', "no facts schema"),
    ('{"schema": 7}', "unknown facts schema 7"),
    ('{"schema": "envdoctor.report/1", "findings": []}', 'has no "facts"'),
])
def test_load_facts_odd_schema_values_are_facts_errors(tmp_path, content, message):
    path = tmp_path / "m.json"
    path.write_text(content)
    with pytest.raises(FactsError, match=message):
        load_facts(path)
