"""nvidia-smi as pasted: the table, `-L`, `--query-gpu=… --format=csv`, `-q`, and its failure lines.

The table is the block from the "NVIDIA-SMI <version>" line over the "|…"/"+…" lines that follow it
(any indentation), read by envdoctor.probe.nvidia.parse_smi_header (classic "Driver Version / CUDA
Version" and R610+ "KMD Version / CUDA UMD Version" headers; "CUDA Version: N/A"/"ERR!" is unknown).
Windows rows ("NVIDIA GeForce ... WDDM |") and the memory row under each GPU are read here. A name
nvidia-smi cut short ("NVIDIA GeForce RTX 3060 ...") is not kept; the GPU keeps its index and memory.
On WSL2 the "Driver Version" is the Windows driver, as the probe records it too.
Failure texts become nvidia.failure via classify_failure (no-driver-communication,
driver-library-mismatch, nvml-unknown-error), even when a table from another machine is pasted too.
"""

from __future__ import annotations

import re
from typing import Optional

from envdoctor.probe.nvidia import classify_failure, memory_mib, parse_query_csv, parse_smi_header
from envdoctor.read._util import add_gpu, numeric, put

_TABLE_START = re.compile(r"\|?\s{0,4}NVIDIA-SMI \d")
_ROW_INDEX = re.compile(r"\|\s{1,6}(\d{1,3})\s{2}")
_WINDOWS_ROW = re.compile(r"\|\s{1,6}(\d{1,3})\s{1,120}(.{1,60}?)\s{1,120}(?:WDDM|TCC)\s{0,4}\|")
_MEMORY = re.compile(r"\|[^|]{0,60}\|\s{0,16}(\d{1,7})MiB\s{0,6}/\s{0,6}(\d{1,7})MiB\s{0,16}\|")
_LIST = re.compile(r"GPU (\d{1,3}): (.{1,100}?) \(UUID: (GPU-[0-9a-fA-F-]{8,40})\)")
_CSV_FIELD = re.compile(r"[a-z_]{1,30}(?:\.[a-z_]{1,30}){0,2}")
_CSV_FIELDS = {"index", "name", "compute_cap", "memory.total", "memory.used", "memory.free", "driver_version",
               "uuid", "pci.bus_id", "compute_mode", "persistence_mode", "pstate", "serial", "vbios_version",
               "temperature.gpu", "utilization.gpu", "utilization.memory", "power.draw", "power.limit",
               "clocks.sm", "clocks.max.sm", "count", "gpu_name", "gpu_bus_id", "gpu_uuid"}
_CSV_SINGLE = {"compute_cap", "driver_version"}  # a one-column query is only taken for these numbers
_Q_DRIVER = re.compile(r"Driver Version\s{1,40}:\s{0,4}(\d{2,4}(?:\.\d{1,3}){1,2})$")
_Q_CUDA = re.compile(r"CUDA Version\s{1,40}:\s{0,4}(\d{1,2}\.\d{1,2})$")
_Q_NAME = re.compile(r"Product Name\s{1,40}:\s{0,4}(\S.{0,80})$")


def parse(text: str) -> dict:
    facts: dict = {}
    lines = [line.strip() for line in text.splitlines()]
    for block in _tables(lines):
        _read_table(facts, block)
    for line in lines:
        m = _LIST.fullmatch(line)
        if m:
            add_gpu(facts, index=int(m.group(1)), name=m.group(2), uuid=m.group(3))
    _read_csv(facts, lines)
    _read_q(facts, lines)
    failure = classify_failure(text)
    if failure:
        put(facts, "nvidia.failure", failure[0])
        put(facts, "nvidia.failure_text", failure[1])
    return facts


def _tables(lines: list[str]) -> list[list[str]]:
    tables, i = [], 0
    while i < len(lines):
        if not _TABLE_START.match(lines[i]):
            i += 1
            continue
        block, i = [lines[i]], i + 1
        while i < len(lines) and lines[i][:1] in ("|", "+"):
            block.append(lines[i])
            i += 1
        tables.append(block)
    return tables


def _read_table(facts: dict, block: list[str]) -> None:
    header = parse_smi_header("\n".join(block))
    put(facts, "nvidia.driver_version", header.driver_version)
    put(facts, "nvidia.driver_cuda", header.cuda_version)
    for gpu in header.gpus:
        add_gpu(facts, index=gpu.index, name=_name(gpu.name))
        if (gpu.name or "").endswith("(nvgpu)"):  # Jetson's integrated GPU: the "driver" is L4T's
            put(facts, "nvidia.driver_kind", "jetson")
    current = None
    for line in block[1:]:
        windows = _WINDOWS_ROW.match(line)
        if windows:
            add_gpu(facts, index=int(windows.group(1)), name=_name(windows.group(2)))
        row = _ROW_INDEX.match(line)
        memory = _MEMORY.match(line)
        if row:
            current = int(row.group(1))
        elif memory and current is not None:
            add_gpu(facts, index=current, memory_total_mib=int(memory.group(2)))
            current = None


def _name(name: Optional[str]) -> Optional[str]:
    """nvidia-smi cuts long names ("NVIDIA GeForce RTX 3060 ..."): such a name is not kept."""
    return None if not name or name.endswith(("...", "…")) or "|" in name else name


def _read_csv(facts: dict, lines: list[str]) -> None:
    for i, line in enumerate(lines):
        fields = _csv_header(line)
        if not fields:
            continue
        rows = []
        for row in lines[i + 1:i + 1 + 4096]:
            if not row or row.count(",") != len(fields) - 1:
                break
            rows.append(row)
        if rows:
            _read_csv_rows(facts, fields, parse_query_csv("\n".join(rows), fields))


def _csv_header(line: str) -> Optional[tuple[str, ...]]:
    names = tuple(part.strip().split(" [")[0] for part in line.split(","))
    if not all(_CSV_FIELD.fullmatch(n) and n in _CSV_FIELDS for n in names):
        return None
    if len(names) == 1 and names[0] not in _CSV_SINGLE:
        return None
    return names if set(names) & {"index", "name", "compute_cap", "memory.total", "driver_version"} else None


def _read_csv_rows(facts: dict, fields: tuple[str, ...], rows: list[dict]) -> None:
    if len(fields) == 1 and not all(numeric(r[fields[0]] or "", 2) for r in rows):
        return
    for position, row in enumerate(rows):
        put(facts, "nvidia.driver_version", numeric(row.get("driver_version") or "", 2))
        index = int(row["index"]) if (row.get("index") or "").isdigit() else position  # nvidia-smi lists by index
        cc = numeric(row.get("compute_cap") or "", 2)
        add_gpu(facts, index=index, name=row.get("name") or row.get("gpu_name"), compute_capability=cc,
                memory_total_mib=memory_mib(row.get("memory.total")), uuid=row.get("uuid"))


def _read_q(facts: dict, lines: list[str]) -> None:
    """`nvidia-smi -q`: "Driver Version : 375.82", "CUDA Version : 11.6", "Product Name : …" per GPU."""
    names = []
    attached = any(line.startswith("Attached GPUs") for line in lines)
    for line in lines:
        for pattern, path in ((_Q_DRIVER, "nvidia.driver_version"), (_Q_CUDA, "nvidia.driver_cuda")):
            m = pattern.fullmatch(line)
            if m:
                put(facts, path, m.group(1))
        m = _Q_NAME.fullmatch(line) if attached else None
        if m:
            names.append(m.group(1).strip())
    for index, name in enumerate(names):
        add_gpu(facts, index=index, name=name)
