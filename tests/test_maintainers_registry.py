"""The maintainers' registry drift checker, offline on registry answers recorded 2026-12-01
(tests/fixtures/registry/README.md lists the URLs)."""

import copy
import json
import sys

import pytest

from envdoctor.maintainers import compare as drift
from tests.conftest import FIXTURES, ROOT

RECORDED = FIXTURES / "registry"


class Edited(drift.RecordedRegistry):
    """The recorded answers with an edit applied: the registry as it might look tomorrow."""

    def __init__(self, edit_project=None, edit_requires=None):
        super().__init__(RECORDED)
        self.edit_project, self.edit_requires = edit_project, edit_requires

    def project(self, name):
        doc = copy.deepcopy(super().project(name))
        if self.edit_project:
            self.edit_project(name, doc)
        return doc

    def requires_dist(self, name, version, platform):
        lines = super().requires_dist(name, version, platform)
        return self.edit_requires(name, version, platform, lines) if self.edit_requires and lines else lines


def fields(drifts):
    return {(d.subject, d.release, d.field): (d.matrix, d.registry) for d in drifts}


def test_bundled_matrices_match_the_recorded_registry():
    results = drift.check_all(drift.RecordedRegistry(RECORDED), drift.SUBJECTS)
    assert {name: [d.line() for d in found] for name, found in results.items()} == {name: [] for name in drift.SUBJECTS}


def test_a_python_version_dropped_from_the_registry_is_reported():
    def drop_cp314_aarch64(name, doc):
        if name == "torch":
            doc["releases"]["2.9.1"] = [f for f in doc["releases"]["2.9.1"]
                                        if not ("cp314-cp314-" in f["filename"] and "aarch64" in f["filename"])]

    found = fields(drift.check_pytorch(Edited(edit_project=drop_cp314_aarch64)))
    assert found == {("pytorch", "2.9.1", "python.linux_aarch64"): (
        ["3.10", "3.11", "3.12", "3.13", "3.14"], ["3.10", "3.11", "3.12", "3.13"])}


def test_a_new_release_and_a_yanked_one_are_reported():
    def new_and_yanked(name, doc):
        if name == "torch":
            doc["releases"]["2.99.0"] = copy.deepcopy(doc["releases"]["2.15.0"])
            for f in doc["releases"]["2.1.1"]:
                f["yanked"] = True

    found = fields(drift.check_pytorch(Edited(edit_project=new_and_yanked), metadata_releases=0))
    assert found == {("pytorch", "2.99.0", "release"): ("no row", "published on the registry"),
                     ("pytorch", "2.1.1", "release"): ("listed", "not on the registry (or yanked)")}


def test_a_changed_cuda_pin_changes_the_default_build():
    def cuda_13_0(name, version, platform, lines):
        return [line.replace("==13.2.2", "==13.0.2") if line.startswith("cuda-toolkit") else line for line in lines]

    found = fields(drift.check_pytorch(Edited(edit_requires=cuda_13_0)))
    assert found[("pytorch", "2.15.0", "default_build.linux_x86_64")] == ("cu132", "cu130")
    assert found[("pytorch", "2.15.0", "default_build.linux_aarch64")] == ("cu132", "cu130")


def test_a_changed_and_cuda_pin_is_reported():
    def newer_cudnn(name, version, platform, lines):
        if version != "2.21.0":
            return lines
        return [line.replace("nvidia-cudnn-cu12<10.0,>=9.3.0.75", "nvidia-cudnn-cu12<10.0,>=9.8.0.87") for line in lines]

    found = fields(drift.check_tensorflow(Edited(edit_requires=newer_cudnn)))
    assert list(found) == [("tensorflow", "2.21.0", "and_cuda")]
    matrix, registry = found[("tensorflow", "2.21.0", "and_cuda")]
    assert matrix["nvidia-cudnn-cu12"] == "<10.0,>=9.3.0.75" and registry["nvidia-cudnn-cu12"] == "<10.0,>=9.8.0.87"


def test_trimmed_answers_keep_what_the_derivations_read():
    wheel = {"requires_python": ">=3.10", "yanked": False, "size": 10, "digests": {"sha256": "…"},
             "url": "https://files.example.invalid/x.whl"}
    doc = {"info": {"name": "x", "version": "2.0", "summary": "dropped"}, "releases": {
        "1.0": [{"filename": "x-1.0-py3-none-any.whl"}],
        "2.0": [dict(wheel, filename="x-2.0-cp312-cp312-win_amd64.whl", upload_time="2026-01-03T00:00:00"),
                dict(wheel, filename="x-2.0-cp312-cp312-manylinux_2_28_x86_64.whl", upload_time="2026-01-02T03:04:05")]}}
    assert drift.trim_project(doc, "2.0") == {"info": {"name": "x", "version": "2.0"}, "releases": {"2.0": [
        {"filename": "x-2.0-cp312-cp312-win_amd64.whl", "requires_python": ">=3.10"},
        {"filename": "x-2.0-cp312-cp312-manylinux_2_28_x86_64.whl", "requires_python": ">=3.10", "upload_time": "2026-01-02"}]}}
    doc["info"]["name"] = "tensorflow"
    assert drift.trim_project(doc, "2.0")["releases"]["2.0"][0]["size"] == 10


