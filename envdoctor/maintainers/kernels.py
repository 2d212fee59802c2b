"""Which GPU kernels a shared library carries, read from its CUDA fat binaries (pure, no toolkit).

A CUDA library keeps its device code in ELF sections named `.nv_fatbin` (and `__nv_relfatbin` for
relocatable device code). Each section holds one or more fat binaries:

    fatbin header (16 bytes):  u32 magic 0xBA55ED50 | u16 version | u16 header size | u64 entries size
    entry header:              u16 kind (1 = PTX, 2 = ELF/SASS) | u16 version | u32 header size
                               | u64 payload size | u32 compressed size | u32 -
                               | u16 minor | u16 major | u32 arch (86 = sm_86) | u32 name offset
                               | u32 name length | u64 flags (0x2000 / 0x8000: compressed payload) ...

The architecture sits in the entry header, so a compressed entry still names its target; the
payload is never decompressed. This is what `cuobjdump --list-elf / --list-ptx` prints, without it.

    kernels_of(elf_bytes)   -> Kernels(sass=("sm_80", ...), ptx=("compute_90",), compressed=N)
    entries_of(fatbin)      -> [Entry(kind="sass", arch="sm_80", compressed=True, ...), ...]
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass, field
from typing import Iterable, Iterator, Optional

FATBIN_MAGIC = 0xBA55ED50
FATBIN_SECTIONS = (".nv_fatbin", "__nv_relfatbin")  # loaded at run time | relocatable, for device linking
KIND = {1: "ptx", 2: "sass"}
COMPRESSED_FLAGS = 0x2000 | 0x8000  # LZ4 (CUDA ≤ 12.7) and the newer zstd scheme
_HEADER = struct.Struct("<IHHQ")
_ENTRY = struct.Struct("<HHIQIIHHIIIQ")


class FatbinError(ValueError):
    """Bytes that are not a well-formed ELF file or fat binary."""


@dataclass(frozen=True)
class Entry:
    kind: str  # "sass" | "ptx" | "kind-N" for kinds this reader does not know
    arch: int  # 86
    compressed: bool
    size: int  # payload bytes as stored

    @property
    def name(self) -> str:
        """'sm_86' for SASS, 'compute_86' for PTX (the spelling of torch.cuda.get_arch_list())."""
        return f"{'compute' if self.kind == 'ptx' else 'sm'}_{self.arch}"


@dataclass(frozen=True)
class Kernels:
    sass: tuple[str, ...] = ()  # sorted by architecture: ("sm_70", "sm_80")
    ptx: tuple[str, ...] = ()  # ("compute_90",)
    entries: int = 0
    compressed: int = 0  # entries whose payload is compressed
    counts: tuple[tuple[str, int], ...] = ()  # entries per target: (("sm_80", 512), ...)

    @property
    def names(self) -> tuple[str, ...]:
        return self.sass + self.ptx

    def merged(self, other: "Kernels") -> "Kernels":
        counts = dict(self.counts)
        for name, n in other.counts:
            counts[name] = counts.get(name, 0) + n
        return Kernels(_sorted(set(self.sass) | set(other.sass)), _sorted(set(self.ptx) | set(other.ptx)),
                       self.entries + other.entries, self.compressed + other.compressed, _counted(counts))

    def main(self, share: float = 0.25) -> "Kernels":
        """Only the targets with at least `share` of the entries of the busiest target: the build's
        own architecture list, without the few fat binaries a bundled dependency brings for every
        architecture it supports (paddle's libwarpctc.so: sm_35..sm_90, 1 % of the entries) or the
        handful of arch-specific kernels a build adds (torch 2.13+'s 59 sm_103 entries beside 476+
        for each listed target, which torch.cuda.get_arch_list() does not name)."""
        if not self.counts:
            return self
        floor = max(n for _, n in self.counts) * share
        kept = {name for name, n in self.counts if n >= floor}
        return Kernels(tuple(s for s in self.sass if s in kept), tuple(p for p in self.ptx if p in kept),
                       self.entries, self.compressed, tuple(c for c in self.counts if c[0] in kept))

    def to_dict(self) -> dict:
        return {"sass": list(self.sass), "ptx": list(self.ptx), "entries": self.entries,
                "compressed": self.compressed, "counts": dict(self.counts)}

    @classmethod
    def from_dict(cls, data: dict) -> "Kernels":
        return cls(tuple(data.get("sass", ())), tuple(data.get("ptx", ())), int(data.get("entries", 0)),
                   int(data.get("compressed", 0)), _counted(data.get("counts", {})))


def _counted(counts: dict) -> tuple[tuple[str, int], ...]:
    return tuple((name, counts[name]) for name in _sorted(counts))


def _sorted(names: Iterable[str]) -> tuple[str, ...]:
    return tuple(sorted(names, key=lambda n: int(re.sub(r"\D", "", n) or 0)))


# --- fat binaries --------------------------------------------------------------------------------

def entries_of(data: bytes, offset: int = 0) -> list[Entry]:
    """The entries of the fat binary starting at `offset` (its 0xBA55ED50 header)."""
    if len(data) < offset + _HEADER.size:
        raise FatbinError("truncated fatbin header")
    magic, _version, header_size, size = _HEADER.unpack_from(data, offset)
    if magic != FATBIN_MAGIC:
        raise FatbinError(f"not a fatbin header at {offset}: magic {magic:#x}")
    position, end = offset + header_size, min(len(data), offset + header_size + size)
    found = []
    while position + _ENTRY.size <= end:
        kind, _v, entry_header, payload, _csize, _u, _minor, _major, arch, _no, _nl, flags = \
            _ENTRY.unpack_from(data, position)
        if entry_header < _ENTRY.size or arch > 10_000:
            raise FatbinError(f"malformed fatbin entry at {position}")
        found.append(Entry(KIND.get(kind, f"kind-{kind}"), arch, bool(flags & COMPRESSED_FLAGS), payload))
        position += entry_header + payload
    return found


def fatbins_in(blob: bytes) -> Iterator[int]:
    """Offsets of the fatbin headers in a section's bytes (several fat binaries follow each other)."""
    position = 0
    magic = struct.pack("<I", FATBIN_MAGIC)
    while True:
        position = blob.find(magic, position)
        if position < 0:
            return
        yield position
        _m, _v, header_size, size = _HEADER.unpack_from(blob, position) if position + 16 <= len(blob) else (0, 0, 16, 0)
        position += max(16, header_size + size)


def kernels_of_fatbins(blob: bytes) -> Kernels:
    """Kernels of every fat binary in `blob` (a `.nv_fatbin` section, or a recorded extract)."""
    sass, ptx, count, compressed, counts = set(), set(), 0, 0, {}
    for offset in fatbins_in(blob):
        for entry in entries_of(blob, offset):
            count += 1
            compressed += entry.compressed
            if entry.kind in ("sass", "ptx"):
                (sass if entry.kind == "sass" else ptx).add(entry.name)
                counts[entry.name] = counts.get(entry.name, 0) + 1
    return Kernels(_sorted(sass), _sorted(ptx), count, compressed, _counted(counts))


# --- ELF ------------------------------------------------------------------------------------------

def fatbin_sections(elf: bytes, names: tuple[str, ...] = FATBIN_SECTIONS) -> list[tuple[str, bytes]]:
    """(name, bytes) of the ELF file's fatbin sections among `names`; [] when it has none. 64-bit
    little-endian only (every CUDA wheel: Linux x86_64 and aarch64)."""
    if elf[:4] != b"\x7fELF":
        raise FatbinError("not an ELF file")
    if elf[4] != 2 or elf[5] != 1:
        raise FatbinError("not a 64-bit little-endian ELF file")
    shoff, = struct.unpack_from("<Q", elf, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", elf, 0x3A)
    if shoff == 0 or shentsize < 64 or shoff + shnum * shentsize > len(elf):
        raise FatbinError("ELF section table missing or truncated")
    sections = [struct.unpack_from("<IIQQQQIIQQ", elf, shoff + i * shentsize) for i in range(shnum)]
    names_at = sections[shstrndx][4] if shstrndx < shnum else 0
    found = []
    for name_offset, kind, _f, _a, offset, size, *_ in sections:
        end = elf.find(b"\0", names_at + name_offset)
        name = elf[names_at + name_offset:end].decode("ascii", "replace")
        if name in names and kind != 8:  # 8 = SHT_NOBITS: no bytes in the file
            found.append((name, elf[offset:offset + size]))
    return found


def kernels_of(elf: bytes, section: str = ".nv_fatbin") -> Kernels:
    """The SASS and PTX targets a shared library carries (empty when it has no device code): those
    of `.nv_fatbin`, what the CUDA runtime loads (and what `cuobjdump --list-elf/--list-ptx` lists);
    section="__nv_relfatbin" reads the relocatable device code kept for device linking instead."""
    total = Kernels()
    for _name, blob in fatbin_sections(elf, (section,)):
        total = total.merged(kernels_of_fatbins(blob))
    return total


def headers_extract(elf: bytes, limit: int = 64) -> bytes:
    """A small recordable extract: the first `limit` fat binaries' headers with each entry's header
    (payloads replaced by nothing and sizes zeroed), enough for `kernels_of_fatbins` to re-derive
    the architectures offline."""
    out = bytearray()
    for _name, blob in fatbin_sections(elf):
        for n, offset in enumerate(fatbins_in(blob)):
            if n >= limit:
                break
            entries = bytearray()
            _m, version, header_size, size = _HEADER.unpack_from(blob, offset)
            position, end = offset + header_size, offset + header_size + size
            while position + _ENTRY.size <= min(end, len(blob)):
                fields = list(_ENTRY.unpack_from(blob, position))
                entry_header, payload = fields[2], fields[3]
                fields[2], fields[3], fields[4] = _ENTRY.size, 0, 0
                entries += _ENTRY.pack(*fields)
                position += entry_header + payload
            out += _HEADER.pack(FATBIN_MAGIC, version, 16, len(entries)) + entries
    return bytes(out)


# --- comparing with a matrix row ------------------------------------------------------------------

@dataclass
class Comparison:
    row: str  # "tensorflow 2.15.0 gpu_archs"
    listed: tuple[str, ...]
    seen: tuple[str, ...]
    missing: tuple[str, ...] = field(default=())  # the row lists it, the wheel lacks it
    extra: tuple[str, ...] = field(default=())  # the wheel has it, the row does not list it
    error: Optional[str] = None  # the wheel could not be read whole: not compared (never "the wheel lacks")

    @property
    def ok(self) -> bool:
        return not self.error and not self.missing and not self.extra

    def line(self) -> str:
        if self.error:
            return f"{self.row}: not compared, the scan failed: {self.error}"
        if self.ok:
            return f"{self.row}: matches ({', '.join(self.seen)})"
        parts = [f"row lists {', '.join(self.missing)} the wheel lacks"] if self.missing else []
        parts += [f"wheel has {', '.join(self.extra)} the row lacks"] if self.extra else []
        return f"{self.row}: {'; '.join(parts)} (wheel: {', '.join(self.seen)})"


def compare(row: str, listed: Iterable[str], kernels: Kernels, ptx_only_newest: bool = True) -> Comparison:
    """A row's kernel list against what the wheel carries. Rows list SASS as sm_NN and PTX as
    compute_NN; with `ptx_only_newest`, only the newest PTX target counts (what rows record: the
    JIT fallback), older PTX beside SASS of the same arch is not drift."""
    listed = tuple(listed)
    seen_ptx = kernels.ptx[-1:] if ptx_only_newest else kernels.ptx
    seen = _sorted(set(kernels.sass) | set(seen_ptx))
    base = {n.rstrip("af") for n in listed}
    missing = tuple(n for n in listed if n.rstrip("af") not in {s.rstrip("af") for s in seen})
    extra = tuple(n for n in seen if n.rstrip("af") not in base)
    return Comparison(row, listed, seen, missing, extra)
