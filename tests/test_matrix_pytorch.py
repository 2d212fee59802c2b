"""matrices/pytorch.toml: loader, accessors, consistency, and the registry derivation (offline)."""

import json
import shutil
from pathlib import Path

import pytest

from envdoctor.matrix import pytorch as torch_matrix
from envdoctor.matrix.gpus import build_runs_on
from envdoctor.matrix.loader import MatrixError, data_dir, load_file
from envdoctor.maintainers.derive import default_build, metadata_requires_dist, registry_rows
from envdoctor.maintainers.wheels import platform_floor as platform_of

REGISTRY = Path(__file__).parent / "fixtures" / "pytorch_registry"


def test_bundled_file_is_valid():
    torch_matrix.validate()


def test_every_release_from_2_0_to_2_15():
    versions = [r.version for r in torch_matrix.releases()]
    assert versions[0] == "2.15.0" and versions[-1] == "2.0.0"
    assert len(versions) == 28
    assert {"2.12.1", "2.14.1", "2.10.0"} <= set(versions)


@pytest.mark.parametrize("version, platform, build", [
    ("2.0.1", "linux_x86_64", "cu117"), ("2.4.1", "linux_x86_64", "cu121"), ("2.6.0", "linux_x86_64", "cu124"),
    ("2.7.1", "linux_x86_64", "cu126"), ("2.10.0", "linux_x86_64", "cu128"), ("2.11.0", "linux_x86_64", "cu130"),
    ("2.14.1", "linux_x86_64", "cu130"), ("2.15.0", "linux_x86_64", "cu132"),
    ("2.10.0", "linux_aarch64", "cpu"), ("2.11.0", "linux_aarch64", "cu130"), ("2.15.0", "linux_aarch64", "cu132"),
    ("2.15.0", "windows_amd64", "cpu"), ("2.15.0", "macos_arm64", "mps"),
])
def test_default_builds(version, platform, build):
    assert torch_matrix.default_build(version, platform) == build


def test_builds_order_and_platforms():
    tags = [b.tag for b in torch_matrix.builds_for("2.9.1", "linux_x86_64")]
    assert tags == ["cu130", "cu129", "cu128", "cu126", "rocm6.4", "rocm6.3", "cpu"]
    assert "cu129" not in [b.tag for b in torch_matrix.builds_for("2.9.1", "windows_amd64")]  # Linux only
    assert [b.tag for b in torch_matrix.builds_for("2.15.0", "linux_x86_64")] == ["cu132", "cu130", "cpu"]
    assert torch_matrix.builds_for("2.15.0", "macos_arm64") == ()


def test_kernel_milestones():
    """sm_120 first in 2.7 cu128; Pascal only in cu126 through 2.14 and nowhere in 2.15."""
    def covers(version, tag, cc, platform="linux_x86_64"):
        return bool(build_runs_on(torch_matrix.build(version, tag, platform).archs, cc))
    assert covers("2.7.1", "cu128", "12.0") and not covers("2.7.1", "cu126", "12.0")
    assert covers("2.14.1", "cu126", "6.1") and not covers("2.14.1", "cu130", "6.1")
    assert not any(covers("2.15.0", b.tag, "6.1") for b in torch_matrix.builds_for("2.15.0", "linux_x86_64") if b.cuda)
    assert covers("2.10.0", "cu128", "7.0") and not covers("2.11.0", "cu128", "7.0")  # Volta dropped in 2.11
    assert covers("2.15.0", "cu132", "11.0", "linux_aarch64")  # Thor
    assert not covers("2.11.0", "cu128", "11.0", "linux_aarch64")


def test_python_versions_per_platform():
    assert torch_matrix.release("2.5.1").pythons("linux_x86_64")[-1] == "3.13"
    assert torch_matrix.release("2.5.1").pythons("windows_amd64")[-1] == "3.12"
    assert torch_matrix.release("2.15.0").pythons("linux_x86_64") == ("3.11", "3.12", "3.13", "3.14", "3.15")
    assert "macos_x86_64" in torch_matrix.release("2.2.2").python
    assert "macos_x86_64" not in torch_matrix.release("2.3.0").python


