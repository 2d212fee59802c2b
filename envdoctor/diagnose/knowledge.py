"""What the rules ask the matrices, in one place.

Each function reads one fact through the typed accessor module of a matrix
(`envdoctor.matrix.<subject>`) and returns None when the matrix (or the row) is not there, so a
rule with no knowledge stays silent instead of guessing. No version table lives here: this module
only adapts the accessors' answers to the questions the rules ask. Accessor modules are imported
on first use (they parse TOML), never at import time.
"""

from __future__ import annotations

import importlib
from typing import Any, Optional


def accessor(subject: str) -> Any:
    """The accessor module `envdoctor.matrix.<subject>`, or None when it does not exist yet."""
    try:
        return importlib.import_module(f"envdoctor.matrix.{subject}")
    except ImportError:
        return None


def call(subject: str, function: str, *args: Any, **kwargs: Any) -> Any:
    """Call an accessor; None when the module, the function or the row is missing."""
    module = accessor(subject)
    fn = getattr(module, function, None) if module else None
    if fn is None:
        return None
    try:
        return fn(*args, **kwargs)
    except (LookupError, ValueError, TypeError):
        return None
