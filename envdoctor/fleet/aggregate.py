"""Group a fleet's nodes by value per key, find drift, unhealthy, unknown and silent nodes."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Optional

from envdoctor.fleet.inputs import Document, Unreadable
from envdoctor.values import BASE_KEYS, NONE
from envdoctor.fleet.nodes import Judge, Node

UNKNOWN = "unknown"


@dataclass
class Group:
    value: Optional[str]  # None: the nodes did not record it
    hosts: list[str]
    reference: bool = False


@dataclass
class KeyView:
    key: str
    groups: list[Group]
    reference: Optional[str]  # the majority's or the baseline's value
    drift: bool


@dataclass
class FleetView:
    nodes: int
    reference_kind: str  # majority | baseline
    keys: list[KeyView]
    unhealthy: list[tuple[str, list[str], tuple[str, ...]]]  # (verdict, hosts, codes)
    unknown: list[tuple[str, list[str]]]  # (verdict, hosts)
    silent: list[str]
    unreadable: list[Unreadable]
    duplicates: list[tuple[str, str]] = field(default_factory=list)  # (host, source) of identical copies
    # Hosts that sent documents that disagree, with how many documents each sent: every copy is counted
    # in the groups (a host can then sit in two groups), and the fleet is not homogeneous.
    conflicting: list[tuple[str, int]] = field(default_factory=list)

    @property
    def drift(self) -> bool:
        return any(k.drift for k in self.keys) or bool(self.conflicting)

    def exit_code(self) -> int:
        if not self.nodes:
            return 2
        problems = self.drift or self.unhealthy or self.unknown or self.silent or self.unreadable
        return 1 if problems else 0


class Collector:
    """Reads items one at a time and keeps only the small per-node records (bounded memory)."""

    def __init__(self, judge: Judge) -> None:
        self.judge = judge
        self.nodes: dict[str, Node] = {}
        self.unreadable: list[Unreadable] = []
        self.duplicates: list[tuple[str, str]] = []  # identical copies: one node
        self.copies: dict[str, list[Node]] = {}  # host -> its copies that differ from the first one kept
        self.repeated: dict[str, list[Node]] = {}  # host -> its identical copies (counted where the host conflicts)

    def add(self, item) -> None:
        if isinstance(item, Document):
            item = self.judge.node(item)
        if isinstance(item, Unreadable):
            self.unreadable.append(item)
            return
        first = self.nodes.get(item.host)
        if first is None:
            self.nodes[item.host] = item
        elif any(_same(item, kept) for kept in (first, *self.copies.get(item.host, ()))):
            self.duplicates.append((item.host, item.source))
            self.repeated.setdefault(item.host, []).append(item)
        else:
            self.copies.setdefault(item.host, []).append(item)

    def documents(self, host: str) -> int:
        """How many documents a host sent (identical copies included)."""
        return 1 + len(self.copies.get(host, ())) + len(self.repeated.get(host, ()))

    def counted(self) -> list[Node]:
        """One node per host; every document of a host whose documents disagree."""
        extra = [n for host, copies in self.copies.items() for n in (*copies, *self.repeated.get(host, ()))]
        return list(self.nodes.values()) + extra

    def add_all(self, items: Iterable) -> "Collector":
        for item in items:
            self.add(item)
        return self


def _same(a: Node, b: Node) -> bool:
    """Two documents of one host that say the same (their source and collection time aside)."""
    return (a.values, a.problems, a.verdict, a.unknown) == (b.values, b.problems, b.verdict, b.unknown)


def aggregate(collector: Collector, expected: Iterable[str] = (), baseline: Optional[dict] = None) -> FleetView:
    nodes = collector.counted()
    keys = [_key_view(key, nodes, baseline) for key in _keys(nodes)]
    unhealthy: dict[str, tuple[list[str], tuple[str, ...]]] = {}
    unknown: dict[str, list[str]] = {}
    for node in nodes:
        if node.problems:
            hosts, _ = unhealthy.setdefault(node.verdict, ([], tuple(sorted({c for c, _ in node.problems}))))
        elif node.unknown:
            hosts = unknown.setdefault(node.verdict, [])
        else:
            continue
        if node.host not in hosts:  # a host's differing copies may share a verdict
            hosts.append(node.host)
    sent = set(collector.nodes) | {u.host for u in collector.unreadable if u.host}
    sent |= {alias for node in nodes for alias in node.aliases}
    silent = [h for h in expected if h not in sent]
    return FleetView(
        nodes=len(collector.nodes), reference_kind="baseline" if baseline is not None else "majority", keys=keys,
        unhealthy=sorted(((v, h, c) for v, (h, c) in unhealthy.items()), key=lambda t: (-len(t[1]), t[0])),
        unknown=sorted(unknown.items(), key=lambda t: (-len(t[1]), t[0])),
        silent=silent, unreadable=collector.unreadable, duplicates=collector.duplicates,
        conflicting=[(host, collector.documents(host)) for host in collector.copies])


def _keys(nodes: list[Node]) -> list[str]:
    """The base keys, then each framework key some node has a value for (installed somewhere)."""
    keys = list(BASE_KEYS)
    seen: dict[str, None] = {}
    for node in nodes:
        for key, value in node.values.items():
            if key not in BASE_KEYS and value not in (None, NONE):
                seen[key] = None
    framework_order = list(nodes[0].values) if nodes else []
    return keys + sorted(seen, key=lambda k: framework_order.index(k) if k in framework_order else len(framework_order))


def _key_view(key: str, nodes: list[Node], baseline: Optional[dict]) -> KeyView:
    by_value: dict[Optional[str], list[str]] = {}
    for node in nodes:
        if node.unknown and not node.values:
            continue  # a node that sent no facts is listed under "unknown", not as a value
        by_value.setdefault(node.values.get(key), []).append(node.host)
    known = {v: h for v, h in by_value.items() if v is not None}
    if baseline is not None and baseline.get(key) is not None:
        reference: Optional[str] = baseline[key]
    else:
        reference = _majority(known)
    groups = [Group(v, h, reference=(v == reference)) for v, h in by_value.items()]
    groups.sort(key=lambda g: (not g.reference, g.value is None, -len(g.hosts), g.value or ""))
    drift = any(v != reference for v in known)
    return KeyView(key, groups, reference, drift)


def _majority(known: dict[str, list[str]]) -> Optional[str]:
    """The value most nodes have; None when none does (no value, or a tie for the most)."""
    counts = sorted((len(hosts) for hosts in known.values()), reverse=True)
    if not counts or (len(counts) > 1 and counts[0] == counts[1]):
        return None
    return next(v for v, hosts in known.items() if len(hosts) == counts[0])
