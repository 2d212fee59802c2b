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
from dataclasses import dataclass, field, replace
from typing import Optional

try:
    from re import _parser as sre_parse  # type: ignore[attr-defined]
except ImportError:  # Python 3.10
    import sre_parse  # type: ignore[no-redef]

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
    regex: str  # validated at load; compiled on first use, as most texts hold few signatures' literals
    codes: tuple[str, ...]
    cause: str
    fix: str
    plan_fix: bool
    source: str
    noise: bool = False  # a harmless message: recognised so that it never passes for the cause
    # The reporter's own words for what went wrong ("it can't use my GPU", "crashes with SIGILL"), not
    # a message a program printed: heard only where the text holds no message that says more.
    symptom: bool = False
    # A symptom row whose words state a fact of the machine: heard beside a message (see _stated).
    states: bool = False
    # A wrapper or suffix a framework prints around many different errors (torch's "CUDA kernel errors
    # might be asynchronously reported..."): heard only where no more specific message is in the text.
    generic: bool = False
    # The program's own error (an assert in a kernel: an index out of range): recognised and explained,
    # never an environment cause.
    program_error: bool = False
    # The literal run(s) a matching text must contain, lowercased: one for most patterns, one per branch
    # for a pattern that is a single alternation; () when the pattern has none long enough.
    needles: tuple[str, ...] = ()
    # Per needle, a whole word it holds (an interior space-delimited token), or "" when it has none: a
    # text whose set of words lacks it cannot contain the needle, and a set lookup is cheaper than a
    # scan of a 5 MB log per signature.
    anchors: tuple[str, ...] = ()
    # For a pattern without needles (a reporter's words: many phrasings), one short literal per branch
    # ("cpu", "gpu"): a text holding none of them cannot match.
    hints: tuple[str, ...] = ()
    examples: tuple[str, ...] = ()
    # The cause a message means on a given OS ({"windows": "nccl-error"}): a known host OS puts it first.
    by_os: tuple[tuple[str, str], ...] = ()

    @functools.cached_property
    def pattern(self) -> re.Pattern:
        # ASCII classes: a word boundary falls between CJK text and a message ("会提示cuda out of memory")
        return re.compile(self.regex, re.IGNORECASE | re.ASCII)


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
    program_errors: tuple[Match, ...] = ()  # the program's own errors: explained, never an environment cause

    def to_dict(self) -> dict:
        return {
            "diagnosis": list(self.diagnosis),
            "matches": [m.to_dict() for m in self.matches],
            "findings": [f.to_dict() for f in self.findings],
            "noise": [{"signature": m.signature.id, "excerpt": m.excerpt} for m in self.noise],
            "program_errors": [{"signature": m.signature.id, "excerpt": m.excerpt, "cause": m.cause, "fix": m.generic_fix}
                               for m in self.program_errors],
            "other_problems": self.other_problems,
        }


MAX_CLAIMS = 2  # a tool that names everything is not diagnosing
# Warnings that are a cause in their own right when a pasted report shows no error message at all
# (two installations of one package shadow each other, an x86_64 Python under Rosetta runs no arm64
# build, whatever the program does).
WARNING_CAUSES = frozenset({"duplicate-install", "rosetta-python"})


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
    facts = _pattern_facts([row["pattern"] for row in rows if isinstance(row, dict) and isinstance(row.get("pattern"), str)])
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
        literal = facts[row["pattern"]]
        if isinstance(literal, str):
            raise MatrixError(f"{where}: bad pattern: {literal}")
        needles, anchors, groups, hints = literal
        unknown = {m.group(1) for key in ("cause", "fix") for m in _PLACEHOLDER.finditer(row[key])} - set(groups)
        if unknown:
            raise MatrixError(f"{where}: {{{sorted(unknown)[0]}}} is not a (?P<name>...) group of the pattern")
        examples = row.get("example") or []
        if isinstance(examples, str):
            examples = [examples]
        by_os = row.get("by_os") or {}
        if not isinstance(by_os, dict) or any(code not in codes for code in by_os.values()):
            raise MatrixError(f"{where}: 'by_os' must map an OS (linux, windows, macos) to one of the row's codes")
        found.append(Signature(id=row["id"], framework=row["framework"], regex=row["pattern"], codes=tuple(codes),
                               cause=row["cause"], fix=row["fix"], plan_fix=bool(row.get("plan_fix", False)),
                               source=row["source"], noise=bool(row.get("noise", False)),
                               symptom=bool(row.get("symptom", False)), states=bool(row.get("states", False)),
                               generic=bool(row.get("generic", False)),
                               program_error=bool(row.get("program_error", False)),
                               needles=tuple(needles), anchors=tuple(anchors), hints=tuple(hints),
                               examples=tuple(examples), by_os=tuple(sorted(by_os.items()))))
    return tuple(found)


MIN_NEEDLE = 6  # shorter literals are too common to tell texts apart
MIN_HINT = 3  # a hint only has to be absent from a text for the pattern to be skipped


def _pattern_facts(patterns: list[str]) -> dict:
    """Per pattern: [needles, anchors, group names, hints], or the re.error message of a pattern that is no
    regular expression. Parsing every pattern costs more than the rest of loading, so the result is
    kept in the parsed-data cache, keyed by the patterns and by this module's code that derives it."""
    from pathlib import Path

    from envdoctor.matrix.loader import cached

    def derive() -> dict:
        facts: dict = {}
        for pattern in patterns:
            try:
                parsed = _parse(pattern)
            except re.error as exc:
                facts[pattern] = str(exc)
                continue
            needles = _needles(parsed)
            facts[pattern] = [list(needles), list(_anchors(parsed)) if needles else [], sorted(parsed.state.groupdict),
                              [] if needles else list(_hints(parsed))]
        return facts

    source = "\n".join(patterns).encode() + Path(__file__).read_bytes()
    return cached("signature-patterns", source, derive)


def _parse(pattern: str):
    """The pattern's parse tree (re.error when it is no regular expression): parsed once, for its
    group names and its literal runs; compiling waits for a text that holds those runs."""
    return sre_parse.parse(pattern, re.IGNORECASE)


def _branches(parsed) -> list:
    """The items of each top-level branch: one for a pattern that is no single alternation."""
    if len(parsed) == 1 and parsed[0][0] is sre_parse.BRANCH:
        return list(parsed[0][1][1])
    return [parsed]


def _needles(parsed) -> tuple[str, ...]:
    """The longest run of plain characters the pattern must contain (lowercased), outside any
    alternation, repetition or class, so a quick substring test tells which texts can match at all;
    for a pattern that is one top-level alternation, one such run per branch."""
    runs = tuple(_longest_run(branch) for branch in _branches(parsed))
    return runs if all(len(r) >= MIN_NEEDLE for r in runs) else ()


def _hints(parsed) -> tuple[str, ...]:
    """Literals of which a matching text must hold one (each MIN_HINT characters or more, spaces aside)."""
    return tuple(sorted(_required(list(parsed)) or ()))


