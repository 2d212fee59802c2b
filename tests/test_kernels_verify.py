"""The kernel-list verifier (envdoctor/maintainers/verify.py, scripts/verify_kernels.py), offline on the
scans recorded in tests/fixtures/kernel_scan/ (see its README)."""

import json
import re
import shutil
import subprocess
import sys

from envdoctor.maintainers import verify
from tests.conftest import FIXTURES, ROOT

SCANS = FIXTURES / "kernel_scan"


def test_every_recorded_row_matches_its_wheel():
    compared, unscanned = verify.verify_recorded(SCANS)
    assert [c.line() for c in compared if not c.ok] == []
    rows = {c.row.split()[0] for c in compared}
    assert {"tensorflow", "paddle", "jax"} <= rows
    assert len(compared) >= 38
    assert all(t.distribution == "torch" for t in unscanned)


def test_the_rows_the_audit_named():
    scans = verify.load_scans(SCANS)
    tf = scans["tensorflow-2.15.0-linux_x86_64"].kernels()
    assert (tf.sass, tf.ptx) == (("sm_50", "sm_60", "sm_70", "sm_75", "sm_80"), ("compute_80",))
    paddle = scans["paddlepaddle-gpu-2.6.2-linux_x86_64"].kernels()
    assert paddle.sass == ("sm_61", "sm_70", "sm_75", "sm_80", "sm_86") and paddle.ptx == ()
    raw = scans["paddlepaddle-gpu-2.6.2-linux_x86_64"].libraries["paddle/libs/libphi.so"]
    assert "sm_35" in raw["sass"] and raw["counts"]["sm_35"] < 20  # a bundled dependency's few fat binaries
    thor = scans["jax-cuda13-plugin-0.12.0.1-linux_aarch64"].kernels()
    assert "sm_110" in thor.sass


def test_bazel_spelling_of_the_final_ptx_target():
    target = verify.Target("tensorflow 2.15.0 gpu_archs", "tensorflow", "2.15.0", "linux_x86_64",
                           ("sm_50", "sm_75", "compute_80"), "bazel")
    assert verify.expected_names(target) == ("sm_50", "sm_75", "sm_80", "compute_80")
    plain = verify.Target("pytorch", "torch", "2.8.0", "linux_x86_64", ("sm_90", "compute_120"))
    assert verify.expected_names(plain) == ("sm_90", "compute_120")


def test_pick_wheel_takes_a_real_wheel_of_the_platform():
    doc = json.loads((FIXTURES / "registry" / "tensorflow.json").read_text())
    picked = verify.pick_wheel(doc, "2.15.0", "linux_x86_64")
    assert picked["filename"].endswith("manylinux_2_17_x86_64.manylinux2014_x86_64.whl")
    assert verify.pick_wheel(doc, "2.15.0", "linux_aarch64") is None  # only the tensorflow-cpu-aws stub
    plugin = json.loads((FIXTURES / "registry" / "jax-cuda13-plugin.json").read_text())
    assert "-cp312-cp312-manylinux_2_27_aarch64" in verify.pick_wheel(plugin, "0.12.0.1", "linux_aarch64")["filename"]


def _run(*args, env=None):
    return subprocess.run([sys.executable, str(ROOT / "scripts" / "verify_kernels.py"), *args],
                          capture_output=True, text=True, timeout=120, env=env)


def test_command_line_offline():
    result = _run("--recorded", str(SCANS), "tensorflow", "paddle", "jax")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 differ" in result.stdout


def test_command_line_reports_a_wrong_row(tmp_path):
    import os

    for kind in ("matrices", "recipes"):
        shutil.copytree(ROOT / kind, tmp_path / kind)
    path = tmp_path / "matrices" / "tensorflow.toml"
    text = path.read_text(encoding="utf-8")
    block = re.search(r'version = "2\.15\.0"\n(.*?)\n\n', text, re.S)
    broken = block.group(0).replace('gpu_archs = ["sm_50", "sm_60", "sm_70", "sm_75", "compute_80"]',
                                    'gpu_archs = ["sm_50", "sm_60", "sm_70", "sm_80", "compute_90"]')
    path.write_text(text.replace(block.group(0), broken), encoding="utf-8")
    result = _run("--recorded", str(SCANS), "tensorflow", env={**os.environ, "ENVDOCTOR_DATA_DIR": str(tmp_path)})
    assert result.returncode == 1
    assert re.search(r"DRIFT tensorflow 2\.15\.0 gpu_archs: row lists sm_90, compute_90 the wheel lacks; "
                     r"wheel has sm_75, compute_80 the row lacks", result.stdout), result.stdout


def test_command_line_usage_error():
    result = _run("--recorded", str(SCANS), "nosuch")
    assert result.returncode == 2 and "unknown subject 'nosuch'" in result.stderr


def test_an_unreadable_library_is_a_scan_error_and_its_row_is_not_compared(tmp_path):
    """A library whose fat binaries cannot be read must not pass for one without kernels: the row
    would then read as listing kernels "the wheel lacks"."""
    import zipfile

    from envdoctor.maintainers import kernels
    from envdoctor.maintainers.scan import scan_wheel
    from tests.test_kernels import FATBIN, _elf_with

    wheel = tmp_path / "demo-1.0-cp312-cp312-manylinux_2_28_x86_64.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        zf.writestr("demo/libgood.so", _elf_with((FATBIN / "nvcc13-scale.nv_fatbin").read_bytes()))
        zf.writestr("demo/libbroken.so", b"\x7fELF\x02\x01" + bytes(58))  # no section table
    errors: dict[str, str] = {}
    found = scan_wheel(wheel, errors=errors)
    assert set(found) == {"demo/libgood.so"}
    assert set(errors) == {"demo/libbroken.so"} and "section table" in errors["demo/libbroken.so"]

    target = verify.Target("demo 1.0 archs", "demo", "1.0", "linux_x86_64", ("sm_75", "sm_80", "compute_120"))
    scan = verify.Scan(target.key, wheel.name, wheel.stat().st_size,
                       {k: v.to_dict() for k, v in found.items()}, errors=errors)
    result = verify.compare_scan(target, scan)
    assert not result.ok and result.missing == () and "the wheel lacks" not in result.line()
    assert "not compared" in result.line() and "demo/libbroken.so" in result.line()
    clean = verify.compare_scan(target, verify.Scan(target.key, wheel.name, 0, scan.libraries))
    assert clean.missing == ("sm_80",) and isinstance(clean, kernels.Comparison)  # compared when nothing failed
