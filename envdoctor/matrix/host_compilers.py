"""The host compilers each CUDA release's nvcc accepts, from matrices/host_compilers.toml.

`compiler_range(cuda, kind)`: (min, max_exclusive, source) of `kind` ("gcc" or "clang") for CUDA
release `cuda` ("12.8"), or None when the table has no bounds for that pair. Versions are tuples of
ints compared as numbers ((13,) < (13, 2) < (14,)); `version_numbers` reads them from text.
"""

from __future__ import annotations

import re
from typing import Optional

from envdoctor.matrix.loader import MatrixError, load

FILE = "host_compilers"

Bounds = tuple[tuple[int, ...], tuple[int, ...], str]


def compiler_range(cuda: str, kind: str) -> Optional[Bounds]:
    """(min, max_exclusive, source) of a compiler kind for a CUDA release (a malformed row: MatrixError)."""
    for row in load(FILE).get("cuda", []):
        if row.get("cuda") == cuda and f"{kind}_min" in row:
            try:
                return version_numbers(row[f"{kind}_min"]), version_numbers(row[f"{kind}_max_exclusive"]), row["source"]
            except (KeyError, ValueError):
                raise MatrixError(f"host_compilers.toml: row for CUDA {cuda} needs {kind}_min and {kind}_max_exclusive") from None
    return None


def version_numbers(text: str) -> tuple[int, ...]:
    """"11.4.1" -> (11, 4, 1); text without a digit is a ValueError."""
    parts = re.findall(r"\d+", str(text))
    if not parts:
        raise ValueError(text)
    return tuple(int(p) for p in parts)
