"""envdoctor's own reports, read back exactly.

`envdoctor check --markdown` / `facts --markdown` embed the whole facts document (schema
envdoctor.facts/1) as a ```json block inside `<details>`; `--json` outputs carry it as an object. When
such a document is in the text (pasted as it is, or quoted with "> " in a reply: the text arrives here
unquoted and unfenced), it is the machine, verbatim: no prose around it is re-parsed, because the
facts were measured on that machine and the prose is only their summary.

    parse(text) -> the facts document (a dict with "schema": "envdoctor.facts/1"), or {}

The document is found by its schema key and decoded with the JSON decoder from the nearest "{"
before it that opens an object holding that key; a document that does not load as Facts is ignored
(then the other parsers read the text as usual).
"""

from __future__ import annotations

import json
import re
from typing import Optional

from envdoctor.facts import SCHEMA

MARKER = "<!-- envdoctor-report v1 -->"
_SCHEMA_KEY = re.compile(r'"schema"[ \t]{0,20}:[ \t]{0,20}"' + re.escape(SCHEMA) + '"')
_HEAD_KEYS = ("envdoctor_version", "matrices_checked")  # the document's head, not facts
MAX_DOCUMENTS = 5  # schema keys looked at
MAX_OPENINGS = 50  # "{" tried before each of them


def parse(text: str) -> dict:
    """The first embedded facts document that loads, without its head keys; {} when there is none."""
    if SCHEMA not in text:
        return {}
    for n, m in enumerate(_SCHEMA_KEY.finditer(text)):
        if n >= MAX_DOCUMENTS:
            break
        document = _object_holding(text, m.start())
        if document is not None and _loads(document):
            return {k: v for k, v in document.items() if k not in _HEAD_KEYS}
    return {}


def version_of(text: str) -> Optional[str]:
    """The envdoctor version a report names (its JSON head), for the note that says what was read."""
    m = re.search(r'"envdoctor_version"[ \t]{0,20}:[ \t]{0,20}"([^"\n]{1,40})"', text)
    return m.group(1) if m else None


def _object_holding(text: str, at: int) -> Optional[dict]:
    """The JSON object that spans position `at`, decoded from the nearest "{" that opens it."""
    decoder = json.JSONDecoder()
    start = at
    for _ in range(MAX_OPENINGS):
        start = text.rfind("{", 0, start)
        if start == -1:
            return None
        try:
            value, end = decoder.raw_decode(text, start)
        except (ValueError, RecursionError):  # not JSON, or nested past what a facts document can be
            continue
        if end > at and isinstance(value, dict) and value.get("schema") == SCHEMA:
            return value
    return None


def _loads(document: dict) -> bool:
    from envdoctor.facts import Facts, FactsError

    try:
        Facts.from_dict(document)
    except (FactsError, TypeError, ValueError, AttributeError):
        return False
    return True
