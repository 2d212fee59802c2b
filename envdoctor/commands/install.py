"""`envdoctor install FRAMEWORK`: the command that installs a build that really runs on this machine.

Exit codes: 0 a plan was found (and, with --run, installed and verified); 1 nothing fits, or the
installation failed; 2 usage error (bad option, unknown framework, a refused --run); 128+N when --run
was stopped by signal N (130 Ctrl-C, 143 SIGTERM, 129 SIGHUP), after the rollback.
"""

from __future__ import annotations

import os
import sys
from typing import Optional

import typer

from envdoctor.commands.common import FactsOption, PythonOption, obtain_facts
from envdoctor.errors import UsageError

def register(app: typer.Typer) -> None:
    app.command()(install)


def install(
    ctx: typer.Context,
    framework: str = typer.Argument(..., help="pytorch (torch), tensorflow (tf), jax or paddle (paddlepaddle)."),
    version: Optional[str] = typer.Option(None, "--version", metavar="SPEC", help="A release or PEP 440 specifier: 2.6, '>=2.5,<2.8'."),
    cuda: str = typer.Option("auto", "--cuda", help="auto, cpu, a CUDA version (12.8), a build (cu128) or a ROCm build (rocm6.4)."),
    manager: str = typer.Option("pip", "--manager", envvar="ENVDOCTOR_MANAGER", help="pip, uv or conda (cuda-toolkit: also apt)."),
    python: Optional[str] = PythonOption,
    facts_file: Optional[str] = FactsOption,
    json_out: bool = typer.Option(False, "--json", help="Print the plan as JSON."),
    run: bool = typer.Option(False, "--run", help="Run the commands in the target environment (--python, else an active venv/conda env, a .venv here or above, the python on PATH; never envdoctor's own unless --python names it) after asking, then verify the result; a failure, Ctrl-C, SIGTERM or SIGHUP puts the previous packages back."),
    yes: bool = typer.Option(False, "--yes", "-y", help="With --run: do not ask for confirmation."),
    allow_system: bool = typer.Option(False, "--allow-system", help="With --run: allow writing into a system interpreter or a conda base env."),
    index_url: Optional[str] = typer.Option(None, "--index-url", metavar="URL", envvar="ENVDOCTOR_INDEX", help="Use this index instead of the vendor's package index the plan names (PyTorch's, Paddle's, a Jetson index)."),
    mirror: Optional[str] = typer.Option(None, "--mirror", metavar="NAME", envvar="ENVDOCTOR_MIRROR", help="A known mirror of the vendor's index (recipes/mirrors.toml), e.g. nju."),
) -> None:
    """Print the command that installs FRAMEWORK for this machine (or for --facts FILE)."""
    from envdoctor.plan.cuda_toolkit import ALIASES as TOOLKIT_ALIASES

    refuse_empty_options(version=version, cuda=cuda, manager=manager, index_url=index_url, mirror=mirror)
    if framework.strip().lower() in TOOLKIT_ALIASES:  # not a framework: its own planner (--run refused there)
        from envdoctor.plan import cuda_toolkit

        refuse_framework_options(ctx, version, index_url, mirror)
        manager = validated_choice(manager_source(ctx), manager, cuda_toolkit.MANAGERS)
        raise typer.Exit(cuda_toolkit.install_command(cuda, manager, python, facts_file, json_out, run))
    from envdoctor.plan import MANAGERS, PlanRequest, canonical_framework

    request = PlanRequest(
        framework=canonical_framework(framework),
        version=validated_version(version),
        cuda=validated_cuda(cuda),
        manager=validated_choice(manager_source(ctx), manager, MANAGERS),
        index_url=validated_index_url(index_url, option_source(ctx, "index_url", "--index-url ", "ENVDOCTOR_INDEX=")),
        mirror=validated_mirror(mirror, option_source(ctx, "mirror", "--mirror ", "ENVDOCTOR_MIRROR=")),
    )
    if facts_file and python:
        raise UsageError("--facts and --python name two different targets; give one of them")
    if run and facts_file:
        raise UsageError("--run installs into this machine; it cannot be combined with --facts FILE")
    if run and json_out:
        raise UsageError("--run asks before it runs; it cannot be combined with --json")
    chosen = None if facts_file else chosen_target(python)
    if run:
        require_safe_target(chosen)
    interactive = sys.stdin.isatty()
    if run and not (yes or interactive):  # known before probing: say it at once, in one line
        from envdoctor.plan.run import NO_TERMINAL

        raise UsageError(NO_TERMINAL)

    facts, _ = obtain_facts(facts_file, chosen)
    require_python(facts)
    if not facts_file:  # this machine: its pip/uv configuration names the default registry
        request = with_registry(request, facts)
    plan = plan_for(facts, request)
    if json_out:
        from envdoctor.render import print_json

        print_json(plan.to_dict())
        raise typer.Exit(0 if plan.ok else 1)

    from envdoctor.render import console
    from envdoctor.render.plan import print_plan

    con = console()
    print_plan(con, plan, facts)
    if not plan.ok:
        raise typer.Exit(1)
    if run:
        from envdoctor.plan.run import run_plan

        raise typer.Exit(run_plan(con, plan, facts, assume_yes=yes, allow_system=allow_system,
                                  interactive=interactive))


