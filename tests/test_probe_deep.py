"""--deep: each framework imported in its own subprocess; crashes and hangs are recorded, not lost."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from envdoctor.facts import PythonEnv
from envdoctor.probe import ProbeContext, deep

VENV_PYTHON = Path("/tmp/venv/bin/python")


def _fake_packages(tmp_path: Path, torch: str, tensorflow: str = "", jax: str = "") -> dict[str, str]:
    for name, body in (("torch", torch), ("tensorflow", tensorflow), ("jax", jax)):
        if body:
            (tmp_path / name).mkdir()
            (tmp_path / name / "__init__.py").write_text(body)
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONPATH": str(tmp_path)}


def _ctx(environ: dict[str, str], deep_timeout: float = 30.0) -> ProbeContext:
    return ProbeContext(python=sys.executable, environ=environ, deep_timeout=deep_timeout)


def test_import_error_segfault_and_hang_in_parallel(tmp_path):
    environ = _fake_packages(
        tmp_path,
        torch="raise ImportError('libcudnn.so.9: cannot open shared object file: No such file or directory')\n",
        tensorflow="import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)\n",
        jax="import time\ntime.sleep(60)\n",
    )
    env = PythonEnv(packages={"torch": "2.6.0+cu124", "tensorflow": "2.18.0", "jax": "0.4.35", "numpy": "2.1.0"})
    found = deep.probe(_ctx(environ, deep_timeout=2.0), env)
    assert set(found) == {"torch", "tensorflow", "jax"}
    assert found["torch"].import_error == "ImportError: libcudnn.so.9: cannot open shared object file: No such file or directory"
    assert found["tensorflow"].import_error == "killed by signal SIGSEGV"
    assert found["jax"].import_error == "timed out after 2 s"
    assert found["torch"].version == "2.6.0+cu124"  # the installed version is kept next to the error


def test_banner_on_stdout_does_not_break_the_result(tmp_path):
    torch = (
        "print('Welcome to a noisy framework!')\n"
        "__version__ = '9.9.9+fake'\n"
        "class version:\n    cuda = '12.8'\n"
        "class cuda:\n"
        "    @staticmethod\n    def get_arch_list(): return ['sm_80', 'sm_120']\n"
        "    @staticmethod\n    def is_available(): return False\n"
        "    @staticmethod\n    def device_count(): return 0\n"
        "class backends:\n    class cudnn:\n        @staticmethod\n        def version(): return 90100\n"
    )
    environ = _fake_packages(tmp_path, torch=torch)
    fw = deep.probe(_ctx(environ), PythonEnv(packages={"torch": "9.9.9+fake"}))["torch"]
    assert (fw.version, fw.cuda, fw.cudnn, fw.arch_list, fw.device_available, fw.device_count, fw.import_error) == (
        "9.9.9+fake", "12.8", "9.1.0", ["sm_80", "sm_120"], False, 0, None)


def test_cudnn_integer_encodings():
    sys.path.insert(0, str(Path(deep.SCRIPT).parent))
    try:
        import deep_script
    finally:
        sys.path.pop(0)
    assert deep_script.cudnn_text(90100) == "9.1.0"
    assert deep_script.cudnn_text(8902) == "8.9.2"
    assert deep_script.cudnn_text(None) is None


def test_only_installed_frameworks_are_imported():
    env = PythonEnv(packages={"tensorflow-cpu": "2.21.0", "paddlepaddle-gpu": "3.0.0", "numpy": "2.1.0"})
    assert deep.installed(env) == {"tensorflow": "2.21.0", "paddle": "3.0.0"}
    assert deep.probe(_ctx({}), PythonEnv()) == {}


@pytest.mark.slow
@pytest.mark.skipif(not VENV_PYTHON.exists(), reason="needs /tmp/venv")
def test_real_torch_cpu_build():
    """The real torch 2.13.0 CPU build in /tmp/venv (skipped where it is not installed)."""
    from envdoctor import proc

    check = proc.run([str(VENV_PYTHON), "-c", "import importlib.util as u; print(u.find_spec('torch') is not None)"], timeout=30)
    if check.stdout.strip() != "True":
        pytest.skip("torch is not installed in /tmp/venv")
    ctx = ProbeContext(python=str(VENV_PYTHON), environ={"PATH": os.environ.get("PATH", "/usr/bin:/bin")}, deep_timeout=120)
    fw = deep.inspect(ctx, "torch")
    assert fw.import_error is None
    assert fw.version.startswith("2.13.0") and fw.cuda is None and fw.cudnn is None
    assert fw.device_available is False and fw.device_count == 0 and fw.arch_list == []
