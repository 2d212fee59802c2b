"""Every command's --json document carries its head (schema, envdoctor_version, matrices_checked) and
validates against the JSON Schema shipped in schemas/, which scripts/gen_schemas.py writes from the models.

The validator is `jsonschema` (a test dependency) where installed, else the small one below, which
knows the keywords gen_schemas.py writes."""

import importlib.util
import json
import re
import subprocess
import sys

import pytest

from envdoctor import __version__
from envdoctor.render import COMMAND_SCHEMAS

from conftest import FIXTURES, ROOT, run_cli

SCHEMAS = ROOT / "schemas"
MACHINE = str(FIXTURES / "machines" / "diag-driver-old.json")
POLICY = str(FIXTURES / "policies" / "gpu-node.toml")
DOCKERFILES = FIXTURES / "dockerfiles"
HOST = str(DOCKERFILES / "hosts" / "driver-570.json")


def schema_for(kind: str) -> dict:
    return json.loads((SCHEMAS / f"{kind}.schema.json").read_text(encoding="utf-8"))


def errors(document, schema) -> list[str]:
    try:
        import jsonschema
    except ImportError:
        return list(_small_validate(document, schema, schema, "$"))
    validator = jsonschema.Draft202012Validator(schema)
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(document)]


def _small_validate(value, schema, root, where):
    if "$ref" in schema:
        target = root
        for part in schema["$ref"].lstrip("#/").split("/"):
            target = target[part]
        yield from _small_validate(value, target, root, where)
        return
    if "anyOf" in schema:
        if not any(not list(_small_validate(value, s, root, where)) for s in schema["anyOf"]):
            yield f"{where}: matches none of anyOf"
        return
    if "const" in schema and value != schema["const"]:
        yield f"{where}: {value!r} is not {schema['const']!r}"
    if "enum" in schema and value not in schema["enum"]:
        yield f"{where}: {value!r} not in {schema['enum']}"
    kinds = {"string": str, "integer": int, "number": (int, float), "boolean": bool, "null": type(None),
             "object": dict, "array": list}
    kind = schema.get("type")
    if kind and (not isinstance(value, kinds[kind]) or (kind in ("integer", "number") and isinstance(value, bool))):
        yield f"{where}: {type(value).__name__} is not {kind}"
        return
    if isinstance(value, str) and "pattern" in schema and not re.search(schema["pattern"], value):
        yield f"{where}: {value!r} does not match {schema['pattern']}"
    if isinstance(value, dict):
        for key in schema.get("required", []):
            if key not in value:
                yield f"{where}: {key!r} is required"
        props, extra = schema.get("properties", {}), schema.get("additionalProperties", True)
        for key, item in value.items():
            if key in props:
                yield from _small_validate(item, props[key], root, f"{where}.{key}")
            elif extra is False:
                yield f"{where}: unexpected {key!r}"
            elif isinstance(extra, dict):
                yield from _small_validate(item, extra, root, f"{where}.{key}")
    if isinstance(value, list) and "items" in schema:
        for i, item in enumerate(value):
            yield from _small_validate(item, schema["items"], root, f"{where}[{i}]")


COMMANDS = {
    "check-recorded": ("check", ["check", "--json", "--facts", MACHINE]),
    "check-this-machine": ("check", ["check", "--json"]),
    "facts": ("facts", ["facts"]),
    "install": ("install", ["install", "pytorch", "--json", "--facts", MACHINE]),
    "install-nothing-fits": ("install", ["install", "pytorch", "--json", "--version", "1.0", "--facts", MACHINE]),
    "matrix": ("matrix", ["matrix", "pytorch", "--json", "--facts", MACHINE]),
    "explain": ("explain", ["explain", "--json", "--facts", MACHINE,
                            "RuntimeError: The NVIDIA driver on your system is too old (found version 11040)."]),
    "check-expect": ("check", ["check", "--json", "--facts", MACHINE, "--expect", POLICY]),
    "check-build-recorded": ("check", ["check", "--format", "json", "--build", "--facts",
                                       str(FIXTURES / "machines" / "build-nvcc-major.json")]),
    "check-build-this-machine": ("check", ["check", "--format", "json", "--build"]),
    "dockerfile": ("dockerfile", ["dockerfile", "--json", str(DOCKERFILES / "made" / "cuda-torch.Dockerfile")]),
    "dockerfile-host-expect": ("dockerfile", ["dockerfile", "--json", str(DOCKERFILES / "made" / "cpu-torch.Dockerfile"),
                                              "--facts", HOST, "--expect", POLICY]),
    "compose": ("compose", ["compose", "--json", str(DOCKERFILES / "compose" / "gpu-ok" / "compose.yaml")]),
    "compose-expect": ("compose", ["compose", "--json", str(DOCKERFILES / "compose" / "gpu-missing" / "compose.yaml"),
                                   "--expect", POLICY]),
    "fleet": ("fleet", ["fleet", "--json", str(FIXTURES / "fleet" / "ansible-tree")]),
    "fleet-expect": ("fleet", ["fleet", "--json", "--expect", POLICY, MACHINE,
                              str(FIXTURES / "machines" / "a100-current.json")]),
}


