"""NVIDIA GPU architectures, products and binary compatibility, from matrices/gpus.toml.

- `arch(cc)`: the row of a compute capability ("8.6"): SASS name, architecture, first/last CUDA
  that can compile for it, whether it is a Tegra (Jetson) GPU.
- `compute_capability_for_name(name)`: a GPU name as NVML prints it → "8.6" (when the probe could
  not read the capability itself, e.g. R470's nvidia-smi).
- `cuda_can_build(cc, cuda)`: can toolkit `cuda` compile for that capability.
- `build_runs_on(arch_list, cc)`: does a binary built for `arch_list` (what
  `torch.cuda.get_arch_list()` prints: "sm_86", "sm_90a", "compute_120"; also "8.6" / "8.6+PTX")
  run on a GPU of capability `cc`. Returns a `Verdict` (truthy when it runs) saying how and why.

Compatibility rules (NVIDIA CUDA Programming Guide): a cubin for sm_X.y runs on X.z with z ≥ y
(same major); `a` cubins run only on exactly X.y; `f` cubins on the same major with z ≥ y; PTX for
compute_X.y is JIT-compiled on any newer capability (not `a` PTX; `f` PTX within its major). Binary
compatibility is desktop-only: a Tegra GPU (tegra = true in the table) needs its exact cubin or PTX.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Iterable, Optional

from envdoctor.matrix.drivers import cuda_tuple
from envdoctor.matrix.loader import MatrixError, load
from envdoctor.matrix.memo import memoised, strings

FILE = "gpus.toml"


@dataclass(frozen=True)
class Arch:
    cc: str  # "8.6"
    sm: str  # "sm_86"
    arch: str  # "Ampere"
    first_cuda: str
    last_cuda: Optional[str]  # None: still supported by the newest toolkit
    tegra: bool
    source: str


@dataclass(frozen=True)
class Product:
    pattern: re.Pattern
    family: str
    cc: str
    source: str
    desktop: Optional[re.Pattern] = None  # the names in this row that are desktop/workstation cards (x86_64 PCs)

    def is_desktop(self, name: str) -> bool:
        return bool(self.desktop and self.desktop.search(name or ""))


@dataclass(frozen=True)
class Kernel:
    """One entry of an arch list: a cubin (`sm`) or PTX (`compute`) for a capability."""

    kind: str  # "sm" | "compute"
    cc: tuple[int, int]
    suffix: str  # "" | "a" | "f"
    text: str  # as given

    @property
    def name(self) -> str:
        return f"{self.kind}_{self.cc[0]}{self.cc[1]}{self.suffix}"


@dataclass(frozen=True)
class Verdict:
    runs: bool
    via: Optional[str]  # "cubin" | "ptx" | None
    kernel: Optional[str]  # the arch-list entry that makes it run ("sm_86")
    reason: str

    def __bool__(self) -> bool:
        return self.runs


def cc_tuple(cc: str) -> tuple[int, int]:
    """'8.6' -> (8, 6); '12.0' -> (12, 0)."""
    return cuda_tuple(cc)


def cc_text(cc: tuple[int, int]) -> str:
    return f"{cc[0]}.{cc[1]}"


def sm_name(cc: str) -> str:
    """'8.6' -> 'sm_86', '12.1' -> 'sm_121'."""
    major, minor = cc_tuple(cc)
    return f"sm_{major}{minor}"


_KERNEL = re.compile(r"^(sm|compute)_(\d+)(\d)([af]?)$")
_DOTTED = re.compile(r"^(\d+)\.(\d)([af]?)(\+ptx)?$", re.IGNORECASE)


def parse_kernels(token: str) -> list[Kernel]:
    """'sm_90a' / 'compute_120' / '8.6' / '8.6+PTX' → kernels ('8.6+PTX' is a cubin and PTX)."""
    return list(_kernels(token))


@memoised
def _kernels(token: str) -> tuple[Kernel, ...]:
    return tuple(_parse_kernels(token))


def _parse_kernels(token: str) -> list[Kernel]:
    text = token.strip()
    m = _KERNEL.match(text.lower())
    if m:
        return [Kernel(m.group(1), (int(m.group(2)), int(m.group(3))), m.group(4), text)]
    m = _DOTTED.match(text)
    if m:
        cc, suffix = (int(m.group(1)), int(m.group(2))), m.group(3)
        kernels = [Kernel("sm", cc, suffix, text)]
        if m.group(4):
            kernels.append(Kernel("compute", cc, suffix, text))
        return kernels
    raise ValueError(f"not an arch-list entry: {token!r}")


# --- tables ---------------------------------------------------------------------------------------

def parse_archs(data: dict) -> tuple[Arch, ...]:
    rows, seen = [], set()
    for i, row in enumerate(data.get("arch", []), 1):
        where = f"{FILE}: [[arch]] row {i} (cc={row.get('cc')})"
        try:
            item = Arch(row["cc"], row["sm"], row["arch"], row["first_cuda"], row.get("last_cuda"),
                        bool(row.get("tegra", False)), row["source"])
            cc_tuple(item.cc), cuda_tuple(item.first_cuda)
            if item.last_cuda is not None and cuda_tuple(item.last_cuda) < cuda_tuple(item.first_cuda):
                raise ValueError("last_cuda is before first_cuda")
        except (KeyError, ValueError, TypeError) as exc:
            raise MatrixError(f"{where}: {exc}") from None
        if item.sm != sm_name(item.cc):
            raise MatrixError(f"{where}: sm {item.sm!r} does not match cc {item.cc} (expected {sm_name(item.cc)})")
        if item.cc in seen:
            raise MatrixError(f"{where}: compute capability {item.cc} listed twice")
        seen.add(item.cc)
        rows.append(item)
    return tuple(rows)


def parse_products(data: dict, known_ccs: Iterable[str]) -> tuple[Product, ...]:
    known = set(known_ccs)
    rows = []
    for i, row in enumerate(data.get("product", []), 1):
        where = f"{FILE}: [[product]] row {i} ({row.get('family')})"
        try:
            desktop = re.compile(row["desktop"], re.IGNORECASE) if row.get("desktop") else None
            item = Product(re.compile(row["pattern"], re.IGNORECASE), row["family"], row["cc"], row["source"], desktop)
        except re.error as exc:
            raise MatrixError(f"{where}: bad pattern: {exc}") from None
        except (KeyError, TypeError) as exc:
            raise MatrixError(f"{where}: missing {exc}") from None
        if item.cc not in known:
            raise MatrixError(f"{where}: compute capability {item.cc} has no [[arch]] row")
        rows.append(item)
    return tuple(rows)


@functools.lru_cache(maxsize=None)
def archs() -> tuple[Arch, ...]:
    return parse_archs(load("gpus"))


@functools.lru_cache(maxsize=None)
def products() -> tuple[Product, ...]:
    return parse_products(load("gpus"), (a.cc for a in archs()))


def validate(data: Optional[dict] = None) -> None:
    """Check gpus.toml (the bundled one, or `data` parsed from another copy); MatrixError if broken."""
    data = load("gpus") if data is None else data
    parse_products(data, (a.cc for a in parse_archs(data)))


# --- questions ------------------------------------------------------------------------------------

@memoised
def arch(cc: str) -> Optional[Arch]:
    wanted = cc_tuple(cc)
    for row in archs():
        if cc_tuple(row.cc) == wanted:
            return row
    return None


@memoised
def is_tegra(cc: str) -> bool:
    row = arch(cc)
    return bool(row and row.tegra)


@memoised
def product_for_name(name: str) -> Optional[Product]:
    for row in products():
        if row.pattern.search(name or ""):
            return row
    return None


def is_desktop_card(name: str) -> Optional[bool]:
    """'NVIDIA GeForce RTX 4090' -> True (a desktop card, in x86_64 PCs); 'NVIDIA L4' -> False; None: unknown product."""
    row = product_for_name(name)
    return row.is_desktop(name) if row else None


def compute_capability_for_name(name: str) -> Optional[str]:
    """'NVIDIA GeForce RTX 5090' -> '12.0'; None for an unknown product."""
    row = product_for_name(name)
    return row.cc if row else None


@memoised
def cuda_can_build(cc: str, cuda: str) -> Optional[bool]:
    """Can toolkit `cuda` ("13.0") compile for capability `cc`? None for an unknown capability."""
    row = arch(cc)
    if row is None:
        return None
    wanted = cuda_tuple(cuda)
    if wanted < cuda_tuple(row.first_cuda):
        return False
    return row.last_cuda is None or wanted <= cuda_tuple(row.last_cuda)


def build_runs_on(arch_list: Iterable[str], cc: str) -> Verdict:
    """Does a binary with these kernels run on a GPU of compute capability `cc`?"""
    key = strings(arch_list)
    if key is not None and type(cc) is str:
        return _build_runs_on(key, cc)
    return _judge_build(arch_list, cc)


@functools.lru_cache(maxsize=4096)
def _build_runs_on(arch_list: tuple[str, ...], cc: str) -> Verdict:
    return _judge_build(arch_list, cc)


def _judge_build(arch_list: Iterable[str], cc: str) -> Verdict:
    device = cc_tuple(cc)
    tegra_device = is_tegra(cc)
    kernels = [k for token in arch_list for k in parse_kernels(token)]
    for k in kernels:  # a cubin for exactly this GPU
        if k.kind == "sm" and k.cc == device:
            return Verdict(True, "cubin", k.name, f"has {k.name} kernels")
    if not tegra_device:
        for k in sorted(kernels, key=lambda k: k.cc, reverse=True):
            if (k.kind == "sm" and k.suffix != "a" and k.cc[0] == device[0] and k.cc[1] < device[1]
                    and not is_tegra(cc_text(k.cc))):
                return Verdict(True, "cubin", k.name,
                               f"{k.name} kernels run on sm_{device[0]}{device[1]} (same major, older minor)")
    for k in sorted(kernels, key=lambda k: k.cc, reverse=True):
        if k.kind == "compute" and k.cc <= device and k.suffix != "a" and (k.suffix != "f" or k.cc[0] == device[0]):
            return Verdict(True, "ptx", k.name, f"{k.name} PTX is JIT-compiled for sm_{device[0]}{device[1]} "
                                                f"(slow first start; needs a driver as new as the toolkit)")
    listed = ", ".join(k.name for k in kernels) or "none"
    why = f"no kernels for sm_{device[0]}{device[1]} (build has {listed})"
    if tegra_device:
        why += "; a Jetson GPU runs only kernels built for exactly its own architecture"
    return Verdict(False, None, None, why)
