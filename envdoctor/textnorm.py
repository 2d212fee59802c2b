"""Pasted text, normalised once before any signature or parser sees it.

People paste logs as a terminal, a browser or PowerShell left them: UTF-16 with a BOM, CRLF line
ends, colour codes, Markdown quoting (`> `), code fences, `<details>` blocks, lines wrapped at 80
columns, non-breaking spaces, the full-width punctuation of CJK input methods. Two forms come out of here:

    doc = normalise(raw_bytes_or_text)
    doc.text   # the log as lines: decoded, control sequences and quoting removed, LF line ends
    doc.flat   # the same with every run of whitespace (line breaks included) one space: what
               # signatures match, so a message wrapped over lines still matches
    doc.line_at(flat_index)  # the line of `text` a position of `flat` falls on, for excerpts
"""

from __future__ import annotations

import bisect
import codecs
import functools
import html
import re
from dataclasses import dataclass

# Terminal control sequences: CSI (colours, cursor), OSC (titles, links), character-set selection
# (`tput sgr0` writes ESC ( B), and the two-byte ones (keypad, save/restore cursor).
_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[()*+][0-~]|\x1b[=>78DEHMc]")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_QUOTE = re.compile(r"^(?:[ \t]{0,3}>[ \t]?)+", re.M)  # Markdown/e-mail quoting, nested ("> > ")
_FENCE = re.compile(r"^[ \t]*(?:```|~~~)[^\n`]*$", re.M)  # ``` and ```python lines
# A "fence" followed by a sentence (```RuntimeError: CUDA error ...) is text typed right after the
# backticks, not an info string (one word): the marker goes, the text stays.
_FENCE_TEXT = re.compile(r"^([ \t]*)(?:```|~~~)(?=[^\n`]*? [^\n`]*$)", re.M)
_HTML_TAG = re.compile(r"</?(?:details|summary|br|pre|code|p|b|i|em|strong|sub|sup|kbd|tt)\b[^>\n]{0,200}>", re.I)
# Full-width forms that CJK input methods type ("CUDA：11.8（驱动 535）"): their ASCII letters,
# one character each, so positions do not move.
_WIDE = re.compile("[\uff01-\uff5e\u3000]")
_NARROW = {**{code: code - 0xFEE0 for code in range(0xFF01, 0xFF5F)}, 0x3000: 0x20}
# Typographic quotes a browser, a word processor or a chat app put in place of ASCII ones
# (Error loading “C:\…\fbgemm.dll”): the ASCII ones every message is printed with, one character each.
_TYPOGRAPHIC = (("\u201c", '"'), ("\u201d", '"'), ("\u201e", '"'), ("\u2018", "'"), ("\u2019", "'"),
                ("\u00a0", " "), ("\u202f", " "), ("\u200b", ""))  # and odd spaces (str.replace: a 5 MB log stays fast)
_RUNS = re.compile(r"\s{2,}")  # what `flat` shortens: a single whitespace character keeps its place as one space


@dataclass(frozen=True)
class Normalised:
    text: str
    flat: str
    truncated: bool = False  # the input was longer than what was read

    def line_at(self, flat_index: int, flat_end: int | None = None) -> str:
        """The line(s) of `text` that hold flat[flat_index:flat_end], stripped."""
        start = self._to_text(flat_index)
        end = self._to_text(flat_end if flat_end is not None else flat_index)
        line_start = self.text.rfind("\n", 0, start) + 1
        line_end = self.text.find("\n", end)
        return self.text[line_start:line_end if line_end != -1 else len(self.text)].strip()

    def _to_text(self, flat_index: int) -> int:
        lead, flat_starts, text_ends = self._anchors
        i = bisect.bisect_right(flat_starts, flat_index) - 1
        if i < 0:
            return flat_index + lead
        # flat_starts[i] is the single space standing for a run that ended at text_ends[i] in text
        return text_ends[i] + (flat_index - flat_starts[i]) - 1

    @functools.cached_property
    def _anchors(self) -> tuple[int, list[int], list[int]]:
        """Where `flat` and `text` part: each whitespace run that `flat` shortens to one space, in both
        (a single line break or tab becomes a space in place). Built on the first excerpt only."""
        text = self.text
        lead = len(text) - len(text.lstrip())
        flat_starts, text_ends = [], []
        shift = lead  # text index - flat index, before the next run
        for run in _RUNS.finditer(text, lead):
            if run.end() == len(text):
                break
            flat_starts.append(run.start() - shift)
            text_ends.append(run.end())
            shift += len(run.group()) - 1
        return lead, flat_starts, text_ends


