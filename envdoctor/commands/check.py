"""`envdoctor check` and `envdoctor facts`.

Output formats (`--format`): console (people), json (`--json`), markdown (`--markdown`, redacted
unless `--no-redact`), oneline (NHC, Slurm, node-problem-detector, clush) and prometheus
(node_exporter's textfile collector; `--textfile-dir DIR` writes DIR/envdoctor.prom atomically).

`--profile node` is the health-check profile: passive probes only (no framework import, no CUDA
context, no compiler: `--build` is refused there unless it replays `--facts`), the whole run bounded (ENVDOCTOR_NODE_BUDGET seconds, default 20, under NHC's 30 s
watchdog and Slurm's 60 s kill), and exit 2 whenever it cannot judge: a hung or failing probe is
"unknown", never "healthy".
"""

from __future__ import annotations

import os
import sys
import threading
from typing import Optional

import typer

from envdoctor.commands.common import FactsOption, PythonOption, exit_code_for, obtain_facts

FORMATS = ("console", "json", "markdown", "oneline", "prometheus")
PROFILES = ("default", "node")
NODE_BUDGET = 20.0  # seconds for the whole node-profile run
NODE_PROBE_TIMEOUT = "5"  # seconds per probe subprocess in the node profile (unless ENVDOCTOR_PROBE_TIMEOUT is set)


def register(app: typer.Typer) -> None:
    app.command()(check)
    app.command()(facts)


def check(
    output_format: Optional[str] = typer.Option(None, "--format", metavar="FORMAT",
                                                help="console | json | markdown | oneline | prometheus."),
    json_out: bool = typer.Option(False, "--json", help="Print the report as JSON (schema envdoctor.report/1); short for --format json."),
    markdown_out: bool = typer.Option(False, "--markdown", help="Print an issue-ready Markdown report; short for --format markdown."),
    no_redact: bool = typer.Option(False, "--no-redact", help="Keep user names, host names and home paths in the Markdown report."),
    facts_file: Optional[str] = FactsOption,
    python: Optional[str] = PythonOption,
    deep: bool = typer.Option(False, "--deep", help="Import each installed framework (in its own subprocess) to read its build."),
    profile: str = typer.Option("default", "--profile", metavar="PROFILE",
                                help="default | node: passive health-check probes in a bounded time, exit 2 when it cannot judge."),
    textfile_dir: Optional[str] = typer.Option(None, "--textfile-dir", metavar="DIR",
                                               help="Also write the Prometheus metrics to DIR/envdoctor.prom (atomically)."),
    expect: Optional[str] = typer.Option(None, "--expect", metavar="FILE",
                                         help="A TOML policy (driver, gpus, gpu_model, torch, ...); each deviation is a policy-violation."),
    verbose: bool = typer.Option(False, "-v", "--verbose", help="Show paths, sources, evidence and probe timings."),
    strict: bool = typer.Option(False, "--strict", help="Exit 1 on warnings and failed probes too."),
    build: bool = typer.Option(False, "--build", help="Also check what building CUDA extensions needs: nvcc vs torch, CUDA_HOME, host compiler, ninja, Python.h. "
                                    "Not with --profile node on a live machine (it runs compilers, outside the node's time budget); "
                                    "with --facts FILE it judges the recorded build block."),
) -> None:
    """Probe this machine (or replay --facts FILE), diagnose it and print what is wrong and how to fix it."""
    fmt = _chosen_format(output_format, json_out, markdown_out)
    node = _chosen_profile(profile, deep)
    _refuse_build_on_node(node, build, facts_file)
    policy = _load_policy(expect)
    if textfile_dir is not None and not os.path.isdir(textfile_dir):
        from envdoctor.errors import UsageError

        why = "not a directory" if os.path.exists(textfile_dir) else "no such directory"
        raise UsageError(f"--textfile-dir {textfile_dir}: {why}")
    facts, findings, timings = _diagnosed(facts_file, python, deep, node, on_timeout=lambda: _budget_spent(fmt, textfile_dir))
    if build:  # probe the build tools and judge them (a --facts file keeps the build block it recorded)
        from envdoctor.probe.build import add_build

        facts, findings, timings = add_build(facts, findings, timings, facts_file)
    findings = _with_policy(policy, facts, findings)  # last: `forbid` sees every finding
    unknown = cannot_judge(facts, findings, strict)
    if textfile_dir is not None:
        _write_textfile(textfile_dir, facts, findings, strict, unknown)
    _render(fmt, facts, findings, timings, verbose, strict, unknown, redact=not no_redact)
    if node:
        code = node_exit_code(findings, strict, unknown)
        if code == 2:  # exit 2 says why on stderr, in one line, whatever the report on stdout said
            sys.stdout.flush()
            sys.stderr.write(f"envdoctor: cannot judge this node: {' '.join(str(unknown).split())}\n")
        raise typer.Exit(code)
    raise typer.Exit(exit_code_for(findings, strict, probe_failed=bool(facts.errors)))