def refuse_framework_options(ctx, version: Optional[str], index_url: Optional[str], mirror: Optional[str]) -> None:
    """cuda-toolkit takes its release from --cuda and its packages from NVIDIA's channels: a --version,
    --index-url or --mirror typed for it would be ignored, so it is refused (the ENVDOCTOR_INDEX /
    ENVDOCTOR_MIRROR variables, set for the frameworks, are not)."""
    if version is not None:
        raise UsageError("--version does not apply to cuda-toolkit: give the release as --cuda X.Y (e.g. --cuda 12.8)")
    for name, value in (("index_url", index_url), ("mirror", mirror)):
        source = ctx.get_parameter_source(name) if ctx is not None else None
        if value is not None and getattr(source, "name", None) != "ENVIRONMENT":
            option = "--" + name.replace("_", "-")
            raise UsageError(f"{option} does not apply to cuda-toolkit (its packages come from conda channels, "
                             "NVIDIA's apt repository or the default registry)")


def chosen_target(python: Optional[str]):
    """The target interpreter by envdoctor.target's rule (an unrunnable --python: exit 2)."""
    from envdoctor.probe.pyenv import resolve_target

    return resolve_target(python, os.environ)


def require_safe_target(chosen) -> None:
    """--run writes only into an environment the user chose: --python, a live activated environment, or
    the project's .venv / the python on PATH. A stale VIRTUAL_ENV/CONDA_PREFIX, or a target that is
    envdoctor's own interpreter (a pipx or `uv tool` venv) not named by --python, is refused before
    anything runs."""
    if chosen.source == "--python":
        return
    if chosen.stale:
        raise UsageError(f"--run: {chosen.stale[0]} names no Python interpreter (a removed or moved environment), "
                         f"so the target is unclear; activate an existing environment or pass --python PATH")
    if chosen.own:
        raise UsageError(f"--run: the target would be envdoctor's own interpreter ({chosen}, {chosen.why}); "
                         f"pass --python {chosen} if that is the environment to install into, or activate another one")


def with_registry(request, facts):
    import dataclasses

    from envdoctor.plan.common import configured_index

    return dataclasses.replace(request, registry=configured_index(request.manager, os.environ, facts.python.env_path))


def require_python(facts) -> None:
    """A plan needs the target's Python version; when the probe could not run it, say so (exit 2)."""
    if facts.python.version:
        return
    why = next((e.message for e in facts.errors if e.probe == "python"), None)
    raise UsageError(why or f"cannot tell the Python version of {facts.python.executable or 'the target interpreter'}")


