"""`envdoctor dockerfile` / `envdoctor compose` for people: what the build describes, then each finding
with its line, the corrected line and the fix, then a summary line."""

from __future__ import annotations

from rich.markup import escape

from envdoctor.findings import render_fix

_MARKS = {"error": ("✗", "red"), "warning": ("!", "yellow"), "info": ("•", "cyan")}


def print_dockerfile(con, judgement, indent: str = "") -> None:
    from envdoctor.render import quiet

    if quiet():  # -q / ENVDOCTOR_QUIET=1: the errors and the verdict line only
        print_findings(con, judgement.findings, indent)
        return
    described = judgement.described
    facts = described.facts
    base = described.base
    con.print(f"{indent}[bold]{escape(judgement.dockerfile.path)}[/bold]")
    con.print(f"{indent}  base   {escape(base.reference)} (line {described.from_line})" +
              (f": {escape(_base_summary(base))}" if base.known else ": not a known image"))
    python = facts["python"]
    con.print(f"{indent}  python {python.get('version') or 'unknown'}" +
              (f"; {', '.join(f'{k} {v}' for k, v in sorted(python['packages'].items()) if not k.startswith('nvidia-'))}"
               if python["packages"] else ""))
    for note in described.assumptions:
        con.print(f"{indent}  [dim]assumed: {escape(note)}[/dim]")
    for line, what in described.unresolved:
        con.print(f"{indent}  [dim]not read (line {line}): {escape(what)}[/dim]")
    print_findings(con, judgement.findings, indent)


def _base_summary(base) -> str:
    parts = []
    if base.distro:
        parts.append(base.distro.label + (f", glibc {base.distro.glibc}" if base.distro.glibc else ""))
    if base.cuda:
        parts.append(f"CUDA {base.cuda} {base.flavour or ''}".strip() + (" (nvcc)" if base.nvcc else " (no nvcc)"))
    if base.cudnn:
        parts.append(f"cuDNN {base.cudnn}")
    if base.python:
        parts.append(f"Python {base.python}")
    if base.l4t:
        parts.append(f"L4T {base.l4t}")
    return ", ".join(parts) or base.family or ""


def print_findings(con, findings, indent: str = "") -> None:
    from envdoctor.render import quiet

    for located in findings:
        f = located.finding
        if quiet() and f.severity != "error":
            continue
        mark, colour = _MARKS[f.severity]
        where = f"line {located.line}" if located.line else ""
        service = f"[{located.service}] " if located.service else ""
        con.print(f"{indent}  [{colour}]{mark}[/{colour}] {escape(service)}{escape(where)}: {escape(f.title)} [dim]{escape('[' + f.code + ']')}[/dim]")
        con.print(f"{indent}      {escape(f.detail)}", style="dim")
        if located.corrected:
            at = f" (line {located.corrected_at})" if located.corrected_at and located.corrected_at != located.line else ""
            con.print(f"{indent}      corrected{at}: [bold]{escape(located.corrected)}[/bold]")
        for fix in f.fix:
            con.print(f"{indent}      fix: {escape(render_fix(fix))}")
    errors = sum(1 for f in findings if f.finding.severity == "error")
    warnings = sum(1 for f in findings if f.finding.severity == "warning")
    infos = len(findings) - errors - warnings
    verdict = ("no findings" if not infos else "no errors or warnings") if not errors and not warnings else \
        f"{errors} error{'s' * (errors != 1)}, {warnings} warning{'s' * (warnings != 1)}"
    con.print(f"{indent}{verdict}")


def print_compose(con, judgement) -> None:
    from envdoctor.render import quiet

    if quiet():
        print_findings(con, judgement.findings)
        return
    con.print(f"[bold]{escape(judgement.path)}[/bold]: {len(judgement.services)} service(s)")
    for service in judgement.services:
        build = judgement.builds.get(service.name)
        what = f"build {build.dockerfile.path}" if build else f"image {service.data.get('image') or '?'}"
        con.print(f"  {escape(service.name)} (line {service.line}): {escape(what)}")
    for item in judgement.not_read:
        con.print(f"  [dim]not read: {escape(item['service'])}: {escape(item['what'])}[/dim]")
    from envdoctor.container.compose import SPEC_CHECKED

    if judgement.spec_check != SPEC_CHECKED:
        con.print(f"  [dim]checked: {escape(judgement.spec_check)}[/dim]")
    print_findings(con, judgement.findings)
