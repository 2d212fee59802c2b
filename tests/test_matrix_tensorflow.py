"""matrices/tensorflow.toml: the loader on the bundled file and on broken copies, the accessors, and
the registry-derived fields re-derived offline from recorded registry answers."""

import json
from pathlib import Path

import pytest

from envdoctor.maintainers import derive
from envdoctor.matrix import tensorflow as tf_matrix
from envdoctor.matrix.loader import MatrixError, data_dir, load, load_file

REGISTRY = Path(__file__).parent / "fixtures" / "registry"  # recorded by scripts/check_registry.py


def test_bundled_file_loads_with_every_release_from_2_10():
    versions = [r.version for r in tf_matrix.releases()]
    assert versions[0] == "2.21.0" and versions[-1] == "2.10.0"
    series = {r.series for r in tf_matrix.releases()}
    assert series == {f"2.{n}" for n in range(10, 22)}
    assert "2.15.0.post1" in versions and "2.16.0" not in versions  # 2.16 shipped as 2.16.1


def test_every_row_has_provenance():
    data = load("tensorflow")
    for table in ("release", "metal", "hazard"):
        for row in data[table]:
            assert row["source"] and str(row["checked"]) in ("2026-11-29", "2026-12-01")


def test_gpu_builds_only_on_linux_x86_64_after_2_10():
    assert tf_matrix.last_native_windows_gpu().version == "2.10.1"
    for release in tf_matrix.releases():
        expected = ("linux_x86_64", "windows_amd64") if release.series == "2.10" else ("linux_x86_64",)
        assert release.gpu_platforms == expected
        assert not release.has_gpu("linux_aarch64") and not release.has_gpu("macos_arm64")


def test_and_cuda_pins():
    assert tf_matrix.release("2.13.1").and_cuda == {}
    assert tf_matrix.release("2.14.1").and_cuda["nvidia-cudnn-cu11"] == "==8.7.0.84"
    assert "tensorrt" in tf_matrix.release("2.15.0").and_cuda
    assert "tensorrt" not in tf_matrix.release("2.15.0.post1").and_cuda
    assert tf_matrix.release("2.21.0").and_cuda["nvidia-cudnn-cu12"] == "<10.0,>=9.3.0.75"


def test_keras3_and_numpy_constraints():
    assert not tf_matrix.release("2.15.1").keras3 and tf_matrix.release("2.16.1").keras3
    assert "<2.0.0" in tf_matrix.release("2.17.1").numpy
    assert tf_matrix.release("2.21.0").numpy == ">=1.26.0"


def test_stub_wheels_and_their_providers():
    assert tf_matrix.release("2.15.1").stub_for == {"linux_aarch64": "tensorflow-cpu-aws",
                                                    "windows_amd64": "tensorflow-intel"}
    assert tf_matrix.release("2.14.0").stub_for["macos_arm64"] == "tensorflow-macos"
    assert tf_matrix.release("2.18.1").stub_for == {}


def test_glibc_from_the_manylinux_tags():
    assert tf_matrix.release("2.21.0").glibc == "2.27"  # first release tagged manylinux_2_27
    assert tf_matrix.release("2.20.0").glibc == "2.17"
    assert tf_matrix.release("2.20.0").glibc_for("windows_amd64") is None


def test_gpu_minimum_follows_the_arch_list():
    assert tf_matrix.min_gpu_capability(tf_matrix.release("2.16.2")) == "5.0"
    assert tf_matrix.min_gpu_capability(tf_matrix.release("2.17.0")) == "6.0"


def test_metal_versions():
    assert tf_matrix.metal_for("2.18.1").version == "1.2.0"
    assert tf_matrix.metal_for("2.15.1").version == "1.1.0"
    assert tf_matrix.metal_for("2.19.0") is None  # undocumented: not planned


def test_hazards_apply_only_when_crossed():
    keras3 = next(h for h in tf_matrix.hazards() if h.id == "keras3")
    assert keras3.applies("2.21.0", "2.15.0", {}, {}, False)
    assert not keras3.applies("2.21.0", "2.16.1", {}, {}, False)
    assert not keras3.applies("2.21.0", None, {}, {}, False)
    numpy2 = next(h for h in tf_matrix.hazards() if h.id == "numpy2-old-tf")
    assert numpy2.applies("2.17.1", None, {"numpy": "2.1.0"}, {}, False)
    assert not numpy2.applies("2.17.1", None, {"numpy": "1.26.4"}, {}, False)
    assert not numpy2.applies("2.18.1", None, {"numpy": "2.1.0"}, {}, False)
    ld = next(h for h in tf_matrix.hazards() if h.id == "and-cuda-ld-path")
    assert ld.applies("2.21.0", None, {}, {"LD_LIBRARY_PATH": "/usr/local/cuda/lib64"}, True)
    assert not ld.applies("2.21.0", None, {}, {"LD_LIBRARY_PATH": "/x"}, False)


# --- the registry-derived fields against recorded registry answers -----------------------------------

