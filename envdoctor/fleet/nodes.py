"""One node's verdict, from one Document: values compared across the fleet, its problems, its line.

A report or an Ansible fact carries its findings; a bare facts document is diagnosed here, once
per distinct machine (nodes that differ only by name, time and GPU serials share the answer), so a
homogeneous fleet of 2,000 bare facts costs a handful of diagnoses. The answers are kept under a
digest of those facts, for the last MAX_DIAGNOSES distinct machines: memory stays flat however
many different machines a fleet holds.
"""

from __future__ import annotations

import hashlib
import json
from collections import OrderedDict
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any, Optional

from envdoctor.fleet.inputs import Document, Unreadable
from envdoctor.values import node_values
from envdoctor.render.oneline import fit

SEVERE = ("error",)
MAX_DIAGNOSES = 4096  # distinct machines whose findings are kept for the nodes like them


@dataclass(frozen=True)
class Node:
    host: str
    source: str
    values: dict  # key -> value (None unknown)
    problems: tuple  # ((code, title), ...) of error findings, policy violations included
    verdict: str  # the one-line verdict: ok | <code>: <title> (+N more) | unknown: <why>
    unknown: bool = False  # could not be judged (no facts, the node's own exit 2, a probe that failed)
    aliases: tuple = ()  # other names it answers to for --expect-hosts (file name, short host name)

    @property
    def healthy(self) -> bool:
        return not self.problems and not self.unknown


class Judge:
    """Turns Documents into Nodes; holds the diagnosis cache and the policy."""

    def __init__(self, policy=None) -> None:
        self.policy = policy
        # fingerprint digest -> findings, the most recently used last; bounded (a miss is diagnosed again)
        self._diagnoses: "OrderedDict[bytes, Optional[list]]" = OrderedDict()

    def node(self, doc: Document) -> "Node | Unreadable":
        data = doc.data
        schema = str(data.get("schema") or "")
        if schema.startswith("envdoctor.report/") or (not schema and "facts" in data and "findings" in data):
            return self._judged(doc, data.get("facts"), data.get("findings"), None)
        if schema.startswith("envdoctor.ansible-fact/") or {"ok", "exit", "summary"} <= set(data):
            exit_code = data.get("exit")
            summary = data.get("summary") if isinstance(data.get("summary"), str) else None
            return self._judged(doc, data.get("facts"), data.get("findings"), (exit_code, summary))
        if schema.startswith("envdoctor.facts/"):
            return self._judged(doc, data, None, None)
        if schema:
            return Unreadable(doc.source, f"unknown schema {schema!r}", host=doc.host)
        return Unreadable(doc.source, "not an envdoctor document (no schema)", host=doc.host)

    def _judged(self, doc: Document, facts: Any, findings: Any, node_said: Optional[tuple]) -> "Node | Unreadable":
        host = doc.host or _hostname(facts) or doc.name_hint or doc.source
        aliases = tuple({n for n in (doc.name_hint, host.split(".")[0]) if n and n != host})
        if not isinstance(facts, dict):
            why = (node_said[1] if node_said and node_said[1] else "the node sent no facts")
            return Node(host, doc.source, {}, (), fit(why if why.startswith("unknown") else f"unknown: {why}"), unknown=True,
                        aliases=aliases)
        if findings is None:
            listed = self._diagnose(facts)
            if listed is None:
                return Unreadable(doc.source, "facts that envdoctor cannot read (see `envdoctor check --facts`)", host=host)
        elif isinstance(findings, list):
            listed = [f for f in findings if isinstance(f, dict)]
        else:
            return Unreadable(doc.source, "findings is not a list", host=host)
        if self.policy is not None:
            found = [SimpleNamespace(code=f.get("code")) for f in listed]
            listed = listed + [f.to_dict() for f in self.policy.check(facts, found)]
        problems = tuple((str(f.get("code")), str(f.get("title") or "")) for f in listed if f.get("severity") in SEVERE)
        unknown = not problems and (bool(node_said and node_said[0] == 2) or bool(facts.get("errors")))
        return Node(host, doc.source, node_values(facts), problems, _verdict(problems, node_said, unknown, facts), unknown,
                    aliases)

    def _diagnose(self, facts: dict) -> Optional[list[dict]]:
        key = hashlib.sha256(_fingerprint(facts).encode()).digest()
        if key in self._diagnoses:
            self._diagnoses.move_to_end(key)
            return self._diagnoses[key]
        listed = self._diagnoses[key] = _run_diagnosis(facts)
        if len(self._diagnoses) > MAX_DIAGNOSES:
            self._diagnoses.popitem(last=False)
        return listed


def _run_diagnosis(facts: dict) -> Optional[list[dict]]:
    from envdoctor.complete import complete
    from envdoctor.diagnose import diagnose
    from envdoctor.facts import Facts, FactsError

    try:
        return [f.to_dict() for f in diagnose(complete(Facts.from_dict(facts)))]
    except FactsError:
        return None


def _fingerprint(facts: dict) -> str:
    """The facts without what differs between identical machines (name, time, GPU serials)."""
    trimmed = dict(facts)
    trimmed.pop("collected_at", None)
    host = trimmed.get("host")
    if isinstance(host, dict):
        trimmed["host"] = {k: v for k, v in host.items() if k != "hostname"}
    env = trimmed.get("env") if isinstance(trimmed.get("env"), dict) else {}
    nvidia = trimmed.get("nvidia")
    if isinstance(nvidia, dict) and isinstance(nvidia.get("gpus"), list) and not env.get("CUDA_VISIBLE_DEVICES"):
        gpus = [{k: v for k, v in g.items() if k not in ("uuid", "pci_bus_id")} if isinstance(g, dict) else g
                for g in nvidia["gpus"]]
        trimmed["nvidia"] = {**nvidia, "gpus": gpus}
    return json.dumps(trimmed, sort_keys=True, default=str)


def _hostname(facts: Any) -> Optional[str]:
    host = facts.get("host") if isinstance(facts, dict) else None
    name = host.get("hostname") if isinstance(host, dict) else None
    return name if isinstance(name, str) and name else None


def _verdict(problems: tuple, node_said: Optional[tuple], unknown: bool, facts: dict) -> str:
    if problems:
        code, title = problems[0]
        more = f" (+{len(problems) - 1} more)" if len(problems) > 1 else ""
        return fit(f"{code}: {title}", more)
    if unknown:
        if node_said and node_said[1]:
            return fit(node_said[1])
        errors = facts.get("errors") or []
        first = errors[0] if isinstance(errors[0], dict) else {}
        return fit(f"unknown: {first.get('probe', 'a probe')}: {first.get('message', 'failed')}")
    return "ok"