@pytest.mark.parametrize("name", list(COMMANDS))
def test_every_command_document_validates(name):
    command, args = COMMANDS[name]
    result = run_cli(*args)
    assert result.returncode in (0, 1), result.stderr
    document = json.loads(result.stdout)
    kind = COMMAND_SCHEMAS[command].split(".")[1].split("/")[0]
    assert list(document)[:3] == ["schema", "envdoctor_version", "matrices_checked"]
    assert document["schema"] == COMMAND_SCHEMAS[command]
    assert document["envdoctor_version"] == __version__
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", document["matrices_checked"])
    assert errors(document, schema_for(kind)) == []


def test_every_emitted_schema_has_a_schema_file():
    """Each `schema` a command can print (COMMAND_SCHEMAS and the documents that name their own) is shipped."""
    from envdoctor.render import OTHER_SCHEMAS

    for name in [*COMMAND_SCHEMAS.values(), *OTHER_SCHEMAS]:
        kind = name.split(".", 1)[1].split("/")[0]
        assert schema_for(kind)["$id"] == name


def test_ansible_fact_document_validates():
    result = run_cli("facts", "--ansible-fact", "--facts", MACHINE, "--expect", POLICY)
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    assert document["schema"] == "envdoctor.ansible-fact/1" and document["exit"] == 1
    assert errors(document, schema_for("ansible-fact")) == []
    broken = json.loads(run_cli("facts", "--ansible-fact", "--profile", "bogus").stdout)
    assert broken["exit"] == 2 and broken["facts"] is None
    assert errors(broken, schema_for("ansible-fact")) == []


def test_node_budget_spent_document_validates():
    # a wedged driver: the fake nvidia-smi sleeps past the 1 s budget (its probe timeout is longer)
    hang = ROOT / "tests" / "fakebin" / "hang"
    result = run_cli("check", "--profile", "node", "--json",
                     env={"PATH": f"{hang}:/usr/bin:/bin", "ENVDOCTOR_NVML": "0", "ENVDOCTOR_PROBE_TIMEOUT": "30",
                          "ENVDOCTOR_NODE_BUDGET": "1"})
    assert result.returncode == 2, result.stderr
    document = json.loads(result.stdout)
    assert document["facts"] is None and document["summary"]["unknown"]
    assert errors(document, schema_for("report")) == []


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="needs torch")
def test_smoke_document_validates():
    result = run_cli("smoke", "torch", "--checks", "devices", "--device", "cpu", "--json", timeout=300)
    document = json.loads(result.stdout)
    assert document["schema"] == "envdoctor.smoke/1"
    assert errors(document, schema_for("smoke")) == []


def test_a_facts_document_replays_with_its_head(tmp_path):
    """The head keys are additions a reader of envdoctor.facts/1 ignores: `check --facts` replays it."""
    recorded = tmp_path / "facts.json"
    recorded.write_text(run_cli("facts").stdout, encoding="utf-8")
    assert run_cli("check", "--json", "--facts", str(recorded)).returncode in (0, 1)


def test_the_validator_rejects_what_breaks_a_schema():
    document = json.loads(run_cli("install", "pytorch", "--json", "--facts", MACHINE).stdout)
    schema = schema_for("install")
    assert errors({**document, "schema": "envdoctor.plan/9"}, schema)
    assert errors({k: v for k, v in document.items() if k != "envdoctor_version"}, schema)
    assert errors({**document, "commands": "pip install torch"}, schema)
    assert _small_validate_list({**document, "commands": [[1]]}, schema)


def test_the_new_schemas_reject_what_breaks_them():
    dockerfile = json.loads(run_cli(*COMMANDS["dockerfile"][1]).stdout)
    schema = schema_for("dockerfile")
    assert errors({k: v for k, v in dockerfile.items() if k != "findings"}, schema)
    assert errors({**dockerfile, "findings": [{**dockerfile["findings"][0], "line": "two"}]}, schema)
    fleet = json.loads(run_cli(*COMMANDS["fleet"][1]).stdout)
    assert errors({**fleet, "exit": 5}, schema_for("fleet"))
    assert errors({**fleet, "schema": "envdoctor.compose/1"}, schema_for("fleet"))


def _small_validate_list(document, schema):
    return list(_small_validate(document, schema, schema, "$"))


def test_schemas_are_what_the_models_give():
    result = subprocess.run([sys.executable, str(ROOT / "scripts" / "gen_schemas.py"), "--check"],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr


def test_every_schema_is_a_valid_json_schema():
    jsonschema = pytest.importorskip("jsonschema")
    for path in sorted(SCHEMAS.glob("*.schema.json")):
        jsonschema.Draft202012Validator.check_schema(json.loads(path.read_text(encoding="utf-8")))