def facts(
    python: Optional[str] = PythonOption,
    deep: bool = typer.Option(False, "--deep", help="Also import each installed framework to read its build."),
    markdown_out: bool = typer.Option(False, "--markdown", help="Print the facts as Markdown, ready to paste into an issue."),
    no_redact: bool = typer.Option(False, "--no-redact", help="Keep user names, host names and home paths in the Markdown."),
    ansible_fact: bool = typer.Option(False, "--ansible-fact",
                                      help="One JSON object for Ansible's facts.d (ok, exit, summary, facts, findings); always exits 0."),
    profile: str = typer.Option("default", "--profile", metavar="PROFILE",
                                help="default | node: passive probes bounded by ENVDOCTOR_NODE_BUDGET seconds; "
                                     "past it, one line on stderr and exit 2 (no partial facts)."),
    expect: Optional[str] = typer.Option(None, "--expect", metavar="FILE", help="With --ansible-fact: apply a TOML policy."),
    facts_file: Optional[str] = typer.Option(None, "--facts", metavar="FILE", help="With --ansible-fact: judge a recorded machine instead of probing."),
) -> None:
    """Print the probed Facts as JSON (replay them later with `check --facts FILE`)."""
    if ansible_fact:
        _print_ansible_fact(python, deep, profile, expect, facts_file)
        raise typer.Exit(0)
    if facts_file:
        from envdoctor.errors import UsageError

        raise UsageError("--facts FILE replays a recorded machine: use it with --ansible-fact or `envdoctor check`")
    if expect:  # a policy judges; plain facts only record: it would be ignored
        from envdoctor.errors import UsageError

        raise UsageError("--expect FILE applies a policy: use it with --ansible-fact or `envdoctor check --expect`")
    if _chosen_profile(profile, deep):
        os.environ.setdefault("ENVDOCTOR_PROBE_TIMEOUT", NODE_PROBE_TIMEOUT)
        probed, _ = _within(node_budget(), lambda: obtain_facts(None, python, False, completed=False), _facts_timeout)
    else:
        probed, _ = obtain_facts(None, python, deep, completed=False)
    if markdown_out:
        from envdoctor.render.markdown import facts_markdown

        sys.stdout.write(_ending(facts_markdown(probed, redact=not no_redact)))
        return
    from envdoctor.render import print_json

    print_json(probed.to_dict())


# --- choices ------------------------------------------------------------------------------------

def _chosen_format(output_format: Optional[str], json_out: bool, markdown_out: bool) -> str:
    from envdoctor.errors import UsageError

    shorts = [name for name, given in (("json", json_out), ("markdown", markdown_out)) if given]
    if output_format is not None and output_format not in FORMATS:
        raise UsageError(f"--format {output_format!r}: choose one of {', '.join(FORMATS)}")
    chosen = set(shorts) | ({output_format} if output_format else set())
    if len(chosen) > 1:
        raise UsageError(f"give one output format, not {' and '.join(sorted(chosen))}")
    return chosen.pop() if chosen else "console"


def _chosen_profile(profile: str, deep: bool) -> bool:
    from envdoctor.errors import UsageError

    if profile not in PROFILES:
        raise UsageError(f"--profile {profile!r}: choose one of {', '.join(PROFILES)}")
    if profile == "node" and deep:
        raise UsageError("--profile node is passive (no framework import); drop --deep")
    return profile == "node"


def _refuse_build_on_node(node: bool, build: bool, facts_file: Optional[str]) -> None:
    """--build runs nvcc and the host compilers (seconds each, more on a cold cache): the node profile
    promises a passive run within its budget, so probing them there is a usage error."""
    if node and build and not facts_file:
        from envdoctor.errors import UsageError

        raise UsageError("--profile node is passive and bounded in time; --build runs compilers: "
                         "drop --build (or judge a recorded machine with --facts FILE)")


def _load_policy(expect: Optional[str]):
    if expect is None:
        return None
    from envdoctor.policy import load_policy

    return load_policy(expect)


