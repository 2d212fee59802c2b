"""Marks that every terminal can show: ✓ ! ✗ → • where the output stream can encode them, and
[ok] [!] [x] -> * where it cannot (a cp1252 console, a redirect with PYTHONIOENCODING=ascii).

`install_fallback(stream)` makes a text stream that cannot encode them write ASCII stand-ins for
every character envdoctor prints (and '?' for any other), so that no output can fail with
UnicodeEncodeError; `fit(mark)` gives the mark to print on stdout (its ASCII form where needed).
"""

from __future__ import annotations

import codecs
import sys

# Every non-ASCII character envdoctor's own text uses, and what it becomes in ASCII.
ASCII = {
    "✓": "[ok]", "✗": "[x]", "!": "[!]", "•": "*", "→": "->", "←": "<-", "↔": "<->", "…": "...",
    "–": "-", "—": "--", "≥": ">=", "≤": "<=", "≠": "!=", "×": "x", "·": "-", "│": "|", "⏎": "\\n",
    "★": "*", "“": '"', "”": '"', "‘": "'", "’": "'", "§": "S", "\u00a0": " ",
}
# The marks a report starts its lines with: the ones whose ASCII form is worth asking for.
MARKS = "✓✗•→–—…"
ERROR_HANDLER = "envdoctor-ascii"


def _replace(error: UnicodeError):
    if not isinstance(error, UnicodeEncodeError):
        raise error
    bad = error.object[error.start:error.end]
    return "".join(ASCII.get(ch, "?") for ch in bad), error.end


codecs.register_error(ERROR_HANDLER, _replace)


def unicode_ok(stream=None) -> bool:
    """Whether `stream` (default: stdout) can encode the marks."""
    stream = sys.stdout if stream is None else stream
    encoding = getattr(stream, "encoding", None)
    if not encoding:  # a str sink (StringIO) takes any character
        return True
    try:
        MARKS.encode(encoding)
    except (UnicodeEncodeError, LookupError):
        return False
    return True


def fit(mark: str, stream=None) -> str:
    """`mark` as `stream` (default: stdout) can show it: itself, or its ASCII form."""
    return mark if unicode_ok(stream) else ASCII.get(mark, mark)


def install_fallback(stream) -> None:
    """Make a text stream that cannot encode the marks write their ASCII forms instead of failing."""
    if stream is None or unicode_ok(stream):
        return
    reconfigure = getattr(stream, "reconfigure", None)
    if reconfigure is not None:
        try:
            reconfigure(errors=ERROR_HANDLER)
        except (ValueError, OSError):  # a detached or closed stream: nothing will be written to it
            pass