def _required(items: list) -> Optional[frozenset]:
    """A set of literal runs one of which every match contains, or None: per alternative of an
    alternation, the best of its own literal runs and of its required groups (an optional group or a
    class requires nothing)."""
    if len(items) == 1 and items[0][0] is sre_parse.BRANCH:
        found = [_required(list(alternative)) for alternative in items[0][1][1]]
        return None if any(f is None for f in found) else frozenset().union(*found)
    choices = [frozenset([run.strip()]) for run in _literal_runs(items) if len(run.strip()) >= MIN_HINT]
    for op, value in items:
        inner = (list(value[-1]) if op is sre_parse.SUBPATTERN else [(op, value)] if op is sre_parse.BRANCH
                 else list(value[2]) if op in (sre_parse.MAX_REPEAT, sre_parse.MIN_REPEAT) and value[0] >= 1 else None)
        required = _required(inner) if inner else None
        if required:
            choices.append(required)
    return max(choices, key=lambda c: (min(len(h) for h in c), -len(c)), default=None)


def _anchors(parsed) -> tuple[str, ...]:
    """Per needle (branch), the longest token that spaces delimit on both sides inside one of the
    pattern's required literal runs (a token at a run's edge may be part of a longer word in the text),
    if it has 4 characters or more, else ""."""
    anchors = []
    for items in _branches(parsed):
        inner = [t for run in _literal_runs(items) for t in run.split(" ")[1:-1]]
        best = max(inner, key=len, default="")
        anchors.append(best if len(best) >= 4 else "")
    return tuple(anchors)


def _literal_runs(items) -> list[str]:
    runs, run = [], []
    for op, value in items:
        if op is sre_parse.LITERAL:
            run.append(chr(value))
            continue
        runs.append("".join(run).lower())
        run = []
    return runs + ["".join(run).lower()]


def _longest_run(items) -> str:
    return max(_literal_runs(items), key=len)


# --- matching -------------------------------------------------------------------------------------

def clean(text: str) -> str:
    """The log as lines: control sequences, quoting and fences removed, LF line ends."""
    return normalise(text[:MAX_TEXT]).text


DESCRIBED = 100_000  # characters at a text's start where a reporter describes a symptom in words
WINDOW = 3000  # characters around a needle a pattern is tried in: every pattern's repetitions are bounded
WORDS_FROM = 200_000  # characters of text from which the set of its words is built to skip absent needles


def find(text: str | Normalised) -> list[Match]:
    """Every signature found in the text (each once, at its first occurrence), in text order.

    Signatures match the flat form (whitespace runs are one space), so a message wrapped by a
    terminal or quoted in an issue still matches; excerpts are cut from the lines."""
    doc = text if isinstance(text, Normalised) else normalise(text[:MAX_TEXT])
    flat = doc.flat
    lower = flat.lower()
    if len(lower) != len(flat):  # a character whose lower case is longer: positions would shift
        lower = ""
    words = idents = None
    if len(lower) > WORDS_FROM:
        words = frozenset(lower.split(" "))
        idents = "\n".join(set(_IDENT.findall(" ".join(words))))
    matches, spans, harmless = [], [], []
    head = (flat[:DESCRIBED], lower[:DESCRIBED]) if len(flat) > DESCRIBED else (flat, lower)
    heard = False  # a program's message (or its own error) is in the text
    for sig in _noise_first():
        if sig.symptom and heard and not _states_a_fact(sig):
            continue  # a reporter's words are heard only where no message is (_most_telling), and they cost time
        hit = _search(sig, *head) if sig.symptom else _search(sig, flat, lower, words, idents)
        if hit and sig.noise:
            harmless += _every(sig, hit, flat)
        elif hit and harmless and not sig.symptom:  # a reporter's words are theirs, on any line
            hit = _outside(sig, hit, flat, harmless)
        if hit:
            groups = {k: v for k, v in hit.groupdict().items() if v is not None}
            matches.append(Match(signature=sig, excerpt=_excerpt(doc, hit), position=hit.start(), groups=groups))
            spans.append((hit.start(), hit.end()))
            heard = heard or not (sig.noise or sig.symptom)  # counted once outside every harmless line
    matches += _quoted_fragments(doc, spans, [m.signature for m in matches])
    return sorted(matches, key=lambda m: m.position)


@functools.lru_cache(maxsize=1)
def _noise_first() -> tuple[Signature, ...]:
    """signatures(), harmless ones first and reporters' words last (cached as signatures() is)."""
    return tuple(sorted(signatures(), key=lambda sig: (not sig.noise, sig.symptom)))


def _states_a_fact(sig: Signature) -> bool:
    """A reporter's words that state a fact of the machine (_STATED, or a row marked `states`): heard even beside a message."""
    return sig.states or (len(sig.codes) == 1 and sig.codes[0] in _STATED)


def _every(sig: Signature, hit: re.Match, flat: str, most: int = 20) -> list[tuple[int, int]]:
    """The spans of a harmless message's first `most` occurrences, from its first hit on."""
    spans = [(hit.start(), hit.end())]
    for later in sig.pattern.finditer(flat, hit.end()):
        if len(spans) == most:
            break
        spans.append((later.start(), later.end()))
    return spans


def _outside(sig: Signature, hit: re.Match, flat: str, harmless: list[tuple[int, int]]) -> Optional[re.Match]:
    """The first hit of `sig` on no line a harmless message claims: where a known-harmless message
    and a wider one read the same words ("Could not load dynamic library 'libnvinfer.so.7'"), the
    harmless reading is the one that knows them."""
    for _ in range(8):  # bounded: a message repeated on many harmless lines is harmless
        if hit is None or not any(start <= hit.start() < end for start, end in harmless):
            return hit
        hit = sig.pattern.search(flat, hit.end())
    return None


NEAR = 200  # characters: a fragment this close to a whole message matched is part of that message


def _quoted_fragments(doc: Normalised, spans: list[tuple[int, int]], matched: list[Signature]) -> list[Match]:
    """Messages quoted only in part (envdoctor.fragments), away from every message matched whole and on
    no line that a matched message's pattern reads whole (a later copy of it: "cuda runtime error (101) :
    invalid device ordinal" is not a fragment of error (98)'s "invalid device function")."""
    from envdoctor import fragments

    found = []
    for sig, hit in fragments.find(doc.flat, signatures(), {m.id for m in matched}):
        if any(start - NEAR <= hit.start() <= end + NEAR for start, end in spans):
            continue
        line = " ".join(doc.line_at(hit.start(), hit.end()).split())  # as `flat` has it
        if any(m.pattern.search(line) for m in matched if not m.symptom):
            continue
        found.append(Match(signature=sig, excerpt=_excerpt(doc, hit), position=hit.start(), groups={}))
    return found


def _search(sig: Signature, flat: str, lower: str, words: Optional[frozenset] = None,
            idents: Optional[str] = None) -> Optional[re.Match]:
    if not lower or not sig.needles:
        if lower and sig.hints and not any(h in lower for h in sig.hints):
            return None
        return sig.pattern.search(flat)
    if words is not None and all(_absent(n, a, words, idents) for n, a in zip(sig.needles, sig.anchors)):
        return None  # no branch can be in the text
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


_IDENT = re.compile(r"[a-z0-9_]{8,}")


