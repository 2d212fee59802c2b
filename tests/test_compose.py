"""`envdoctor compose`: GPU access, device selection, shared memory and each service's build, on
compose files that trigger each finding and close ones that do not (the real CLI in a subprocess)."""

from __future__ import annotations

import json

import pytest

from conftest import FIXTURES, judge_build_file, run_cli
from envdoctor.container.compose import shm_bytes

COMPOSE = FIXTURES / "dockerfiles" / "compose"
ENV = {"NO_COLOR": "1", "COLUMNS": "200"}


def judge(path, *args):
    return judge_build_file("compose", path, *args)


def found(document) -> set[tuple]:
    return {(f.get("service"), f["code"], f["severity"]) for f in document["findings"] if f["severity"] != "info"}


def test_gpu_build_without_gpu_request_or_shared_memory():
    document = judge(COMPOSE / "gpu-missing")  # a folder: its compose.yaml
    assert found(document) == {("train", "container-gpu-missing", "error"), ("train", "shm-too-small", "warning"),
                               ("train", "cpu-only-build", "error")}  # the service's Dockerfile, judged as in `dockerfile`
    build_finding = next(f for f in document["findings"] if f["code"] == "cpu-only-build")
    assert build_finding["file"].endswith("gpu-missing/Dockerfile") and build_finding["line"] == 4
    service_finding = next(f for f in document["findings"] if f["code"] == "container-gpu-missing")
    assert service_finding["file"].endswith("compose.yaml") and service_finding["line"] == 3
    assert "capabilities: [gpu]" in service_finding["corrected"]
    assert [s["name"] for s in document["services"]] == ["train", "redis"]


def test_close_case_gpu_reserved_and_shm_given():
    document = judge(COMPOSE / "gpu-ok" / "compose.yaml")
    assert not found(document)
    assert document["services"][0]["gpu"] == "deploy"


def test_deprecated_runtime_nvidia():
    document = judge(COMPOSE / "runtime-nvidia" / "compose.yaml")
    assert found(document) == {("notebook", "container-gpu-missing", "warning")}  # ipc: host: no shm finding
    finding = document["findings"][0]
    assert finding["line"] == 5 and "deploy:" in finding["corrected"]


def test_device_selection_inside_the_container():
    document = judge(COMPOSE / "visible" / "compose.yaml")
    assert found(document) == {("host-index", "cuda-visible-devices", "error"),
                               ("void", "container-gpu-missing", "error")}
    renumber = next(f for f in document["findings"] if f.get("service") == "host-index")
    assert renumber["corrected"] == 'CUDA_VISIBLE_DEVICES: "0"'  # one GPU given: it is device 0 inside
    assert not [f for f in document["findings"] if f.get("service") == "renumbered"]


def test_real_compose_file():
    # thr3a/docker-build-station: device_ids ['1'], ipc: host; its image's base is not in the matrix
    document = judge(COMPOSE / "real-thr3a" / "compose.yml")
    assert not found(document)
    assert document["services"][0]["gpu"] == "deploy"
    assert document["builds"]["app"]["not_read"]  # `uv sync`: packages from a lock file not read


def test_console_output():
    result = run_cli("compose", str(COMPOSE / "gpu-missing" / "compose.yaml"), env=ENV)
    assert result.returncode == 1
    assert "[train] line 3: service train runs GPU code but asks for no GPU [container-gpu-missing]" in result.stdout


@pytest.mark.parametrize("name", ["invalid.yaml", "list-services.yaml", "wrong-type.yaml", "unknown-key.yaml",
                                  "no-capabilities.yaml", "unknown-service-key.yaml"])
def test_bad_compose_files_are_one_line_and_exit_2(name):
    result = run_cli("compose", str(COMPOSE / "bad" / name), env=ENV)
    assert result.returncode == 2
    assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr


def test_missing_compose_file_is_exit_2(tmp_path):
    result = run_cli("compose", str(tmp_path), env=ENV)
    assert result.returncode == 2 and "no compose file" in result.stderr


