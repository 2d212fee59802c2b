"""`envdoctor matrix`: releases × builds, each cell judged for this machine, the plan's pick marked."""

from __future__ import annotations

import re
from typing import Optional

from rich.markup import escape
from rich.table import Table

from envdoctor.facts import Facts
from envdoctor.plan import VERDICTS, Candidate, InstallPlan
from envdoctor.render import COMMAND_SCHEMAS
from envdoctor.render.plan import display_name

SCHEMA = COMMAND_SCHEMAS["matrix"]
# verdict -> (cell text, style); the legend prints them in this order
CELLS = {
    "fits": ("✓", "green"),
    "driver": ("drv", "yellow"),
    "gpu": ("gpu", "red"),
    "python": ("py", "magenta"),
    "platform": ("–", "dim"),
    "other": ("✗", "red"),
}
CHOSEN = ("★", "bold black on green")
NOT_PUBLISHED = ("", "dim")


def build_order(build: str) -> tuple:
    """cpu first, then CUDA builds by version, ROCm by version, then the rest by name."""
    numbers = tuple(int(n) for n in re.findall(r"\d+", build))
    if build == "cpu":
        return (0, (), build)
    if build.startswith("cu"):
        return (1, numbers, build)
    if build.startswith("rocm"):
        return (2, numbers, build)
    return (3, numbers, build)


def columns(candidates: list[Candidate]) -> list[str]:
    return sorted({c.build for c in candidates}, key=build_order)


def shown(candidates: list[Candidate], show_all: bool) -> tuple[list[Candidate], list[str]]:
    """The candidates to draw, and the builds left out: those whose every cell is "platform" (for
    another platform or accelerator: ROCm on an NVIDIA machine, CUDA on a Mac)."""
    if show_all:
        return candidates, []
    hidden = [b for b in columns(candidates) if all(c.verdict == "platform" for c in candidates if c.build == b)]
    return [c for c in candidates if c.build not in hidden], hidden


def releases(candidates: list[Candidate]) -> list[str]:
    seen: list[str] = []
    for c in candidates:
        if c.version not in seen:
            seen.append(c.version)
    return seen


def python_span(pythons) -> str:
    """'3.10–3.14' from the Python versions with a wheel (free-threaded builds like 3.14t left out)."""
    regular = {v for v in pythons if re.fullmatch(r"\d+\.\d+", v)}
    if not regular:
        return ""
    ordered = sorted(regular, key=lambda v: tuple(int(x) for x in v.split(".")))
    return ordered[0] if len(ordered) == 1 else f"{ordered[0]}–{ordered[-1]}"


def is_chosen(c: Candidate, plan: Optional[InstallPlan]) -> bool:
    return bool(plan and plan.ok and plan.build == c.build and plan.version == c.version)


def machine_line(facts: Facts) -> str:
    parts = [f"{facts.host.os or '?'} {facts.host.arch or '?'}"]
    if facts.host.wsl:
        parts.append("WSL2")
    parts.append(f"Python {facts.python.version or '?'}")
    if facts.jetson:
        parts.append(f"JetPack {facts.jetson.jetpack or '?'} (L4T {facts.jetson.l4t or '?'})")
    elif facts.nvidia and facts.nvidia.driver_version:
        cuda = f" (CUDA {facts.nvidia.driver_cuda})" if facts.nvidia.driver_cuda else ""
        parts.append(f"driver {facts.nvidia.driver_version}{cuda}")
    gpus = [f"{g.name or 'GPU'}" + (f" sm_{g.compute_capability.replace('.', '')}" if g.compute_capability else "")
            for g in facts.gpus]
    if facts.amd and facts.amd.gpus:
        parts.append(f"ROCm {facts.amd.rocm_version or '?'}")
        gpus += [f"{g.name or 'GPU'}" + (f" {g.gfx}" if g.gfx else "") for g in facts.amd.gpus]
    for gpu in dict.fromkeys(gpus):  # one entry per kind: "2× NVIDIA A100-SXM4-80GB sm_80"
        count = gpus.count(gpu)
        parts.append(f"{count}× {gpu}" if count > 1 else gpu)
    if not facts.gpus and not facts.amd and not facts.jetson:
        parts.append("no GPU")
    return ", ".join(parts)


def matrix_document(framework: str, facts: Facts, candidates: list[Candidate], plan: Optional[InstallPlan]) -> dict:
    """Every candidate (hidden columns included): machines read all of it."""
    return {
        "schema": SCHEMA,
        "framework": framework,
        "machine": machine_line(facts),
        "python": facts.python.version,
        "chosen": {"version": plan.version, "build": plan.build} if plan and plan.ok else None,
        "builds": columns(candidates),
        "candidates": [dict(c.to_dict(), chosen=is_chosen(c, plan)) for c in candidates],
    }