def _absent(needle: str, anchor: str, words: frozenset, idents: Optional[str]) -> bool:
    """Whether the needle surely is not in the text: its anchor word is not among the text's words,
    or a run of identifier characters in it (cudaErrorNoDevice, "illegal instruction"'s "instruction")
    is part of no identifier of the text."""
    if anchor:
        return anchor not in words
    if idents is not None:
        return any(run not in idents for run in _IDENT.findall(needle))
    return False


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
    program = tuple(m for m in found if m.signature.program_error and not m.signature.noise)
    matches = [m for m in found if not m.signature.noise and not m.signature.program_error]
    matches = _most_telling(matches)
    if program and all(m.signature.generic or m.signature.symptom for m in matches):
        matches = []  # the wrapper around the program's own error says nothing more
    if not matches and not machine_described:
        return Explanation((), (), 0, noise, program_errors=program)
    from envdoctor.diagnose import diagnose

    findings = diagnose(facts)
    here = _contexts(facts) if machine_described else frozenset()
    said = _stated(found, matches)
    explained = tuple(_judge(m, findings, facts, machine_described, here, said) for m in matches)
    used = []
    for e in explained:
        if e.confirmed is not None and e.confirmed not in used:
            used.append(e.confirmed)
    machine_errors = [f for f in findings if f.severity == "error" and f not in used] if machine_described else []
    if machine_described and not matches and not machine_errors:
        machine_errors = _without_a_message(text, facts, findings, noise + program)
    others = sum(1 for f in findings if f.severity == "error" and f not in used and f not in machine_errors)
    diagnosis = _rank(explained, machine_errors)
    return Explanation(explained, tuple(used + machine_errors), others, noise, diagnosis, program)


def _without_a_message(text: str | Normalised, facts: Facts, findings: list[Finding], explained: tuple[Match, ...]) -> list[Finding]:
    """No message to go by: the described machine's warnings that are causes; else a CPU-only build in a
    text about the GPU; no NVIDIA GPU where CUDA is wanted; a Jetson's unknown build of the one framework
    named; a GPU that only newer torch releases run on, or that the CUDA the reporter has cannot build for
    (unless a harmless message or the program's own error, `explained`, accounts for the text)."""
    warnings = [f for f in findings if f.severity == "warning" and f.code in WARNING_CAUSES]
    if warnings:
        return warnings
    about_gpu, wants_cuda = bool(_GPU_WORDS.search(_flat(text))), _wants_cuda(text)
    cpu_build = _cpu_torch_on_cuda_machine(facts, about_gpu)
    if cpu_build is None and about_gpu and facts.host.os == "windows":
        cpu_build = _extra_index_cpu_torch(_flat(text))
    if cpu_build is not None:
        return [cpu_build]
    if wants_cuda or facts.host.os == "macos":
        no_gpu = [f for f in findings if f.code == "no-gpu-platform"] if wants_cuda else []
        if facts.host.os == "macos" and not facts.gpus and _asks_for_cuda(text):
            no_gpu = no_gpu or [_mac_without_nvidia(facts)]
        if no_gpu:
            return no_gpu
    framework = _framework_named(text)
    jetson = _jetson_build_unknown(facts, framework) if framework and facts.jetson is not None else None
    if jetson is not None:
        return [jetson]
    new_gpu = _new_gpu_build_unknown(facts) if not explained and framework in (None, "pytorch") else None
    if new_gpu is not None:
        return [new_gpu]
    if framework in (None, "paddle") and not explained:  # a CUDA the reporter has that cannot target their GPU
        # diagnose's toolkit_cannot_build_for_gpu: the one gpu-arch-unsupported finding about the toolkit
        return [f for f in findings if f.code == "gpu-arch-unsupported" and f.section == "toolkit"][:1]
    return []


# `pip install torch ... --extra-index-url https://download.pytorch.org/whl/cu116` with torch unpinned: pip takes
# the highest version of both indexes, and the default index's torch for Windows is the CPU build.
_EXTRA_INDEX_TORCH = re.compile(r"\bpip3? install\b(?=[^\n]{0,300}?\btorch\b(?![=<>~!]))[^\n]{0,300}?--extra-index-url[ =]"
                                r"\S{0,80}?/whl/(cu\d{2,3})\b", re.I)


def _extra_index_cpu_torch(flat: str) -> Optional[Finding]:
    """A Windows text about the GPU whose torch came from an unpinned `pip install torch --extra-index-url
    <torch's cuXXX index>`: where the default index has a newer torch than that index ever got, pip installs
    the newer one, which for Windows is the CPU-only build (pytorch.toml: each release's default build)."""
    m = _EXTRA_INDEX_TORCH.search(flat)
    if m is None:
        return None
    from envdoctor.matrix import pytorch
    from packaging.version import Version

    tag, windows = m.group(1).lower(), "windows_amd64"
    versions = sorted((Version(r.version) for r in pytorch.releases()), reverse=True)
    newest = str(versions[0])
    on_index = next((str(v) for v in versions if pytorch.build(str(v), tag, windows)), None)
    if on_index == newest or pytorch.default_build(newest, windows) != "cpu":
        return None
    got = f"its newest is {on_index}" if on_index else f"it has none of the releases since {versions[-1]}"
    return Finding(
        code="cpu-only-build", severity="error", section="frameworks",
        title=f"pip given torch's {tag} index as an extra index installs the default index's newer, CPU-only torch on Windows",
        detail=(f"`--extra-index-url` adds torch's {tag} index beside the default one, and pip installs the highest version "
                f"of the two: {got}, while the default index has torch {newest}, whose Windows wheel is the CPU-only build "
                "(inferred from the install command in the text; which version pip found depends on when it ran)."),
        fix=(f"pip uninstall -y torch torchvision torchaudio, then install them with `--index-url` (not `--extra-index-url`) "
             "set to torch's index for a CUDA your driver runs (`envdoctor install pytorch` prints it)",),
        evidence=(f"text: {m.group(0)[:160]}", "host.os=windows", f"pytorch.toml: default build of torch {newest} on windows_amd64 = cpu"),
    )


def _mac_without_nvidia(facts: Facts) -> Finding:
    """A text about CUDA from a Mac: Apple's last Macs with an NVIDIA GPU are 2014 models, and CUDA 10.2 was
    its last macOS release, so nothing the program or the reporter does makes CUDA available there."""
    apple = facts.host.machine_arch == "arm64" or facts.host.arch == "arm64"
    return Finding(
        code="no-gpu-platform", severity="error", section="nvidia",
        title="A Mac has no NVIDIA GPU: CUDA cannot be used on it",
        detail=("The text asks for CUDA on macOS. CUDA needs an NVIDIA GPU and driver; Apple's last Macs with one are "
                "2014 models, and CUDA 10.2 was the last release for macOS. " + ("This Mac's Apple-silicon GPU is used through PyTorch's "
                "`mps` device or tensorflow-metal." if apple else "An Apple-silicon Mac's GPU is used through PyTorch's "
                "`mps` device; an Intel Mac runs on the CPU.")),
        fix=(_CONTEXT_FIXES["no-gpu-platform"],),
        evidence=("host.os=macos",) + (("host.machine_arch=arm64",) if facts.host.machine_arch == "arm64" else ()),
    )


