"""cuDNN (placeholder until the full probe lands)."""

from __future__ import annotations


def probe(ctx, python_env):
    return []
