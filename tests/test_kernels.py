"""The fat-binary reader (envdoctor/maintainers/kernels.py) on recorded extracts (tests/fixtures/fatbin/)."""

import struct

import pytest

from envdoctor.maintainers import kernels
from tests.conftest import FIXTURES

FATBIN = FIXTURES / "fatbin"


def test_an_nvcc_fatbin_lists_its_sass_and_ptx_targets_as_cuobjdump_does():
    found = kernels.kernels_of_fatbins((FATBIN / "nvcc13-scale.nv_fatbin").read_bytes())
    assert found.sass == ("sm_75", "sm_90", "sm_110") and found.ptx == ("compute_120",)
    # cuobjdump --list-elf: 6 cubins (two fat binaries, 3 each); --list-ptx: one PTX
    assert dict(found.counts) == {"sm_75": 2, "sm_90": 2, "sm_110": 2, "compute_120": 1}
    assert found.entries == 7 and found.compressed == 1  # nvcc compresses PTX by default


def test_compressed_entries_are_flagged_and_still_name_their_architecture():
    found = kernels.kernels_of_fatbins((FATBIN / "nvcc13-scale-compressed.nv_fatbin").read_bytes())
    assert found.names == ("sm_75", "sm_90", "sm_110", "compute_120")
    assert found.compressed == found.entries == 7


def test_entries_of_one_fatbin():
    blob = (FATBIN / "nvcc13-scale.nv_fatbin").read_bytes()
    first = kernels.entries_of(blob, next(kernels.fatbins_in(blob)))
    assert [(e.kind, e.name, e.compressed) for e in first] == [
        ("sass", "sm_75", False), ("sass", "sm_90", False), ("sass", "sm_110", False)]


@pytest.mark.parametrize("fixture, sass, ptx", [
    ("tf-2.15.0-pywrap.fatbin-headers", ("sm_50", "sm_60", "sm_70", "sm_75", "sm_80"), ("compute_80",)),
    ("jax-cuda13-plugin-0.12.0.1-aarch64-linalg.fatbin-headers",
     ("sm_75", "sm_80", "sm_90", "sm_100", "sm_110", "sm_120"), ("compute_120",)),
])
def test_header_extracts_of_registry_wheels(fixture, sass, ptx):
    found = kernels.kernels_of_fatbins((FATBIN / fixture).read_bytes())
    assert (found.sass, found.ptx) == (sass, ptx)
    assert found.compressed == found.entries


def _elf_with(section: bytes, name: bytes = b".nv_fatbin") -> bytes:
    """A minimal 64-bit little-endian ELF file: a null section, the fat binary, the name table."""
    names = b"\0" + name + b"\0.shstrtab\0"
    body = 64 + len(section)
    shoff = body + len(names)
    header = bytearray(64)
    header[:6] = b"\x7fELF\x02\x01"
    struct.pack_into("<Q", header, 0x28, shoff)
    struct.pack_into("<HHH", header, 0x3A, 64, 3, 2)
    sections = bytes(64)
    sections += struct.pack("<IIQQQQIIQQ", 1, 1, 0, 0, 64, len(section), 0, 0, 8, 0)
    sections += struct.pack("<IIQQQQIIQQ", 1 + len(name) + 1, 3, 0, 0, body, len(names), 0, 0, 1, 0)
    return bytes(header) + section + names + sections


@pytest.mark.parametrize("name", [b".nv_fatbin", b"__nv_relfatbin"])
def test_the_fatbin_sections_of_an_elf_file(name):
    blob = (FATBIN / "nvcc13-scale-compressed.nv_fatbin").read_bytes()
    elf = _elf_with(blob, name)
    assert kernels.fatbin_sections(elf) == [(name.decode(), blob)]
    assert kernels.kernels_of(elf, name.decode()).names == ("sm_75", "sm_90", "sm_110", "compute_120")
    other = "__nv_relfatbin" if name == b".nv_fatbin" else ".nv_fatbin"
    assert kernels.kernels_of(elf, other) == kernels.Kernels()  # run-time and relocatable code apart


def test_a_library_without_device_code_has_no_kernels():
    assert kernels.kernels_of(_elf_with(b"", b".text")) == kernels.Kernels()


def test_header_extract_round_trips():
    elf = _elf_with((FATBIN / "nvcc13-scale.nv_fatbin").read_bytes())
    extract = kernels.headers_extract(elf)
    assert len(extract) < 1000
    assert kernels.kernels_of_fatbins(extract).names == kernels.kernels_of(elf).names


@pytest.mark.parametrize("data, message", [
    (b"not an elf", "not an ELF file"),
    (b"\x7fELF\x01\x01" + bytes(58), "not a 64-bit little-endian"),
    (b"\x7fELF\x02\x01" + bytes(58), "section table"),
])
def test_bad_input_is_a_fatbin_error(data, message):
    with pytest.raises(kernels.FatbinError, match=message):
        kernels.kernels_of(data)


def test_a_truncated_or_foreign_fatbin_header_is_an_error():
    with pytest.raises(kernels.FatbinError):
        kernels.entries_of(b"\x50\xed\x55\xba")
    with pytest.raises(kernels.FatbinError, match="magic"):
        kernels.entries_of(bytes(16))


def test_main_kernels_leave_out_a_bundled_dependencys_few_fat_binaries():
    # paddlepaddle-gpu 2.6.2 libphi.so: 673 entries per own target, 8 for a dependency's sm_35..sm_90
    counts = {"sm_35": 8, "sm_50": 8, "sm_61": 673, "sm_70": 673, "compute_70": 7, "sm_86": 665, "sm_90": 8}
    found = kernels.Kernels(("sm_35", "sm_50", "sm_61", "sm_70", "sm_86", "sm_90"), ("compute_70",), 2042, 97,
                            tuple(counts.items()))
    assert found.main().names == ("sm_61", "sm_70", "sm_86")
    torch = kernels.Kernels(("sm_90", "sm_100", "sm_103"), (), 0, 0, (("sm_90", 480), ("sm_100", 535), ("sm_103", 59)))
    assert torch.main().names == ("sm_90", "sm_100")


def test_compare_with_a_row():
    found = kernels.Kernels(("sm_75", "sm_80"), ("compute_80",))
    assert kernels.compare("row", ["sm_75", "sm_80", "compute_80"], found).ok
    drift = kernels.compare("row", ["sm_35", "sm_75", "compute_80"], found)
    assert drift.missing == ("sm_35",) and drift.extra == ("sm_80",)
    assert "row lists sm_35 the wheel lacks" in drift.line()