# Letters, not \b, bound the words: a Chinese text writes them next to its own characters ("不使用cuda").
_CUDA_WORDS = re.compile(r"(?<![a-z])cuda(?![a-z])|nvidia|(?<![A-Za-z])N卡", re.I)  # "N卡": Chinese for an NVIDIA card
_GPU_WORDS = re.compile(_CUDA_WORDS.pattern + r"|(?<![a-z])gpus?(?![a-z])", re.I)  # about the GPU, CUDA or not
_FRAMEWORK_WORDS = (("paddle", re.compile(r"paddle", re.I)), ("tensorflow", re.compile(r"tensorflow|\bkeras\b", re.I)),
                    ("jax", re.compile(r"\bjax(?:lib)?\b", re.I | re.A)), ("pytorch", re.compile(r"\b(?:py)?torch\b", re.I | re.A)))


def _framework_named(text: str | Normalised) -> Optional[str]:
    """The one framework a text names (Paddle, TensorFlow, JAX or PyTorch); None for none or several."""
    named = [framework for framework, words in _FRAMEWORK_WORDS if words.search(_flat(text))]
    return named[0] if len(named) == 1 else None


# A line that records a value rather than asks for anything: an environment template's field ("CUDA used to
# build PyTorch: None", "- CUDA/cuDNN version: no") or a program's log line ("2026-05-17 23:01:40 [INFO] ...", glog's
# "I0528 17:45:45.421956 ..."); never a sentence that starts with "I".
_RECORD_LINE = re.compile(r"^\s*(?:[-*]\s*)?(?:[A-Za-z][\w /().-]{0,40}:\s|\d{4}-\d\d-\d\d|\[?(?:INFO|WARNING|DEBUG)\]?[\s:]|[IWE]\d{4} )")


# On a Mac, Triton (OpenAI's GPU compiler, or NVIDIA's inference server) asks for an NVIDIA GPU as CUDA does:
# Triton publishes no macOS build and compiles for NVIDIA and AMD GPUs only.
_NEEDS_NVIDIA_ON_A_MAC = re.compile(_CUDA_WORDS.pattern + r"|(?<![a-z])triton(?![a-z])", re.I)


def _asks_for_cuda(text: str | Normalised) -> bool:
    """The reporter's own words or commands are about CUDA (or Triton), not only a template field or a log line naming it."""
    lines = (text.text if isinstance(text, Normalised) else text[:MAX_TEXT]).splitlines()
    return any(_NEEDS_NVIDIA_ON_A_MAC.search(line) and not _RECORD_LINE.match(line) for line in lines)


def _wants_cuda(text: str | Normalised) -> bool:
    """The text is about CUDA or NVIDIA (a ROCm, DirectML or CPU report on an AMD machine is not)."""
    return bool(_CUDA_WORDS.search(_flat(text)))


def _flat(text: str | Normalised) -> str:
    return text.flat if isinstance(text, Normalised) else text[:MAX_TEXT]


# Causes a reporter states as a fact of the machine (not a workaround tried): they pick among a message's candidates.
_STATED = ("duplicate-install", "cpu-only-build", "no-gpu-platform", "tf-windows-native-gpu")


def _stated(found: list[Match], matches: list[Match]) -> tuple[str, ...]:
    """What the reporter's own words say is installed, or that the machine has no GPU ("both onnxruntime
    and onnxruntime-gpu are installed"): a symptom row of one such code, outside every message's own words."""
    messages = [m.excerpt for m in matches if not m.signature.symptom]
    return tuple(dict.fromkeys(
        m.signature.codes[0] for m in found
        if m.signature.symptom and _states_a_fact(m.signature)
        and (m.signature.states or not any(m.excerpt in x or x in m.excerpt for x in messages))))


def _most_telling(matches: list[Match]) -> list[Match]:
    """A specific message says more than a generic wrapper, which says more than a reporter's words;
    among symptoms, a framework's own says more than the generic ones."""
    for tier in ([m for m in matches if not (m.signature.symptom or m.signature.generic)],
                 [m for m in matches if m.signature.generic],
                 [m for m in matches if m.signature.symptom and m.signature.framework != "system"]):
        if tier:
            return tier
    return matches


def _rank(explained: tuple[Explained, ...], machine_errors: list[Finding]) -> tuple[str, ...]:
    """Causes a machine fact confirms come first, then the described machine's own errors, then a cause
    the context chose for a message, then the cause the messages point to most: each unconfirmed message votes for its first code, a specific
    message (one candidate code) more than a vague one; ties go to the later message, the error the
    run ended on. Last, the first cause of a message whose context chose another."""
    ranked: list[str] = [e.code for e in explained if e.confirmed is not None]
    ranked += [f.code for f in machine_errors]
    # a cause the text's context (WSL, a container, a Mac, a Jetson) chose over the message's own first one
    overruled = [e for e in explained if e.confirmed is None and e.code in _CONTEXT_FIXES and e.code != e.match.signature.codes[0]]
    ranked += [e.code for e in overruled]
    votes: dict[str, tuple[float, int]] = {}
    for e in explained:
        if e.confirmed is None:
            score, _ = votes.get(e.code, (0.0, 0))
            votes[e.code] = (score + 1 / len(e.match.signature.codes), e.match.position)
    ranked += sorted(votes, key=lambda code: votes[code], reverse=True)
    ranked += [e.match.signature.codes[0] for e in overruled]  # the message's own cause stays possible
    unique = list(dict.fromkeys(c for c in ranked if c != "noise"))
    return tuple(unique[:MAX_CLAIMS])


def _judge(match: Match, findings: list[Finding], facts: Facts, described: bool = False,
           here: frozenset[str] = frozenset(), said: tuple[str, ...] = ()) -> Explained:
    """`here`: the causes tied to where the described program ran (_contexts); `said`: the reporter's (_stated)."""
    framework = _framework_of(match, facts)
    # of two causes the machine confirms, the one tied to where it ran (WSL, a container) first
    codes = sorted(match.signature.codes, key=lambda c: c not in here)
    for code in codes:
        confirmed = (next((f for f in findings if f.code == code and _can_explain(f, framework)), None)
                     or _explain_check(code, match, facts, described))
        if confirmed is not None:
            return Explained(match, code, confirmed, confirmed.fix or (match.generic_fix,))
    candidates = [c for c in match.signature.codes if not (described and _refuted(c, framework, facts))]
    candidates = [c for c in said if c in candidates] + [c for c in candidates if c not in said]
    on_os = dict(match.signature.by_os).get(facts.host.os or "") if described else None
    if on_os in candidates:  # the message means this cause on the host's OS
        candidates.remove(on_os)
        candidates.insert(0, on_os)
    if described:  # a cause tied to where the program ran (WSL, a container, a Jetson) comes first there
        by_context = _context_causes(candidates, here, match.excerpt, on_a_mac=facts.host.os == "macos")
        candidates = list(dict.fromkeys(by_context + candidates))
        candidates.sort(key=lambda c: not (c in by_context or (c in here and c not in _NARROW_CONTEXTS)))
    chosen = (candidates or match.signature.codes)[0]
    if chosen != match.signature.codes[0] and chosen in _CONTEXT_FIXES and chosen in here:
        return Explained(match, chosen, None, (_CONTEXT_FIXES[chosen],))  # the message's own fix is for another cause
    fix: tuple[Fix, ...] = (match.generic_fix,)
    if match.signature.plan_fix and framework in _PLANNED:  # this machine's install command, then the why
        from envdoctor.diagnose._common import plan_fix

        planned = plan_fix(facts, framework, match.generic_fix)
        fix = planned if match.generic_fix in planned else planned + fix
    return Explained(match, chosen, None, fix)


