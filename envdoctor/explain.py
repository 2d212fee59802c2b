"""explain: match an error log against the known signatures (matrices/signatures.toml), then check
this machine to turn the generic cause into this machine's fix.

    sigs = signatures()                      # validated once, cached
    matches = find(text)                     # [Match], in the order they appear in the text
    result = explain(text, facts)            # Explanation(matches, findings)

A signature names the diagnosis codes that can explain it, most likely first. `explain` runs the
diagnosis on the machine's facts: the first of those codes a rule confirms becomes the match's code,
and that finding's fix becomes the match's fix. When none is confirmed the first code is named, with
the signature's generic fix (and, for signatures where reinstalling is the fix, this machine's
install command from the planner). Nothing matched means nothing is claimed.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from typing import Optional

from envdoctor.facts import Facts
from envdoctor.findings import Finding, Fix
from envdoctor.matrix.loader import MatrixError, data_dir, load, load_file
from envdoctor.textnorm import Normalised, normalise

MAX_TEXT = 5_000_000  # characters of a log that are read
EXCERPT = 300
# Terminal control sequences: CSI (colours, cursor), OSC (titles, links), character-set selection
# (`tput sgr0` writes ESC ( B), and the two-byte ones (keypad, save/restore cursor).
_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[()*+][0-~]|\x1b[=>78DEHMc]")
_PLANNED = {"pytorch", "tensorflow", "jax", "paddle"}
_PLACEHOLDER = re.compile(r"\{(\w+)(?:\|([^}]*))?\}")  # {name} or {name|text when the group did not match}


@dataclass(frozen=True)
class Signature:
    id: str
    framework: str
    pattern: re.Pattern
    codes: tuple[str, ...]
    cause: str
    fix: str
    plan_fix: bool
    source: str
    noise: bool = False  # a harmless message: recognised so that it never passes for the cause
    # The literal run(s) a matching text must contain, lowercased: one for most patterns, one per branch
    # for a pattern that is a single alternation; () when the pattern has none long enough.
    needles: tuple[str, ...] = ()
    examples: tuple[str, ...] = ()


@dataclass(frozen=True)
class Match:
    signature: Signature
    excerpt: str
    position: int
    groups: dict[str, str] = field(default_factory=dict)

    @property
    def cause(self) -> str:
        return _fill(self.signature.cause, self.groups)

    @property
    def generic_fix(self) -> str:
        return _fill(self.signature.fix, self.groups)


@dataclass(frozen=True)
class Explained:
    """One match, judged on the machine."""

    match: Match
    code: str
    confirmed: Optional[Finding]  # the machine finding that confirms the cause, if any
    fix: tuple[Fix, ...]

    def to_dict(self) -> dict:
        return {
            "code": self.code,
            "signature": self.match.signature.id,
            "framework": self.match.signature.framework,
            "excerpt": self.match.excerpt,
            "cause": self.match.cause,
            "confirmed": self.confirmed is not None,
            "fix": [list(f) if isinstance(f, tuple) else f for f in self.fix],
            "source": self.match.signature.source,
        }


@dataclass(frozen=True)
class Explanation:
    matches: tuple[Explained, ...]  # the recognised errors (harmless messages apart)
    findings: tuple[Finding, ...]  # the machine's findings that confirm a matched cause, or name one
    other_problems: int  # errors on the machine unrelated to the log
    noise: tuple[Match, ...] = ()  # messages known to be harmless: never the cause
    diagnosis: tuple[str, ...] = ()  # the causes claimed, most likely first

    def to_dict(self) -> dict:
        return {
            "diagnosis": list(self.diagnosis),
            "matches": [m.to_dict() for m in self.matches],
            "findings": [f.to_dict() for f in self.findings],
            "noise": [{"signature": m.signature.id, "excerpt": m.excerpt} for m in self.noise],
            "other_problems": self.other_problems,
        }


MAX_CLAIMS = 2  # a tool that names everything is not diagnosing


# --- signatures -----------------------------------------------------------------------------------

@functools.lru_cache(maxsize=1)
def signatures() -> tuple[Signature, ...]:
    """The signatures of matrices/signatures.toml and matrices/signatures/*.toml (one file per
    framework or layer), validated (MatrixError names the bad file and row)."""
    rows = list(load("signatures").get("signature") or [])
    for path in sorted((data_dir() / "signatures").glob("*.toml")):
        rows += [dict(row, _file=f"signatures/{path.name}") for row in load_file(path).get("signature") or []]
    return parse_signatures({"signature": rows})


def parse_signatures(data: dict) -> tuple[Signature, ...]:
    rows = data.get("signature")
    if not isinstance(rows, list) or not rows:
        raise MatrixError("signatures.toml: no [[signature]] rows")
    seen: set[str] = set()
    found = []
    for index, row in enumerate(rows):
        where = f"{row.get('_file', 'signatures.toml')}: [[signature]] row {index + 1} (id={row.get('id')})"
        for key in ("id", "framework", "pattern", "cause", "fix"):
            if not isinstance(row.get(key), str) or not row[key].strip():
                raise MatrixError(f"{where}: missing '{key}'")
        codes = row.get("codes")
        if not isinstance(codes, list) or not codes or not all(isinstance(c, str) and re.fullmatch(r"[a-z0-9-]+", c) for c in codes):
            raise MatrixError(f"{where}: 'codes' must be a non-empty list of kebab-case codes")
        if row["id"] in seen:
            raise MatrixError(f"{where}: duplicate id")
        seen.add(row["id"])
        try:
            pattern = re.compile(row["pattern"], re.IGNORECASE)
        except re.error as exc:
            raise MatrixError(f"{where}: bad pattern: {exc}") from None
        unknown = {m.group(1) for key in ("cause", "fix") for m in _PLACEHOLDER.finditer(row[key])} - set(pattern.groupindex)
        if unknown:
            raise MatrixError(f"{where}: {{{sorted(unknown)[0]}}} is not a (?P<name>...) group of the pattern")
        examples = row.get("example") or []
        if isinstance(examples, str):
            examples = [examples]
        found.append(Signature(id=row["id"], framework=row["framework"], pattern=pattern, codes=tuple(codes),
                               cause=row["cause"], fix=row["fix"], plan_fix=bool(row.get("plan_fix", False)),
                               source=row["source"], noise=bool(row.get("noise", False)),
                               needles=literal_needles(row["pattern"]), examples=tuple(examples)))
    return tuple(found)


MIN_NEEDLE = 6  # shorter literals are too common to tell texts apart


def literal_needles(pattern: str) -> tuple[str, ...]:
    """The longest run of plain characters the pattern must contain (lowercased), outside any
    alternation, repetition or class, so a quick substring test tells which texts can match at all;
    for a pattern that is one top-level alternation, one such run per branch."""
    try:
        from re import _parser as sre_parse  # type: ignore[attr-defined]
    except ImportError:  # Python 3.10
        import sre_parse  # type: ignore[no-redef]
    parsed = sre_parse.parse(pattern, re.IGNORECASE)
    if len(parsed) == 1 and parsed[0][0] is sre_parse.BRANCH:
        runs = tuple(_longest_run(sre_parse, branch) for branch in parsed[0][1][1])
    else:
        runs = (_longest_run(sre_parse, parsed),)
    return runs if all(len(r) >= MIN_NEEDLE for r in runs) else ()


def _longest_run(sre_parse, items) -> str:
    best, run = "", []
    for op, value in items:
        if op is sre_parse.LITERAL:
            run.append(chr(value))
            continue
        best, run = max(best, "".join(run), key=len), []
    return max(best, "".join(run), key=len).lower()


# --- matching -------------------------------------------------------------------------------------

def clean(text: str) -> str:
    """The log as lines: control sequences, quoting and fences removed, LF line ends."""
    return normalise(text[:MAX_TEXT]).text


WINDOW = 3000  # characters around a needle a pattern is tried in: every pattern's repetitions are bounded


def find(text: str | Normalised) -> list[Match]:
    """Every signature found in the text (each once, at its first occurrence), in text order.

    Signatures match the flat form (whitespace runs are one space), so a message wrapped by a
    terminal or quoted in an issue still matches; excerpts are cut from the lines."""
    doc = text if isinstance(text, Normalised) else normalise(text[:MAX_TEXT])
    flat = doc.flat
    lower = flat.lower()
    if len(lower) != len(flat):  # a character whose lower case is longer: positions would shift
        lower = ""
    matches = []
    for sig in signatures():
        hit = _search(sig, flat, lower)
        if hit:
            groups = {k: v for k, v in hit.groupdict().items() if v is not None}
            matches.append(Match(signature=sig, excerpt=_excerpt(doc, hit), position=hit.start(), groups=groups))
    return sorted(matches, key=lambda m: m.position)


def _search(sig: Signature, flat: str, lower: str) -> Optional[re.Match]:
    if not lower or not sig.needles:
        return sig.pattern.search(flat)
    if len(sig.needles) > 1:  # alternatives: run the pattern only on a text holding one of them
        return sig.pattern.search(flat) if any(n in lower for n in sig.needles) else None
    (needle,) = sig.needles
    at = lower.find(needle)
    while at != -1:  # every repetition in a pattern is bounded: it matches within WINDOW of its literal
        hit = sig.pattern.search(flat, max(0, at - WINDOW), min(len(flat), at + len(needle) + WINDOW))
        if hit:
            return hit
        at = lower.find(needle, at + WINDOW)
    return None


def _excerpt(doc: Normalised, hit: re.Match) -> str:
    line = doc.line_at(hit.start(), hit.end())
    if len(line) <= EXCERPT and line.count("\n") < 4:
        return line
    flat = doc.flat
    left = max(0, hit.start() - 40)
    return ("…" if left else "") + flat[left:left + EXCERPT] + ("…" if left + EXCERPT < len(flat) else "")


def _fill(template: str, groups: dict[str, str]) -> str:
    return _PLACEHOLDER.sub(lambda m: groups.get(m.group(1)) or m.group(2) or m.group(1).replace("_", " "), template)


# --- judging on the machine -----------------------------------------------------------------------

def explain(text: str | Normalised, facts: Facts, machine_described: bool = False) -> Explanation:
    """Match the text, then judge each match on the machine. `machine_described`: the facts are of the
    machine the text (or a facts file) describes, so its own errors are causes too, not only
    confirmations of a matched message."""
    found = find(text)
    noise = tuple(m for m in found if m.signature.noise)
    matches = [m for m in found if not m.signature.noise]
    if not matches and not machine_described:
        return Explanation((), (), 0, noise)
    from envdoctor.diagnose import diagnose

    findings = diagnose(facts)
    explained = tuple(_judge(m, findings, facts) for m in matches)
    used = []
    for e in explained:
        if e.confirmed is not None and e.confirmed not in used:
            used.append(e.confirmed)
    machine_errors = [f for f in findings if f.severity == "error" and f not in used] if machine_described else []
    others = sum(1 for f in findings if f.severity == "error" and f not in used and f not in machine_errors)
    diagnosis = _rank(explained, machine_errors)
    return Explanation(explained, tuple(used + machine_errors), others, noise, diagnosis)


def _rank(explained: tuple[Explained, ...], machine_errors: list[Finding]) -> tuple[str, ...]:
    """Causes a machine fact confirms come first, then the described machine's own errors, then the
    cause the messages point to most: each unconfirmed message votes for its first code, a specific
    message (one candidate code) more than a vague one; ties go to the later message, the error the
    run ended on."""
    ranked: list[str] = [e.code for e in explained if e.confirmed is not None]
    ranked += [f.code for f in machine_errors]
    votes: dict[str, tuple[float, int]] = {}
    for e in explained:
        if e.confirmed is None:
            score, _ = votes.get(e.code, (0.0, 0))
            votes[e.code] = (score + 1 / len(e.match.signature.codes), e.match.position)
    ranked += sorted(votes, key=lambda code: votes[code], reverse=True)
    unique = list(dict.fromkeys(c for c in ranked if c != "noise"))
    return tuple(unique[:MAX_CLAIMS])


def _judge(match: Match, findings: list[Finding], facts: Facts) -> Explained:
    framework = match.signature.framework
    for code in match.signature.codes:
        confirmed = (next((f for f in findings if f.code == code and _can_explain(f, framework)), None)
                     or _explain_check(code, match, facts))
        if confirmed is not None:
            return Explained(match, code, confirmed, confirmed.fix or (match.generic_fix,))
    fix: tuple[Fix, ...] = (match.generic_fix,)
    if match.signature.plan_fix and framework in _PLANNED:  # this machine's install command, then the why
        from envdoctor.diagnose._common import plan_fix

        planned = plan_fix(facts, framework, match.generic_fix)
        fix = planned if match.generic_fix in planned else planned + fix
    return Explained(match, match.signature.codes[0], None, fix)


def _can_explain(finding: Finding, framework: str) -> bool:
    """Whether a finding can be the cause of an error that `framework` printed: it is about the machine
    (driver, environment variables, system libraries: no package in its evidence), or about that
    framework's packages or the NVIDIA library wheels every framework loads. A CPU-only jaxlib does not
    explain "Torch not compiled with CUDA enabled"."""
    if framework not in _PLANNED:
        return True  # printed by CUDA, the driver or pip: any framework's problem can cause it
    from envdoctor.diagnose._common import framework_named

    names = []  # the packages the evidence names: python.packages.torch=…, frameworks.jax.cudnn=…
    for item in finding.evidence:
        key = item.split("=", 1)[0]
        for prefix in ("python.packages.", "frameworks."):
            if key.startswith(prefix):
                names.append(key[len(prefix):].split(".")[0])
    return not names or any(n.startswith("nvidia-") or framework_named(n) == framework for n in names)


def _explain_check(code: str, match: Match, facts: Facts) -> Optional[Finding]:
    """Checks that only make sense with a log in hand (the framework is not installed yet)."""
    if code == "python-unsupported" and match.signature.framework in _PLANNED:
        from envdoctor.diagnose.python import no_release_for_python

        return no_release_for_python(facts, match.signature.framework)
    return None