@pytest.mark.parametrize("argv", [
    [sys.executable, str(ROOT / "scripts" / "check_registry.py"), "--recorded", str(RECORDED)],
    [sys.executable, "-m", "envdoctor.maintainers.compare", "--recorded", str(RECORDED), "pytorch"],
])
def test_command_line_offline(argv):
    import subprocess

    result = subprocess.run(argv, capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "pytorch: no drift" in result.stdout


def test_command_line_json_and_exit_code_on_drift(tmp_path):
    import shutil
    import subprocess

    edited = tmp_path / "registry"
    shutil.copytree(RECORDED, edited)
    requires = json.loads((edited / "requires_dist.json").read_text())
    key = "torch==2.15.0 linux_x86_64"
    requires[key] = [line for line in requires[key] if not line.startswith(("cuda-toolkit", "nvidia-"))]
    (edited / "requires_dist.json").write_text(json.dumps(requires))

    result = subprocess.run([sys.executable, str(ROOT / "scripts" / "check_registry.py"), "--recorded", str(edited),
                             "pytorch", "--json"], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert result.returncode == 1
    assert json.loads(result.stdout)["drift"] == [{"subject": "pytorch", "release": "2.15.0",
                                                    "field": "default_build.linux_x86_64",
                                                    "matrix": "cu132", "registry": "cpu"}]


def test_a_changed_jax_plugin_cudnn_pin_is_reported():
    def cudnn_9_14(name, version, platform, lines):
        if name != "jax-cuda13-plugin" or version != "0.12.0.1":
            return lines
        return [line.replace("nvidia-cudnn-cu13<10.0,>=9.12.0.46", "nvidia-cudnn-cu13<10.0,>=9.14.0.64") for line in lines]

    found = fields(drift.check_jax(Edited(edit_requires=cudnn_9_14)))
    assert list(found) == [("jax", "0.12.0.1", "plugin.cuda13.cudnn")]
    assert found[("jax", "0.12.0.1", "plugin.cuda13.cudnn")][1] == "<10.0,>=9.14.0.64"


def test_a_paddle_wheel_gone_from_the_registry_is_reported():
    def no_windows_312(name, doc):
        if name == "paddlepaddle":
            doc["releases"]["3.3.1"] = [f for f in doc["releases"]["3.3.1"]
                                        if not ("cp312" in f["filename"] and "win_amd64" in f["filename"])]

    found = fields(drift.check_paddle(Edited(edit_project=no_windows_312)))
    assert list(found) == [("paddle", "3.3.1", "wheels.windows_amd64")]
    matrix, registry = found[("paddle", "3.3.1", "wheels.windows_amd64")]
    assert "3.12" in matrix and "3.12" not in registry


def test_a_companion_that_pins_another_torch_is_reported():
    def repin(name, version, platform, lines):
        if name == "torchvision" and version == "0.29.0":
            return [line.replace("torch (==2.14.0)", "torch (==2.13.0)") for line in lines]
        return lines

    found = fields(drift.check_pytorch(Edited(edit_requires=repin)))
    assert found == {("pytorch", "2.13.0", "torchvision"): ("0.28.0", "0.29.0")}


def test_command_line_says_what_a_recording_lacks(tmp_path):
    """Without the recorded METADATA the pins cannot be compared: still no drift, but not silently."""
    import shutil
    import subprocess

    edited = tmp_path / "registry"
    shutil.copytree(RECORDED, edited)
    (edited / "requires_dist.json").unlink()
    for argv in ([sys.executable, str(ROOT / "scripts" / "check_registry.py")],
                 [sys.executable, "-m", "envdoctor.maintainers.compare"]):
        result = subprocess.run([*argv, "--recorded", str(edited), "tensorflow"], capture_output=True, text=True,
                                timeout=120, cwd=ROOT)
        assert result.returncode == 0 and "tensorflow: no drift" in result.stdout
        assert "wheel METADATA answer(s) not in the recording (e.g. tensorflow==" in result.stderr
        assert "were not compared" in result.stderr


@pytest.mark.parametrize("args, message", [
    (["--metadata", "-1"], "--metadata: must be a whole number, 0 or more, not '-1'"),
    (["nosuch"], "unknown subject 'nosuch'"),
])
def test_command_line_usage_errors(args, message):
    assert message in drift_main_error(args)


def drift_main_error(args):
    import subprocess

    result = subprocess.run([sys.executable, "-m", "envdoctor.maintainers.compare", "--recorded", str(RECORDED), *args],
                            capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert result.returncode == 2 and result.stdout == ""
    return result.stderr.strip()


def test_a_malformed_recorded_answer_is_one_line(tmp_path):
    (tmp_path / "torch.json").write_text('{"releases": 5}')
    assert drift.main(["--recorded", str(tmp_path), "pytorch"]) == 2


def _rename(project, version, old, new):
    def edit(name, doc):
        if name == project:
            for f in doc["releases"][version]:
                f["filename"] = f["filename"].replace(old, new)
    return edit


def _requires_python(project, version, spec):
    def edit(name, doc):
        if name == project:
            for f in doc["releases"][version]:
                f["requires_python"] = spec
    return edit


@pytest.mark.parametrize("subject, edit, expected", [
    ("pytorch", _rename("torch", "2.9.1", "manylinux_2_28_aarch64", "manylinux_2_34_aarch64"),
     ("pytorch", "2.9.1", "glibc.linux_aarch64", "2.28", "2.34")),
    ("pytorch", _rename("torch", "2.9.1", "macosx_11_0", "macosx_14_0"), ("pytorch", "2.9.1", "macos.macos_arm64", "11.0", "14.0")),
    ("pytorch", _rename("torch", "2.6.0", "manylinux_2_28_aarch64", "manylinux2014_aarch64"),
     ("pytorch", "2.6.0", "glibc.linux_aarch64", "2.28", "2.17")),
    ("pytorch", _rename("torch", "2.2.2", "macosx_10_9_x86_64", "macosx_11_0_x86_64"),
     ("pytorch", "2.2.2", "macos.macos_x86_64", "10.9", "11.0")),
    ("tensorflow", _rename("tensorflow", "2.20.0", "manylinux_2_17_x86_64.manylinux2014_x86_64", "manylinux_2_31_x86_64"),
     ("tensorflow", "2.20.0", "glibc.linux_x86_64", "2.17", "2.31")),
    ("tensorflow", _rename("tensorflow-metal", "1.2.0", "macosx_12_0", "macosx_13_0"),
     ("tensorflow-metal", "1.2.0", "macos", "12.0", "13.0")),
    ("paddle", _rename("paddlepaddle-gpu", "2.6.1", "cp312-cp312-manylinux1", "cp313-cp313-manylinux1"),
     ("paddle", "2.6.1", "registry_gpu_wheels.linux_x86_64", ["3.8", "3.9", "3.10", "3.11", "3.12"], ["3.8", "3.9", "3.10", "3.11", "3.13"])),
    ("pytorch", _requires_python("torch", "2.9.1", ">=3.99"), ("pytorch", "2.9.1", "requires_python", ">=3.10", ">=3.99")),
    ("tensorflow", _requires_python("tensorflow", "2.20.0", ">=3.99"), ("tensorflow", "2.20.0", "requires_python", ">=3.9", ">=3.99")),
    ("jax", _requires_python("jax", "0.8.1", ">=3.99"), ("jax", "0.8.1", "requires_python", ">=3.11", ">=3.99")),
])
def test_each_compared_field_can_report_drift(subject, edit, expected):
    """One edit of the recorded answers, exactly one drift: the field is really compared."""
    found = fields(drift.SUBJECTS[subject](Edited(edit_project=edit), metadata_releases=0))
    assert found == {expected[:3]: expected[3:]}


def test_a_stub_distribution_a_row_names_must_have_the_release():
    def drop(name, doc):
        if name == "tensorflow-intel":
            doc["releases"].pop("2.15.1")
    found = fields(drift.check_tensorflow(Edited(edit_project=drop), metadata_releases=0))
    assert found == {("tensorflow", "2.15.1", "stub_for.windows_amd64"): (
        "tensorflow-intel", "no tensorflow-intel 2.15.1 on the registry")}


def test_gpu_only_paddle_releases_are_compared_with_the_gpu_distribution():
    def drop(name, doc):
        if name == "paddlepaddle-gpu":
            doc["releases"].pop("2.6.0")
    found = fields(drift.check_paddle(Edited(edit_project=drop)))
    assert found == {("paddle", "2.6.0", "release"): ("listed", "not on the registry (or yanked)")}


def test_a_universal2_wheel_counts_for_both_macos_keys():
    """A universal2 macOS wheel serves Apple silicon and Intel Macs: both keys get its floor, and no
    'universal2' pseudo-key reaches the rows (derive keeps only keys starting with 'macos')."""
    from envdoctor.maintainers import derive, wheels

    files = [{"filename": "demo-1.0-cp312-cp312-macosx_11_0_universal2.whl"},
             {"filename": "demo-1.0-cp312-cp312-macosx_10_15_x86_64.whl"}]
    assert derive.wheel_macos(files) == {"macos_arm64": "11.0", "macos_x86_64": "10.15"}
    assert derive.wheel_platforms(files) == {"macos_arm64": ["3.12"], "macos_x86_64": ["3.12"]}
    row = derive.row_from_files("1.0", files)
    assert row.macos == {"macos_arm64": "11.0", "macos_x86_64": "10.15"} and "universal2" not in row.python
    assert wheels.platform_keys("macosx_11_0_universal2") == [("macos_arm64", "11.0"), ("macos_x86_64", "11.0")]
    assert wheels.platform_keys("linux_armv7l") == []
    assert derive.glibc_of("manylinux_2_17_x86_64.manylinux2014_x86_64") == "2.17"
