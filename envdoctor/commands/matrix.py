"""`envdoctor matrix FRAMEWORK`: what is published (releases × builds × Python), judged for this machine.

Exit codes: 0 the table was shown; 2 usage error, or the framework's planner cannot list its
candidates yet.
"""

from __future__ import annotations

from typing import Optional

import typer

from envdoctor.commands.common import FactsOption, PythonOption, obtain_facts
from envdoctor.errors import UsageError


def register(app: typer.Typer) -> None:
    app.command()(matrix)


def matrix(
    framework: str = typer.Argument(..., help="pytorch (torch), tensorflow (tf), jax or paddle (paddlepaddle)."),
    version: Optional[str] = typer.Option(None, "--version", metavar="SPEC", help="Only these releases: 2.6, '>=2.5'."),
    cuda: str = typer.Option("auto", "--cuda", help="Only these builds: cpu, 12.8, cu128, rocm6.4 (auto: all of them)."),
    python: Optional[str] = PythonOption,
    facts_file: Optional[str] = FactsOption,
    json_out: bool = typer.Option(False, "--json", help="Print the table as JSON (schema envdoctor.matrix/1)."),
    show_all: bool = typer.Option(False, "--all", help="Also show builds for other platforms or accelerators."),
) -> None:
    """Show every release and build of FRAMEWORK, each marked for this machine (or --facts FILE)."""
    from envdoctor.commands.install import plan_for, require_python, validated_cuda, validated_version
    from envdoctor.plan import PlanRequest, canonical_framework, evaluate_all

    request = PlanRequest(framework=canonical_framework(framework), version=validated_version(version),
                          cuda=validated_cuda(cuda))
    if facts_file and python:
        raise UsageError("--facts and --python name two different targets; give one of them")
    facts, _ = obtain_facts(facts_file, python)
    require_python(facts)
    plan = plan_for(facts, request)
    candidates = evaluate_all(facts, request)
    if candidates is None:
        raise UsageError(f"the matrix is not available for {request.framework} yet "
                         f"(try `envdoctor install {request.framework}` for the plan)")
    if json_out:
        from envdoctor.render import print_json
        from envdoctor.render.matrix import matrix_document

        print_json(matrix_document(request.framework, facts, candidates, plan))
        return
    from envdoctor.render import console
    from envdoctor.render.matrix import print_matrix

    options = " ".join(f"{flag} {value}" for flag, value in (("--version", request.version), ("--cuda", request.cuda))
                       if value and value != "auto")
    print_matrix(console(), request.framework, facts, candidates, plan, show_all, options)