def _framework_of(match: Match, facts: Facts) -> str:
    """The framework a message is judged for: its signature's, or for a CUDA runtime message that every
    framework prints (no kernel image for the GPU), the one framework the machine is known to have."""
    framework = match.signature.framework
    if framework != "cuda":
        return framework
    from envdoctor.diagnose._common import DEEP_KEYS, installed_frameworks

    known = set(installed_frameworks(facts)) | {fw for fw, key in DEEP_KEYS.items() if facts.frameworks.get(key)}
    return known.pop() if len(known) == 1 else framework


def _refuted(code: str, framework: str, facts: Facts) -> bool:
    """A candidate cause that the described machine's own facts rule out, so the next one is named: a
    torch tagged +cuXXX / built for a CUDA version, or Linux's tensorflow wheel, is no CPU-only build; a machine known to run
    Linux, macOS or WSL is not native Windows; a known Windows or macOS host has no WSL, a Linux or
    Windows one no Rosetta; a driver
    that reported its version is installed; no Jetson wheel where the machine is no Jetson."""
    if code == "cpu-only-build" and framework in ("pytorch", "torchvision", "torchaudio"):
        from envdoctor.diagnose._common import local_tag, package

        torch = facts.frameworks.get("torch")
        tags = (local_tag(package(facts, "torch")), local_tag(torch.version if torch is not None else None))
        return any(t and t.startswith(("cu", "rocm")) for t in tags) or bool(torch is not None and torch.cuda)
    if code == "cpu-only-build" and framework == "tensorflow":
        return _tensorflow_gpu_build(facts)
    if code == "tf-windows-native-gpu":
        return facts.host.wsl is True or facts.host.os in ("linux", "macos")
    if code == "wsl-gpu-setup":
        return facts.host.os in ("windows", "macos")
    if code == "rosetta-python":  # Rosetta runs x86 programs on Apple silicon Macs only
        return facts.host.os in ("linux", "windows")
    if code == "no-nvidia-driver":  # nvidia-smi answered with a driver version somewhere in the text
        nv = facts.nvidia
        return bool(nv is not None and nv.driver_version and not nv.failure)
    if code == "jetson-wrong-wheel":  # a Jetson is an aarch64 Linux board with an integrated Tegra GPU
        return facts.jetson is None and (facts.host.os in ("windows", "macos") or facts.host.arch == "x86_64"
                                         or _only_desktop_gpus(facts))
    return False


def _only_desktop_gpus(facts: Facts) -> bool:
    """Every GPU the text names has a known architecture, and none is a Tegra one (gpus matrix `tegra`)."""
    from envdoctor.diagnose._common import gpu_ccs
    from envdoctor.matrix import gpus

    rows = [gpus.arch(cc) for _, _, cc in gpu_ccs(facts)]
    return bool(rows) and all(row is not None and not row.tegra for row in rows)


def _tensorflow_gpu_build(facts: Facts) -> bool:
    """The `tensorflow` package (not tensorflow-cpu) of a release built with CUDA for Linux x86_64, on a
    Linux x86_64 host: no CPU-only build, whatever it fails to load (tensorflow.toml's gpu_platforms)."""
    from envdoctor.diagnose._common import major_minor, package
    from envdoctor.matrix import tensorflow

    version = package(facts, "tensorflow")
    if not version or package(facts, "tensorflow-cpu") or facts.host.os != "linux" or facts.host.arch not in (None, "x86_64"):
        return False
    line = major_minor(version)  # "2.14" names its release line
    releases = [r for r in tensorflow.releases() if major_minor(r.version) == line]
    return bool(releases) and all("linux_x86_64" in r.gpu_platforms for r in releases)


_ENGINES = ("docker", "podman", "apptainer", "kubernetes")  # container runtimes a text can name


# Where the program ran can explain a message that only says the GPU is out of reach: no driver seen
# inside a container started without GPU access, or inside WSL; a CPU build on a Jetson is the
# generic wheel; no NVIDIA GPU at all on a Mac, an AMD-only machine or one said to have none (where
# the CUDA runtime, finding no driver, answers "driver version is insufficient", and a CUDA extension
# finds no nvcc to build with).
# Contexts that come first only for the messages _CONTEXT_EXPLAINS lists, not for every message that
# names them: on an Apple-silicon Mac "no matching distribution for torch==…+cu118" is still no GPU
# platform, not Rosetta.
_NARROW_CONTEXTS = frozenset({"rosetta-python"})

_CONTEXT_EXPLAINS = {  # in this order: no NVIDIA GPU at all explains a container or WSL that sees none
    "no-gpu-platform": ("no-nvidia-driver", "cpu-only-build", "cuda-init-failed", "driver-too-old", "extension-build-mismatch",
                        "toolkit-without-driver", "wsl-gpu-setup"),
    "container-gpu-missing": ("no-nvidia-driver", "cuda-init-failed"),
    "wsl-gpu-setup": ("no-nvidia-driver", "cuda-init-failed"),
    "jetson-wrong-wheel": ("cpu-only-build", "python-unsupported"),  # no wheel fits: the Jetson build is the one to install
    # Apple silicon has no x86 instructions at all: an illegal instruction there is x86 code under Rosetta 2,
    # which has no AVX (a Python, Homebrew or conda installed for Intel Macs)
    "rosetta-python": ("cpu-instructions-unsupported",),
}


# The fix where the context, not the message, names the cause (the message's fix is for its own first cause).
_CONTEXT_FIXES = {
    "no-gpu-platform": ("This machine has no NVIDIA GPU, so no CUDA build can run on it: use the CPU (on Apple silicon, "
                        "PyTorch's `mps` device), or run on a machine with an NVIDIA GPU."),
    "container-gpu-missing": ("Start the container with GPU access (`docker run --gpus all`, compose "
                              "`deploy.resources.reservations.devices`, a Kubernetes `nvidia.com/gpu` limit) and install the "
                              "NVIDIA Container Toolkit on the host."),
    "wsl-gpu-setup": ("Keep only the Windows NVIDIA driver (no Linux driver inside WSL) and let WSL provide libcuda from "
                      "/usr/lib/wsl/lib: `nvidia-smi` inside WSL must list the GPU."),
    "jetson-wrong-wheel": ("Install NVIDIA's Jetson build for this JetPack (`envdoctor install pytorch` on the Jetson prints it), "
                           "not the generic aarch64 wheel."),
    "rosetta-python": ("This Mac has Apple silicon: run a native arm64 Python, Homebrew (/opt/homebrew) or conda "
                       "(`python -c \"import platform; print(platform.machine())\"` must print arm64) and rebuild or reinstall "
                       "the program there, instead of x86_64 binaries under Rosetta 2, which has no AVX."),
}


