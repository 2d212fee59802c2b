"""Signatures recognised from a fragment of their message.

People quote part of an error: the middle of a long message ("This can happen if your PyTorch and
torchvision versions are incompatible"), a title cut short, a sentence retyped around the key words.
A signature's pattern wants its own start; its `example` rows hold the whole real message. Here every
run of SHINGLE consecutive words of an example that no other signature's examples share points back
to that signature, and a text holding such a run names it.

Words are compared lowercased with every digit run read as "#" (a version or a line number is not
what makes a message), and traceback frames, paths and Python's version banner are left out of the examples: they are the
program's, not the message's, and every torch traceback passes through the same files. Symptom rows
are left out: their examples are reporters' words, not a message.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Iterable

SHINGLE = 7  # words in a run: long enough to be one message's, short enough for a partial quote
READ = 100_000  # characters of a text's head and of its tail that are searched (a pasted issue is a few kB)
_WORD = re.compile(r"[a-z#_]+")  # read on the text with every digit as "#"
_TO_HASH = str.maketrans("0123456789", "##########")
_FRAME = re.compile(r'File "[^"\n]{0,400}", line \d{1,7}(?:, in [\w<>.]{1,120})?')
# Python's own version banner (sys.version: "(tags/v3.13.3:6280bb5, Apr  8 2025, 14:47:33) [MSC v.1943 64 bit (AMD64)]"):
# every Windows report that prints its Python carries it, so it is no message's words either
_BANNER = re.compile(r"\((?:tags/|main, |default, )[^()\n]{0,80}\)|\[(?:MSC|GCC|Clang)[^\]\n]{0,80}\]")
# Words that alone say nothing about which message it is (Python's, the OS loader's, a resolver's and
# the Windows shells' error boilerplate among them: "libssl.so.1.1: cannot open shared object file" is no
# libcudart message, "'CMAKE_ARGS' is not recognized as an internal or external command" no nvidia-smi one):
# a run needs MIN_TELLING others.
_COMMON = frozenset("""the a an of to in on for is are was be it this that and or not no with by as at from your
you if can could may please use try see set found version error errors warning runtime check # py file line
call most recent last traceback errno such directory exception module named oserror ioerror importerror
runtimeerror valueerror typeerror attributeerror assertionerror filenotfounderror modulenotfounderror
so dll dylib shared object because require conclude unsatisfiable
recognized internal external command operable program batch term cmdlet""".split())  # the loader's, the resolver's and the shells' boilerplate too
MIN_TELLING = 3


@dataclass(frozen=True)
class Hit:
    """Where a fragment was found in the flat text; shaped like the part of re.Match that explain uses."""

    begin: int
    finish: int

    def start(self) -> int:
        return self.begin

    def end(self) -> int:
        return self.finish

    def groupdict(self) -> dict:
        return {}


def words(text: str) -> list[tuple[str, int, int]]:
    """(word, start, end) of each word of `text`, lowercased, digit runs as "#"."""
    hashed = text.lower().translate(_TO_HASH)  # same length: positions stay the text's
    return [(_one_hash(m.group(0)), m.start(), m.end()) for m in _WORD.finditer(hashed)]


def _one_hash(word: str) -> str:
    while "##" in word:
        word = word.replace("##", "#")
    return word


def _runs(example: str) -> set[tuple[str, ...]]:
    kept = " ".join(t for t in _BANNER.sub(" ", _FRAME.sub(" ", example)).split() if "/" not in t and "\\" not in t)  # no paths
    tokens = [w for w, _, _ in words(kept)]
    runs = set()
    for i in range(len(tokens) - SHINGLE + 1):
        run = tuple(tokens[i:i + SHINGLE])
        if sum(1 for w in run if w not in _COMMON and len(w) >= 3) >= MIN_TELLING:
            runs.add(run)
    return runs


@functools.lru_cache(maxsize=4)
def index(signatures: tuple) -> dict[tuple[str, ...], object]:
    """Each run of words found in one signature's examples only -> that signature (the runs kept in
    the parsed-data cache, keyed by the examples and by this module's code)."""
    from pathlib import Path

    from envdoctor.matrix.loader import cached

    listed = [(sig.id, sig.examples) for sig in signatures if not sig.symptom]  # a reporter's words are no message
    source = repr(listed).encode() + Path(__file__).read_bytes()
    owner_of = cached("fragment-runs", source, lambda: _owners(listed))
    by_id = {sig.id: sig for sig in signatures}
    return {tuple(run.split(" ")): by_id[owner] for run, owner in owner_of.items()}


def _owners(listed: list[tuple[str, tuple[str, ...]]]) -> dict[str, str]:
    """Each run (its words joined by spaces) found in one signature's examples only -> its id."""
    owners: dict[str, set[str]] = {}
    for sig_id, examples in listed:
        for example in examples:
            for run in _runs(example):
                owners.setdefault(" ".join(run), set()).add(sig_id)
    return {run: next(iter(who)) for run, who in owners.items() if len(who) == 1}


@functools.lru_cache(maxsize=4)
def _first_words(signatures: tuple) -> frozenset[str]:
    return frozenset(run[0] for run in index(signatures))


def find(flat: str, signatures: tuple, skip: Iterable[str] = ()) -> list[tuple[object, Hit]]:
    """(signature, hit) for each signature not in `skip` whose message a fragment of `flat` quotes,
    at its first such fragment."""
    table, starts = index(signatures), _first_words(signatures)
    skipped = set(skip)
    found: dict[str, tuple[object, Hit]] = {}
    parts = [(0, flat)] if len(flat) <= 2 * READ else [(0, flat[:READ]), (len(flat) - READ, flat[-READ:])]
    for offset, part in parts:
        tokens = words(part)
        plain = [w for w, _, _ in tokens]
        for i in range(len(plain) - SHINGLE + 1):
            if plain[i] not in starts:
                continue
            sig = table.get(tuple(plain[i:i + SHINGLE]))
            if sig is None or sig.id in skipped or sig.id in found:
                continue
            found[sig.id] = (sig, Hit(offset + tokens[i][1], offset + tokens[i + SHINGLE - 1][2]))
    return list(found.values())

