"""Write schemas/<kind>.schema.json (JSON Schema 2020-12) for every JSON document envdoctor prints.

The schemas are generated from the models: the dataclasses' type hints (Facts and its blocks,
Finding, InstallPlan, SmokeResult, Candidate) and, for the documents assembled by hand, the
shapes declared below next to the function that builds them. Every document starts with the head
that `envdoctor.render.document` gives it (schema, envdoctor_version, matrices_checked).

Null rule: in a facts document a null value (or a missing key) means "not recorded", so every
property of a model accepts null; documents may gain keys (additionalProperties is allowed), which is
how version 1 of a schema grows without breaking its readers.

    python scripts/gen_schemas.py          # (re)write schemas/
    python scripts/gen_schemas.py --check  # exit 1 when schemas/ is not what the models give
"""

from __future__ import annotations

import dataclasses
import json
import sys
import types
import typing
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

DIALECT = "https://json-schema.org/draft/2020-12/schema"
NOT_IN_JSON = {"Facts": {"unrecorded"}, "SmokeResult": {"output"}}  # fields to_dict() leaves out

STR, INT, NUM, BOOL = {"type": "string"}, {"type": "integer"}, {"type": "number"}, {"type": "boolean"}


def nullable(schema: dict) -> dict:
    if schema.get("type") == "null" or schema == {} or {"type": "null"} in schema.get("anyOf", []):
        return schema
    return {"anyOf": [schema, {"type": "null"}]}


def array(items: dict) -> dict:
    return {"type": "array", "items": items}


def obj(properties: dict, required: tuple = (), extra: bool = True) -> dict:
    schema = {"type": "object", "properties": properties}
    if required:
        schema["required"] = list(required)
    if not extra:
        schema["additionalProperties"] = False
    return schema


class Models:
    """Turns type hints into schemas, collecting every dataclass under $defs."""

    def __init__(self) -> None:
        self.defs: dict[str, dict] = {}

    def ref(self, cls: type) -> dict:
        name = cls.__name__
        if name not in self.defs:
            self.defs[name] = {}  # a placeholder while its fields are read (recursion)
            self.defs[name] = self.dataclass_schema(cls)
        return {"$ref": f"#/$defs/{name}"}

    def dataclass_schema(self, cls: type) -> dict:
        hints = typing.get_type_hints(cls)
        skip = NOT_IN_JSON.get(cls.__name__, set())
        properties, required = {}, []
        for f in dataclasses.fields(cls):
            if f.name in skip:
                continue
            properties[f.name] = nullable(self.hint(hints[f.name]))
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                required.append(f.name)
        schema = obj(properties, tuple(required))
        if cls.__doc__ and not cls.__doc__.startswith(cls.__name__ + "("):
            schema["description"] = " ".join(cls.__doc__.split())
        return schema

    def hint(self, tp: Any) -> dict:
        origin, args = typing.get_origin(tp), typing.get_args(tp)
        if tp is Any:
            return {}
        if tp is type(None):
            return {"type": "null"}
        if origin in (typing.Union, types.UnionType):
            return {"anyOf": [self.hint(a) for a in args]}
        if dataclasses.is_dataclass(tp):
            return self.ref(tp)
        if tp is str:
            return STR
        if tp is bool:
            return BOOL
        if tp is int:
            return INT
        if tp is float:
            return NUM
        if origin in (list, tuple, set, frozenset) or tp in (list, tuple, set, frozenset):
            items = [a for a in args if a is not Ellipsis]
            return array(self.hint(items[0]) if len(items) == 1 else {})
        if origin is dict or tp is dict:
            return {"type": "object", "additionalProperties": nullable(self.hint(args[1])) if args else {}}
        raise TypeError(f"no JSON Schema for type hint {tp!r}")


def head(kind: str) -> dict:
    return {"schema": {"const": f"envdoctor.{kind}/1"}, "envdoctor_version": STR,
            "matrices_checked": nullable({"type": "string", "pattern": r"^\d{4}-\d{2}-\d{2}$"})}


def document(kind: str, title: str, models: Models, properties: dict, required: tuple = ()) -> dict:
    schema = {"$schema": DIALECT, "$id": f"envdoctor.{kind}/1", "title": title}
    schema.update(obj({**head(kind), **properties}, ("schema", "envdoctor_version", *required)))
    schema["$defs"] = dict(sorted(models.defs.items()))
    return schema