# (context, cause) pairs the context explains only where the message itself is about CUDA: no NVIDIA GPU
# explains an extension that finds no nvcc or CUDA_HOME, not a C++ symbol the installed torch lacks.
_ONLY_ABOUT_CUDA = frozenset({("no-gpu-platform", "extension-build-mismatch")})
_ABOUT_CUDA = re.compile(r"cuda|nvcc", re.I)
# A message of AMD's own runtime (HIP's errors, the amdgpu driver's /dev/kfd, rocminfo) is about the AMD GPU the
# machine has: "no NVIDIA GPU" explains nothing of it (a reporter's words naming ROCm may still be about CUDA).
_ABOUT_AMD = re.compile(r"/dev/kfd|rocminfo|ROCk module|hipError|HIP error|amdgpu", re.I)


# A Mac has no NVIDIA GPU for a container to be given either ("could not select device driver" under
# `docker run --gpus all`); an AMD machine may run a ROCm container, so no GPU platform explains that on a Mac only.
_ON_A_MAC_ALSO = {"no-gpu-platform": ("container-gpu-missing",)}


def _context_causes(codes: list[str], here: frozenset[str], excerpt: str = "", on_a_mac: bool = False) -> list[str]:
    """The context's own cause, for a message whose candidate causes it explains."""
    about_cuda, about_amd = bool(_ABOUT_CUDA.search(excerpt)), bool(_ABOUT_AMD.search(excerpt))
    return [context for context, explains in _CONTEXT_EXPLAINS.items() if context in here
            and not (context == "no-gpu-platform" and about_amd and not about_cuda)
            and any(c in explains + (_ON_A_MAC_ALSO.get(context, ()) if on_a_mac else ())
                    and (about_cuda or (context, c) not in _ONLY_ABOUT_CUDA) for c in codes)]


def _contexts(facts: Facts) -> frozenset[str]:
    """The causes tied to where the described program ran, worked out once per text."""
    return frozenset(c for c in (*_CONTEXT_FIXES, "tf-windows-native-gpu") if _in_context(c, facts))


def _in_context(code: str, facts: Facts) -> bool:
    """The described machine runs where this cause lives: WSL for wsl-gpu-setup, a container that
    shows no GPU for container-gpu-missing, a Jetson for jetson-wrong-wheel, native Windows for
    tf-windows-native-gpu, a Mac or a machine with only an AMD GPU for no-gpu-platform, an Apple-silicon
    Mac for rosetta-python."""
    if code == "wsl-gpu-setup":
        return facts.host.wsl is True
    if code == "container-gpu-missing":  # unless a GPU is seen in it
        return facts.host.container in _ENGINES and not facts.gpus
    if code == "jetson-wrong-wheel":
        return facts.jetson is not None
    if code == "tf-windows-native-gpu":
        return facts.host.os == "windows" and facts.host.wsl is not True
    if code == "rosetta-python":  # an Apple-silicon Mac whose Python is not known to be native arm64
        return facts.host.os == "macos" and facts.host.machine_arch == "arm64" and facts.host.arch != "arm64"
    if code == "no-gpu-platform":  # a Mac, only an AMD GPU named, or no NVIDIA GPU said: none to use
        return not facts.gpus and (facts.host.os == "macos" or bool(facts.amd and facts.amd.gpus) or _recorded_none(facts))
    return False


def _recorded_none(facts: Facts) -> bool:
    """The machine is recorded as having no NVIDIA GPU: diagnose's own no-gpu-platform rule says so."""
    from envdoctor.diagnose.driver import no_gpu_platform

    return next(iter(no_gpu_platform(facts)), None) is not None


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


def _explain_check(code: str, match: Match, facts: Facts, described: bool = False) -> Optional[Finding]:
    """Checks that only make sense with a log in hand: the framework is not installed yet, or the
    message itself says what the machine facts alone cannot (CUDA was wanted and is not there). The
    latter judge only a machine the text describes: this machine did not print the message."""
    framework = _framework_of(match, facts)
    if code == "python-unsupported" and framework in _PLANNED:
        from envdoctor.diagnose.python import no_release_for_python

        return no_release_for_python(facts, framework)
    if not described:
        return None
    if code == "cpu-only-build" and framework in ("pytorch", "torchvision", "torchaudio", "system"):
        return _torch_cpu_build(facts)  # "system": a reporter's symptom, whatever framework it is about
    if code == "jetson-wrong-wheel":
        return _jetson_build_unknown(facts, framework)
    if code == "container-gpu-missing":
        return _container_shows_no_gpu(facts)
    if code == "cuda-libs-missing":
        return _library_for_other_cuda(match, facts)
    if code == "glibc-too-old":  # pip listing releases that fit: this platform had wheels, newer ones dropped it
        return _glibc_older_than_current_wheels(facts, older_releases_fit=bool(match.groups.get("versions")))
    if code == "cudnn-mismatch":
        return _cudnn_of_another_major(match, facts)
    return None


def _cudnn_of_another_major(match: Match, facts: Facts) -> Optional[Finding]:
    """The message names the cuDNN major its package needs (onnxruntime's "Require cuDNN 8.* and CUDA 12.*"),
    and the machine has cuDNN of another major only: the package was built for the other one."""
    wanted = match.groups.get("cudnn")
    have = [c.version for c in facts.cudnn if c.version]
    if not wanted or not have or any(v.split(".")[0] == wanted for v in have):
        return None
    version = have[0]
    major = version.split(".")[0]
    return Finding(
        code="cudnn-mismatch", severity="error", section="toolkit",
        title=f"the package needs cuDNN {wanted}, the machine has cuDNN {version}",
        detail=(f"The message says the package was built for cuDNN {wanted}.x; cuDNN's major versions carry different "
                f"sonames (libcudnn.so.{wanted} vs libcudnn.so.{major}), so the installed cuDNN {version} cannot stand in for it."),
        fix=(f"Install the build of that package made for cuDNN {major} (a newer release, or the one built for this "
             f"CUDA/JetPack), or install cuDNN {wanted} beside cuDNN {version}",),
        evidence=(f"log.cudnn_required={wanted}",
                  *(f"cudnn[{i}].version={c.version}" for i, c in enumerate(facts.cudnn) if c.version)))


# A judgement, not a sourced number: a Python of the manylinux_2_28 era, and none that newer releases dropped.
RECENT_PYTHON = "3.10"