def print_matrix(con, framework: str, facts: Facts, candidates: list[Candidate], plan: Optional[InstallPlan],
                 show_all: bool = False, options: str = "") -> None:
    """`options`: the filters given (`--version 2.6 --cuda cu126`), named when nothing matches them."""
    name = display_name(framework)
    con.print(f"[bold]{name}[/] for this machine: {escape(machine_line(facts))}", soft_wrap=True)
    drawn, hidden = shown(candidates, show_all)
    if not candidates:
        con.print(f"No {name} release or build matches {escape(options)}." if options
                  else f"No {name} build is published for this machine's platform.", soft_wrap=True)
        return
    if not drawn:
        con.print(f"No {name} build{' matching ' + escape(options) if options else ''} is for this machine; "
                  f"--all shows the others anyway ({escape(', '.join(hidden))}).", soft_wrap=True)
        return
    from envdoctor.render import quiet

    if quiet():  # -q / ENVDOCTOR_QUIET=1: only the cells that fit, and the verdict line
        _print_compact(con, framework, drawn, plan)
        return
    table = _table(drawn, plan)
    # Never squeeze the table into a narrow (or non-terminal, 80-column) console: cells become "…".
    narrow = con.width
    con.width = 1000
    con.width = max(narrow, con.measure(table).maximum)
    con.print(table)
    con.width = narrow
    con.print(_legend(framework, drawn, plan), soft_wrap=True)
    if hidden:
        con.print(f"[dim]{len(hidden)} build(s) that are not for this machine not shown "
                  f"({escape(', '.join(hidden))}); --all shows them[/]", soft_wrap=True)
    _print_newest_reasons(con, drawn)
    _print_other_reasons(con, drawn)
    _print_nothing_fits(con, framework, plan)


def _print_compact(con, framework: str, candidates: list[Candidate], plan: Optional[InstallPlan]) -> None:
    """One line per release with a build that fits ('  2.9.1: cpu, cu126, cu128 ★'), then the verdict."""
    from envdoctor.render.marks import fit

    for version in releases(candidates):
        fitting = sorted((c for c in candidates if c.version == version and (c.fits or is_chosen(c, plan))),
                         key=lambda c: build_order(c.build))  # the table's column order
        if fitting:
            builds = ", ".join(c.build + (" " + fit(CHOSEN[0]) if is_chosen(c, plan) else "") for c in fitting)
            con.print(f"  {escape(version)}: {escape(builds)}", soft_wrap=True)
    if plan is not None and plan.ok:
        con.print(f"{fit(CHOSEN[0])} `envdoctor install {framework}` installs {escape(str(plan.version))} "
                  f"({escape(str(plan.build))})", soft_wrap=True)
    elif not any(c.fits for c in candidates):
        con.print(f"No {display_name(framework)} build shown fits this machine.", soft_wrap=True)
    _print_nothing_fits(con, framework, plan)


def _print_nothing_fits(con, framework: str, plan: Optional[InstallPlan]) -> None:
    if plan is not None and not plan.ok:
        con.print(f"[red]`envdoctor install {framework}` finds no build to install with these options;[/] "
                  "it says why and what to change.", soft_wrap=True)


def _table(candidates: list[Candidate], plan: Optional[InstallPlan]) -> Table:
    builds = columns(candidates)
    table = Table(show_edge=False, pad_edge=False, header_style="bold")
    table.add_column("release")
    for build in builds:
        table.add_column(build, justify="center")
    table.add_column("Python")
    by_cell = {(c.version, c.build): c for c in candidates}
    for version in releases(candidates):
        cells = [escape(version)]
        pythons: list[str] = []
        for build in builds:
            c = by_cell.get((version, build))
            text, style = _cell(c, plan)
            cells.append(f"[{style}]{escape(text)}[/]")
            pythons.extend(c.pythons if c else ())
        cells.append(python_span(pythons))
        table.add_row(*cells)
    return table


def _cell(c: Optional[Candidate], plan: Optional[InstallPlan]) -> tuple[str, str]:
    if c is None:
        return NOT_PUBLISHED
    from envdoctor.render.marks import fit

    text, style = CHOSEN if is_chosen(c, plan) else CELLS.get(c.verdict, CELLS["other"])
    return fit(text), style  # [ok] where stdout cannot show the marks, so that the columns line up


def _legend(framework: str, candidates: list[Candidate], plan: Optional[InstallPlan]) -> str:
    """Only the marks the table uses."""
    used = {c.verdict if c.verdict in CELLS else "other" for c in candidates if not is_chosen(c, plan)}
    parts = []
    if any(is_chosen(c, plan) for c in candidates):
        parts.append(f"[{CHOSEN[1]}]{CHOSEN[0]}[/] chosen by `envdoctor install {framework}`")
    parts += [f"[{style}]{escape(text)}[/] {VERDICTS[key]}" for key, (text, style) in CELLS.items() if key in used]
    if len(releases(candidates)) * len(columns(candidates)) > len(candidates):
        parts.append("blank: not published")
    return "  ".join(parts)


def _print_newest_reasons(con, candidates: list[Candidate]) -> None:
    newest = releases(candidates)[0]
    misses = [c for c in candidates if c.version == newest and not c.fits and c.why]
    if not misses:
        return
    con.print(f"\nWhy {escape(newest)} does not fit in every build:")
    for c in sorted(misses, key=lambda c: build_order(c.build)):
        con.print(f"  {escape(c.build)}: {escape(c.why)}", soft_wrap=True)


def _print_other_reasons(con, candidates: list[Candidate], limit: int = 6) -> None:
    """"✗" cells say nothing by themselves: one line per distinct reason, with where it applies."""
    newest = releases(candidates)[0]
    where: dict[str, list[str]] = {}
    for c in candidates:
        if c.verdict == "other" and c.why and c.version != newest:
            where.setdefault(c.why, []).append(f"{c.version} {c.build}")
    if not where:
        return
    con.print(f"\nWhere {CELLS['other'][0]} does not fit:")
    for why, cells in list(where.items())[:limit]:
        span = cells[0] if len(cells) == 1 else f"{cells[-1]} … {cells[0]}"
        con.print(f"  {escape(span)}: {escape(why)}", soft_wrap=True)
