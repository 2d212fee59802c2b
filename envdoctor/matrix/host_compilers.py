"""The host compilers each CUDA release's nvcc accepts, from matrices/host_compilers.toml.

`compiler_range(cuda, kind)`: (min, max_exclusive, source) of `kind` ("gcc" or "clang") for CUDA
release `cuda` ("12.8"), or None when the table has no bounds for that pair. Versions are tuples of
ints compared as numbers ((13,) < (13, 2) < (14,)); `version_numbers` reads them from text (the first
dotted number in it, read by matrix.drivers.version_tuple: the one packaging-based version reading).
"""

from __future__ import annotations

import re
from typing import Optional

from envdoctor.matrix.drivers import version_tuple
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
    """"11.4.1" -> (11, 4, 1), "gcc 13.2.0" -> (13, 2, 0), "cuda>=12.4" -> (12, 4): the first dotted number in
    the text; text without a digit is a ValueError."""
    match = _DOTTED.search(str(text))
    if not match:
        raise ValueError(text)
    return version_tuple(match.group(0))


_DOTTED = re.compile(r"\d{1,12}(?:\.\d{1,12}){0,8}")