# --- probing and judging -----------------------------------------------------------------------

def _diagnosed(facts_file, python, deep, node: bool, on_timeout):
    """Facts, findings (the policy's not yet) and timings; in the node profile bounded in time."""
    from envdoctor.diagnose import diagnose, prepare

    if node and not facts_file:
        os.environ.setdefault("ENVDOCTOR_PROBE_TIMEOUT", NODE_PROBE_TIMEOUT)
        facts, timings = _within(node_budget(), lambda: obtain_facts(None, python, False, meanwhile=prepare), on_timeout)
    else:
        facts, timings = obtain_facts(facts_file, python, deep, meanwhile=prepare)
    return facts, diagnose(facts), timings


def _with_policy(policy, facts, findings):
    """The findings plus the policy's violations (none without a policy)."""
    if policy is None:
        return findings
    return findings + policy.check(facts.to_dict(), findings)


def node_budget() -> float:
    try:
        value = float(os.environ.get("ENVDOCTOR_NODE_BUDGET", ""))
    except ValueError:
        return NODE_BUDGET
    return value if 0 < value <= 300 else NODE_BUDGET


def _within(budget: float, work, on_timeout):
    """Run `work` in a thread; past `budget` seconds call `on_timeout` (which ends the process)."""
    box: dict = {}

    def run() -> None:
        try:
            box["value"] = work()
        except BaseException as exc:  # re-raised in the caller's thread
            box["error"] = exc

    thread = threading.Thread(target=run, name="envdoctor-node-probe", daemon=True)
    thread.start()
    thread.join(budget)
    if thread.is_alive():
        on_timeout()
    if "error" in box:
        raise box["error"]
    return box["value"]


def _budget_spent(fmt: str, textfile_dir: Optional[str]) -> None:
    """The probes did not finish within the node budget: say "unknown" and exit 2 at once (a
    wedged driver can leave a probe thread blocked; waiting for it is what a watchdog kills)."""
    reason = f"probes did not finish within {node_budget():g} s"
    try:
        if textfile_dir is not None:
            from envdoctor.facts import Facts

            _write_textfile(textfile_dir, Facts(), [], False, reason)
        if fmt == "oneline":
            sys.stdout.write(f"unknown: {reason}\n")
        elif fmt == "json":
            from envdoctor.render import print_json

            print_json({"facts": None, "findings": [], "summary": {"error": 0, "warning": 0, "info": 0, "unknown": reason},
                        "timings": {}})
        elif fmt != "prometheus":
            sys.stdout.write(f"envdoctor: cannot judge this node: {reason}\n")
        else:
            from envdoctor.render.prometheus import exposition
            from envdoctor import __version__

            sys.stdout.write(exposition({}, [], None, __version__))
        sys.stdout.flush()
    finally:
        sys.stderr.write(f"envdoctor: {reason}\n")
        sys.stderr.flush()
        os._exit(2)


def _facts_timeout() -> None:
    """`facts --profile node` past its budget: no facts to print (half a probe is no record)."""
    sys.stderr.write(f"envdoctor: probes did not finish within {node_budget():g} s; no facts recorded\n")
    sys.stderr.flush()
    os._exit(2)


def cannot_judge(facts, findings, strict: bool) -> Optional[str]:
    """Why the node cannot be judged (no problem was found, but a probe failed, the NVIDIA or Python
    facts were not recorded, or a policy rule could not be judged), or None."""
    from envdoctor.policy import CODE as POLICY_CODE
    from envdoctor.render.oneline import problems

    if problems(findings, strict):
        return None
    if facts.errors:
        first = facts.errors[0]
        more = f" (+{len(facts.errors) - 1} more)" if len(facts.errors) > 1 else ""
        return f"{first.probe}: {first.message}{more}"
    missing = [what for what, path in (("NVIDIA", "nvidia"), ("Python", "python.version")) if not facts.known(path)]
    if missing:
        return f"the facts do not record the {' or '.join(missing)} block"
    unjudged = [f for f in findings if f.code == POLICY_CODE and f.severity != "error"]  # the policy's "cannot judge"
    if unjudged:
        return unjudged[0].title
    return None


def node_exit_code(findings, strict: bool, unknown: Optional[str]) -> int:
    from envdoctor.render.oneline import problems

    if problems(findings, strict):
        return 1
    return 2 if unknown else 0


# --- output -------------------------------------------------------------------------------------