def normalise(raw: bytes | str, truncated: bool = False) -> Normalised:
    text = decode(raw) if isinstance(raw, (bytes, bytearray)) else raw
    text = unquote(text)
    return Normalised(text=text, flat=flatten(text), truncated=truncated)


def flatten(text: str) -> str:
    """Every run of whitespace one space, none at the ends (str.split's whitespace is re's \\s)."""
    return " ".join(text.split())


def unquote(text: str) -> str:
    """Control sequences, CR overwrites, Markdown quoting, fences and HTML wrappers removed."""
    text = _ANSI.sub("", text)
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    text = _CONTROL.sub("", text)
    if ">" in text:
        text = _QUOTE.sub("", text)
    text = rejoin_hard_wraps(text)
    if "```" in text or "~~~" in text:
        text = _FENCE.sub("", _FENCE_TEXT.sub(r"\1", text))
    if "<" in text:
        text = _HTML_TAG.sub("", text)
    if "&" in text:
        text = re.sub(r"&(?:gt|lt|amp|quot|#39|nbsp);", lambda m: html.unescape(m.group()), text)
    if _WIDE.search(text):
        text = text.translate(_NARROW)
    for odd, plain in _TYPOGRAPHIC:
        if odd in text:
            text = text.replace(odd, plain)
    return text


MIN_WRAP = 60  # narrower lines of one length are a table or a list, not a terminal's wrapping
TERMINAL = 76  # narrower than a terminal, two lines of one length may be a coincidence of text wrapped at spaces: three are wanted
_BORDER = "|+-=_*#~"


def rejoin_hard_wraps(text: str) -> str:
    """A text cut into lines of exactly one width, words broken where the width fell (a terminal, tmux,
    `fold -w 80`): the width is the longest line's length when at least two lines have it and they
    are most of the lines near it (wrapping at spaces spreads them below it); each line of that
    width runs on into the next one, without a space
    (a space at the break sits at one end or the other). Table borders and rows never run on."""
    if text.count("\n") < 2:
        return text
    lines = text.split("\n")
    width = max(len(line) for line in lines)
    full = sum(1 for line in lines if len(line) == width and not _padded(line))
    near = sum(1 for line in lines if width - 15 <= len(line) <= width)
    if width < MIN_WRAP or full < (2 if width >= TERMINAL else 3) or full < 0.6 * near:  # wrapping at spaces leaves lengths spread below the width
        return text
    out: list[str] = []
    joining = False
    for line in lines:
        if joining and line and line[0] not in _BORDER:
            out[-1] += line
        else:
            out.append(line)
        joining = len(line) == width and line[-1] not in _BORDER and not _padded(line)
    return "\n".join(out)


def _padded(line: str) -> bool:
    """Columns padded with spaces (conda list, pip list, nvidia-smi): a table row, never wrapped text."""
    return "  " in line.strip()


def decode(data: bytes) -> str:
    """Text from bytes: a BOM decides; else UTF-16 when every other byte is NUL (PowerShell's `>`
    without a BOM); else UTF-8; else the Windows code page most pasted logs come from."""
    for bom, codec in ((codecs.BOM_UTF32_LE, "utf-32-le"), (codecs.BOM_UTF32_BE, "utf-32-be"),
                       (codecs.BOM_UTF8, "utf-8"), (codecs.BOM_UTF16_LE, "utf-16-le"),
                       (codecs.BOM_UTF16_BE, "utf-16-be")):
        if data.startswith(bom):
            return data[len(bom):].decode(codec, errors="replace")
    sample = data[:4096]
    if len(sample) >= 4:
        even_nuls, odd_nuls = sample[0::2].count(0), sample[1::2].count(0)
        half = len(sample) // 2
        if odd_nuls > 0.4 * half and even_nuls < 0.05 * half:
            return data.decode("utf-16-le", errors="replace")
        if even_nuls > 0.4 * half and odd_nuls < 0.05 * half:
            return data.decode("utf-16-be", errors="replace")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        pass
    try:
        return data.decode("cp1252")
    except UnicodeDecodeError:
        return data.decode("utf-8", errors="replace")