def plan_for(facts, request):
    """make_plan, with a missing framework planner reported as one line instead of a traceback."""
    from envdoctor.plan import make_plan

    try:
        return make_plan(facts, request)
    except ModuleNotFoundError as exc:
        if exc.name != f"envdoctor.plan.{request.framework}":
            raise
        raise UsageError(f"planning for {request.framework} is not available in this build of envdoctor yet") from None


def refuse_empty_options(**values: Optional[str]) -> None:
    """An option given as '' (or only blanks) is a slip, not a request for the default: each is refused alike."""
    for name, value in values.items():
        if value is not None and not value.strip():
            raise UsageError(f"--{name.replace('_', '-')} is empty: give a value, or leave the option out for the default")


def validated_version(spec: Optional[str]) -> Optional[str]:
    """Check --version with the planners' own reading of it (plan.common.version_spec), so a value the
    CLI lets through is one every planner reads the same way."""
    if spec is None:
        return None
    from envdoctor.plan.common import version_spec

    spec = spec.strip()
    try:
        version_spec(spec)
    except UsageError:
        raise UsageError(f"--version {spec!r} is neither a version (2.6) nor a specifier ('>=2.5,<2.8')") from None
    return spec


def validated_cuda(value: str) -> str:
    """The one --cuda parser (plan.common.cuda_request), plus: a CUDA version the driver table does
    not know is refused here. What a framework's builds accept (a bare major for JAX) is its planner's call."""
    value = value.strip().lower()
    from envdoctor.plan.common import cuda_request

    kind, cuda = cuda_request(value)
    if kind == "cuda" and "." in cuda:
        from envdoctor.matrix import drivers

        if drivers.wheel_min_driver(cuda) is None:  # no CUDA series the driver table knows: 99.9, cu102
            rows = drivers.wheel_minimums()
            low, high = min(r.cuda_from for r in rows), max(r.cuda_to for r in rows)
            raise UsageError(f"--cuda {value!r}: CUDA {cuda} is not a CUDA version envdoctor knows "
                             f"({low[0]}.{low[1]} to {high[0]}.{high[1]})")
    return value


def manager_source(ctx) -> str:
    """How the user gave the manager: `--manager`, or the ENVDOCTOR_MANAGER variable (so that a bad value
    names where it came from). click's ParameterSource is compared by name: typer may vendor click."""
    source = ctx.get_parameter_source("manager") if ctx is not None else None
    if getattr(source, "name", None) == "ENVIRONMENT":
        return "ENVDOCTOR_MANAGER="
    return "--manager "


def validated_choice(option: str, value: str, choices) -> str:
    value = value.strip().lower()
    if value not in choices:
        raise UsageError(f"{option}{value!r} is not one of: {', '.join(choices)}")
    return value


def option_source(ctx, name: str, option: str, variable: str) -> str:
    """How a bad value reached us, for its error message: the option, or the environment variable."""
    source = ctx.get_parameter_source(name) if ctx is not None else None
    return variable if getattr(source, "name", None) == "ENVIRONMENT" else option


def validated_index_url(url: Optional[str], option: str = "--index-url ") -> Optional[str]:
    if url is None:
        return None
    url = url.strip()
    if not url or len(url) > 2000 or any(c.isspace() for c in url) or "://" not in url:
        raise UsageError(f"{option}{url[:80]!r} is not a URL (https://host/simple/, file:///path)")
    scheme = url.split("://", 1)[0].lower()
    if scheme not in ("http", "https", "file"):  # the schemes pip's index code can fetch from
        raise UsageError(f"{option}{url[:80]!r}: pip cannot use a {scheme[:20]!r} URL (use http, https or file)")
    return url


def validated_mirror(name: Optional[str], option: str = "--mirror ") -> Optional[str]:
    if name is None:
        return None
    from envdoctor.plan.recipes import mirror_names

    name = name.strip().lower()
    known = mirror_names()
    if name not in known:
        raise UsageError(f"{option}{name[:40]!r} is not a known mirror (choose {', '.join(known)}, or pass --index-url URL)")
    return name
