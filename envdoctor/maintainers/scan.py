"""Scan a wheel on disk: the kernels in each of its shared libraries (envdoctor.maintainers.kernels).

    scan_wheel(path) -> {"nvidia/.../libfoo.so": Kernels(...), ...}   only libraries with device code;
                         "<member> [relocatable]": the __nv_relfatbin code (device linking only);
                         a library whose fat binaries cannot be read goes into `errors` (member ->
                         why), never in as an empty Kernels: its kernels are unknown, not absent

Each `.so` member is unpacked to a temporary file (bounded), mapped, read, and deleted.
"""

from __future__ import annotations

import mmap
import re
import tempfile
import zipfile
from pathlib import Path
from typing import Callable, Optional

from envdoctor.maintainers import kernels
from envdoctor.maintainers.fetch import extract_member

_SHARED = re.compile(r"\.so(\.\d+)*$")
MAX_MEMBER = 8 << 30


def shared_libraries(wheel: zipfile.ZipFile, only: Optional[Callable[[str], bool]] = None) -> list[zipfile.ZipInfo]:
    return [i for i in wheel.infolist() if _SHARED.search(i.filename) and i.file_size > 0
            and i.file_size <= MAX_MEMBER and (only is None or only(i.filename))]


def scan_library(path: Path, section: str = ".nv_fatbin") -> kernels.Kernels:
    with open(path, "rb") as fh:
        if Path(path).stat().st_size < 64:
            return kernels.Kernels()
        with mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as data:
            if data[:4] != b"\x7fELF":
                return kernels.Kernels()
            return kernels.kernels_of(data, section)


def scan_wheel(path: Path, only: Optional[Callable[[str], bool]] = None,
               keep: Optional[Callable[[str, Path], None]] = None,
               errors: Optional[dict[str, str]] = None) -> dict[str, kernels.Kernels]:
    """Kernels per shared library of the wheel at `path`; `keep(member, unpacked)` sees each library
    while it is on disk (to record an extract); `errors` receives member -> why for each library that
    could not be read (a caller that compares kernel lists must then not compare this wheel)."""
    found = {}
    with zipfile.ZipFile(path) as wheel, tempfile.TemporaryDirectory(prefix="envdoctor-scan-") as tmp:
        for info in shared_libraries(wheel, only):
            target = Path(tmp) / "lib.so"
            extract_member(wheel, info.filename, target)
            try:
                result, relocatable = scan_library(target), scan_library(target, "__nv_relfatbin")
            except kernels.FatbinError as exc:
                if errors is not None:
                    errors[info.filename] = f"unreadable fat binary: {exc}"
                target.unlink()
                continue
            if relocatable.entries:
                found[info.filename + " [relocatable]"] = relocatable
            if result.entries:
                found[info.filename] = result
                if keep:
                    keep(info.filename, target)
            target.unlink()
    return found


def combined(per_library: dict[str, kernels.Kernels]) -> kernels.Kernels:
    total = kernels.Kernels()
    for found in per_library.values():
        total = total.merged(found)
    return total
