"""Prometheus text exposition format (0.0.4) for node_exporter's textfile collector.

Low cardinality: versions as labels of one `envdoctor_info` sample, finding codes and severities as
labels (never free text), no timestamps on samples (the collector refuses them).
`envdoctor_healthy` is absent when envdoctor could not judge the node (a hung NVML is unknown).
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path
from typing import Iterable, Optional

from envdoctor.findings import Finding

INFO_LABELS = ("driver_version", "driver_cuda", "cuda_toolkit", "cudnn", "python", "torch", "tensorflow", "jax",
               "paddle")
TEXTFILE_NAME = "envdoctor.prom"


def escape_label(value: str) -> str:
    """A label value as the exposition format writes it: backslash, double quote and newline escaped."""
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _labels(pairs: Iterable[tuple[str, Optional[str]]]) -> str:
    return ",".join(f'{k}="{escape_label(v or "")}"' for k, v in pairs)


def _metric(name: str, kind: str, help_text: str, samples: list[str]) -> list[str]:
    return [f"# HELP {name} {help_text}", f"# TYPE {name} {kind}", *samples]


def exposition(facts: dict, findings: list[Finding], healthy: Optional[bool], version: str,
               now: Optional[float] = None) -> str:
    """The whole document for one node. `facts` is the JSON form; `healthy` None = could not judge."""
    from envdoctor.values import gpu_list, node_values

    values = node_values(facts)
    info = _labels([(k, values.get(k)) for k in INFO_LABELS] + [("envdoctor_version", version)])
    lines = _metric("envdoctor_info", "gauge", "Versions envdoctor saw on this node (always 1).",
                    [f"envdoctor_info{{{info}}} 1"])
    gpus = gpu_list(facts)
    if gpus is not None:
        lines += _metric("envdoctor_gpus", "gauge", "NVIDIA GPUs envdoctor saw.", [f"envdoctor_gpus {len(gpus)}"])
    if healthy is not None:
        lines += _metric("envdoctor_healthy", "gauge",
                         "1 when envdoctor found no error, 0 when it did; absent when it could not judge.",
                         [f"envdoctor_healthy {int(healthy)}"])
    counts: dict[tuple[str, str], int] = {}
    for f in findings:
        counts[(f.code, f.severity)] = counts.get((f.code, f.severity), 0) + 1
    lines += _metric("envdoctor_finding", "gauge", "Findings of the last run by code and severity.",
                     [f"envdoctor_finding{{{_labels([('code', c), ('severity', s)])}}} {n}"
                      for (c, s), n in sorted(counts.items())])
    stamp = time.time() if now is None else now
    lines += _metric("envdoctor_last_run_timestamp_seconds", "gauge", "When envdoctor last ran (Unix time).",
                     [f"envdoctor_last_run_timestamp_seconds {stamp:.3f}"])
    return "\n".join(lines) + "\n"


def write_textfile(directory: str, text: str, name: str = TEXTFILE_NAME) -> Path:
    """Write `text` to DIRECTORY/NAME atomically: a temporary file in the same directory, renamed into
    place, so the collector never reads half a file. Raises OSError."""
    target = Path(directory) / name
    fd, temporary = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(temporary, 0o644)
        os.replace(temporary, target)
    except BaseException:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        raise
    return target
