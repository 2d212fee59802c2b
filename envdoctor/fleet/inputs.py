"""Read many nodes' JSON, sniffing the form of each input.

Forms read:
- a facts document (`envdoctor facts`), a report (`envdoctor check --json`), an Ansible fact
  (`envdoctor facts --ansible-fact`), one per file, or a folder of them (walked, bounded);
- `ansible --tree DIR` output: one file per host, named by it, the payload in `stdout` (the
  command module) or in `ansible_facts.ansible_local.envdoctor` (the setup module with facts.d);
- `host: {json}` lines from pdsh / clush (a host's lines are joined, so an indented document works
  as well as a one-line one), from a file or stdin (`-`);
- JSON Lines: one document a line.
A malformed, truncated or unreadable input becomes one `Unreadable` line; the run goes on.
"""

from __future__ import annotations

import json
import os
import re
import stat
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Optional, Union

MAX_FILE_BYTES = 8_000_000
MAX_FILES = 100_000
MAX_LINE_BYTES = 8_000_000
_HOST_LINE = re.compile(r"^([A-Za-z0-9][A-Za-z0-9_.\-]{0,252}): ?(.*)$")


@dataclass(frozen=True)
class Document:
    """One node's payload: the JSON, where it came from, and a host name the transport gave."""

    data: Any
    source: str
    host: Optional[str] = None  # from the transport (pdsh prefix, ansible --tree file name): wins
    name_hint: Optional[str] = None  # a file's name: used when the facts name no host


@dataclass(frozen=True)
class Unreadable:
    source: str
    message: str
    host: Optional[str] = None


Item = Union[Document, Unreadable]


def read_paths(paths: list[str], stdin=None) -> Iterator[Item]:
    for path in paths:
        if path == "-":
            yield from read_stream(stdin if stdin is not None else sys.stdin, "stdin")
        elif os.path.isdir(path):
            yield from _read_folder(path)
        else:
            yield from read_file(path)


def _read_folder(folder: str) -> Iterator[Item]:
    count = 0
    for root, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(files):
            if name.startswith("."):
                continue
            count += 1
            if count > MAX_FILES:
                yield Unreadable(folder, f"more than {MAX_FILES} files; the rest were not read")
                return
            yield from read_file(os.path.join(root, name))


def read_file(path: str) -> Iterator[Item]:
    try:
        text = _read_bounded(path)
    except (OSError, ValueError) as exc:
        message = str(exc) if isinstance(exc, ValueError) else f"cannot read: {exc.strerror or exc}"
        yield Unreadable(path, message, host=_name_hint(path))
        return
    hint = _name_hint(path)
    stripped = text.lstrip()
    if stripped.startswith("{") or stripped.startswith("["):
        try:
            data = json.loads(text)
        except (json.JSONDecodeError, RecursionError):
            pass
        else:
            yield from _documents(data, path, hint)
            return
    yield from read_lines(text.splitlines(), path, hint)


def _name_hint(path: str) -> str:
    """A file's name as the host it may be named after (`gpu001.json`, ansible --tree's `gpu001`)."""
    name = Path(path).name
    return name[: -len(".json")] if name.endswith(".json") else name


def _read_bounded(path: str) -> str:
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ValueError("not a regular file")
        raw = fh.read(MAX_FILE_BYTES + 1)
    if len(raw) > MAX_FILE_BYTES:
        raise ValueError(f"over {MAX_FILE_BYTES // 1_000_000} MB")
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise ValueError("not UTF-8 text") from None


def read_stream(stream, source: str) -> Iterator[Item]:
    """stdin: read line by line (never all at once), bounded per line."""
    def lines():
        while True:
            line = stream.readline(MAX_LINE_BYTES + 1)
            if not line:
                return
            yield line.rstrip("\r\n")

    yield from read_lines(lines(), source, None)


