#!/usr/bin/env python3
"""Re-check the registry-derived rows of matrices/*.toml against the live package registry.

    python scripts/check_registry.py                       # every subject; exit 1 on drift
    python scripts/check_registry.py pytorch --metadata 5  # + default build of the newest 5 releases
    python scripts/check_registry.py --record tests/fixtures/registry   # also save the answers seen
    python scripts/check_registry.py --recorded tests/fixtures/registry # offline, on saved answers

A thin entry point: fetching is envdoctor/maintainers/fetch.py, deriving derive.py, comparing
compare.py (offline, tested).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from envdoctor.maintainers.compare import main_live  # noqa: E402

if __name__ == "__main__":
    sys.exit(main_live())
