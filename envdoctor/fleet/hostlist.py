"""Node ranges as pdsh, ClusterShell and Slurm write them: `gpu[001-117,119]`.

`fold(names)` writes a set of host names as ranges; `expand(text)` reads ranges back (several
brackets multiply: `rack[1-2]-n[01-02]` is four hosts). Zero padding is kept: `gpu[001-003]`.
"""

from __future__ import annotations

import re
from typing import Iterable, Optional

MAX_HOSTS = 200_000
_TRAILING_NUMBER = re.compile(r"^(.*?)(\d+)(\D*)$")
_BRACKET = re.compile(r"\[([^\[\]]*)\]")


class HostlistError(ValueError):
    """A range that cannot be read (bad bracket, reversed or huge range)."""


def fold(names: Iterable[str]) -> str:
    """The names as comma-separated ranges, sorted: `gpu[001-003,007],login1`."""
    padded: dict[tuple[str, str, int], set[int]] = {}
    plain: dict[tuple[str, str], set[int]] = {}
    others: set[str] = set()
    for name in set(names):
        m = _TRAILING_NUMBER.match(name)
        if not m:
            others.add(name)
            continue
        prefix, digits, suffix = m.groups()
        if len(digits) > 1 and digits.startswith("0"):
            padded.setdefault((prefix, suffix, len(digits)), set()).add(int(digits))
        else:
            plain.setdefault((prefix, suffix), set()).add(int(digits))
    for (prefix, suffix), numbers in list(plain.items()):  # gpu100 belongs with gpu[001-099]
        for n in list(numbers):
            key = (prefix, suffix, len(str(n)))
            if key in padded:
                padded[key].add(n)
                numbers.discard(n)
    parts = [(_sort_key(p + s), _write(p, s, nums, width)) for (p, s, width), nums in padded.items()]
    parts += [(_sort_key(p + s), _write(p, s, nums, 0)) for (p, s), nums in plain.items() if nums]
    parts += [(_sort_key(name), name) for name in others]
    return ",".join(text for _, text in sorted(parts))


def _write(prefix: str, suffix: str, numbers: set[int], width: int) -> str:
    ordered = sorted(numbers)
    if len(ordered) == 1:
        return f"{prefix}{ordered[0]:0{width}d}{suffix}"
    runs = []
    start = previous = ordered[0]
    for n in ordered[1:] + [None]:
        if n is not None and n == previous + 1:
            previous = n
            continue
        runs.append(f"{start:0{width}d}" if start == previous else f"{start:0{width}d}-{previous:0{width}d}")
        if n is not None:
            start = previous = n
    return f"{prefix}[{','.join(runs)}]{suffix}"


def _sort_key(text: str) -> tuple:
    return tuple(int(t) if t.isdigit() else t for t in re.split(r"(\d+)", text))


def natural_sorted(names: Iterable[str]) -> list[str]:
    return sorted(names, key=_sort_key)


def expand(text: str, limit: int = MAX_HOSTS) -> list[str]:
    """Every host a range text names (comma- or whitespace-separated), in order, without duplicates."""
    hosts: dict[str, None] = {}
    for item in _split_top(text):
        for host in _expand_one(item, limit):
            hosts[host] = None
            if len(hosts) > limit:
                raise HostlistError(f"{text[:60]!r} names more than {limit} hosts")
    return list(hosts)


def _split_top(text: str) -> list[str]:
    """Split at commas and whitespace outside brackets."""
    items, depth, current = [], 0, []
    for ch in text:
        if ch == "[":
            depth += 1
            if depth > 1:
                raise HostlistError(f"nested '[' in {text[:60]!r} (write e.g. gpu[001-117,119])")
        elif ch == "]":
            depth -= 1
            if depth < 0:
                raise HostlistError(f"unbalanced ']' in {text[:60]!r}")
        if depth == 0 and (ch == "," or ch.isspace()):
            items.append("".join(current))
            current = []
        else:
            current.append(ch)
    if depth:
        raise HostlistError(f"unclosed '[' in {text[:60]!r}")
    items.append("".join(current))
    return [i for i in items if i]


def _expand_one(item: str, limit: int) -> list[str]:
    m = _BRACKET.search(item)
    if not m:
        if "[" in item or "]" in item:
            raise HostlistError(f"bad range {item!r}")
        return [item]
    head, tail = item[: m.start()], item[m.end():]
    out = []
    for number in _numbers(m.group(1), item, limit):
        out.extend(_expand_one(head + number + tail, limit))
        if len(out) > limit:
            raise HostlistError(f"{item[:60]!r} names more than {limit} hosts")
    return out


def _numbers(spec: str, item: str, limit: int) -> list[str]:
    out: list[str] = []
    for part in spec.split(","):
        part = part.strip()
        m = re.fullmatch(r"(\d+)(?:-(\d+))?", part)
        if not m:
            raise HostlistError(f"bad range {part!r} in {item!r} (write e.g. gpu[001-117,119])")
        first, last = m.group(1), m.group(2) or m.group(1)
        start, stop = int(first), int(last)
        if stop < start:
            raise HostlistError(f"reversed range {part!r} in {item!r}")
        if stop - start >= limit:
            raise HostlistError(f"range {part!r} in {item!r} names more than {limit} hosts")
        width = len(first) if first.startswith("0") and len(first) > 1 else 0
        out.extend(f"{n:0{width}d}" for n in range(start, stop + 1))
    return out


def read_expected(source: str, read_text) -> list[str]:
    """`--expect-hosts FILE|RANGE`: a file of names or ranges (one or more a line, `#` comments),
    else the text itself as a range. `read_text(path)` returns the file's text or None."""
    text: Optional[str] = read_text(source)
    if text is None:
        hosts = expand(source)
        if not hosts:
            raise HostlistError(f"{source[:60]!r} names no hosts (write e.g. gpu[001-117,119], or a file of names)")
        return hosts
    lines = [line.split("#", 1)[0] for line in text.splitlines()]
    hosts = expand(" ".join(lines))
    if not hosts:
        raise HostlistError(f"{source[:60]} names no hosts (a file of names or ranges, one or more a line)")
    return hosts
