"""`envdoctor install`: the plan as a person reads it, commands ready to copy and paste."""

from __future__ import annotations

import shlex

from rich.markup import escape

from envdoctor.facts import Facts
from envdoctor.plan import InstallPlan

DISPLAY_NAMES = {"pytorch": "PyTorch", "tensorflow": "TensorFlow", "jax": "JAX", "paddle": "PaddlePaddle"}


def display_name(framework: str) -> str:
    return DISPLAY_NAMES.get(framework, framework)


WINDOWS_SPECIAL = set(' \t<>|&^()%!;,"\'{}@`$')  # cmd.exe and PowerShell operators, separators, quotes


def shell_command(argv, windows: bool = False) -> str:
    """One command as it is typed: POSIX shell quoting, or, for a Windows target, double quotes
    around any argument that cmd.exe or PowerShell would split or treat as an operator (< > | &)."""
    if not windows:
        return " ".join(_posix_quote(str(a)) for a in argv)
    return " ".join(_windows_quote(a) for a in argv)


def _posix_quote(arg: str) -> str:
    """shlex.quote, except that a leading `~/` (a redacted home folder) stays outside the quotes, where
    the shell expands it: `~/'my venv/bin/python'`, never `'~/venv/bin/python'`."""
    if arg in ("~", "…"):  # "…" stands for the user's own arguments: a placeholder, not a word to quote
        return arg
    if arg.startswith("~/"):
        rest = arg[2:]
        return "~/" + shlex.quote(rest) if rest else "~/"
    return shlex.quote(arg)


def _windows_quote(arg: str) -> str:
    if arg and not (set(arg) & WINDOWS_SPECIAL):
        return arg
    return '"' + arg.replace('"', '\\"') + '"'


def is_windows(facts: Facts) -> bool:
    return facts.host.os == "windows"


def headline(plan: InstallPlan, facts: Facts) -> str:
    name = display_name(plan.framework)
    target = facts.python.executable or "the target interpreter"
    py = f"Python {plan.python or facts.python.version or '?'}"
    if not plan.ok:
        return f"No {name} build fits this machine ({py}, {target})."
    from envdoctor.plan.run import target_of

    where = target_of(plan, facts)
    if where.new_conda_env:  # conda create: the probed interpreter is not where it goes
        return f"{name} {plan.version} ({plan.build}) for {py} in {where.describe}"
    return f"{name} {plan.version} ({plan.build}) for {py} at {target}"


def print_plan(con, plan: InstallPlan, facts: Facts) -> None:
    colour = "green" if plan.ok else "red"
    con.print(f"[bold {colour}]{escape(headline(plan, facts))}[/]", soft_wrap=True)
    from envdoctor.render import quiet

    if facts.python.target_source and facts.python.target_source != "--python":
        from envdoctor.target import describe_source  # which environment --run would write to: quiet or not

        con.print(f"    [dim]target: {escape(describe_source(facts.python.target_source))} (--python PATH names another)[/]",
                  soft_wrap=True)
    if quiet():  # -q / ENVDOCTOR_QUIET=1: the verdict, the target, the commands, the warnings, what to change
        _commands(con, plan, facts)
        _section(con, "Warnings", plan.warnings, "!", "yellow")
        if not plan.ok:
            _section(con, "What to change", plan.steps, "→", "bold")
        return
    if plan.index_url:
        con.print(f"    [dim]package index: {escape(plan.index_url)}[/]")
    if plan.replaces:
        con.print(f"    [dim]replaces: {escape(', '.join(plan.replaces))}[/]")
    _commands(con, plan, facts)
    _section(con, "Why", plan.reasons, "•", "cyan")
    _section(con, "Rejected", [f"{r.candidate}: {r.why}" for r in plan.rejected], "✗", "dim")
    _section(con, "Warnings", plan.warnings, "!", "yellow")
    _section(con, "By hand" if plan.ok else "What to change", plan.steps, "→", "bold")


def _commands(con, plan: InstallPlan, facts: Facts) -> None:
    if not plan.commands:
        return
    con.print()
    con.print("[bold]Run:[/]")
    for argv in plan.commands:
        # soft_wrap: a long command stays on one line so it can be copied whole
        con.print(f"  $ {escape(shell_command(argv, is_windows(facts)))}", soft_wrap=True)


def _section(con, title: str, lines, mark: str, style: str) -> None:
    lines = list(lines)
    if not lines:
        return
    con.print()
    con.print(f"[bold]{title}:[/]")
    for line in lines:
        con.print(f"  [{style}]{mark}[/] {escape(line)}", soft_wrap=True)
