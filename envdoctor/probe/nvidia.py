"""NVIDIA driver and GPUs: NVML (in a child process), nvidia-smi, /proc and /sys, the PCI bus.

Sources, best first:
  1. NVML through nvidia-ml-py, run in a child process (nvml_worker.py) with a timeout, so a crash
     or hang inside libnvidia-ml cannot take envdoctor down. It only runs when a driver can be
     there at all (/dev/nvidiactl, or /dev/dxg on WSL2; always on Windows): on a machine without
     one it would only cost a Python start-up (~50-300 ms of CPU on a busy 2-core box) to learn
     "library not found". ENVDOCTOR_NVML=0 turns it off, =1 forces it.
  2. nvidia-smi: the CSV query (per GPU) and the plain header (driver + CUDA version, both the
     classic "Driver Version/CUDA Version" and the R610+ "KMD Version/CUDA UMD Version" spelling).
     Looked up on PATH, then in /usr/lib/wsl/lib (WSL2 puts it there, often off PATH).
  3. /sys/module/nvidia/version and /proc/driver/nvidia/version (the loaded kernel module).
  4. The PCI bus (/sys/bus/pci/devices/*): NVIDIA display/3D devices with their bound kernel
     driver, so "GPU present, no driver" is told apart from "no GPU".

NVML and the two nvidia-smi calls run concurrently; each is bounded by ctx.timeout.
Known failure texts become `failure` (no-driver-communication | driver-library-mismatch |
nvml-unknown-error); anything else unexpected (timeout, crash, garbage) becomes a ctx.error.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Optional

from envdoctor import proc
from envdoctor.facts import Gpu, Nvidia, PciDevice
from envdoctor.probe.pci import attribute, display_devices

NVIDIA_VENDOR = "0x10de"
QUERY_FIELDS = ("index", "name", "compute_cap", "memory.total", "driver_version", "uuid", "pci.bus_id")
WSL_LIB = "/usr/lib/wsl/lib"
WORKER = Path(__file__).with_name("nvml_worker.py")

FAILURES = (  # (text printed by nvidia-smi / NVML, failure code); first match wins
    ("couldn't communicate with the nvidia driver", "no-driver-communication"),
    ("driver/library version mismatch", "driver-library-mismatch"),
    ("failed to initialize nvml: unknown error", "nvml-unknown-error"),
)
NVML_FAILURES = {
    "NVMLError_LibRmVersionMismatch": "driver-library-mismatch",
    "NVMLError_DriverNotLoaded": "no-driver-communication",
    "NVMLError_Unknown": "nvml-unknown-error",
}
NVML_ABSENT = ("NVMLError_LibraryNotFound", "NVMLError_FunctionNotFound", "ImportError")
UNKNOWN_FIELD = re.compile(r'Field "([\w.]+)" is not a valid field to query', re.I)


# --- parsers (pure; tested on verbatim outputs in tests/fixtures/raw/nvidia) ----------------------

@dataclass(frozen=True)
class SmiHeader:
    driver_version: Optional[str] = None  # "Driver Version:" or, from R610, "KMD Version:"
    cuda_version: Optional[str] = None  # "CUDA Version:" or "CUDA UMD Version:"; None for N/A / ERR!
    smi_version: Optional[str] = None  # "NVIDIA-SMI 580.82.09" (the tool's own build)
    gpus: tuple[Gpu, ...] = ()


_HEADER_DRIVER = re.compile(r"(?:Driver|KMD)\s+Version:\s*([0-9][0-9.]*[0-9])")
_HEADER_CUDA = re.compile(r"CUDA(?:\s+UMD)?\s+Version:\s*(\S+)")
_HEADER_SMI = re.compile(r"NVIDIA-SMI\s+([0-9][0-9.]*[0-9])")
# "|   0  NVIDIA GeForce GTX 960         Off |   00000000:03:00.0 Off |" ; Jetson: "|   0  Orin (nvgpu)   N/A  | N/A  N/A |"
_HEADER_GPU = re.compile(r"^\|\s+(\d+)\s+(.+?)\s+(?:On|Off|N/A)\s*\|\s*([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.\d|N/A)\s")


def parse_smi_header(text: str) -> SmiHeader:
    driver = _HEADER_DRIVER.search(text)
    cuda = _HEADER_CUDA.search(text)
    smi = _HEADER_SMI.search(text)
    cuda_version = cuda.group(1) if cuda and re.fullmatch(r"\d+\.\d+", cuda.group(1)) else None
    gpus = []
    for line in text.splitlines():
        m = _HEADER_GPU.match(line)
        if m:
            bus = m.group(3) if m.group(3) != "N/A" else None
            gpus.append(Gpu(index=int(m.group(1)), name=m.group(2).strip(), pci_bus_id=bus))
    return SmiHeader(driver.group(1) if driver else None, cuda_version, smi.group(1) if smi else None, tuple(gpus))


def parse_query_csv(text: str, fields: tuple[str, ...]) -> list[dict[str, Optional[str]]]:
    """`nvidia-smi --query-gpu=... --format=csv[,noheader][,nounits]` → one dict per GPU.

    Raises ValueError on a line that does not have one value per field. "[N/A]", "N/A" and
    "[Not Supported]" become None; units ("24576 MiB") are left for the caller.
    """
    rows = []
    for line in text.splitlines():
        if not line.strip():
            continue
        values = [v.strip() for v in line.split(",")]
        if len(values) != len(fields):
            raise ValueError(f"expected {len(fields)} values, got {len(values)}: {line.strip()[:120]!r}")
        if [v.split(" [")[0] for v in values] == list(fields):
            continue  # the header line of --format=csv
        rows.append({k: (None if _missing(v) else v) for k, v in zip(fields, values)})
    return rows


def _missing(value: str) -> bool:
    return value.strip("[]").lower() in ("n/a", "not supported", "unknown error", "")


def classify_failure(text: str) -> Optional[tuple[str, str]]:
    """A known failure text → (code, the line that says it)."""
    lower = text.lower()
    for needle, code in FAILURES:
        if needle in lower:
            line = next((l.strip() for l in text.splitlines() if needle in l.lower()), text.strip())
            return code, line[:300]
    return None


_PROC_MODULE = re.compile(r"Kernel Module(?:\s+for\s+\S+)?\s+([0-9]+(?:\.[0-9]+)+)")


def parse_proc_driver_version(text: str) -> Optional[str]:
    """/proc/driver/nvidia/version line 1: proprietary ("...x86_64 Kernel Module  575.64  ...") and
    open ("...Open Kernel Module for x86_64  565.57.01  Release Build ...") spellings."""
    m = _PROC_MODULE.search(text.splitlines()[0] if text else "")
    return m.group(1) if m else None


def cuda_from_int(value: Optional[int]) -> Optional[str]:
    """NVML/cuDriverGetVersion integer → "major.minor" (12040 → "12.4")."""
    if not value or value <= 0:
        return None
    return f"{value // 1000}.{(value % 1000) // 10}"


def memory_mib(value: Optional[str]) -> Optional[int]:
    if not value:
        return None
    m = re.match(r"(\d+)", value)
    return int(m.group(1)) if m else None


# --- the probe ------------------------------------------------------------------------------------

@dataclass
class _Seen:
    """What one source learned."""

    driver_version: Optional[str] = None
    cuda: Optional[str] = None
    gpus: list[Gpu] = field(default_factory=list)
    failure: Optional[tuple[str, str]] = None
    ran: bool = False  # the source exists on this machine (binary found, NVML tried)


def probe(ctx) -> Optional[Nvidia]:
    kind = driver_kind(ctx)
    smi = find_nvidia_smi(ctx)
    with ThreadPoolExecutor(max_workers=3) as pool:
        nvml_future = pool.submit(nvml, ctx) if nvml_wanted(ctx) else None
        header_future = pool.submit(smi_header, ctx, smi) if smi else None
        query_future = pool.submit(smi_query, ctx, smi) if smi else None
        from_nvml = nvml_future.result() if nvml_future else _Seen()
        header = header_future.result() if header_future else _Seen()
        query = query_future.result() if query_future else _Seen()
    module_version = _read_first_line(ctx, "/sys/module/nvidia/version")
    proc_version = parse_proc_driver_version(proc.read_text(ctx.path("/proc/driver/nvidia/version"), 4096) or "")
    pci = scan_pci(ctx)
    nouveau = nouveau_loaded(ctx)

    sources = [("nvml", from_nvml), ("nvidia-smi", query), ("nvidia-smi", header)]
    driver, source = _first([(s.driver_version, name) for name, s in sources])
    kernel_module = module_version or proc_version
    if driver is None and kernel_module and kind != "jetson":  # on Jetson /proc says the L4T version
        driver, source = kernel_module, "sysfs" if module_version else "proc"
    gpus = from_nvml.gpus or query.gpus or header.gpus
    gpus = _fill_compute_capability(gpus, from_nvml.gpus, ctx, kind)
    failure = from_nvml.failure or query.failure or header.failure
    if failure and failure[0] != "driver-library-mismatch" and driver and gpus:
        failure = None  # one source failed but another one talked to the driver

    if not (driver or gpus or failure or pci or kernel_module or smi or from_nvml.ran):
        return None
    return Nvidia(
        driver_version=driver,
        driver_cuda=from_nvml.cuda or header.cuda,
        source=source,
        driver_kind=kind,
        gpus=gpus,
        pci_devices=pci,
        kernel_module=kernel_module,
        nouveau_loaded=nouveau,
        failure=failure[0] if failure else None,
        failure_text=failure[1] if failure else None,
    )


def _first(pairs: list[tuple[Any, str]]) -> tuple[Any, Optional[str]]:
    for value, name in pairs:
        if value:
            return value, name
    return None, None


def driver_kind(ctx) -> str:
    """What the driver number means here: desktop | wsl | jetson."""
    from envdoctor.probe.host import is_wsl

    if ctx.path("/etc/nv_tegra_release").exists():
        return "jetson"
    proc_version = proc.read_text(ctx.path("/proc/version"), 4096) or ""
    if is_wsl(proc_version, ctx.path(WSL_LIB).is_dir()):
        return "wsl"
    return "desktop"


def find_nvidia_smi(ctx) -> Optional[str]:
    found = shutil.which("nvidia-smi", path=ctx.environ.get("PATH", os.defpath))
    if found:
        return found
    wsl = ctx.path(WSL_LIB) / "nvidia-smi"
    if wsl.is_file() and os.access(wsl, os.X_OK):
        return str(wsl)
    return None


# --- NVML in a child process -----------------------------------------------------------------------

def nvml_wanted(ctx) -> bool:
    setting = ctx.environ.get("ENVDOCTOR_NVML", "").strip()
    if setting in ("0", "1"):
        return setting == "1"
    if sys.platform == "win32":
        return True
    if sys.platform == "darwin":
        return False
    return ctx.path("/dev/nvidiactl").exists() or ctx.path("/dev/dxg").exists()


def nvml(ctx, python: Optional[str] = None, worker: Path = WORKER) -> _Seen:
    """Run the NVML worker in a child process; never raises."""
    result = proc.run([python or sys.executable, "-I", str(worker)], timeout=ctx.timeout, env=_child_env(ctx))
    if result.error and "timed out" in result.error:
        ctx.error("nvml", f"the NVML query timed out after {ctx.timeout:g} s (a hung driver?)")
        return _Seen(ran=True)
    if not result.ok:
        ctx.error("nvml", f"the NVML query {result.describe_failure()}")
        return _Seen(ran=True)
    try:
        data = json.loads(result.stdout)
        if not isinstance(data, dict):
            raise ValueError("not an object")
    except ValueError:
        ctx.error("nvml", f"NVML worker printed unreadable output: {result.stdout.strip()[:120]!r}")
        return _Seen(ran=True)
    return nvml_seen(ctx, data)


def nvml_seen(ctx, data: dict[str, Any]) -> _Seen:
    """The worker's JSON → what NVML saw."""
    if "error" in data:
        kind = str(data.get("kind", ""))
        code = NVML_FAILURES.get(kind) or (classify_failure(str(data["error"])) or (None,))[0]
        if code:
            return _Seen(failure=(code, f"NVML: {data['error']}"), ran=True)
        if kind not in NVML_ABSENT:
            ctx.error("nvml", f"{kind}: {data['error']}")
        return _Seen(ran=kind not in NVML_ABSENT)
    for message in data.get("errors", []):
        ctx.error("nvml", str(message))
    gpus = []
    for raw in data.get("gpus", []):
        if isinstance(raw, dict) and isinstance(raw.get("index"), int):
            gpus.append(Gpu(index=raw["index"], name=raw.get("name"), compute_capability=raw.get("compute_capability"),
                            memory_total_mib=raw.get("memory_total_mib"), uuid=raw.get("uuid"),
                            pci_bus_id=raw.get("pci_bus_id")))
    return _Seen(driver_version=data.get("driver_version"), cuda=cuda_from_int(data.get("cuda_driver_version")),
                 gpus=gpus, ran=True)


