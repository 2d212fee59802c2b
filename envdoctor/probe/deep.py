"""--deep: import each framework in the target interpreter (placeholder until the full probe lands)."""

from __future__ import annotations


def probe(ctx, python_env):
    return {}