def _render(fmt: str, facts, findings, timings, verbose: bool, strict: bool, unknown: Optional[str], redact: bool) -> None:
    if fmt == "json":
        from envdoctor.render import print_json
        from envdoctor.render.report import report_document

        print_json(report_document(facts, findings, timings))
    elif fmt == "markdown":
        from envdoctor.render.markdown import report_markdown

        sys.stdout.write(_ending(report_markdown(facts, findings, timings, redact=redact)))
    elif fmt == "oneline":
        from envdoctor.render.oneline import oneline

        sys.stdout.write(oneline(findings, strict, unknown) + "\n")
    elif fmt == "prometheus":
        sys.stdout.write(_exposition(facts, findings, strict, unknown))
    else:
        from envdoctor.render import console
        from envdoctor.render.report import print_report

        print_report(console(), facts, findings, timings, verbose)


def _exposition(facts, findings, strict: bool, unknown: Optional[str]) -> str:
    from envdoctor import __version__
    from envdoctor.render.oneline import problems
    from envdoctor.render.prometheus import exposition

    healthy = None if unknown else not problems(findings, strict)
    return exposition(facts.to_dict(), findings, healthy, __version__)


def _write_textfile(directory: str, facts, findings, strict: bool, unknown: Optional[str]) -> None:
    from envdoctor.errors import UsageError
    from envdoctor.render.prometheus import write_textfile

    try:
        write_textfile(directory, _exposition(facts, findings, strict, unknown))
    except OSError as exc:
        raise UsageError(f"--textfile-dir {directory}: cannot write there: {_why_unwritable(directory, exc)}") from None


def _why_unwritable(directory: str, exc: OSError) -> str:
    """The real reason a file cannot be created in an existing directory: a pseudo file system such as
    /proc answers "No such file or directory", which would wrongly say the directory is missing."""
    import errno

    try:
        read_only = bool(os.statvfs(directory).f_flag & os.ST_RDONLY)
    except OSError:
        read_only = False
    if exc.errno == errno.EROFS or read_only:
        return "read-only file system"
    if exc.errno in (errno.EACCES, errno.EPERM):
        return "permission denied"
    if exc.errno == errno.ENOENT and os.path.isdir(directory):
        return "its file system does not accept new files (a pseudo file system such as /proc or /sys?)"
    return exc.strerror or str(exc)


def _ending(text: str) -> str:
    return text if text.endswith("\n") else text + "\n"


# --- Ansible facts.d ----------------------------------------------------------------------------

def _print_ansible_fact(python, deep, profile, expect, facts_file=None) -> None:
    """One JSON object, whatever happens: a facts.d script that fails becomes an error string."""
    import json

    from envdoctor import __version__
    from envdoctor.render import ANSIBLE_FACT_SCHEMA

    document = {"schema": ANSIBLE_FACT_SCHEMA, "envdoctor_version": __version__}
    try:
        node = _chosen_profile(profile, deep)
        policy = _load_policy(expect)
        facts_value, findings, _ = _diagnosed(facts_file, python, deep, node, on_timeout=lambda: _ansible_timeout(document))
        findings = _with_policy(policy, facts_value, findings)
        unknown = cannot_judge(facts_value, findings, False)
        code = node_exit_code(findings, False, unknown)  # a fact says "cannot judge" in any profile
        from envdoctor.render.oneline import oneline

        document.update(ok=code == 0, exit=code, summary=oneline(findings, False, unknown),
                        facts=facts_value.to_dict(), findings=[f.to_dict() for f in findings])
    except Exception as exc:  # a bad option or a bug still gives Ansible one object
        from envdoctor.render.oneline import fit

        document.update(ok=False, exit=2, summary=fit(f"unknown: {exc}"), facts=None, findings=[])
    sys.stdout.write(json.dumps(_with_head(document), ensure_ascii=False) + "\n")


def _with_head(document: dict) -> dict:
    """The head every JSON document carries (schema, envdoctor_version, matrices_checked), if it can be had."""
    try:
        from envdoctor.render import document as with_head

        return with_head(document)
    except Exception:  # the Ansible fact is printed whatever happens
        return document


def _ansible_timeout(document: dict) -> None:
    import json

    document.update(ok=False, exit=2, summary=f"unknown: probes did not finish within {node_budget():g} s",
                    facts=None, findings=[])
    sys.stdout.write(json.dumps(_with_head(document)) + "\n")
    sys.stdout.flush()
    os._exit(0)