def _child_env(ctx) -> dict[str, str]:
    env = dict(ctx.environ)
    env.pop("PYTHONPATH", None)
    return env


# --- nvidia-smi -------------------------------------------------------------------------------------

def smi_header(ctx, smi: str) -> _Seen:
    result = proc.run([smi], timeout=ctx.timeout, env=dict(ctx.environ))
    failure = _smi_failure(ctx, result, "nvidia-smi")
    if failure or not result.ok:
        return _Seen(failure=failure, ran=True)
    header = parse_smi_header(result.stdout)
    if not header.driver_version:
        ctx.error("nvidia-smi", f"`nvidia-smi` printed no driver version: {_first_line(result.stdout)!r}")
    return _Seen(driver_version=header.driver_version, cuda=header.cuda_version, gpus=list(header.gpus), ran=True)


def smi_query(ctx, smi: str) -> _Seen:
    fields = QUERY_FIELDS
    result = _query(ctx, smi, fields)
    unknown = UNKNOWN_FIELD.search(result.stdout + result.stderr)
    if unknown and unknown.group(1) in fields:  # old drivers (R470) have no compute_cap
        fields = tuple(f for f in fields if f != unknown.group(1))
        result = _query(ctx, smi, fields)
    failure = _smi_failure(ctx, result, "nvidia-smi --query-gpu")
    if failure or not result.ok:
        return _Seen(failure=failure, ran=True)
    try:
        rows = parse_query_csv(result.stdout, fields)
    except ValueError as exc:
        ctx.error("nvidia-smi", f"`nvidia-smi --query-gpu` printed unrecognised output: {exc}")
        return _Seen(ran=True)
    gpus = []
    for row in rows:
        try:
            index = int(row["index"] or "")
        except ValueError:
            ctx.error("nvidia-smi", f"`nvidia-smi --query-gpu` printed unrecognised output: index {row['index']!r}")
            return _Seen(ran=True)
        gpus.append(Gpu(index=index, name=row.get("name"), compute_capability=row.get("compute_cap"),
                        memory_total_mib=memory_mib(row.get("memory.total")), uuid=row.get("uuid"),
                        pci_bus_id=row.get("pci.bus_id")))
    driver = next((r["driver_version"] for r in rows if r.get("driver_version")), None)
    return _Seen(driver_version=driver, gpus=gpus, ran=True)