def _glibc_older_than_current_wheels(facts: Facts, older_releases_fit: bool = False) -> Optional[Finding]:
    """A message that pip found no usable wheel, on a Linux whose glibc (its own, or its named
    distribution's) is older than manylinux2014's, or older than manylinux_2_28's under a recent Python
    (an old Python is the likelier reason then), or under an unknown one where pip lists older releases
    that fit. Not on a Jetson, where the wheel's platform is the question."""
    from envdoctor.container.base_images import wheel_platform_glibc
    from envdoctor.diagnose._common import public

    glibc, python = facts.host.glibc, facts.python.version
    if facts.host.os not in (None, "linux") or facts.jetson is not None or not glibc or public(glibc) is None:
        return None
    known = bool(python) and public(python) is not None
    recent_python = public(python) >= public(RECENT_PYTHON) if known else older_releases_fit
    current, manylinux2014 = wheel_platform_glibc("manylinux_2_28"), wheel_platform_glibc("manylinux2014")
    if public(glibc) >= public(current if recent_python else manylinux2014):
        return None
    where = f" ({facts.host.distro})" if facts.host.distro else ""
    return Finding(
        code="glibc-too-old", severity="error", section="platform",
        title=f"glibc {glibc}{where} is older than the {current} that most current Linux wheels need",
        detail=("Linux wheels name the oldest glibc they run on (manylinux_2_17, manylinux_2_28); pip skips those built for "
                f"a newer glibc than this system's {glibc}, so it finds only old releases, or none. glibc comes with the "
                "operating system and cannot be upgraded by pip."),
        fix=(f"Run on a newer distribution (glibc {current} or later: RHEL/Rocky 8+, Ubuntu 20.04+, Debian 10+) or in a container "
             f"built on one, or install the newest release that still publishes manylinux2014 (glibc {manylinux2014}) wheels, "
             "or use conda",),
        evidence=(f"host.glibc={glibc}",) + ((f"host.distro={facts.host.distro}",) if facts.host.distro else ())
        + (f"base_images.toml: wheel_platform {'manylinux_2_28' if recent_python else 'manylinux2014'} -> glibc "
           f"{current if recent_python else manylinux2014}",),
    )


def _torch_cpu_build(facts: Facts) -> Optional[Finding]:
    from envdoctor.diagnose._common import local_tag, package, plan_fix

    version = package(facts, "torch")
    torch = facts.frameworks.get("torch")
    if local_tag(version) == "cpu":
        title, why, evidence = (f"torch {version} is a CPU-only build", "carries the +cpu tag",
                                f"python.packages.torch={version}")
    elif torch is not None and torch.extra.get("cuda_build") is False and not local_tag(version):
        # conda's CPU build string (py3.10_cpu_0, cpu_mkl_…), its cpuonly/pytorch-mutex "cpu" package,
        # collect_env's "CUDA used to build PyTorch: None"
        name = f"torch {version or torch.version or ''}".rstrip()
        title, why, evidence = (f"{name} is a CPU-only build", "is a CPU build", "frameworks.torch.extra.cuda_build=False")
    else:
        return None
    return Finding(
        code="cpu-only-build", severity="error", section="frameworks", title=title,
        detail=f"The program asked for CUDA, and the installed torch {why}: it has no CUDA support.",
        fix=plan_fix(facts, "pytorch", "Install a CUDA build of torch: `envdoctor install pytorch --cuda auto`"),
        evidence=(evidence,))


def _cpu_torch_on_cuda_machine(facts: Facts, wants_cuda: bool = False) -> Optional[Finding]:
    """A text with no error message that describes a machine with NVIDIA CUDA (a GPU, a driver or a
    toolkit), or that asks for CUDA on a machine not known to lack it, and a CPU-only torch or Paddle:
    that build cannot use the GPU whatever the program does."""
    nvidia = facts.nvidia
    cuda = bool(facts.gpus or facts.cuda_toolkit or (nvidia and (nvidia.driver_version or nvidia.driver_cuda)))
    asked = wants_cuda and facts.host.os != "macos" and not (facts.known("nvidia.gpus") and not facts.gpus)
    if not (cuda or asked) or facts.jetson is not None:
        return None
    found = _torch_cpu_build(facts)
    if found is not None:
        return replace(found, detail="The machine has NVIDIA CUDA, and the installed torch is a CPU-only build: "
                                     "torch.cuda.is_available() is False and nothing runs on the GPU.")
    return _paddle_cpu_package(facts)


def _paddle_cpu_package(facts: Facts) -> Optional[Finding]:
    """The text says the installed Paddle is compiled without CUDA, or names `paddlepaddle` as installed
    (and not `paddlepaddle-gpu`): Paddle's CPU package. With both installed they overwrite each other's
    files, which is a problem of its own."""
    from envdoctor.diagnose._common import package, plan_fix

    paddle = facts.frameworks.get("paddle")
    if paddle is not None and paddle.extra.get("compiled_with_cuda") is False:
        version = package(facts, "paddlepaddle-gpu") or package(facts, "paddlepaddle") or paddle.version or "?"
        title = f"Paddle {version} is compiled without CUDA"
        detail = ("paddle.is_compiled_with_cuda() is False: this Paddle never uses the GPU (the CPU package "
                  "`paddlepaddle`, or it overwrote `paddlepaddle-gpu` when both were installed).")
        evidence = "frameworks.paddle.extra.compiled_with_cuda=false"
    elif package(facts, "paddlepaddle") and not package(facts, "paddlepaddle-gpu"):
        version = package(facts, "paddlepaddle")
        title = f"paddlepaddle {version} is Paddle's CPU package"
        detail = "`paddlepaddle` never uses the GPU; the CUDA build is the separate `paddlepaddle-gpu` package."
        evidence = f"python.packages.paddlepaddle={version}"
    else:
        return None
    return Finding(
        code="cpu-only-build", severity="error", section="frameworks",
        title=f"{title}, and the machine has NVIDIA CUDA", detail=detail,
        fix=plan_fix(facts, "paddle", "Uninstall paddlepaddle (and paddlepaddle-gpu if both are there), then install "
                                      "only paddlepaddle-gpu: `envdoctor install paddle --cuda auto`"),
        evidence=(evidence,))


def _jetson_build_unknown(facts: Facts, framework: str) -> Optional[Finding]:
    """On a Jetson, a framework that cannot use the GPU and no record of which build is installed:
    the generic aarch64 wheel (CPU-only) is what a plain `pip install` brings. A known build is the
    jetson rule's to judge."""
    from envdoctor.diagnose._common import FRAMEWORK_NAMES, package, plan_fix
    from envdoctor.diagnose.jetson import DISTS

    jetson = facts.jetson
    framework = "pytorch" if framework in ("torchvision", "torchaudio") else framework
    if jetson is None or framework not in _PLANNED or any(package(facts, d) for f, d in DISTS if f == framework):
        return None
    name = FRAMEWORK_NAMES[framework]
    return Finding(
        code="jetson-wrong-wheel", severity="error", section="jetson",
        title=f"On a Jetson (L4T {jetson.l4t or '?'}), {name} cannot use the GPU: most often a generic aarch64 wheel",
        detail=(f"A plain `pip install` brings the generic aarch64 {name} wheel, which is CPU-only on Jetson; JetPack "
                "needs NVIDIA's Jetson build. The text does not say which build is installed."),
        fix=(plan_fix(facts, framework, f"Install the JetPack build of {name} (`envdoctor install {framework}` names the source)")
             if jetson.jetpack else
             (f"Read the JetPack release (`cat /etc/nv_tegra_release`), then install NVIDIA's Jetson build of {name} for it "
              f"(`envdoctor install {framework}` on the Jetson names the source)",)),
        evidence=(f"jetson.l4t={jetson.l4t}", f"jetson.jetpack={jetson.jetpack}"))


