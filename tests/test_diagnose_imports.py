"""framework-import-failed: a `--deep` import that died by a signal, hung or raised is an error finding
(envdoctor/diagnose/imports.py), and the deep probe says which import it is waiting for."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from envdoctor.diagnose import diagnose
from envdoctor.facts import Facts, Framework, PythonEnv, load_facts

ROOT = Path(__file__).resolve().parent.parent
MACHINES = ROOT / "tests" / "fixtures" / "machines"
FAKES = ROOT / "tests" / "fixtures" / "fakeframeworks"
CODE = "framework-import-failed"

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


def facts_with(import_error: str, key: str = "tensorflow", dist: str = "tensorflow", version: str = "2.17.0",
               **blocks) -> Facts:
    doc = {"schema": "envdoctor.facts/1",
           "host": {"os": "linux", "arch": "x86_64", "distro": "Ubuntu 22.04", "glibc": "2.35"},
           "python": {"version": "3.11.10", "executable": "/home/ana/venv/bin/python", "packages": {dist: version}},
           "frameworks": {key: {"version": version, "import_error": import_error}}}
    for name, value in blocks.items():
        doc[name] = {**doc.get(name, {}), **value} if isinstance(value, dict) else value
    return Facts.from_dict(doc)


def findings(facts: Facts, code: str = CODE):
    return [f for f in diagnose(facts) if f.code == code]


def fix_text(finding) -> str:
    return " | ".join(" ".join(f) if isinstance(f, tuple) else f for f in finding.fix)


def test_sigill_on_x86_names_avx_and_gives_a_command():
    (f,) = findings(facts_with("killed by signal SIGILL"))
    assert (f.severity, f.section) == ("error", "frameworks")
    assert "SIGILL" in f.title and "tensorflow 2.17.0" in f.title
    assert "AVX" in f.detail
    assert any(isinstance(fix, tuple) and "/proc/cpuinfo" in fix for fix in f.fix)
    assert "frameworks.tensorflow.import_error=killed by signal SIGILL" in f.evidence


def test_sigill_on_aarch64_is_an_arm_wheel_mismatch():
    (f,) = findings(facts_with("killed by signal SIGILL", host={"arch": "aarch64"}))
    assert "aarch64" in f.detail and "ARM" in f.detail and "AVX" not in f.detail
    assert f.fix


def test_sigill_on_a_jetson_points_to_the_jetpack_build():
    facts = facts_with("killed by signal SIGILL", key="torch", dist="torch", version="2.5.1",
                       host={"arch": "aarch64"},
                       jetson={"l4t": "36.4.3", "jetpack": "6.2", "model": "NVIDIA Jetson AGX Orin Developer Kit",
                               "soc": "tegra234"},
                       nvidia={"driver_version": "540.4.0", "driver_kind": "jetson",
                               "gpus": [{"index": 0, "name": "Orin (nvgpu)", "compute_capability": "8.7"}]})
    (f,) = findings(facts)
    assert "Jetson" in f.detail and "JetPack" in f.detail and "AVX" not in f.detail
    assert "JetPack" in fix_text(f)


def test_sigill_under_rosetta_says_use_an_arm64_python():
    facts = facts_with("killed by signal SIGILL", host={"os": "macos", "arch": "x86_64", "rosetta": True,
                                                        "machine_arch": "arm64"})
    (f,) = findings(facts)
    assert "Rosetta" in f.detail and "arm64 Python" in fix_text(f)


def test_abort_after_the_avx_guard_is_the_cpu_too():
    text = ("killed by signal SIGABRT (last output: The TensorFlow library was compiled to use AVX instructions, "
            "but these aren't available on your machine.)")
    (f,) = findings(facts_with(text))
    assert "AVX" in f.detail and "illegal instruction" in f.detail


@pytest.mark.parametrize("signal, words", [("SIGSEGV", "segmentation fault"), ("SIGKILL", "out-of-memory"),
                                           ("SIGABRT", "aborted"), ("SIGBUS", "bus error"), ("SIGTRAP", "SIGTRAP")])
def test_other_signals(signal, words):
    (f,) = findings(facts_with(f"killed by signal {signal}", key="torch", dist="torch", version="2.6.0+cu124"))
    assert words in f.detail and f.fix and signal in f.title


def test_segfault_with_ld_library_path_suggests_unsetting_it():
    facts = facts_with("killed by signal SIGSEGV", env={"LD_LIBRARY_PATH": "/usr/local/cuda-11.8/lib64"})
    (f,) = findings(facts)
    assert "LD_LIBRARY_PATH" in fix_text(f)
    assert any(isinstance(fix, tuple) and "faulthandler" in fix for fix in f.fix)


def test_timeout():
    (f,) = findings(facts_with("timed out after 120 s", key="jax", dist="jax", version="0.4.35"))
    assert "120 s" in f.detail and "ENVDOCTOR_DEEP_TIMEOUT" in fix_text(f)
    assert any(isinstance(fix, tuple) and "importtime" in fix for fix in f.fix)


@pytest.mark.parametrize("text", ["ImportError: cannot import name 'Mapping' from 'collections'",
                                  "exited with status 1: Fatal Python error: init_import_site",
                                  "printed no result",
                                  "ModuleNotFoundError: No module named 'typing_extensions'"])
def test_raised(text):
    (f,) = findings(facts_with(text))
    assert text.split(":")[0] in f.detail
    assert isinstance(f.fix[0], tuple) and f.fix[0][-1] == "import tensorflow"


def test_undefined_symbol_names_a_version_mismatch():
    (f,) = findings(facts_with("ImportError: /x/libtorch_cuda.so: undefined symbol: ncclCommRegister",
                               key="torch", dist="torch", version="2.6.0+cu124"))
    assert "ncclCommRegister" in f.detail and "another version" in f.detail


@pytest.mark.parametrize("text, other", [
    ("ImportError: libcudnn.so.9: cannot open shared object file: No such file or directory", "cuda-libs-missing"),
    ("ImportError: /lib64/libc.so.6: version `GLIBC_2.27' not found (required by x.so)", "glibc-too-old"),
    ("ImportError: A module that was compiled using NumPy 1.x cannot be run in NumPy 2.1.3", "numpy-abi-mismatch"),
])
def test_errors_another_rule_explains_are_left_to_it(text, other):
    facts = facts_with(text)
    assert not findings(facts)
    assert findings(facts, other)


def test_a_successful_import_is_not_a_finding():
    facts = Facts.from_dict({"schema": "envdoctor.facts/1", "python": {"packages": {"torch": "2.6.0+cu124"}},
                             "frameworks": {"torch": {"version": "2.6.0+cu124", "cuda": "12.4", "import_error": None}}})
    assert not findings(facts)
    assert not findings(Facts.from_dict({"schema": "envdoctor.facts/1", "frameworks": {"torch": {"import_error": ""}}}))


def test_a_framework_record_without_a_package_list_still_names_it():
    (f,) = findings(Facts.from_dict({"schema": "envdoctor.facts/1",
                                     "frameworks": {"paddle": {"version": "3.0.0", "import_error": "killed by signal SIGILL"}}}))
    assert f.title.startswith("paddlepaddle 3.0.0 fails to import")
    assert f.fix


# --- the recorded machines ------------------------------------------------------------------------------

with open(ROOT / "benchmarks" / "diagnosis_expected.toml", "rb") as _fh:
    EXPECTED = {m["file"]: m for m in tomllib.load(_fh)["machine"]}


def test_the_code_has_triggering_machines_and_a_close_clean_one():
    triggering = [n for n, m in EXPECTED.items() if f"{CODE}:error" in m["expect"]]
    assert {"diag-deep-sigill.json", "diag-deep-hang.json", "diag-deep-raised.json"} <= set(triggering)
    clean = load_facts(MACHINES / "diag-deep-import-ok.json")
    assert EXPECTED["diag-deep-import-ok.json"]["expect"] == [] and not findings(clean)
    sigill = load_facts(MACHINES / "diag-deep-sigill.json")
    assert sigill.python.packages == clean.python.packages and sigill.host == clean.host  # only the import differs
    for name in triggering:
        got = sorted(f"{f.code}:{f.severity}" for f in diagnose(load_facts(MACHINES / name)) if f.severity != "info")
        assert got == sorted(EXPECTED[name]["expect"]), name


def test_report_marks_frameworks_with_a_cross(tmp_path):
    from typer.testing import CliRunner

    from envdoctor.cli import app

    result = CliRunner().invoke(app, ["check", "--facts", str(MACHINES / "diag-deep-sigill.json")],
                                env={"NO_COLOR": "1", "COLUMNS": "200"})
    assert result.exit_code == 1, result.output
    line = next(line for line in result.stdout.splitlines() if line.endswith("Frameworks"))
    assert line.startswith("✗"), line
    assert f"[{CODE}]" in result.stdout


# --- the deep probe ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def bare_python(tmp_path_factory):
    where = tmp_path_factory.mktemp("bare") / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(where)], check=True, timeout=120)
    return str(where / "bin" / "python")


@pytest.mark.skipif(os.name != "posix", reason="signals")
def test_check_deep_exits_1_on_a_sigill_import(bare_python):
    env = {**os.environ, "PYTHONPATH": str(FAKES / "sigill"), "ENVDOCTOR_NVML": "0", "PATH": "/usr/bin:/bin",
           "NO_COLOR": "1"}
    proc = subprocess.run([sys.executable, "-m", "envdoctor", "check", "--deep", "--json", "--python", bare_python],
                          capture_output=True, text=True, env=env, timeout=120, cwd=ROOT)
    assert proc.returncode == 1, proc.stderr
    report = json.loads(proc.stdout)
    assert report["facts"]["frameworks"]["tensorflow"]["import_error"].startswith("killed by signal SIGILL")
    (f,) = [f for f in report["findings"] if f["code"] == CODE]
    assert f["severity"] == "error" and "AVX" in f["detail"]
    assert "waiting for" not in proc.stderr  # not a terminal


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _hang_ctx(tmp_path, timeout: float):
    from envdoctor.probe import ProbeContext

    environ = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONPATH": str(FAKES / "hang")}
    return ProbeContext(python=sys.executable, environ=environ, deep_timeout=timeout)


@pytest.mark.parametrize("terminal", [True, False])
def test_waiting_line_once_on_a_terminal_only(tmp_path, monkeypatch, terminal):
    from envdoctor.probe import deep

    stream = _Terminal() if terminal else io.StringIO()
    monkeypatch.setattr(deep, "PROGRESS_AFTER", 0.3)
    monkeypatch.setattr(sys, "stderr", stream)
    found = deep.probe(_hang_ctx(tmp_path, 1.5), PythonEnv(packages={"jax": "0.99.0"}))
    assert found["jax"].import_error == "timed out after 1.5 s"
    if terminal:
        assert stream.getvalue() == "waiting for jax to import (0.3 s)…\n"
    else:
        assert stream.getvalue() == ""


def test_no_waiting_line_when_the_imports_are_quick(monkeypatch):
    from concurrent.futures import Future

    from envdoctor.probe import deep

    done = Future()
    done.set_result(Framework(version="1"))
    stream = _Terminal()
    deep._say_when_slow({"torch": done}, after=0.1, stream=stream)
    assert stream.getvalue() == ""


def test_the_last_output_of_a_crash_is_kept(tmp_path):
    from envdoctor.probe import ProbeContext, deep

    (tmp_path / "tensorflow").mkdir()
    (tmp_path / "tensorflow" / "__init__.py").write_text(
        "import os, sys, resource\nresource.setrlimit(resource.RLIMIT_CORE, (0, 0))\n"
        "sys.stderr.write('The TensorFlow library was compiled to use AVX instructions, but these aren\\'t available "
        "on your machine.\\n'); sys.stderr.flush()\nos.abort()\n")
    ctx = ProbeContext(python=sys.executable, environ={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(tmp_path)},
                       deep_timeout=30)
    fw = deep.inspect(ctx, "tensorflow", "2.17.0")
    assert fw.import_error.startswith("killed by signal SIGABRT (last output: The TensorFlow library was compiled")
    facts = Facts(python=PythonEnv(packages={"tensorflow": "2.17.0"}), frameworks={"tensorflow": fw})
    (f,) = findings(facts)
    assert "AVX" in f.detail