def _query(ctx, smi: str, fields: tuple[str, ...]) -> proc.RunResult:
    argv = [smi, f"--query-gpu={','.join(fields)}", "--format=csv,noheader,nounits"]
    return proc.run(argv, timeout=ctx.timeout, env=dict(ctx.environ))


def _smi_failure(ctx, result: proc.RunResult, label: str) -> Optional[tuple[str, str]]:
    """A recognised failure text, or record an unexpected failure as a probe error."""
    known = classify_failure(result.stdout + "\n" + result.stderr)
    if known:
        return known
    if result.error and "timed out" in result.error:
        ctx.error("nvidia-smi", f"`{label}` timed out after {ctx.timeout:g} s")
    elif not result.ok:
        ctx.error("nvidia-smi", f"`{label}` {result.describe_failure()}")
    return None


def _first_line(text: str) -> str:
    return next((l.strip() for l in text.splitlines() if l.strip()), "")[:120]


# --- /proc, /sys, PCI -------------------------------------------------------------------------------

def _read_first_line(ctx, path: str) -> Optional[str]:
    text = proc.read_text(ctx.path(path), 4096)
    line = text.strip().splitlines()[0].strip() if text and text.strip() else ""
    return line or None


def scan_pci(ctx) -> list[PciDevice]:
    """NVIDIA display/3D devices on the PCI bus, with the kernel driver bound to each (if any)."""
    found = []
    for dev in display_devices(ctx, NVIDIA_VENDOR):
        try:
            driver = os.path.basename(os.readlink(dev / "driver"))
        except OSError:
            driver = None
        found.append(PciDevice(address=dev.name, device_id=attribute(dev / "device"), driver=driver))
    return found


