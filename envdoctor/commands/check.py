"""`envdoctor check` and `envdoctor facts`."""

from __future__ import annotations

from typing import Optional

import typer

from envdoctor.commands.common import FactsOption, PythonOption, exit_code_for, obtain_facts


def register(app: typer.Typer) -> None:
    app.command()(check)
    app.command()(facts)


def check(
    json_out: bool = typer.Option(False, "--json", help="Print the report as JSON (schema envdoctor.report/1)."),
    facts_file: Optional[str] = FactsOption,
    python: Optional[str] = PythonOption,
    deep: bool = typer.Option(False, "--deep", help="Import each installed framework (in its own subprocess) to read its build."),
    verbose: bool = typer.Option(False, "-v", "--verbose", help="Show paths, sources, evidence and probe timings."),
    strict: bool = typer.Option(False, "--strict", help="Exit 1 on warnings and failed probes too."),
) -> None:
    """Probe this machine (or replay --facts FILE), diagnose it and print what is wrong and how to fix it."""
    from envdoctor.diagnose import diagnose, prepare

    facts, timings = obtain_facts(facts_file, python, deep, meanwhile=prepare)
    findings = diagnose(facts)
    from envdoctor.render import console, print_json
    from envdoctor.render.report import print_report, report_document

    if json_out:
        print_json(report_document(facts, findings, timings))
    else:
        print_report(console(), facts, findings, timings, verbose)
    raise typer.Exit(exit_code_for(findings, strict, probe_failed=bool(facts.errors)))


def facts(
    python: Optional[str] = PythonOption,
    deep: bool = typer.Option(False, "--deep", help="Also import each installed framework to read its build."),
) -> None:
    """Print the probed Facts as JSON (replay them later with `check --facts FILE`)."""
    from envdoctor.render import print_json

    probed, _ = obtain_facts(None, python, deep, completed=False)
    print_json(probed.to_dict())
