"""How old envdoctor's bundled knowledge is, and what that means for a plan.

    age_days()                 days since the least recently checked file of matrices/ was checked
                               (each file counts with its newest `checked` date; None: no dates)
    is_stale()                 older than loader.STALE_AFTER_DAYS (120)
    checked_line()             "the least recently checked data file (drivers.toml) was checked on 2026-11-29"
    unknown_releases(framework)  "PyTorch releases after 2.15.0 (...)": what a stale plan cannot know
"""

from __future__ import annotations

import datetime as dt
from typing import Optional

from packaging.version import InvalidVersion, Version

from envdoctor.matrix import loader

UPGRADE = "pipx upgrade envdoctor (or: python -m pip install --upgrade envdoctor)"
NAMES = {"pytorch": "PyTorch", "tensorflow": "TensorFlow", "jax": "JAX", "paddle": "PaddlePaddle"}


def age_days(today: Optional[dt.date] = None) -> Optional[int]:
    return loader.knowledge_age_days(today)


def checked_line() -> Optional[str]:
    oldest = loader.least_recently_checked()
    if oldest is None:
        return None
    day, name = oldest
    return f"the least recently checked data file ({name}) was checked on {day.isoformat()}"


def is_stale(today: Optional[dt.date] = None) -> bool:
    days = age_days(today)
    return days is not None and days > loader.STALE_AFTER_DAYS


def newest_release(framework: str) -> Optional[str]:
    import importlib

    try:
        rows = importlib.import_module(f"envdoctor.matrix.{framework}").releases()
    except (ImportError, AttributeError):
        return None
    versions = []
    for row in rows:
        try:
            versions.append(Version(row.version))
        except InvalidVersion:
            continue
    return str(max(versions)) if versions else None


def unknown_releases(framework: str, today: Optional[dt.date] = None) -> Optional[str]:
    """A warning for a plan when the data is stale: which releases it cannot know about."""
    if not is_stale(today):
        return None
    newest = newest_release(framework)
    name = NAMES.get(framework, framework)
    return (f"envdoctor's data is old: {checked_line()} ({age_days(today)} days ago); {name} releases after "
            f"{newest or 'the ones it lists'}, and builds published since, are unknown to this plan; "
            f"upgrade envdoctor: {UPGRADE}")