def nouveau_loaded(ctx) -> bool:
    if ctx.path("/sys/module/nouveau").is_dir():
        return True
    modules = proc.read_text(ctx.path("/proc/modules"), 1 << 18) or ""
    return any(line.startswith("nouveau ") for line in modules.splitlines())


def _fill_compute_capability(gpus: list[Gpu], nvml_gpus: list[Gpu], ctx, kind: str) -> list[Gpu]:
    """Old drivers' nvidia-smi has no compute_cap: take it from NVML, on Jetson from the SoC."""
    if all(g.compute_capability for g in gpus):
        return gpus
    by_index = {g.index: g.compute_capability for g in nvml_gpus if g.compute_capability}
    soc_cc = _jetson_compute_capability(ctx) if kind == "jetson" else None
    return [g if g.compute_capability else replace(g, compute_capability=by_index.get(g.index) or soc_cc) for g in gpus]


def _jetson_compute_capability(ctx) -> Optional[str]:
    from envdoctor.probe.jetson import read_soc
    from envdoctor.matrix.jetson import soc_compute_capability

    try:
        return soc_compute_capability(read_soc(ctx))
    except Exception as exc:  # a broken matrix file must not hide the GPU
        ctx.error("nvidia", f"cannot map Jetson SoC to a compute capability: {exc}")
        return None
