"""Jetson probe and matrices/jetson.toml: nv_tegra_release, device tree, dpkg fallback, accessors."""

from __future__ import annotations

from pathlib import Path

import pytest

from envdoctor.matrix import jetson as matrix
from envdoctor.matrix.loader import MatrixError, check_provenance, load
from envdoctor.probe import jetson
from probe_helpers import SYSTEM_PATH, context, put, raw, raw_bytes, script

RELEASES = [
    # fixture, L4T, JetPack, CUDA
    ("jp72_agx_orin.txt", "39.2.0", "7.2", "13.2"),
    ("jp70_agx_thor.txt", "38.2.0", "7.0", "13.0"),
    ("jp70_thor_38.2.2.txt", "38.2.2", "7.0", "13.0"),
    ("jp62_orin_nx.txt", "36.4.3", "6.2", "12.6"),
    ("jp512_agx.txt", "35.4.1", "5.1.2", "11.4"),
    ("jp513.txt", "35.5.0", "5.1.3", "11.4"),
    ("jp461_nano.txt", "32.7.1", "4.6.1", "10.2"),
    ("jp451_xavier_nx.txt", "32.5.1", "4.5.1", "10.2"),
]


@pytest.mark.parametrize("fixture,l4t,jetpack,cuda", RELEASES)
def test_nv_tegra_release_to_jetpack(fixture, l4t, jetpack, cuda):
    parsed = jetson.parse_nv_tegra_release(raw(f"nv_tegra_release/{fixture}"))
    assert parsed == l4t
    release = matrix.release_for_l4t(parsed)
    assert (release.jetpack, release.cuda) == (jetpack, cuda)


def test_unparseable_release_file():
    assert jetson.parse_nv_tegra_release("garbage\n") is None


def test_dpkg_version():
    assert jetson.parse_dpkg_l4t_version("36.4.3-20250107174145") == "36.4.3"
    assert jetson.parse_dpkg_l4t_version("35.3.1-20230319081403") == "35.3.1"
    assert jetson.parse_dpkg_l4t_version("") is None


@pytest.mark.parametrize("name,soc,model", [
    ("thor", "tegra264", "NVIDIA Jetson AGX Thor Developer Kit"),
    ("agx_orin", "tegra234", "NVIDIA Jetson AGX Orin Developer Kit"),
    ("tx1", "tegra210", "jetson_tx1"),
])
def test_device_tree(name, soc, model):
    compatible = jetson.parse_device_tree_strings(raw_bytes(f"device-tree/{name}_compatible").decode())
    assert jetson.soc_from_compatible(compatible) == soc
    assert jetson.parse_device_tree_strings(raw_bytes(f"device-tree/{name}_model").decode()) == [model]


def test_gh200_style_compatible_is_not_jetson():
    assert jetson.soc_from_compatible(["nvidia,grace", "arm,sbsa"]) is None


def _jetson_tree(root: Path, release: str, board: str) -> None:
    put(root, "/etc/nv_tegra_release", raw(f"nv_tegra_release/{release}"))
    put(root, "/proc/device-tree/model", raw_bytes(f"device-tree/{board}_model"))
    put(root, "/proc/device-tree/compatible", raw_bytes(f"device-tree/{board}_compatible"))


def test_probe_orin_jetpack6(tmp_path):
    _jetson_tree(tmp_path, "jp62_orin_nx.txt", "agx_orin")
    ctx = context(tmp_path)
    j = jetson.probe(ctx)
    assert (j.l4t, j.jetpack, j.cuda, j.soc, j.model) == ("36.4.3", "6.2", "12.6", "tegra234", "NVIDIA Jetson AGX Orin Developer Kit")
    assert j.compatible == "nvidia,p3737-0000+p3701-0000 nvidia,p3701-0000 nvidia,tegra234"
    assert ctx.errors == []


def test_probe_thor(tmp_path):
    _jetson_tree(tmp_path, "jp70_thor_38.2.2.txt", "thor")
    j = jetson.probe(context(tmp_path))
    assert (j.l4t, j.jetpack, j.cuda, j.soc) == ("38.2.2", "7.0", "13.0", "tegra264")


