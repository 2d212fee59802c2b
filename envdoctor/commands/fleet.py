"""`envdoctor fleet PATH… [-]`: one view of many nodes' JSON (groups by value, drift, unhealthy,
unknown and silent nodes). Exit 0 homogeneous and healthy, 1 drift or problem nodes, 2 input error."""

from __future__ import annotations

import os
import sys
from typing import List, Optional

import typer


def register(app: typer.Typer) -> None:
    app.command()(fleet)


def fleet(
    paths: List[str] = typer.Argument(..., metavar="PATH...", help="Files or folders of nodes' JSON; '-' reads stdin (pdsh/clush `host: json` lines, JSON Lines)."),
    expect_hosts: Optional[str] = typer.Option(None, "--expect-hosts", metavar="FILE|RANGE", help="The hosts that should have answered, e.g. gpu[001-120]."),
    baseline: Optional[str] = typer.Option(None, "--baseline", metavar="FILE", help="A node's facts or report whose values are the reference."),
    majority: bool = typer.Option(False, "--majority", help="The majority's value is the reference (the default; the flag only says so explicitly)."),
    expect: Optional[str] = typer.Option(None, "--expect", metavar="FILE", help="A TOML policy applied to every node (policy-violation)."),
    json_out: bool = typer.Option(False, "--json", help="Print JSON (schema envdoctor.fleet/1)."),
    markdown_out: bool = typer.Option(False, "--markdown", help="Print Markdown."),
) -> None:
    """Aggregate many nodes' facts or reports: groups of nodes by value, drift, unhealthy and silent nodes."""
    from envdoctor.errors import UsageError
    from envdoctor.fleet.aggregate import Collector, aggregate
    from envdoctor.fleet.inputs import read_paths
    from envdoctor.fleet.nodes import Judge
    from envdoctor.fleet import render

    if baseline and majority:
        raise UsageError("--baseline FILE and --majority name two references; give one of them")
    if json_out and markdown_out:
        raise UsageError("give one output format, not json and markdown")
    for path in paths:
        if path != "-" and not os.path.exists(path):
            raise UsageError(f"{path}: no such file or folder")
    if paths.count("-") > 1:
        raise UsageError("'-' (stdin) given twice")
    expected = _expected_hosts(expect_hosts)
    reference = _baseline_values(baseline)
    policy = None
    if expect:
        from envdoctor.policy import load_policy

        policy = load_policy(expect)
    collector = Collector(Judge(policy)).add_all(read_paths(paths))
    view = aggregate(collector, expected, reference)
    if view.nodes == 0 and not view.unreadable:
        raise UsageError("no node's JSON found in " + " ".join(paths))
    if json_out:
        from envdoctor.render import print_json

        print_json(render.document(view))
    elif markdown_out:
        sys.stdout.write(render.markdown(view))
    else:
        sys.stdout.write(render.text(view))
    if view.nodes == 0:  # every input unreadable: the report lists them; the verdict is an input error
        sys.stdout.flush()
        raise UsageError(f"no readable node's JSON in {' '.join(paths)}: {len(view.unreadable)} unreadable input(s)")
    raise typer.Exit(view.exit_code())


def _expected_hosts(source: Optional[str]) -> list[str]:
    if source is None:
        return []
    from envdoctor.errors import UsageError
    from envdoctor.fleet.hostlist import HostlistError, read_expected

    def read_text(path: str) -> Optional[str]:
        if not os.path.isfile(path):
            return None
        from envdoctor.facts import FactsError, read_bounded

        try:
            return read_bounded(path, "host list", 16_000_000)
        except FactsError as exc:
            raise UsageError(str(exc)) from None

    try:
        return read_expected(source, read_text)
    except HostlistError as exc:
        raise UsageError(f"--expect-hosts: {exc}") from None


def _baseline_values(path: Optional[str]) -> Optional[dict]:
    if path is None:
        return None
    from envdoctor.errors import UsageError
    from envdoctor.fleet.inputs import Document, read_file
    from envdoctor.values import node_values

    if not path.strip():
        raise UsageError("--baseline is empty: give the FILE of one node's facts or report")
    items = list(read_file(path))
    docs = [i for i in items if isinstance(i, Document)]
    bad = [i for i in items if not isinstance(i, Document)]  # a truncated or garbled part: not one clean document
    if len(docs) != 1 or bad:
        why = bad[0].message if bad else f"{len(docs)} documents; a baseline is exactly one node's document"
        raise UsageError(f"--baseline {path}: {why}")
    data = docs[0].data
    facts = data.get("facts") if isinstance(data.get("facts"), dict) else data
    if not isinstance(facts, dict) or not str(facts.get("schema", "")).startswith("envdoctor.facts/"):
        raise UsageError(f"--baseline {path}: not an envdoctor facts or report document")
    from envdoctor.facts import Facts, FactsError

    try:  # the reference must be facts envdoctor can read, as every node is (fleet calls a node that is not unreadable)
        Facts.from_dict(facts)
    except FactsError as exc:
        raise UsageError(f"--baseline {path}: {exc}") from None
    return node_values(facts)
