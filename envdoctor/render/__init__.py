"""render: the only place that prints. Console output is for people; JSON is for machines."""

from __future__ import annotations

import json
import os
import sys
from typing import Any


def console(stderr: bool = False):
    """A rich Console that honours NO_COLOR and drops colour when not writing to a terminal."""
    from rich.console import Console

    return Console(stderr=stderr, no_color=bool(os.environ.get("NO_COLOR")) or None, highlight=False,
                   soft_wrap=True)  # a line too long for a pipe is not broken in the middle


def print_json(document: Any) -> None:
    sys.stdout.write(json.dumps(document, indent=2, ensure_ascii=False) + "\n")