def test_probe_dpkg_fallback(tmp_path):
    put(tmp_path, "/proc/device-tree/compatible", raw_bytes("device-tree/agx_orin_compatible"))
    fake = script(tmp_path, "/fakebin/dpkg-query", 'printf "35.3.1-20230319081403"')
    j = jetson.probe(context(tmp_path, path=f"{fake.parent}:{SYSTEM_PATH}"))
    assert (j.l4t, j.jetpack, j.cuda) == ("35.3.1", "5.1.1", "11.4")


def test_probe_unknown_l4t_keeps_what_the_machine_says(tmp_path):
    put(tmp_path, "/etc/nv_tegra_release", "# R36 (release), REVISION: 9.9, GCID: 1, BOARD: generic, EABI: aarch64, DATE: x\n")
    j = jetson.probe(context(tmp_path))
    assert (j.l4t, j.jetpack, j.cuda) == ("36.9.9", None, None)
    assert matrix.jetpack_line(j.l4t) == "6"


def test_probe_garbage_release_file_is_an_error(tmp_path):
    put(tmp_path, "/etc/nv_tegra_release", "hello\n")
    ctx = context(tmp_path, path="/nonexistent")
    j = jetson.probe(ctx)
    assert j.l4t is None and [e.probe for e in ctx.errors] == ["jetson"]


def test_not_a_jetson(tmp_path):
    assert jetson.probe(context(tmp_path)) is None


# --- matrices/jetson.toml through its accessor -------------------------------------------------------

def test_matrix_loads_and_every_row_has_provenance():
    matrix.validate()
    check_provenance(load("jetson"), "jetson.toml")
    assert len(matrix.releases()) >= 30


def test_every_release_line_and_soc_is_known():
    for release in matrix.releases():
        assert matrix.jetpack_line(release.l4t) == release.line
        for soc in release.socs:
            assert matrix.soc_compute_capability(soc) is not None, (release.l4t, soc)


def test_soc_compute_capability():
    assert matrix.soc_compute_capability("tegra234") == "8.7"
    assert matrix.soc_compute_capability("tegra264") == "11.0"
    assert matrix.soc_compute_capability("grace") is None


def test_l4t_normalisation():
    assert matrix.release_for_l4t("36.4").l4t == "36.4.0"
    assert matrix.release_for_l4t("R35.5").jetpack == "5.1.3"
    assert matrix.release_for_l4t(None) is None


@pytest.mark.parametrize("jetpack,framework,soc,expected", [
    ("6.2", "pytorch", "tegra234", [("jetson-index", "https://pypi.jetson-ai-lab.io/jp6/cu126"),
                                    ("nvidia-redist", "https://developer.download.nvidia.com/compute/redist/jp/v61")]),
    ("6.0", "torch", None, [("nvidia-redist", "https://developer.download.nvidia.com/compute/redist/jp/v60")]),
    ("5.1.2", "tensorflow", None, [("nvidia-redist", "https://developer.download.nvidia.com/compute/redist/jp/v512")]),
    ("7.0", "pytorch", "tegra264", [("official", "https://download.pytorch.org/whl/cu130"),
                                    ("jetson-index", "https://pypi.jetson-ai-lab.io/sbsa/cu130")]),
    ("7.2", "pytorch", "tegra234", [("none", None)]),  # Orin on JetPack 7.2: no working wheel known
    ("6.2", "jax", None, [("none", None)]),
    ("6.2", "paddlepaddle", None, [("none", None)]),
])
def test_framework_sources(jetpack, framework, soc, expected):
    found = matrix.framework_sources(jetpack, framework, soc)
    assert [(s.kind, s.index_url) for s in found] == expected
    assert all(s.source for s in found)


def test_every_framework_has_a_row_for_every_line():
    for line in ("4", "5", "6", "7"):
        for framework in matrix.FRAMEWORKS:
            assert matrix.framework_source(line, framework, "tegra264" if line == "7" else None), (line, framework)


def test_matrix_rejects_a_bad_kind(tmp_path, monkeypatch):
    bad = {"framework": [{"framework": "pytorch", "jetpack": "6", "kind": "magic", "source": "x", "checked": "2026-11-29"}]}
    monkeypatch.setattr(matrix, "_data", lambda: bad)
    matrix._framework_rows.cache_clear()
    try:
        with pytest.raises(MatrixError, match="unknown kind 'magic'"):
            matrix.framework_sources("6", "pytorch")
    finally:
        matrix._framework_rows.cache_clear()
