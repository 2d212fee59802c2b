"""`envdoctor dockerfile [PATH]` and `envdoctor compose [PATH]`: a container build judged as the machine
it describes, with the same matrices and rules as `check`."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

HostOption = typer.Option(None, "--facts", metavar="HOST", help="The host that will run the image (JSON from `envdoctor facts` there): its driver and GPUs are checked against what the image needs.")
PlatformOption = typer.Option(None, "--platform", metavar="OS/ARCH", help="The build's target platform (default: the FROM line's --platform, else linux/amd64).")
JsonOption = typer.Option(False, "--json", help="Print the result as JSON.")
StrictOption = typer.Option(False, "--strict", help="Exit 1 on warnings too.")
ExpectOption = typer.Option(None, "--expect", metavar="FILE", help="A TOML policy (driver, gpus, torch, torch_build, forbid, ...) applied to the machine the build describes, with the host's driver and GPUs from --facts; each deviation is a policy-violation.")
COMPOSE_NAMES = ("compose.yaml", "compose.yml", "docker-compose.yaml", "docker-compose.yml")


def register(app: typer.Typer) -> None:
    app.command(name="dockerfile")(dockerfile)
    app.command(name="compose")(compose)


def dockerfile(
    path: str = typer.Argument("Dockerfile", help="The Dockerfile (default: ./Dockerfile)."),
    context: Optional[str] = typer.Option(None, "--context", metavar="DIR", help="The build context, where COPY and `pip install -r` files are read (default: the Dockerfile's folder)."),
    target: Optional[str] = typer.Option(None, "--target", metavar="STAGE", help="The stage to judge (default: the last one, as `docker build`)."),
    build_arg: Optional[list[str]] = typer.Option(None, "--build-arg", metavar="NAME=VALUE", help="A build argument, as `docker build --build-arg`."),
    platform: Optional[str] = PlatformOption,
    host_facts: Optional[str] = HostOption,
    expect: Optional[str] = ExpectOption,
    json_out: bool = JsonOption,
    strict: bool = StrictOption,
) -> None:
    """Judge a Dockerfile's final stage: the machine it builds, diagnosed with the same rules as `check`."""
    from envdoctor.container.judge import judge_dockerfile, load_host
    from envdoctor.errors import UsageError

    args = {}
    for item in build_arg or ():
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise UsageError(f"--build-arg {item!r}: expected NAME=VALUE")
        args[name] = value
    if Path(path).is_dir():
        path = str(Path(path) / "Dockerfile")
    if context is not None and not Path(context).is_dir():
        raise UsageError(f"--context {context!r}: no such directory (the build context is a folder)")
    from envdoctor.container.judge import add_policy
    from envdoctor.render.container import print_dockerfile

    _judge_and_report(lambda target_platform: judge_dockerfile(path, context, target, target_platform,
                                                               load_host(host_facts), args),
                      add_policy, print_dockerfile, platform, expect, json_out, strict)


def compose(
    path: Optional[str] = typer.Argument(None, help="The compose file (default: compose.yaml / docker-compose.yml here)."),
    platform: Optional[str] = PlatformOption,
    host_facts: Optional[str] = HostOption,
    expect: Optional[str] = ExpectOption,
    json_out: bool = JsonOption,
    strict: bool = StrictOption,
) -> None:
    """Judge a compose file: each service's GPU access, devices, shared memory, and its build."""
    from envdoctor.container.compose import judge_compose
    from envdoctor.container.judge import load_host
    from envdoctor.errors import UsageError

    if path is None or Path(path).is_dir():
        folder = Path(path or ".")
        found = next((folder / n for n in COMPOSE_NAMES if (folder / n).is_file()), None)
        if found is None:
            raise UsageError(f"no compose file in {folder} (looked for {', '.join(COMPOSE_NAMES)})")
        path = str(found)
    from envdoctor.render.container import print_compose

    _judge_and_report(lambda target_platform: judge_compose(path, target_platform, load_host(host_facts)),
                      _compose_policy, print_compose, platform, expect, json_out, strict)


def _judge_and_report(judge, apply_policy, printer, platform: Optional[str], expect: Optional[str],
                      json_out: bool, strict: bool) -> None:
    """What both commands do once their file is found: read --platform and --expect (bad ones exit 2 before
    anything is judged), judge, apply the policy, print (JSON or text) and exit with the verdict."""
    from envdoctor.render import console, print_json

    platform = _platform(platform)
    policy = _policy(expect)
    judgement = judge(platform)
    if policy is not None:
        apply_policy(judgement, policy)
    if json_out:
        print_json(judgement.to_dict())
    else:
        printer(console(), judgement)
    raise typer.Exit(_exit(judgement.findings, strict))


def _platform(platform: Optional[str]) -> Optional[str]:
    """--platform as docker spells it; one envdoctor cannot read is refused, never judged as amd64."""
    if platform is None:
        return None
    from envdoctor.container.to_facts import _PLATFORMS
    from envdoctor.errors import UsageError

    value = platform.strip().lower()
    if value not in _PLATFORMS:
        raise UsageError(f"--platform {platform[:60]!r}: not a platform envdoctor knows (choose {', '.join(_PLATFORMS)})")
    return value


def _policy(expect: Optional[str]):
    if expect is None:
        return None
    from envdoctor.policy import load_policy

    return load_policy(expect)  # a malformed policy: PolicyError, exit 2 before anything is read


def _compose_policy(judgement, policy) -> None:
    """The policy applied to each service built from a Dockerfile (a service that only names an image
    describes no machine envdoctor can read)."""
    from envdoctor.container.judge import SEVERITY_ORDER, add_policy

    for name, build in judgement.builds.items():
        judgement.findings.extend(add_policy(build, policy, service=name))
    judgement.findings.sort(key=lambda f: SEVERITY_ORDER[f.finding.severity])


def _exit(findings, strict: bool) -> int:
    severities = {f.finding.severity for f in findings}
    return 1 if "error" in severities or (strict and "warning" in severities) else 0