def test_os_minimums_and_companions():
    assert torch_matrix.release("2.6.0").glibc == "2.17" and torch_matrix.release("2.7.0").glibc == "2.28"
    assert torch_matrix.release("2.11.0").macos == "11.0" and torch_matrix.release("2.12.0").macos == "14.0"
    # floors per platform and architecture (the wheel tags): torch 2.6.0's aarch64 wheels are
    # manylinux_2_28 while its x86_64 ones need 2.17; the 2.0-2.2 Intel Mac wheels are macosx_10_9
    assert torch_matrix.release("2.6.0").glibc_for("linux_aarch64") == "2.28"
    assert torch_matrix.release("2.6.0").glibc_for("linux_x86_64") == "2.17"
    assert torch_matrix.release("2.2.2").macos_for("macos_x86_64") == "10.9"
    assert torch_matrix.release("2.2.2").macos_for("macos_arm64") == "11.0"
    assert torch_matrix.release("2.3.0").macos_for("macos_x86_64") is None
    assert torch_matrix.release("2.8.0").torchvision == "0.23.0"
    assert torch_matrix.release("2.0.1").torchaudio == "2.0.2"
    assert torch_matrix.release("2.13.0").torchaudio == "2.11.1"


def test_index_url_and_tags():
    assert torch_matrix.index_url("cu128") == "https://download.pytorch.org/whl/cu128"
    assert torch_matrix.cuda_of_tag("cu130") == "13.0" and torch_matrix.tag_of_cuda("12.8") == "cu128"
    assert torch_matrix.index().pytorch_conda_channel_last == "2.5"


def test_hazards():
    crossing = [h.id for h in torch_matrix.hazards_for("2.8.0", installed="2.5.1+cu124")]
    assert crossing == ["torch-load-weights-only", "manylinux-2-28"]
    assert torch_matrix.hazards_for("2.5.1", installed="2.4.0") == ()


def test_conda_forge_rows():
    row = torch_matrix.conda_forge_for("linux-64")[0]
    assert row.series == "2.13" and row.cuda == ("12.9", "13.0")


# --- the registry derivation, on recorded answers ------------------------------------------------

def test_registry_rows_from_recorded_json_match_the_matrix():
    answer = json.loads((REGISTRY / "torch-json-trimmed.json").read_text())
    rows = registry_rows(answer)
    assert list(rows) == ["2.0.1", "2.5.1", "2.6.0", "2.10.0", "2.12.1", "2.14.1", "2.15.0"]
    for version, row in rows.items():
        bundled = torch_matrix.release(version)
        assert {p: tuple(v) for p, v in row.python.items()} == bundled.python, version
        assert {p: tuple(v) for p, v in row.freethreaded.items()} == bundled.freethreaded, version
        assert row.requires_python == bundled.requires_python
        assert row.macos == bundled.macos_by_platform, version
        for platform, floor in row.glibc.items():  # manylinux1 = 2.5 understates: the matrix has the real 2.17
            assert bundled.glibc_for(platform) == ("2.17" if floor == "2.5" else floor), (version, platform)
    assert rows["2.15.0"].glibc == {"linux_aarch64": "2.28", "linux_x86_64": "2.28"}
    assert rows["2.6.0"].glibc == {"linux_aarch64": "2.28", "linux_x86_64": "2.5"}


@pytest.mark.parametrize("wheel, platform, build", [
    ("torch-2.15.0-cp312-cp312-manylinux_2_28_x86_64.whl", "linux_x86_64", "cu132"),
    ("torch-2.9.1-cp312-cp312-manylinux_2_28_x86_64.whl", "linux_x86_64", "cu128"),
    ("torch-2.9.1-cp312-cp312-manylinux_2_28_aarch64.whl", "linux_aarch64", "cpu"),
    ("torch-2.0.1-cp311-cp311-manylinux1_x86_64.whl", "linux_x86_64", "cu117"),
    ("torch-2.15.0-cp312-cp312-win_amd64.whl", "windows_amd64", "cpu"),
])
def test_default_build_from_recorded_metadata(wheel, platform, build):
    requires = metadata_requires_dist((REGISTRY / f"{wheel}.METADATA").read_text())
    assert requires, wheel
    assert default_build(requires, platform) == build
    version = wheel.split("-")[1]
    assert torch_matrix.default_build(version, platform) == build