def facts_schema() -> dict:
    from envdoctor.facts import Facts

    m = Models()
    body = m.dataclass_schema(Facts)
    body["properties"].pop("schema")
    return document("facts", "A machine as envdoctor probed it (`envdoctor facts`)", m, body["properties"])


def report_schema() -> dict:  # envdoctor.render.report.report_document
    from envdoctor.facts import Facts
    from envdoctor.findings import Finding

    m = Models()
    counts = obj({"error": INT, "warning": INT, "info": INT, "unknown": STR}, ("error", "warning", "info"))
    return document("report", "A diagnosed machine (`envdoctor check --json`); facts is null and "
                    "summary.unknown says why when the node profile ran out of time", m, {
        "facts": nullable(m.ref(Facts)), "findings": array(m.ref(Finding)), "summary": counts,
        "timings": {"type": "object", "additionalProperties": NUM},
    }, ("facts", "findings", "summary"))


def install_schema() -> dict:  # InstallPlan.to_dict
    from envdoctor.plan import InstallPlan

    m = Models()
    body = m.dataclass_schema(InstallPlan)
    return document("install", "An installation plan (`envdoctor install --json`)", m, body["properties"],
                    tuple(body.get("required", ())))


def explain_schema() -> dict:  # commands/explain.py and Explanation.to_dict
    from envdoctor.facts import Facts
    from envdoctor.findings import Finding

    m = Models()
    fix = array({"anyOf": [array(STR), STR]})
    match = obj({"code": STR, "signature": STR, "framework": STR, "excerpt": STR, "cause": STR,
                 "confirmed": BOOL, "fix": fix, "source": STR}, ("code", "signature"))
    machine = obj({"judged": STR, "read": array({}), "facts": m.ref(Facts)}, ("judged",))
    return document("explain", "An error text explained (`envdoctor explain --json`)", m, {
        "diagnosis": array(STR), "matches": array(match), "findings": array(m.ref(Finding)),
        "noise": array(obj({"signature": STR, "excerpt": STR})), "other_problems": INT,
        "program_errors": array(obj({"signature": STR, "excerpt": STR, "cause": STR, "fix": STR})),
        "machine": machine, "truncated": BOOL,
    }, ("diagnosis", "matches", "findings"))


def smoke_schema() -> dict:  # envdoctor.smoke.results.document
    from envdoctor.smoke.results import STATUSES, SmokeResult

    m = Models()
    m.ref(SmokeResult)
    m.defs["SmokeResult"]["properties"]["status"] = {"enum": list(STATUSES)}
    return document("smoke", "Smoke-test results (`envdoctor smoke --json`)", m,
                    {"results": array({"$ref": "#/$defs/SmokeResult"})}, ("results",))


def matrix_schema() -> dict:  # envdoctor.render.matrix.matrix_document
    from envdoctor.plan import VERDICTS, Candidate

    m = Models()
    m.ref(Candidate)
    m.defs["Candidate"]["properties"]["chosen"] = BOOL
    m.defs["Candidate"]["properties"]["verdict"] = {"enum": list(VERDICTS)}
    return document("matrix", "Every release and build judged (`envdoctor matrix --json`)", m, {
        "framework": STR, "machine": STR, "python": nullable(STR),
        "chosen": nullable(obj({"version": nullable(STR), "build": nullable(STR)})),
        "builds": array(STR), "candidates": array({"$ref": "#/$defs/Candidate"}),
    }, ("framework", "candidates"))


def ansible_fact_schema() -> dict:  # envdoctor.commands.check._print_ansible_fact
    from envdoctor.facts import Facts
    from envdoctor.findings import Finding

    m = Models()
    return document("ansible-fact", "One node for Ansible's facts.d (`envdoctor facts --ansible-fact`)", m, {
        "ok": BOOL, "exit": {"enum": [0, 1, 2]}, "summary": STR, "facts": nullable(m.ref(Facts)),
        "findings": array(m.ref(Finding)),
    }, ("ok", "exit", "summary", "facts", "findings"))


def located_finding(m: Models) -> dict:  # envdoctor.container.findings.Located.to_dict
    from envdoctor.findings import Finding

    m.ref(Finding)
    located = json.loads(json.dumps(m.defs["Finding"]))
    located["properties"].update({"file": nullable(STR), "line": nullable(INT), "corrected": nullable(STR),
                                  "corrected_line": nullable(INT), "service": STR})
    located["description"] = "A finding located on a line of a build file (and a compose service)."
    m.defs["LocatedFinding"] = located
    return {"$ref": "#/$defs/LocatedFinding"}