def read_lines(lines, source: str, hint: Optional[str]) -> Iterator[Item]:
    """JSON Lines, `host: text` lines (pdsh/clush), or an indented document, line by line. A
    host's (or the stream's) lines are buffered until they parse: at a `}` that closes a document."""
    buffers: dict[Optional[str], list[str]] = {}
    number = 0
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        host, rest = _split_host(line, buffers)
        if host is None and not buffers.get(None) and rest.lstrip().startswith("{"):
            parsed = _try_json(rest)
            if parsed is not _FAILED:
                yield from _documents(parsed, f"{source}:{number}", hint)
                continue
        buffer = buffers.setdefault(host, [])
        buffer.append(rest)
        if rest.rstrip() == "}" or (len(buffer) == 1 and rest.rstrip().endswith("}")):
            parsed = _try_json("\n".join(buffer))
            if parsed is not _FAILED:
                del buffers[host]
                where = f"{source}:{number}" + (f" ({host})" if host else "")
                yield from _documents(parsed, where, hint, transport_host=host)
    for host, buffer in buffers.items():
        if not buffer:
            continue
        text = "\n".join(buffer)
        what = f"{source}" + (f" ({host})" if host else "")
        yield Unreadable(what, _why_not_json(text), host=host or hint)


def _split_host(line: str, buffers: dict) -> tuple[Optional[str], str]:
    """`gpu001: {...}` -> ("gpu001", "{...}"); a line of an unprefixed document -> (None, line).
    A line inside an unprefixed document that happens to look like `key: value` stays in it."""
    if buffers.get(None):
        return None, line
    m = _HOST_LINE.match(line)
    if m and not line.startswith((" ", "\t", "{", "[", '"')):
        return m.group(1), m.group(2)
    return None, line


_FAILED = object()


def _try_json(text: str) -> Any:
    try:
        return json.loads(text)
    except (json.JSONDecodeError, RecursionError):
        return _FAILED


def _why_not_json(text: str) -> str:
    try:
        json.loads(text)
    except json.JSONDecodeError as exc:
        return f"not valid JSON (truncated?): {exc.msg} at line {exc.lineno}"
    except RecursionError:
        return "nested too deeply"
    return "not a JSON document"


def _documents(data: Any, source: str, hint: Optional[str], transport_host: Optional[str] = None) -> Iterator[Item]:
    if isinstance(data, list):  # a JSON array of documents
        for i, element in enumerate(data[:MAX_FILES]):
            yield from _documents(element, f"{source}[{i}]", None, transport_host)
        return
    if not isinstance(data, dict):
        yield Unreadable(source, f"expected a JSON object, got {type(data).__name__}", host=transport_host)
        return
    if _is_ansible_result(data):  # ansible --tree: the file is named by the host
        yield from _ansible(data, source, transport_host or hint)
        return
    yield Document(data, source, host=transport_host, name_hint=hint)


def _is_ansible_result(data: dict) -> bool:
    return "ansible_facts" in data or ("stdout" in data and "schema" not in data) or (
        "unreachable" in data and "schema" not in data) or ("msg" in data and "failed" in data and "schema" not in data)


def _ansible(data: dict, source: str, host: Optional[str]) -> Iterator[Item]:
    local = data.get("ansible_facts", {}).get("ansible_local") if isinstance(data.get("ansible_facts"), dict) else None
    if isinstance(local, dict) and "envdoctor" in local:
        payload = local["envdoctor"]
        if isinstance(payload, str):  # facts.d turns a script that failed into an error string
            yield Unreadable(source, f"facts.d envdoctor failed: {payload[:200]}", host=host)
        else:
            yield from _documents(payload, source, None, host)
        return
    if data.get("unreachable"):
        yield Unreadable(source, f"unreachable: {str(data.get('msg', ''))[:200]}", host=host)
        return
    stdout = data.get("stdout")
    if isinstance(stdout, str) and stdout.strip():
        parsed = _try_json(stdout)
        if parsed is _FAILED:
            yield Unreadable(source, f"stdout is {_why_not_json(stdout)}", host=host)
        else:
            yield from _documents(parsed, source, None, host)
        return
    if isinstance(local, dict):
        yield Unreadable(source, "no ansible_local.envdoctor (is the facts.d script installed?)", host=host)
        return
    yield Unreadable(source, f"ansible result without envdoctor output: {str(data.get('msg', ''))[:200]}", host=host)