@pytest.mark.parametrize("tag, expected", [
    ("manylinux_2_28_x86_64", ("linux_x86_64", "2.28")),
    ("manylinux1_x86_64", ("linux_x86_64", "2.5")),
    ("manylinux2014_aarch64", ("linux_aarch64", "2.17")),
    ("macosx_14_0_arm64", ("macos_arm64", "14.0")),
    ("macosx_10_9_x86_64", ("macos_x86_64", "10.9")),
    ("macosx_11_0_universal2", ("universal2", "11.0")),
    ("win_amd64", ("windows_amd64", None)),
    ("linux_armv7l", (None, None)),
])
def test_platform_of(tag, expected):
    assert platform_of(tag) == expected


# --- broken copies --------------------------------------------------------------------------------

def _broken(tmp_path, old, new):
    path = tmp_path / "pytorch.toml"
    shutil.copy(data_dir() / "pytorch.toml", path)
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))
    return load_file(path)


def test_tag_must_match_cuda(tmp_path):
    data = _broken(tmp_path, 'tag = "cu117"\ncuda = "11.7"', 'tag = "cu117"\ncuda = "11.8"')
    with pytest.raises(MatrixError, match=r"pytorch.toml: \[\[build\]\] row \d+ \(tag=cu117\): tag cu117 does not match cuda 11.8"):
        torch_matrix.validate(data)


def test_default_build_needs_a_build_row(tmp_path):
    data = _broken(tmp_path, 'default_build = { linux_x86_64 = "cu132"', 'default_build = { linux_x86_64 = "cu134"')
    with pytest.raises(MatrixError, match=r"\[\[release\]\] 2.15.0: default_build linux_x86_64 = 'cu134' has no \[\[build\]\] row"):
        torch_matrix.validate(data)


def test_overlapping_build_rows(tmp_path):
    data = _broken(tmp_path, 'since = "2.8"\nuntil = "2.10"\ntag = "cu128"', 'since = "2.7"\nuntil = "2.10"\ntag = "cu128"')
    with pytest.raises(MatrixError, match="cu128 rows overlap"):
        torch_matrix.validate(data)


def test_bad_kernel_name(tmp_path):
    data = _broken(tmp_path, '"sm_37", "sm_50"', '"sm37", "sm_50"')
    with pytest.raises(MatrixError, match="not an arch-list entry: 'sm37'"):
        torch_matrix.validate(data)


def test_rocm_build_needs_gfx(tmp_path):
    data = _broken(tmp_path, 'gfx = ["gfx900", "gfx906", "gfx908", "gfx90a", "gfx1030"]', 'gfx = ["mi50"]')
    with pytest.raises(MatrixError, match=r"\(tag=rocm5.4.2\): a ROCm build needs 'gfx'"):
        torch_matrix.validate(data)


def test_duplicate_release(tmp_path):
    data = _broken(tmp_path, 'version = "2.0.1"', 'version = "2.0.0"')
    with pytest.raises(MatrixError, match=r"\[\[release\]\] row 2 \(version=2.0.0\): release listed twice"):
        torch_matrix.validate(data)


def test_unknown_platform(tmp_path):
    data = _broken(tmp_path, 'python = { linux_x86_64 = ', 'python = { linux_riscv64 = ')
    with pytest.raises(MatrixError, match="unknown platform 'linux_riscv64'"):
        torch_matrix.validate(data)


def test_missing_source(tmp_path):
    path = tmp_path / "pytorch.toml"
    text = (data_dir() / "pytorch.toml").read_text()
    start = text.index('source = "pytorch/builder release/2.0 manywheel')
    end = text.index("\n", start) + 1
    path.write_text(text[:start] + text[end:])
    with pytest.raises(MatrixError, match=r"pytorch.toml: \[\[build\]\] row 2 \(cuda=11.7\): missing 'source'"):
        load_file(path)
