"""matrices/drivers.toml: minor-version-compatibility minimums, toolkit drivers, branch -> CUDA."""

import shutil

import pytest

from envdoctor.matrix import drivers
from envdoctor.matrix.loader import MatrixError, data_dir, load_file


def test_bundled_file_is_valid():
    drivers.validate()


@pytest.mark.parametrize("cuda, linux, windows", [
    ("11.8", "450.80.02", "452.39"),
    ("11.1", "450.80.02", "452.39"),
    ("11.0", "450.36.06", "451.22"),
    ("12.0", "525.60.13", "528.33"),
    ("12.8", "525.60.13", "528.33"),
    ("13.0", "580", "580"),
    ("13.2", "580", "580"),
])
def test_wheel_minimums(cuda, linux, windows):
    assert drivers.wheel_min_driver(cuda, "linux") == linux
    assert drivers.wheel_min_driver(cuda, "windows") == windows


def test_unknown_cuda_has_no_minimum():
    assert drivers.wheel_min_driver("6.5") is None
    assert drivers.driver_runs_cuda("470.82.01", "6.5") is None


def test_before_cuda_11_a_binary_needs_its_own_toolkits_driver():
    # no minor-version compatibility before 11.0: CUDA 10.2 wants the 440.33 of its own release
    assert drivers.wheel_min_driver("10.2") == "440.33"
    assert drivers.driver_runs_cuda("418.67", "10.2") is False
    assert drivers.driver_runs_cuda("418.67", "10.1") is True
    assert drivers.wheel_min_driver("9.0", "windows") == "385.54"


@pytest.mark.parametrize("driver, cuda, os, runs", [
    ("570.124.04", "12.8", "linux", True),
    ("570.124.04", "13.0", "linux", False),  # R570 cannot run CUDA 13 wheels
    ("580.65.06", "13.2", "linux", True),  # minor-version compatibility within 13.x
    ("535.54.03", "12.8", "linux", True),  # and within 12.x
    ("525.60.12", "12.1", "linux", False),
    ("470.82.01", "11.8", "linux", True),
    ("573.24", "12.8", "windows", True),  # a Windows (or WSL2) driver number
    ("573.24", "13.0", "windows", False),
])
def test_driver_runs_cuda(driver, cuda, os, runs):
    assert drivers.driver_runs_cuda(driver, cuda, os) is runs


@pytest.mark.parametrize("driver, cuda", [
    ("570.124.04", "12.8"), ("572.61", "12.8"), ("576.88", "12.9"), ("565.57.01", "12.7"),
    ("580.95.05", "13.0"), ("591.86", "13.1"), ("610.43.02", "13.3"), ("470.182.03", "11.4"),
])
def test_branch_cuda(driver, cuda):
    assert drivers.branch_cuda(driver) == cuda


def test_branch_older_than_table():
    assert drivers.branch_cuda("418.39") is None


def test_toolkit_driver():
    row = drivers.toolkit_driver("12.8")
    assert (row.cuda, row.linux, row.windows) == ("12.8.0", "570.26", "570.65")
    assert drivers.toolkit_driver("12.8.1").linux == "570.124.06"
    assert drivers.toolkit_driver("13.0").windows is None  # no driver in Windows installers from 13.0
    assert drivers.toolkit_driver("12.7") is None  # no 12.7 toolkit exists


def test_version_tuple_rejects_garbage():
    with pytest.raises(ValueError):
        drivers.version_tuple("570.x")


# --- broken copies --------------------------------------------------------------------------------

def _broken(tmp_path, old, new):
    path = tmp_path / "drivers.toml"
    shutil.copy(data_dir() / "drivers.toml", path)
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))
    return path


def test_missing_source_names_file_and_row(tmp_path):
    path = _broken(tmp_path, 'source = "https://docs.nvidia.com/deploy/cuda-compatibility/minor-version-compatibility.html; astral-sh/uv crates/uv-torch/src/backend.rs (cu110)"\n', "")
    with pytest.raises(MatrixError, match=r"drivers.toml: \[\[wheel_minimum\]\] row 1.*missing 'source'"):
        load_file(path)


def test_bad_checked_date(tmp_path):
    path = _broken(tmp_path, 'checked = "2026-11-29"', 'checked = "29/11/2026"')
    with pytest.raises(MatrixError, match="not a YYYY-MM-DD date"):
        load_file(path)


def test_overlapping_ranges_are_refused(tmp_path):
    path = _broken(tmp_path, 'cuda_from = "12.0"', 'cuda_from = "11.5"')
    with pytest.raises(MatrixError, match="overlap"):
        drivers.validate(load_file(path))


def test_bad_driver_number_names_the_row(tmp_path):
    path = _broken(tmp_path, 'linux = "525.60.13"', 'linux = "525.sixty"')
    with pytest.raises(MatrixError, match=r"\[\[wheel_minimum\]\] row 12 \(cuda_from=12.0\)"):
        drivers.validate(load_file(path))


def test_branch_cuda_must_grow(tmp_path):
    path = _broken(tmp_path, 'branch = 580\ncuda = "13.0"', 'branch = 580\ncuda = "12.1"')
    with pytest.raises(MatrixError, match="branch"):
        drivers.validate(load_file(path))
