"""matrices/paddle.toml: the loader on the bundled file and on broken copies, the accessors, and the
registry-derived fields re-derived offline from recorded registry answers."""

import json
from pathlib import Path

import pytest

from envdoctor.matrix import paddle as paddle_matrix
from envdoctor.maintainers import derive
from envdoctor.matrix.loader import MatrixError, data_dir, load, load_file

REGISTRY = Path(__file__).parent / "fixtures" / "registry_jax_paddle"


def test_bundled_file_has_2_6_and_every_3_x():
    versions = [r.version for r in paddle_matrix.releases()]
    assert versions == ["3.3.1", "3.3.0", "3.2.2", "3.2.1", "3.2.0", "3.1.1", "3.1.0", "3.0.0", "2.6.2", "2.6.1", "2.6.0"]
    for table in ("release", "build", "index", "hazard"):
        for row in load("paddle")[table]:
            assert row["source"] and str(row["checked"]) in ("2026-11-29", "2026-12-01")


def test_builds_per_release():
    assert paddle_matrix.release("3.3.1").builds == ("cu126", "cu129", "cu130")
    assert paddle_matrix.release("3.0.0").builds == ("cu118", "cu126")
    assert paddle_matrix.release("2.6.2").registry_gpu_build == "cu118"
    assert not paddle_matrix.release("2.6.2").bundles_cuda and paddle_matrix.release("3.0.0").bundles_cuda


def test_index_url_and_requirement_forms():
    assert paddle_matrix.index_url("cu129") == "https://www.paddlepaddle.org.cn/packages/stable/cu129/"
    assert paddle_matrix.index_url("cpu") == "https://www.paddlepaddle.org.cn/packages/stable/cpu/"
    assert paddle_matrix.gpu_requirement(paddle_matrix.release("2.6.2"), "cu117") == "paddlepaddle-gpu==2.6.2.post117"
    assert paddle_matrix.gpu_requirement(paddle_matrix.release("2.6.2"), "cu118") == "paddlepaddle-gpu==2.6.2"
    assert paddle_matrix.gpu_requirement(paddle_matrix.release("3.3.1"), "cu130") == "paddlepaddle-gpu==3.3.1"


def test_driver_minimums_documented_or_toolkit():
    assert paddle_matrix.build("cu126").driver_minimum("linux") == ("550.54.14", True)
    assert paddle_matrix.build("cu118").driver_minimum("windows") == ("452.39", True)
    # Paddle states none for cu129 / cu130: the toolkit's own driver (drivers.toml), marked undocumented.
    assert paddle_matrix.build("cu129").driver_minimum("linux") == ("575.51.03", False)
    assert paddle_matrix.build("cu130").driver_minimum("linux") == ("580.65.06", False)
    assert "UNCONFIRMED" in paddle_matrix.build("cu130").note


def test_gpu_builds_only_for_linux_x86_64_and_windows():
    assert paddle_matrix.gpu_platforms() == {"linux_x86_64", "windows_amd64"}
    assert "linux_aarch64" not in paddle_matrix.release("3.3.1").wheels  # none on the registry for 3.3
    assert "linux_aarch64" in paddle_matrix.release("3.2.2").wheels


def test_registry_fields_match_the_recorded_registry():
    cpu = json.loads((REGISTRY / "paddlepaddle.json").read_text())
    gpu = json.loads((REGISTRY / "paddlepaddle-gpu.json").read_text())
    derived = {r["version"]: r for r in derive.paddle_rows(cpu, gpu)}
    rows = load("paddle")["release"]
    assert {r["version"] for r in rows} == set(derived)
    for row in rows:
        got = derived[row["version"]]
        assert row["date"] == got["date"] and row["wheels"] == got["wheels"], row["version"]
        assert row.get("registry_gpu_wheels", {}) == got["registry_gpu_wheels"], row["version"]
        assert row.get("glibc", {}) == got["glibc"], row["version"]


def _broken(tmp_path, old, new):
    text = (data_dir() / "paddle.toml").read_text(encoding="utf-8")
    assert old in text
    path = tmp_path / "paddle.toml"
    path.write_text(text.replace(old, new, 1), encoding="utf-8")
    return path


@pytest.mark.parametrize("old, new, message", [
    ('builds = ["cu126", "cu129", "cu130"]', 'builds = ["cu126", "cu129", "cu131"]', "build cu131 has no \\[\\[build\\]\\] row"),
    ('id = "cu129"\ncuda = "12.9"', 'id = "cu129"\ncuda = "12.8"', "does not match cuda"),
    ('driver_linux = "550.54.14"\ndriver_windows = "550.54.14"\n', '', "driver = \"toolkit\""),
    ('builds = ["cu118", "cu126"]', 'builds = ["cu118", "cu126", "cu130"]', "described only for paddle >=3.3"),
    ('url = "https://www.paddlepaddle.org.cn/packages/stable/{build}/"', 'url = "https://www.paddlepaddle.org.cn/packages/stable/"',
     "needs an \\[\\[index\\]\\] 'stable'"),
    ('build = "gpu"', 'build = "tpu"', "build must be 'gpu' or 'cpu'"),
])
def test_inconsistent_copies_are_refused(tmp_path, old, new, message):
    path = _broken(tmp_path, old, new)
    with pytest.raises(MatrixError, match=message) as err:
        paddle_matrix.parse(load_file(path), path.name)
    assert "paddle.toml" in str(err.value)


def test_unreadable_and_malformed_files(tmp_path):
    with pytest.raises(MatrixError, match="paddle.toml: cannot read"):
        load_file(tmp_path / "paddle.toml")
    path = _broken(tmp_path, "\n[[build]]\nid", "\n[[build]\nid")
    with pytest.raises(MatrixError, match="paddle.toml: not valid TOML"):
        load_file(path)
