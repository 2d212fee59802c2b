"""Small helpers the pasted-text parsers share: version checks, a partial-facts builder, names."""

from __future__ import annotations

import re
from typing import Any, Optional

from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from envdoctor.probe.host import normalise_arch

_NUMERIC = re.compile(r"\d{1,6}(?:\.\d{1,6}){0,4}")
_PEP440_HEAD = re.compile(r"v?\d")


def pep440(text: Optional[str]) -> Optional[str]:
    """`text` if it is a PEP 440 version ("2.6.0+cu124", "1!161.3030"), else None."""
    if not text or len(text) > 80 or not _PEP440_HEAD.match(text):
        return None
    try:
        Version(text)
    except InvalidVersion:
        return None
    return text


def numeric(text: Optional[str], parts: int = 0) -> Optional[str]:
    """A dotted number ("12.4", "535.104.05"); with `parts`, at least that many components."""
    if not text or not _NUMERIC.fullmatch(text):
        return None
    return text if text.count(".") + 1 >= parts else None


def major_minor(text: Optional[str]) -> Optional[str]:
    m = re.match(r"(\d{1,4})\.(\d{1,4})", text or "")
    return f"{m.group(1)}.{m.group(2)}" if m else None


def package_name(text: str) -> str:
    """Normalised distribution name: lowercase, runs of `-_.` as one `-` (PEP 503). conda's own
    meta-packages keep their leading underscore ("_libgcc_mutex" → "_libgcc-mutex")."""
    return ("_" if text.startswith("_") else "") + canonicalize_name(text.lstrip("_"))


def arch(text: str) -> str:
    return normalise_arch(text)


def sm_to_cc(token: str) -> Optional[str]:
    """"sm_120" → "12.0", "sm_86" → "8.6" (the last digit is the minor version)."""
    m = re.fullmatch(r"(?:sm|compute)_(\d{2,3})a?", token)
    return f"{m.group(1)[:-1]}.{m.group(1)[-1]}" if m else None


def cudnn_from_int(value: int) -> str:
    """cuDNN's CUDNN_VERSION integer: 7605 → "7.6.5", 8902 → "8.9.2", 90100 → "9.1.0"."""
    if value >= 10000:
        return f"{value // 10000}.{(value % 10000) // 100}.{value % 100}"
    return f"{value // 1000}.{(value % 1000) // 100}.{value % 100}"


def put(facts: dict, path: str, value: Any) -> None:
    """Set facts[a][b][c] for "a.b.c" unless `value` is None or the leaf is already set."""
    if value is None:
        return
    *parents, last = path.split(".")
    node = facts
    for part in parents:
        node = node.setdefault(part, {})
    node.setdefault(last, value)


def add_gpu(facts: dict, **fields: Any) -> None:
    """Append a GPU (only the fields given), or fill one already read with the same index or name."""
    gpu = {k: v for k, v in fields.items() if v is not None}
    if not gpu:
        return
    gpus = facts.setdefault("nvidia", {}).setdefault("gpus", [])
    for known in gpus:
        if same_gpu(known, gpu):
            for key, value in gpu.items():
                known.setdefault(key, value)
            return
    gpus.append(gpu)


def same_gpu(a: dict, b: dict) -> bool:
    if "index" in a and "index" in b:
        return a["index"] == b["index"]
    return "name" in a and a.get("name") == b.get("name")


def add_cudnn(facts: dict, version: Optional[str], source: str) -> None:
    if not version:
        return
    entries = facts.setdefault("cudnn", [])
    if all(e.get("version") != version for e in entries):
        entries.append({"version": version, "source": source})


_DISTRO_TAIL = re.compile(r"\s{0,120}(?:\([^)]{0,40}\)|LTS)\s{0,120}$")


def distro_name(text: str) -> Optional[str]:
    """"Ubuntu 20.04.5 LTS" → "Ubuntu 20.04" (as the host probe spells it); "Debian GNU/Linux 11
    (bullseye)" → "Debian 11"; other names lose only a trailing "(codename)" / "LTS"."""
    text = text.strip()
    m = re.match(r"Ubuntu (\d{2}\.\d{2})\b", text)
    if m:
        return f"Ubuntu {m.group(1)}"
    for _ in range(3):
        text = _DISTRO_TAIL.sub("", text)
    text = re.sub(r"\s{1,120}GNU/Linux\b", "", text)
    return text if re.search(r"[A-Za-z]", text) and len(text) <= 60 else None


def flat_lines(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines()]


def merge(base: dict, extra: dict) -> dict:
    """Deep merge, `base` wins at every leaf. GPU lists are merged GPU by GPU (same index, else same
    name); cuDNN lists gain the versions `base` lacks; any other list is taken whole only if `base` has none."""
    out = dict(base)
    for key, value in extra.items():
        mine = out.get(key)
        if mine is None:
            out[key] = _copy(value)
        elif isinstance(mine, dict) and isinstance(value, dict):
            out[key] = merge(mine, value)
        elif key == "gpus" and isinstance(mine, list) and isinstance(value, list):
            out[key] = _merge_gpus(mine, value)
        elif key == "cudnn" and isinstance(mine, list) and isinstance(value, list):
            seen = [e.get("version") or "" for e in mine]
            out[key] = mine + [dict(e) for e in value if not any(_same_release(e.get("version") or "", v) for v in seen)]
    return out


def _same_release(a: str, b: str) -> bool:
    """"7.6" and "7.6.5" name one release, one of them less precisely."""
    x, y = a.split("."), b.split(".")
    return bool(a and b) and x[:len(y)] == y[:len(x)]


def _merge_gpus(base: list, extra: list) -> list:
    gpus = [dict(g) for g in base]
    for gpu in extra:
        match = next((g for g in gpus if same_gpu(g, gpu)), None)
        if match is None:
            gpus.append(dict(gpu))
        else:
            match.update({k: v for k, v in gpu.items() if k not in match})
    return gpus


def _copy(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy(v) for v in value]
    return value
