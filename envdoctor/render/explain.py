"""The `envdoctor explain` report: each recognised error, its cause, and this machine's fix."""

from __future__ import annotations

from rich.markup import escape

from envdoctor.explain import Explanation
from envdoctor.findings import render_fix


def print_explanation(con, result: Explanation, source: str, verbose: bool = False) -> None:
    if not result.matches:
        con.print("[bold]No known error signature found[/] in the text; envdoctor claims no cause for it.")
        con.print("Run [bold]envdoctor check[/] to look for problems on this machine, or "
                  "[bold]envdoctor check --deep[/] to also import each framework.")
        return
    count = len(result.matches)
    con.print(f"[bold]{count} known problem{'s' if count != 1 else ''} found[/] in the text:\n")
    for item in result.matches:
        con.print(f"[bold red]✗[/] [bold]{escape(item.match.signature.id)}[/] [dim]\\[{item.code}][/]")
        con.print(f"    [dim]│[/] {escape(item.match.excerpt)}", soft_wrap=True)
        con.print(f"    {escape(item.match.cause)}", soft_wrap=True)
        if item.confirmed is not None:
            con.print(f"    [yellow]On {escape(source)}:[/] {escape(item.confirmed.title)}", soft_wrap=True)
            if verbose and item.confirmed.evidence:
                con.print(f"    [dim]evidence: {escape(', '.join(item.confirmed.evidence))}[/]", soft_wrap=True)
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