def dockerfile_body(m: Models) -> dict:  # envdoctor.container.judge.Judgement.to_dict
    from envdoctor.facts import Facts

    base = obj({"reference": nullable(STR), "family": nullable(STR), "line": nullable(INT), "distro": nullable(STR),
                "cuda": nullable(STR), "flavour": nullable(STR), "cudnn": nullable(STR), "nvcc": nullable(BOOL),
                "require_cuda": nullable(STR)}, ("reference",))
    stage = obj({"index": INT, "name": nullable(STR), "from": STR, "line": INT}, ("index", "from", "line"))
    return {"file": STR, "base_image": base, "stages": array(stage), "assumptions": array(STR),
            "not_read": array(obj({"line": INT, "what": STR}, ("line", "what"))),
            "findings": array(located_finding(m)), "facts": m.ref(Facts)}


def dockerfile_schema() -> dict:
    m = Models()
    body = dockerfile_body(m)
    return document("dockerfile", "A Dockerfile's final stage judged as a machine (`envdoctor dockerfile --json`)",
                    m, body, ("file", "base_image", "stages", "findings", "facts"))


def compose_schema() -> dict:  # envdoctor.container.compose.ComposeJudgement.to_dict
    m = Models()
    build = obj(dockerfile_body(m), ("file", "findings", "facts"))
    m.defs["DockerfileJudgement"] = build
    service = obj({"name": STR, "line": INT, "image": nullable(STR), "build": nullable(STR), "gpu": nullable(STR)},
                  ("name",))
    return document("compose", "A compose file's services judged (`envdoctor compose --json`)", m, {
        "file": STR, "services": array(service), "not_read": array({"type": "object"}),
        "findings": array(located_finding(m)),
        "builds": {"type": "object", "additionalProperties": {"$ref": "#/$defs/DockerfileJudgement"}},
    }, ("file", "services", "findings"))


def fleet_schema() -> dict:  # envdoctor.fleet.render.document
    m = Models()
    value = nullable(STR)
    group = obj({"value": value, "nodes": STR, "count": INT, "reference": BOOL}, ("value", "nodes", "count"))
    key = obj({"key": STR, "drift": BOOL, "reference": value, "groups": array(group)}, ("key", "drift", "groups"))
    nodes = {"nodes": STR, "count": INT}
    return document("fleet", "Many nodes aggregated (`envdoctor fleet --json`)", m, {
        "nodes": INT, "reference": {"enum": ["majority", "baseline"]}, "drift": BOOL, "keys": array(key),
        "unhealthy": array(obj({**nodes, "verdict": STR, "codes": array(STR)}, ("nodes", "count", "verdict"))),
        "unknown": array(obj({**nodes, "verdict": STR}, ("nodes", "count", "verdict"))),
        "silent": obj(nodes, ("nodes", "count")),
        "unreadable": array(obj({"source": STR, "host": nullable(STR), "message": STR}, ("source", "message"))),
        "duplicates": array(obj({"host": STR, "source": STR}, ("host", "source"))),
        "exit": {"enum": [0, 1, 2]},
    }, ("nodes", "keys", "exit"))


BUILDERS = {"facts": facts_schema, "report": report_schema, "install": install_schema,
            "explain": explain_schema, "smoke": smoke_schema, "matrix": matrix_schema,
            "ansible-fact": ansible_fact_schema, "dockerfile": dockerfile_schema, "compose": compose_schema,
            "fleet": fleet_schema}


def build_schemas() -> dict[str, dict]:
    return {kind: build() for kind, build in BUILDERS.items()}


def rendered(schema: dict) -> str:
    return json.dumps(schema, indent=2, ensure_ascii=False) + "\n"


def main(argv: list[str]) -> int:
    out = ROOT / "schemas"
    stale = []
    for kind, schema in build_schemas().items():
        path = out / f"{kind}.schema.json"
        text = rendered(schema)
        if "--check" in argv:
            if not path.is_file() or path.read_text(encoding="utf-8") != text:
                stale.append(path.name)
            continue
        out.mkdir(exist_ok=True)
        path.write_text(text, encoding="utf-8")
        print(f"wrote {path.relative_to(ROOT)}")
    if stale:
        print(f"out of date (run scripts/gen_schemas.py): {', '.join(stale)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
