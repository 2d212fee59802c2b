"""The `envdoctor explain` report: each recognised error, its cause, and this machine's fix."""

from __future__ import annotations

from rich.markup import escape

from envdoctor.explain import Explanation
from envdoctor.findings import render_fix


def print_explanation(con, result: Explanation, machine: dict, verbose: bool = False, truncated: bool = False) -> None:
    source = machine["judged"]
    con.print(f"[bold]Judged:[/] {escape(source)}", soft_wrap=True)
    if machine.get("read"):
        con.print(f"[dim]Read from the text:[/] {escape(', '.join(machine['read']))}", soft_wrap=True)
    if truncated:
        con.print("[yellow]The text was long: its first 1 MB and last 4 MB were read.[/]")
    con.print("")
    if result.noise and verbose:
        con.print(f"[dim]Harmless messages (not the cause): {escape(', '.join(m.signature.id for m in result.noise))}[/]\n")
    for match in result.program_errors:
        con.print(f"[bold]The program's own error[/], not the environment: [bold]{escape(match.signature.id)}[/]", soft_wrap=True)
        con.print("    [dim]│[/] " + escape(match.excerpt).replace("\n", "\n    [dim]│[/] "), soft_wrap=True)
        con.print(f"    {escape(match.cause)}", soft_wrap=True)
        con.print(f"    [bold]→ {escape(match.generic_fix)}[/]\n", soft_wrap=True)
    if not result.matches and not result.diagnosis:
        if result.program_errors:
            con.print("envdoctor claims no environment cause for it.")
            return
        con.print("[bold]No known error signature found[/] in the text; envdoctor claims no cause for it.")
        if result.noise:
            con.print(f"{len(result.noise)} harmless message(s) recognised (TensorFlow/oneDNN start-up notices and the like): "
                      "they are not the cause.")
        con.print("Run [bold]envdoctor check[/] to look for problems on this machine, or "
                  "[bold]envdoctor check --deep[/] to also import each framework.")
        return
    if result.diagnosis:
        con.print(f"[bold]Most likely cause:[/] [bold red]{escape(result.diagnosis[0])}[/]"
                  + (f" (also possible: {escape(', '.join(result.diagnosis[1:]))})" if result.diagnosis[1:] else "") + "\n")
    machine_only = [f for f in result.findings if not any(m.confirmed is f for m in result.matches)]
    for finding in machine_only:
        con.print(f"[bold red]✗[/] [bold]{escape(finding.title)}[/] [dim]\\[{finding.code}][/]", soft_wrap=True)
        con.print(f"    {escape(finding.detail)}", soft_wrap=True)
        for fix in finding.fix:
            prefix = "$ " if isinstance(fix, tuple) else "→ "
            con.print(f"    [bold]{prefix}{escape(render_fix(fix))}[/]", soft_wrap=True)
        con.print("")
    if not result.matches:
        return
    count = len(result.matches)
    con.print(f"[bold]{count} known problem{'s' if count != 1 else ''} found[/] in the text:\n")
    for item in result.matches:
        con.print(f"[bold red]✗[/] [bold]{escape(item.match.signature.id)}[/] [dim]\\[{item.code}][/]")
        con.print("    [dim]│[/] " + escape(item.match.excerpt).replace("\n", "\n    [dim]│[/] "), soft_wrap=True)
        con.print(f"    {escape(item.match.cause)}", soft_wrap=True)
        if item.confirmed is not None:
            con.print(f"    [yellow]On {escape(source)}:[/] {escape(item.confirmed.title)}", soft_wrap=True)
            if verbose and item.confirmed.evidence:
                con.print(f"    [dim]evidence: {escape(', '.join(item.confirmed.evidence))}[/]", soft_wrap=True)
        elif source.startswith("the machine described"):
            con.print("    [dim]Named from the message: what the text says of the machine neither confirms nor rules it out.[/]",
                      soft_wrap=True)
        else:
            con.print(f"    [dim]{escape(source[0].upper() + source[1:])} does not show this cause now "
                      "(the log may come from another machine or an earlier state).[/]", soft_wrap=True)
        for fix in item.fix:
            prefix = "$ " if isinstance(fix, tuple) else "→ "
            con.print(f"    [bold]{prefix}{escape(render_fix(fix))}[/]", soft_wrap=True)
        if verbose:
            con.print(f"    [dim]signature source: {escape(item.match.signature.source)}[/]")
        con.print("")
    if result.other_problems:
        con.print(f"[yellow]{result.other_problems} other problem(s) on {escape(source)}[/]: run "
                  "[bold]envdoctor check[/] for the full report.")
