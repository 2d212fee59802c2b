"""Reports made to be pasted into an issue: `check --markdown` and `facts --markdown`.

The layout (its first line is the marker `<!-- envdoctor-report v1 -->`):

- envdoctor's version and the matrices' newest `checked` date;
- the one-line verdict and each finding with its fixes (`report_markdown` only);
- the full facts document (schema envdoctor.facts/1) in a ```json block inside `<details>`, which
  `envdoctor explain` reads back as it is (the JSON, not the prose around it).

Redaction (on by default, `redact=False` keeps everything): home folders `/home/NAME`, `/Users/NAME`,
`C:\\Users\\NAME` become `~`; the user names seen in them (and this session's user) become `<user>`
wherever they stand as a whole word; the host name becomes `<host>` (host names are often made of the
owner's name, and no diagnosis uses them). Generic account names (root, ubuntu, runner...) say nothing
about a person and are kept, so that "Ubuntu 24.04" stays readable.
"""

from __future__ import annotations

import json
import re
from typing import Any, Iterable, Optional

MARKER = "<!-- envdoctor-report v1 -->"
USER = "<user>"
HOST = "<host>"

# Home folders: the prefix that stays (as "~") and the user name that goes.
_HOMES = (
    re.compile(r"(?<![\w/])/home/(?P<name>[^/\s\"'\\:]{1,64})"),
    re.compile(r"(?<![\w/])/Users/(?P<name>[^/\s\"'\\:]{1,64})"),
    re.compile(r"(?<![\w])[A-Za-z]:[\\/]+Users[\\/]+(?P<name>[^\\/\s\"':]{1,64})", re.IGNORECASE),
)
# Account names that identify nobody (images' default users, CI runners): never replaced as words.
_GENERIC_USERS = frozenset({
    "root", "user", "users", "admin", "administrator", "ubuntu", "debian", "ec2-user", "runner", "vscode",
    "jovyan", "default", "public", "shared", "guest", "nobody", "app", "docker", "nvidia", "colab", "kaggle",
})


def report_markdown(facts, findings, timings: Optional[dict] = None, redact: bool = True) -> str:
    """The issue-ready report of a diagnosed machine (`check --markdown`)."""
    windows = facts.host.os == "windows"
    lines = [MARKER, "## envdoctor report", "", _provenance_line(), ""]
    lines += [f"**Verdict:** {verdict(findings, len(facts.errors))}", ""]
    if findings:
        lines += ["### Findings", ""]
        for f in findings:
            lines += _finding_lines(f, windows)
    if facts.errors:
        lines += ["### Probe errors", ""]
        lines += [f"- `{e.probe or 'a probe'}`: {_inline(e.message or 'failed')}" for e in facts.errors]
        lines.append("")
    if timings:
        total = sum(timings.values())
        lines += [f"Probes took {total * 1000:.0f} ms in all.", ""]
    lines += _facts_block(facts)
    return _finish(lines, facts, redact)


def facts_markdown(facts, redact: bool = True) -> str:
    """The facts of a machine, ready to paste (`facts --markdown`): no diagnosis, just what was seen."""
    lines = [MARKER, "## envdoctor facts", "", _provenance_line(), "", f"**Machine:** {_inline(machine_line(facts))}", ""]
    lines += _facts_block(facts)
    return _finish(lines, facts, redact)


def _finish(lines: list[str], facts, redact: bool) -> str:
    text = "\n".join(lines) + "\n"
    if not redact:
        return text
    hosts = [facts.host.hostname] if facts.host.hostname else []
    return redact_text(text, _user_names(facts), hosts)


def verdict(findings, probe_errors: int = 0) -> str:
    """The report's one-line verdict, in the words `envdoctor check` ends with."""
    errors = sum(f.severity == "error" for f in findings)
    warnings = sum(f.severity == "warning" for f in findings)
    unknown = f" {_plural(probe_errors, 'probe error')}: see below." if probe_errors else ""
    if errors or warnings:
        return f"{_plural(errors, 'error')}, {_plural(warnings, 'warning')}. Fixes are listed under each problem.{unknown}"
    if unknown:
        return f"No problems found, but{unknown}"
    return "No problems found."