@pytest.mark.parametrize("value,expected", [("64m", 64 * 1024 ** 2), ("8gb", 8 * 1024 ** 3), (1024, 1024), ("2G", 2 * 1024 ** 3),
                                            ("lots", None), (None, None)])
def test_shm_sizes(value, expected):
    assert shm_bytes(value) == expected


# --- the Compose specification's JSON schema (vendored), and the structural checks without jsonschema ----

def test_the_spec_schema_refuses_what_docker_compose_refuses():
    pytest.importorskip("jsonschema")
    result = run_cli("compose", str(COMPOSE / "bad" / "no-capabilities.yaml"), env=ENV)
    assert result.returncode == 2
    assert ("services.no-capabilities.deploy.resources.reservations.devices[0] (line 10): "
            "'capabilities' is a required property") in result.stderr
    typo = run_cli("compose", str(COMPOSE / "bad" / "unknown-service-key.yaml"), env=ENV)
    assert typo.returncode == 2 and "services.train (line 3)" in typo.stderr and "'gpu'" in typo.stderr
    assert judge(COMPOSE / "gpu-ok" / "compose.yaml")["spec_check"].startswith("the Compose specification's JSON schema")


def test_the_vendored_schema_names_its_source():
    import tomllib

    from envdoctor.container.compose import SPEC_SCHEMA

    schema = json.loads(SPEC_SCHEMA.read_text(encoding="utf-8"))
    assert schema["title"] == "Compose Specification" and "services" in schema["properties"]
    source = tomllib.loads((SPEC_SCHEMA.parent / "compose-spec.source.toml").read_text(encoding="utf-8"))
    assert source["file"] == SPEC_SCHEMA.name and "compose-spec/compose-spec" in source["source"]
    assert "Apache" in source["license"] and source["checked"]


def test_yaml_values_beyond_json_and_aliases_are_validated(tmp_path):
    pytest.importorskip("jsonschema")
    # an unquoted date label, an integer key under x-, and one anchor reused by many services
    lines = ["x-gpu: &gpu", "  image: nvidia/cuda:12.4.1-base-ubuntu22.04", "  labels:", "    built: 2024-05-01",
             "  gpus: all", "x-map:", "  1: one", "services:"] + [f"  s{i}: *gpu" for i in range(300)]
    (tmp_path / "compose.yaml").write_text("\n".join(lines) + "\n")
    document = judge(tmp_path / "compose.yaml")
    assert len(document["services"]) == 300


def test_without_the_schema_a_request_lacking_capabilities_is_a_finding():
    # the structural fallback (no jsonschema): the device request is judged instead of refused
    from envdoctor.container.compose import Service, service_findings

    body = {"image": "nvidia/cuda:12.4.1-base-ubuntu22.04",
            "deploy": {"resources": {"reservations": {"devices": [{"driver": "nvidia", "count": 1}]}}}}
    found_here = [located.finding for located in service_findings(Service("train", body, 3), None, None)]
    assert [(f.code, f.severity) for f in found_here] == [("container-gpu-missing", "error")]


def test_aliases_expanding_past_the_bound_are_not_validated_and_the_document_says_so(tmp_path):
    pytest.importorskip("jsonschema")
    from envdoctor.container.compose import MAX_SPEC_VALUES

    lines = ['x-a: &a ["x","x","x","x","x","x","x","x","x"]']
    for prev, cur in zip("abcde", "bcdef"):
        lines.append(f"x-{cur}: &{cur} [{','.join(['*' + prev] * 9)}]")  # 9**6 strings once expanded
    lines += ["services:", "  a:", "    image: python:3.12", "    labels: {k: v}"]
    (tmp_path / "compose.yaml").write_text("\n".join(lines) + "\n")
    document = judge(tmp_path / "compose.yaml")
    assert f"over {MAX_SPEC_VALUES:,} values" in document["spec_check"]
    text = run_cli("compose", str(tmp_path / "compose.yaml"), env=ENV)
    assert "checked: the top-level keys and the service keys envdoctor judges only" in text.stdout