def test_registry_fields_match_the_recorded_registry():
    doc = json.loads((REGISTRY / "tensorflow.json").read_text())
    derived = {row["version"]: row for row in derive.tensorflow_rows(doc)}
    for row in load("tensorflow")["release"]:
        got = derived[row["version"]]
        assert (row["date"], row["requires_python"], row["wheels"]) == (got["date"], got["requires_python"],
                                                                          got["wheels"]), row["version"]
        assert sorted(row.get("stub_for", {})) == sorted(got["stubs"]), row["version"]
        assert row.get("glibc", {}) == got["glibc"], row["version"]


@pytest.mark.parametrize("version", ["2.19.1", "2.20.0", "2.21.0"])
def test_requires_dist_fields_match_the_recorded_metadata(version):
    recorded = json.loads((REGISTRY / "requires_dist.json").read_text())[f"tensorflow=={version} linux_x86_64"]
    release = tf_matrix.release(version)
    assert derive.extra_pins(recorded, "and-cuda") == release.and_cuda
    assert derive.dependency_spec(recorded, "numpy") == release.numpy
    assert derive.dependency_spec(recorded, "keras") == release.keras


def test_wheel_name_parsing():
    files = [{"filename": "tensorflow-2.21.0-cp313-cp313-manylinux_2_27_x86_64.whl", "size": 600_000_000},
             {"filename": "tensorflow-2.15.1-cp311-cp311-win_amd64.whl", "size": 2_000},
             {"filename": "jaxlib-0.12.0-cp314-cp314t-macosx_12_0_arm64.whl", "size": 80_000_000},
             {"filename": "tensorflow-2.10.0-cp37-cp37m-manylinux2014_aarch64.whl", "size": 1_000},
             {"filename": "tensorflow-2.21.0.tar.gz", "size": 1}]
    assert derive.wheel_platforms(files) == {"linux_x86_64": ["3.13"], "linux_aarch64": ["3.7"],
                                             "windows_amd64": ["3.11"], "macos_arm64": ["3.14t"]}
    assert derive.stub_platforms(files) == ["linux_aarch64", "windows_amd64"]
    assert derive.wheel_glibc(files) == {"linux_x86_64": "2.27", "linux_aarch64": "2.17"}
    assert derive.glibc_of("manylinux_2_17_x86_64.manylinux2014_x86_64") == "2.17"
    assert derive.glibc_of("manylinux1_x86_64") == "2.5" and derive.glibc_of("win_amd64") is None


# --- broken copies ---------------------------------------------------------------------------------

def _broken(tmp_path, old, new):
    text = (data_dir() / "tensorflow.toml").read_text(encoding="utf-8")
    assert old in text
    path = tmp_path / "tensorflow.toml"
    path.write_text(text.replace(old, new, 1), encoding="utf-8")
    return path


def test_a_row_without_source_names_the_row(tmp_path):
    text = (data_dir() / "tensorflow.toml").read_text(encoding="utf-8")
    start = text.index('version = "2.21.0"')
    cut = text.index("\nsource = ", start)
    path = tmp_path / "tensorflow.toml"
    path.write_text(text[:cut] + text[text.index("\n", cut + 1):], encoding="utf-8")
    with pytest.raises(MatrixError, match=r"tensorflow\.toml: \[\[release\]\] row \d+ \(version=2\.21\.0\)"):
        load_file(path)


@pytest.mark.parametrize("old, new, message", [
    ('gpu_platforms = ["linux_x86_64", "windows_amd64"]', 'gpu_platforms = ["linux_x86_64", "windows_x64"]',
     "unknown platform 'windows_x64'"),
    ('cuda = "12.5"\ncudnn = "9.3"\ngpu_platforms = ["linux_x86_64"]',
     'cuda = "12.5"\ncudnn = "9.3"\ngpu_platforms = ["linux_x86_64", "macos_x86_64"]', "has no wheels"),
    ('gpu_archs = ["sm_60"', 'gpu_archs = ["sm60"', "gpu_archs"),
    ('target = ">=2.16"', 'target = ">>2.16"', "not a version specifier"),
    ('version = "2.21.0"\n', 'versio = "2.21.0"\n', "missing 'version'"),
    ('version = "2.20.0"\n', 'version = "2.21.0"\n', "appears twice"),
])
def test_inconsistent_copies_are_refused(tmp_path, old, new, message):
    path = _broken(tmp_path, old, new)
    with pytest.raises(MatrixError, match=message) as err:
        tf_matrix.parse(load_file(path), path.name)
    assert "tensorflow.toml" in str(err.value)


def test_kernel_lists_and_metal_floor_as_the_wheels_carry_them():
    # libtensorflow_cc.so.2 of the 2.15 wheels: SASS sm_50..sm_80 with PTX compute_80 (TF spells the
    # last one compute_80); sm_80/compute_90 ship from 2.16.1 (tests/fixtures/kernel_scan/)
    for version in ("2.15.0", "2.15.0.post1", "2.15.1"):
        assert tf_matrix.release(version).gpu_archs == ("sm_50", "sm_60", "sm_70", "sm_75", "compute_80")
    assert tf_matrix.release("2.16.1").gpu_archs[-1] == "compute_90"
    assert {m.macos for m in tf_matrix.metal_rows()} == {"12.0"}  # macosx_12_0 wheel tags
