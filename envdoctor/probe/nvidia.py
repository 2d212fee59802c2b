"""NVIDIA driver and GPUs (placeholder until the full probe lands)."""

from __future__ import annotations


def probe(ctx):
    return None
