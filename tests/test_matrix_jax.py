"""matrices/jax.toml: the loader on the bundled file and on broken copies, the accessors, the
jax/jaxlib/plugin version rule, and the registry-derived fields re-derived offline from recorded
registry answers (tests/fixtures/registry_jax_paddle/)."""

import json
from pathlib import Path

import pytest
from packaging.specifiers import SpecifierSet

from envdoctor.matrix import jax as jax_matrix
from envdoctor.maintainers import derive
from envdoctor.matrix.loader import MatrixError, data_dir, load, load_file

REGISTRY = Path(__file__).parent / "fixtures" / "registry_jax_paddle"


def _recorded(name):
    return json.loads((REGISTRY / f"{name}.json").read_text())


def test_bundled_file_covers_two_years_of_releases():
    versions = [r.version for r in jax_matrix.releases()]
    assert versions[0] == "0.12.0.1" and versions[-1] == "0.4.36"
    assert min(r.date for r in jax_matrix.releases()) >= "2024-11-29"
    assert len(versions) == 29
    for table in ("release", "plugin", "platform", "hazard"):
        for row in load("jax")[table]:
            assert row["source"] and str(row["checked"]) in ("2026-11-29", "2026-12-01")


def test_python_ranges():
    assert jax_matrix.release("0.6.2").pythons("linux_x86_64")[0] == "3.10"
    assert jax_matrix.release("0.7.0").pythons("linux_x86_64")[0] == "3.11"
    assert jax_matrix.release("0.12.0.1").pythons("linux_x86_64")[0] == "3.12"
    assert "3.13t" in jax_matrix.release("0.10.2").pythons("linux_x86_64")
    assert "3.13t" not in jax_matrix.release("0.11.0").pythons("linux_x86_64")  # dropped in 0.11.0


def test_jaxlib_of_a_jax_only_release():
    assert jax_matrix.release("0.4.37").jaxlib == "0.4.36"
    assert jax_matrix.release("0.5.2").jaxlib == "0.5.1"
    assert jax_matrix.release("0.12.0").jaxlib == "0.12.0"


def test_plugins_per_extra_and_version():
    assert jax_matrix.plugin_for("cuda13", "0.7.1") is None
    assert jax_matrix.release("0.7.1").plugin_wheels.keys() == {"cuda12"}  # the cuda13 extra had no plugin
    cuda13 = jax_matrix.plugin_for("cuda13", "0.12.0.1")
    assert (cuda13.driver_linux, cuda13.min_compute_capability, cuda13.cudnn) == ("580", "7.5", ">=9.12.0.46,<10.0")
    assert "sm_110" in cuda13.archs and "sm_110" not in jax_matrix.plugin_for("cuda13", "0.10.1").archs
    assert jax_matrix.plugin_for("cuda12", "0.11.1").cudnn == ">=9.8,<10.0"
    assert jax_matrix.plugin_for("cuda12", "0.11.2").cudnn == ">=9.10.2.21,<10.0"
    assert jax_matrix.plugin_for("cuda12", "0.5.3").cudnn == ">=9.1,<10.0"
    assert jax_matrix.release("0.12.0.1").plugin_pythons("cuda12", "linux_aarch64")[0] == "3.12"


def test_platforms_with_gpu_wheels():
    assert jax_matrix.platform_note("linux_x86_64").cuda and jax_matrix.platform_note("linux_aarch64").cuda
    assert not jax_matrix.platform_note("windows_amd64").cuda
    assert not jax_matrix.platform_note("macos_arm64").cuda


def test_version_rule():
    assert jax_matrix.version_rule_ok("0.12.0.1", "0.12.0.1", "0.12.0.1") is None
    assert jax_matrix.version_rule_ok("0.12.0.1", "0.11.2") is None  # jax 0.12 accepts jaxlib >= 0.11.2
    assert "newer than jax" in jax_matrix.version_rule_ok("0.6.0", "0.6.1")
    assert "needs jaxlib" in jax_matrix.version_rule_ok("0.12.0", "0.11.1")
    assert "runs on the CPU" in jax_matrix.version_rule_ok("0.12.0.1", "0.12.0.1", "0.12.0")
    assert "without jaxlib" in jax_matrix.version_rule_ok("0.12.0", None)