def _new_gpu_build_unknown(facts: Facts) -> Optional[Finding]:
    """No message, no framework version known, and a GPU that only the newer torch releases have
    kernels for (an RTX 50xx: torch 2.7 and its CUDA 12.8 build): the older torch that an app's pinned
    requirements or an old environment bring cannot run on it. Said as what to check, not as a fact."""
    from envdoctor.diagnose._common import FRAMEWORK_DISTS, gpu_ccs, package
    from envdoctor.diagnose.gpu_arch import first_torch_release_for

    if facts.jetson is not None or facts.frameworks or any(package(facts, d) for dists in FRAMEWORK_DISTS.values() for d in dists):
        return None
    for index, name, cc in gpu_ccs(facts):
        first, oldest = first_torch_release_for(cc)
        if oldest is None or first == oldest:
            continue  # every release of the matrix runs on it
        sm = "sm_" + cc.replace(".", "")
        gpu = f"{name or 'The GPU'} (compute capability {cc})"
        if first is None:
            title = f"{gpu}: no torch release from {oldest} on has kernels for it"
            detail = (f"None of the CUDA builds of torch {oldest} or later carries code for {sm} (pytorch matrix), whichever "
                      "is installed: it fails with \"no kernel image is available\", warns that the GPU is too old, or runs on the CPU.")
            fix = ("Use the CPU, a GPU that current builds support, or an old torch release built for this GPU's CUDA generation",)
        else:
            title = f"{gpu} needs torch {first} or newer, and which torch is installed is unknown"
            detail = (f"No torch release before {first} has a CUDA build with kernels for {sm} (pytorch matrix, from {oldest}); "
                      "an app's pinned requirements or an older environment often bring one. Such a build fails with "
                      "\"no kernel image is available\", warns that the GPU \"is not compatible\", or stalls.")
            fix = (f"Check `python -c \"import torch; print(torch.__version__, torch.cuda.get_arch_list())\"`: without {sm} "
                   f"in the list, install torch {first} or newer with a CUDA build that has it: `envdoctor install pytorch --cuda auto`",)
        return Finding(code="gpu-arch-unsupported", severity="warning", section="frameworks", title=title, detail=detail, fix=fix,
                       evidence=(f"nvidia.gpus[{index if index is not None else 0}].compute_capability={cc}", "python.packages.torch=unknown"))
    return None


def _container_shows_no_gpu(facts: Facts) -> Optional[Finding]:
    """The text says the program ran in a container, and no GPU was seen in it. Not on a Jetson, whose
    integrated GPU a container reaches through the NVIDIA runtime and no GPU list shows: there the
    framework's build decides (jetson-wrong-wheel). Nor on a Mac, which has no NVIDIA GPU to give one."""
    from envdoctor.diagnose.container import run_fixes

    engine = facts.host.container
    if engine not in _ENGINES or facts.gpus or facts.jetson is not None or facts.host.os == "macos":
        return None
    return Finding(
        code="container-gpu-missing", severity="error", section="nvidia",
        title=f"the program ran in a {engine} container and no GPU is seen in it",
        detail=("A container gets the GPU only when started with it (docker `--gpus all`, podman a CDI device, "
                "singularity/apptainer `--nv`) on a "
                "host with the NVIDIA container toolkit; the driver is the host's, never installed in the image."),
        fix=run_fixes(engine),
        evidence=(f"host.container={engine}", "nvidia.gpus=[]"))


# --- a CUDA library of another CUDA major than the machine's ---------------------------------------
# Libraries whose soname major is the CUDA major they ship with (CUDA 10.1+: libcudart.so.10.1 /
# libcublas.so.10, 11.x: libcudart.so.11.0 / libcublasLt.so.11 / cudart64_110.dll / cublas64_11.dll,
# 12.x: libcudart.so.12 / cublas64_12.dll / nvrtc64_120_0.dll). Not cuFFT, cuRAND, cuSOLVER (their
# majors span several CUDA releases) nor cuDNN (its own major). Source: the CUDA Toolkit release
# notes' component versions, docs.nvidia.com/cuda/cuda-toolkit-release-notes (as known; not re-read this session).
_CUDA_SONAME = re.compile(r"\blib(cudart|cublasLt|cublas|nvrtc|cusparse)\.so\.(\d{1,2})(?:\.\d{1,3}){0,2}\b"
                          r"|\b(cudart|cublasLt|cublas|nvrtc|cusparse)64_(\d{2,3})(?:_0)?\.dll\b", re.I)


def _library_for_other_cuda(match: Match, facts: Facts) -> Optional[Finding]:
    """The missing library is the one of another CUDA major than the machine has: the package that
    loads it was built for that CUDA (an onnxruntime-gpu, tensorflow, paddle or bitsandbytes build
    for CUDA 11 on a CUDA 12 machine), and installing more of this CUDA cannot give it that soname."""
    wanted = _wanted_cuda(" ".join([match.excerpt, *match.groups.values()]))
    if wanted is None:
        return None
    library, major = wanted
    machine = _machine_cuda_major(facts, major)
    if machine is None or machine[0] == major:
        return None
    have, evidence = machine
    return Finding(
        code="cuda-libs-missing", severity="error", section="toolkit",
        title=f"{library} is a CUDA {major} library; the machine has CUDA {have}",
        detail=(f"The package that loads {library} was built for CUDA {major}, and the machine has CUDA {have}, whose "
                f"libraries carry other sonames: the loader cannot find the CUDA {major} one."),
        fix=(f"Install the build of that package made for CUDA {have} (its CUDA {have} wheel or package variant), "
             f"or install the CUDA {major} runtime libraries beside CUDA {have}",),
        evidence=(f"log.library={library}", evidence))


def _wanted_cuda(text: str) -> Optional[tuple[str, int]]:
    """(library, the CUDA major its soname names) for the first CUDA library the text names."""
    m = _CUDA_SONAME.search(text)
    if m is None:
        return None
    digits = m.group(2) or m.group(4)
    major = int(digits[:2]) if len(digits) == 3 else int(digits)  # cudart64_110 -> 11, cublas64_12 -> 12
    return (m.group(0), major) if 9 <= major <= 19 else None


def _machine_cuda_major(facts: Facts, wanted: int) -> Optional[tuple[int, str]]:
    """(the machine's CUDA major, the fact that says it) when its CUDA facts agree on one: the
    toolkit, NVIDIA's pip CUDA wheels (-cu12), torch's +cuXXX build. The driver's highest CUDA alone
    says only that no newer CUDA is there, so it counts only for a library of an older major."""
    from envdoctor.diagnose._common import cuda_of_tag, local_tag, nvidia_wheels, package, toolkits

    found: dict[int, str] = {}
    for toolkit in toolkits(facts):
        if toolkit.version and toolkit.version.split(".")[0].isdigit():
            found.setdefault(int(toolkit.version.split(".")[0]), f"cuda_toolkit.version={toolkit.version}")
    for name, version in nvidia_wheels(facts).items():
        m = re.search(r"-cu(\d{2})$", name)
        if m:
            found.setdefault(int(m.group(1)), f"python.packages.{name}={version}")
    torch = package(facts, "torch")
    tagged = cuda_of_tag(local_tag(torch))
    if tagged:
        found.setdefault(int(tagged.split(".")[0]), f"python.packages.torch={torch}")
    if len(found) == 1:
        return next(iter(found.items()))
    driver = facts.nvidia.driver_cuda if facts.nvidia else None
    if not found and driver and driver.split(".")[0].isdigit() and wanted < int(driver.split(".")[0]):
        return int(driver.split(".")[0]), f"nvidia.driver_cuda={driver}"
    return None
