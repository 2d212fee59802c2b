"""One loader for every data file in matrices/ and recipes/: parse, check provenance, cache.

Every row (each table inside an array of tables, and each top-level table that holds values) must
name its `source` and the date it was `checked` (YYYY-MM-DD). A file that breaks this is a MatrixError naming the file and the row.
Subject-specific checks live in the typed accessor modules beside this one.
"""

from __future__ import annotations

import datetime as dt
import functools
import hashlib
import marshal
import os
import re
import sys
from pathlib import Path
from typing import Any, Callable, Optional

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 in CI
    import tomli as tomllib


class MatrixError(ValueError):
    """A data file that cannot be trusted: unreadable, malformed, or a row without provenance."""


def _data_root() -> Path:
    override = os.environ.get("ENVDOCTOR_DATA_DIR")
    if override:
        return Path(override)  # a folder holding matrices/ and recipes/ (maintainers, tests)
    packaged = Path(__file__).resolve().parent.parent / "_data"
    if packaged.is_dir():
        return packaged  # installed wheel
    return Path(__file__).resolve().parent.parent.parent  # source checkout / editable install


def data_dir(kind: str = "matrices") -> Path:
    return _data_root() / kind


@functools.lru_cache(maxsize=None)
def load(name: str, kind: str = "matrices") -> dict[str, Any]:
    """Parsed and provenance-checked contents of `<kind>/<name>.toml`."""
    return load_file(data_dir(kind) / f"{name}.toml")


def load_file(path: Path) -> dict[str, Any]:
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise MatrixError(f"{path.name}: cannot read: {exc.strerror or exc}") from None
    key = hashlib.sha256(raw).hexdigest()[:20]
    name = _cache_name(path)
    cached = _cache_get(name, key)
    if cached is not None:
        return cached
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise MatrixError(f"{path.name}: not valid TOML: {exc}") from None
    check_provenance(data, path.name)
    data = _plain(data)
    _cache_put(name, key, data)
    return data


# --- parsed-data cache ---------------------------------------------------------------------------
# Parsing the TOML files costs ~15 ms each, a large share of `envdoctor check`'s budget. The
# checked, parsed contents are kept in the user's cache dir, keyed by a hash of the file's bytes,
# so an edited or upgraded file is parsed and checked again. Any cache trouble means "no cache".

def _cache_dir() -> Path:
    """The platform's per-user cache directory (what `platformdirs.user_cache_dir` would say)."""
    explicit = os.environ.get("ENVDOCTOR_CACHE_DIR")
    if explicit:
        return Path(explicit)
    if sys.platform == "win32":
        base = os.environ.get("LOCALAPPDATA") or str(Path.home() / "AppData" / "Local")
        return Path(base) / "envdoctor" / "Cache"
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Caches" / "envdoctor"
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "envdoctor"