# --- registry ------------------------------------------------------------------------------------

def test_registry_fields_match_the_recorded_registry():
    derived = {r["version"]: r for r in derive.jax_rows(
        _recorded("jax"), _recorded("jaxlib"),
        {"cuda12": _recorded("jax-cuda12-plugin"), "cuda13": _recorded("jax-cuda13-plugin")}, since="0.4.36")}
    rows = load("jax")["release"]
    assert {r["version"] for r in rows} == set(derived)
    for row in rows:
        got = derived[row["version"]]
        for key in ("date", "requires_python", "jaxlib", "wheels", "cuda12_wheels", "cuda13_wheels", "glibc"):
            assert row.get(key) == got.get(key), (row["version"], key)


@pytest.mark.parametrize("spec", ["jax==0.12.0.1", "jax==0.4.37", "jax==0.7.0"])
def test_release_metadata_matches_recorded_requires_dist(spec):
    requires = _recorded("requires_dist")[spec]
    release = jax_matrix.release(spec.split("==")[1])
    assert derive.dependency_spec(requires, "jaxlib") == release.jaxlib_requirement
    assert derive.extra_pins(requires, "cuda12")["jaxlib"] in (f"=={release.jaxlib}",
                                                               f"<={release.jaxlib},>={release.jaxlib}")


@pytest.mark.parametrize("spec, extra", [("jax-cuda12-plugin==0.11.1", "cuda12"), ("jax-cuda12-plugin==0.11.2", "cuda12"),
                                         ("jax-cuda12-plugin==0.5.3", "cuda12"), ("jax-cuda13-plugin==0.12.0.1", "cuda13")])
def test_plugin_cudnn_pins_match_recorded_requires_dist(spec, extra):
    pins = derive.extra_pins(_recorded("requires_dist")[spec], "with-cuda")
    version = spec.split("==")[1]
    pinned = pins[f"nvidia-cudnn-{'cu12' if extra == 'cuda12' else 'cu13'}"]
    assert SpecifierSet(pinned) == SpecifierSet(jax_matrix.plugin_for(extra, version).cudnn)


# --- broken copies -------------------------------------------------------------------------------

def _broken(tmp_path, old, new):
    text = (data_dir() / "jax.toml").read_text(encoding="utf-8")
    assert old in text
    path = tmp_path / "jax.toml"
    path.write_text(text.replace(old, new, 1), encoding="utf-8")
    return path


@pytest.mark.parametrize("old, new, message", [
    ('jaxlib = "0.4.36"\njaxlib_requirement = "<=0.4.37,>=0.4.36"', 'jaxlib = "0.4.38"\njaxlib_requirement = "<=0.4.37,>=0.4.36"',
     "newer than jax"),
    ('jaxlib = "0.12.0.1"\njaxlib_requirement = "<=0.12.0.1,>=0.11.2"', 'jaxlib = "0.11.1"\njaxlib_requirement = "<=0.12.0.1,>=0.11.2"',
     "outside jaxlib_requirement"),
    ('extra = "cuda13"\njax = ">=0.10.2"', 'extra = "cuda13"\njax = ">=0.11"', "no \\[\\[plugin\\]\\] row covers it"),
    ('min_compute_capability = "7.5"', 'min_compute_capability = "seven"', "not a dotted version"),
    ('platform = "windows_amd64"', 'platform = "win64"', "unknown platform"),
])
def test_inconsistent_copies_are_refused(tmp_path, old, new, message):
    path = _broken(tmp_path, old, new)
    with pytest.raises(MatrixError, match=message) as err:
        jax_matrix.parse(load_file(path), path.name)
    assert "jax.toml" in str(err.value)


def test_a_plugin_row_without_checked_date_is_refused(tmp_path):
    path = _broken(tmp_path, 'checked = "2026-11-29"\n\n[[plugin]]', 'checked = "29.11.2026"\n\n[[plugin]]')
    with pytest.raises(MatrixError, match=r"jax\.toml: \[\[plugin\]\] row 1: 'checked' is not a YYYY-MM-DD"):
        load_file(path)
