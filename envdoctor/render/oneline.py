"""The one-line verdict: `ok`, `<code>: <short title> (+N more)` or `unknown: <why>`.

Exactly one line of at most 80 characters, because node-problem-detector cuts its message at 80,
NHC and Slurm use it as a drain reason, and `clush -b` / `dshbak -c` coalesce identical lines.
No host names, paths or numbers that differ between healthy nodes: identical states read identically.
"""

from __future__ import annotations

import re
from typing import Iterable, Optional

from envdoctor.findings import Finding

WIDTH = 80
_CONTROL = re.compile(r"[\x00-\x1f\x7f]+")
# ASCII only: node-problem-detector cuts at 80 bytes, and a drain reason goes through Slurm's tools.
_ASCII = str.maketrans({"≥": ">=", "≤": "<=", "→": "->", "–": "-", "—": "-", "’": "'", "‘": "'", "“": '"',
                        "”": '"', "×": "x", "…": "...", "\u00a0": " "})


def problems(findings: Iterable[Finding], strict: bool = False) -> list[Finding]:
    """The findings that make a node unhealthy, errors first (warnings too with --strict)."""
    found = list(findings)
    errors = [f for f in found if f.severity == "error"]
    warnings = [f for f in found if f.severity == "warning"] if strict else []
    return errors + warnings


def oneline(findings: Iterable[Finding], strict: bool = False, unknown: Optional[str] = None) -> str:
    """`ok`; or the first problem's code and title with how many more there are; or `unknown: <why>`
    when the node could not be judged (and no problem was found either)."""
    bad = problems(findings, strict)
    if not bad:
        return fit(f"unknown: {unknown}") if unknown else "ok"
    first = bad[0]
    more = f" (+{len(bad) - 1} more)" if len(bad) > 1 else ""
    return fit(f"{first.code}: {first.title}", more)


def fit(text: str, suffix: str = "", width: int = WIDTH) -> str:
    """One ASCII line of at most `width` characters: control characters and runs of spaces become one
    space; a text too long is cut at a word where possible and ends with '...', the suffix kept."""
    text = _CONTROL.sub(" ", text).translate(_ASCII).encode("ascii", "ignore").decode()
    text = " ".join(text.split())
    room = width - len(suffix)
    if len(text) > room:
        cut = text[: room - 3]
        if " " in cut[room // 2:]:
            cut = cut[: cut.rindex(" ")]
        text = cut.rstrip(" ,;:.") + "..."
    return text + suffix