def cached(name: str, source: bytes, compute: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """What `compute()` derives from `source` (plain values only), kept in the parsed-data cache under
    `name` and keyed by a hash of `source`, so it is computed again whenever `source` changes."""
    key = hashlib.sha256(source).hexdigest()[:20]
    hit = _cache_get(name, key)
    if hit is not None:
        return hit
    data = compute()
    _cache_put(name, key, data)
    return data


def _cache_name(path: Path) -> str:
    """matrices/pytorch.toml and recipes/pytorch.toml share a file name: the folder keeps them apart."""
    return f"{path.parent.name}-{path.name}"


def _cache_path(name: str, key: str) -> Path:
    return _cache_dir() / f"{name}.{key}.{_PY}.marshal"


_PY = f"py{sys.version_info[0]}{sys.version_info[1]}"  # marshal's format belongs to one Python version


def _cache_get(name: str, key: str) -> Any:
    if os.environ.get("ENVDOCTOR_NO_CACHE"):
        return None
    try:
        with open(_cache_path(name, key), "rb") as fh:
            data = marshal.load(fh)
    except (OSError, EOFError, ValueError, TypeError):
        return None
    return data if isinstance(data, dict) else None


def _cache_put(name: str, key: str, data: dict[str, Any]) -> None:
    if os.environ.get("ENVDOCTOR_NO_CACHE"):
        return
    target = _cache_path(name, key)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        for stale in target.parent.glob(f"{name}.*.{_PY}.marshal"):
            stale.unlink(missing_ok=True)
        tmp = target.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_bytes(marshal.dumps(data))
        os.replace(tmp, target)
    except (OSError, ValueError):
        pass


def _plain(value: Any) -> Any:
    """TOML dates as ISO strings, so the parsed data is plain (and cacheable) values only."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, (dt.date, dt.datetime, dt.time)):
        return value.isoformat()
    return value


def check_provenance(data: dict[str, Any], filename: str, top: bool = True) -> None:
    for key, value in data.items():
        if top and isinstance(value, dict) and any(not isinstance(v, dict) for v in value.values()):
            _check_row(value, f"{filename}: [{key}]")  # a plain table of facts is a row too
        if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            for index, row in enumerate(value):
                where = f"{filename}: [[{key}]] row {index + 1}{_row_label(row)}"
                _check_row(row, where)
                check_provenance(row, filename, top=False)


def _row_label(row: dict[str, Any]) -> str:
    for key in ("name", "version", "cuda", "id", "code", "l4t", "branch"):
        if key in row:
            return f" ({key}={row[key]})"
    return ""


def _check_row(row: dict[str, Any], where: str) -> None:
    source = row.get("source")
    if not isinstance(source, str) or not source.strip():
        raise MatrixError(f"{where}: missing 'source'")
    checked = row.get("checked")
    if isinstance(checked, dt.date):
        return
    if not isinstance(checked, str):
        raise MatrixError(f"{where}: missing 'checked' date")
    try:
        dt.date.fromisoformat(checked)
    except ValueError:
        raise MatrixError(f"{where}: 'checked' is not a YYYY-MM-DD date: {checked!r}") from None


# --- how old the knowledge is --------------------------------------------------------------------

STALE_AFTER_DAYS = 120
_CHECKED = re.compile(rb'^checked\s*=\s*"?(\d{4}-\d{2}-\d{2})"?\s*$', re.M)


@functools.lru_cache(maxsize=None)
def checked_by_file(kind: str = "matrices") -> dict[str, dt.date]:
    """Each bundled data file (matrices/**/*.toml, relative path) -> the newest `checked` date of its
    rows: when that file was last looked at. Read from the files' text, without parsing them; a file
    without a date is left out."""
    root = data_dir(kind)
    dates: dict[str, dt.date] = {}
    for path in sorted(root.rglob("*.toml")):
        try:
            raw = path.read_bytes()
        except OSError:
            continue
        days = []
        for match in _CHECKED.finditer(raw):
            try:
                days.append(dt.date.fromisoformat(match.group(1).decode()))
            except ValueError:
                continue
        if days:
            dates[path.relative_to(root).as_posix()] = max(days)
    return dates


def newest_checked(kind: str = "matrices") -> Optional[dt.date]:
    """The newest `checked` date of any row (for display: "checked up to ...")."""
    dates = checked_by_file(kind)
    return max(dates.values()) if dates else None


def least_recently_checked(kind: str = "matrices") -> Optional[tuple[dt.date, str]]:
    """(date, file) of the data file checked least recently: the oldest of the files' newest dates.
    Staleness counts from it, so re-checking one row of one file does not make all the data look fresh."""
    dates = checked_by_file(kind)
    if not dates:
        return None
    name = min(dates, key=lambda n: (dates[n], n))
    return dates[name], name


def knowledge_age_days(today: Optional[dt.date] = None) -> Optional[int]:
    """Days since the least recently checked data file was checked (None: no dates)."""
    oldest = least_recently_checked()
    return ((today or dt.date.today()) - oldest[0]).days if oldest else None