def machine_line(facts) -> str:
    """One line that names the machine: OS, arch, Python, GPUs, driver."""
    h, p = facts.host, facts.python
    parts = [h.distro or h.os or "OS unknown"]
    if h.arch:
        parts.append(h.arch)
    if h.wsl:
        parts.append("WSL2")
    if p.version:
        parts.append(f"Python {p.version}")
    names = [g.name for g in facts.gpus if g.name]
    if names:
        parts.append(", ".join(names))
    if facts.nvidia is not None and facts.nvidia.driver_version:
        parts.append(f"driver {facts.nvidia.driver_version}")
    return "; ".join(parts)


# --- pieces ----------------------------------------------------------------------------------------

def _provenance_line() -> str:
    from envdoctor import __version__
    from envdoctor.render import matrices_checked

    checked = matrices_checked()
    return f"envdoctor {__version__}" + (f", matrices checked {checked}" if checked else "")


def _finding_lines(f, windows: bool) -> list[str]:
    from envdoctor.findings import render_fix

    lines = [f"- **{f.severity}** `{f.code}`: {_inline(f.title)}"]
    if f.detail:
        lines.append(f"  {_inline(f.detail)}")
    for fix in f.fix:
        text = render_fix(fix, windows)
        lines.append(f"  - fix: {_code(text)}" if isinstance(fix, tuple) else f"  - fix: {_inline(text)}")
    lines.append("")
    return lines


def _facts_block(facts) -> list[str]:
    from envdoctor.render import document

    body = json.dumps(document(facts.to_dict(), "envdoctor.facts/1"), indent=2, ensure_ascii=False)
    return ["<details><summary>Facts (envdoctor.facts/1)</summary>", "", "```json", body, "```", "", "</details>"]


def _inline(text: str) -> str:
    """Prose on one line, with HTML kept from being read as tags."""
    return " ".join(str(text).split()).replace("<", "&lt;")


def _code(text: str) -> str:
    """`text` as inline code, with a fence longer than any run of backticks inside it."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


# --- redaction -------------------------------------------------------------------------------------

def _user_names(facts) -> list[str]:
    """The user names to hide: those of the home folders in the facts, and this session's."""
    import getpass

    text = json.dumps(facts.to_dict(), ensure_ascii=False)
    names = set()
    for pattern in _HOMES:
        names.update(m.group("name") for m in pattern.finditer(text.replace("\\\\", "\\")))
    try:
        names.add(getpass.getuser())
    except Exception:  # no user name (a uid without a passwd entry): nothing to hide
        pass
    hostname = facts.host.hostname
    return sorted(n for n in names if n and n.lower() not in _GENERIC_USERS and n != hostname)


# A home folder at the start of a shell-quoted word ('/home/NAME/my venv/bin/python'): the `~` that
# replaces it must stay outside the quotes, where the shell expands it (~/'my venv/bin/python').
_QUOTED_HOME = re.compile(r"'/(?:home|Users)/(?P<name>[^/\s\"'\\:]{1,64})(?P<after>/|')")


def _quoted_home(match: re.Match) -> str:
    if match.group("name").lower() in _GENERIC_USERS:
        return match.group(0)
    return "~/'" if match.group("after") == "/" else "~"


def redact_text(text: str, user_names: Iterable[str] = (), hostnames: Iterable[str] = ()) -> str:
    """Home folders -> "~", the given user names -> "<user>", the given host names -> "<host>"."""
    text = _QUOTED_HOME.sub(_quoted_home, text)
    for pattern in _HOMES:
        text = pattern.sub(lambda m: "~" if m.group("name").lower() not in _GENERIC_USERS else m.group(0), text)
    for name in sorted(set(hostnames), key=len, reverse=True):
        if name and len(name) >= 2:
            text = re.sub(rf"(?<![\w.-]){re.escape(name)}(?![\w-])", HOST, text)
    for name in sorted(set(user_names), key=len, reverse=True):
        if len(name) >= 3 and name.lower() not in _GENERIC_USERS:  # "jo" would eat parts of words
            text = re.sub(rf"(?<![\w.-]){re.escape(name)}(?![\w-])", USER, text)
    return text


def redact_document(data: Any, user_names: Iterable[str] = (), hostnames: Iterable[str] = ()) -> Any:
    """A JSON value with every string redacted like `redact_text` (keys too)."""
    names, hosts = tuple(user_names), tuple(hostnames)
    if isinstance(data, str):
        return redact_text(data, names, hosts)
    if isinstance(data, list):
        return [redact_document(v, names, hosts) for v in data]
    if isinstance(data, dict):
        return {redact_text(k, names, hosts) if isinstance(k, str) else k: redact_document(v, names, hosts)
                for k, v in data.items()}
    return data
