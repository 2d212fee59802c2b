"""`install --run` writes only where it was asked to (issue 10 §1), through the real CLI.

Every refusal happens before anything runs: the state directory stays empty and no installer starts.
"""

import os
import pty
import subprocess
import sys

import pytest

from tests.conftest import ROOT
from tests.test_install_restore import isolated_pip_env, make_venv

EDITABLE_BACKEND = '''
import base64, hashlib, os, zipfile
NAME, VERSION = "torch", "2.13.0"
def _wheel(directory, files):
    dist = f"{NAME}-{VERSION}.dist-info"
    files = dict(files)
    files[f"{dist}/METADATA"] = f"Metadata-Version: 2.1\\nName: {NAME}\\nVersion: {VERSION}\\n"
    files[f"{dist}/WHEEL"] = "Wheel-Version: 1.0\\nGenerator: test\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n"
    digest = lambda t: base64.urlsafe_b64encode(hashlib.sha256(t.encode()).digest()).rstrip(b"=").decode()
    rows = [f"{p},sha256={digest(t)},{len(t.encode())}" for p, t in files.items()]
    files[f"{dist}/RECORD"] = "\\n".join(rows + [f"{dist}/RECORD,,"]) + "\\n"
    name = f"{NAME}-{VERSION}-py3-none-any.whl"
    with zipfile.ZipFile(os.path.join(directory, name), "w") as zf:
        for p, t in files.items():
            zf.writestr(p, t)
    return name
def get_requires_for_build_editable(config_settings=None):
    return []
def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    return _wheel(wheel_directory, {f"__editable__.{NAME}.pth": os.path.abspath("src") + "\\n"})
'''


def envdoctor(*args, cwd=None, **env):
    full = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "CONDA_PREFIX", "NO_COLOR")}
    full.update(PYTHONPATH=str(ROOT), **env)
    return subprocess.run([sys.executable, "-m", "envdoctor", *args], cwd=cwd or ROOT, env=full, capture_output=True,
                          text=True, timeout=120, stdin=subprocess.DEVNULL)


@pytest.fixture(scope="module")
def bare(tmp_path_factory):
    return make_venv(tmp_path_factory.mktemp("bare") / "venv", with_pip=False)


def test_a_stale_virtual_env_is_refused_before_anything_runs(tmp_path):
    """The reported fault: VIRTUAL_ENV=/nonexistent installed into envdoctor's own venv."""
    state = tmp_path / "state"
    result = envdoctor("install", "pytorch", "--cuda", "cpu", "--version", "2.13.0", "--run", "--yes",
                       VIRTUAL_ENV="/nonexistent", ENVDOCTOR_STATE_DIR=str(state))
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr == ("envdoctor: error: --run: VIRTUAL_ENV=/nonexistent names no Python interpreter (a removed "
                             "or moved environment), so the target is unclear; activate an existing environment or "
                             "pass --python PATH\n")
    assert not state.exists()


def test_envdoctors_own_interpreter_is_a_target_only_when_named(tmp_path):
    state = tmp_path / "state"
    found = envdoctor("install", "pytorch", "--run", "--yes", cwd=tmp_path, PATH=os.path.dirname(sys.executable),
                      ENVDOCTOR_STATE_DIR=str(state))
    assert found.returncode == 2 and "--run: the target would be envdoctor's own interpreter" in found.stderr
    # named by --python it is the user's choice: it gets past the target checks (and stops at the
    # missing terminal, so nothing is installed here)
    named = envdoctor("install", "pytorch", "--python", sys.executable, "--run", cwd=tmp_path, ENVDOCTOR_STATE_DIR=str(state))
    assert named.returncode == 2
    assert named.stderr == "envdoctor: error: --run needs a confirmation but stdin is not a terminal; pass --yes to run without asking\n"
    assert not state.exists()


def test_conda_with_python_of_a_venv_never_creates_a_third_environment(bare, tmp_path):
    state = tmp_path / "state"
    shown = envdoctor("install", "pytorch", "--manager", "conda", "--python", str(bare), "--cuda", "cpu")
    assert shown.returncode == 0 and "conda create" in shown.stdout  # the plan, printed, says where it would go
    result = envdoctor("install", "pytorch", "--manager", "conda", "--python", str(bare), "--cuda", "cpu", "--run",
                       "--yes", ENVDOCTOR_STATE_DIR=str(state), PATH=str(tmp_path))  # no conda could run anyway
    assert result.returncode == 2
    assert result.stderr.startswith(f"envdoctor: error: --run: --python names {bare}, which is not a conda environment, "
                                    "but the conda plan would create another one (torch)")
    assert "$ conda create" in result.stdout and "[1/1]" not in result.stdout
    assert not state.exists()


@pytest.fixture(scope="module")
def editable_torch(tmp_path_factory):
    """A venv whose torch is an editable install of a local checkout (a real PEP 660 install by pip)."""
    root = tmp_path_factory.mktemp("editable")
    project = root / "torch-src"
    (project / "src" / "torch").mkdir(parents=True)
    (project / "src" / "torch" / "__init__.py").write_text("__version__ = '2.13.0'\n")
    (project / "pyproject.toml").write_text('[build-system]\nrequires = []\nbuild-backend = "editable_backend"\n'
                                            'backend-path = ["."]\n')
    (project / "editable_backend.py").write_text(EDITABLE_BACKEND)
    venv = make_venv(root / "venv")
    subprocess.run([str(venv), "-m", "pip", "install", "--quiet", "--no-index", "--no-deps", "-e", str(project)],
                   check=True, timeout=180, env=isolated_pip_env())
    return venv, project


def test_a_plan_that_replaces_an_editable_install_says_so_before_asking(editable_torch, tmp_path):
    venv, project = editable_torch
    main, secondary = pty.openpty()
    env = isolated_pip_env(ENVDOCTOR_STATE_DIR=str(tmp_path / "state"), NO_COLOR="1", PYTHONPATH=str(ROOT))
    child = subprocess.Popen([sys.executable, "-m", "envdoctor", "install", "pytorch", "--python", str(venv), "--cuda",
                              "cpu", "--version", "2.13.0", "--run"], stdin=secondary, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, env=env, cwd=tmp_path)
    os.close(secondary)
    os.write(main, b"n\n")
    out, err = child.communicate(timeout=120)
    os.close(main)
    assert child.returncode == 0, err
    flat = " ".join(out.split())
    warning = f"! torch is an editable install from {project}; the plan replaces it"
    assert warning in flat, out
    assert flat.index(warning) < flat.index("Run 2 command(s) in")  # said before the question
    assert out.rstrip().endswith("Nothing was run.")
    assert not (tmp_path / "state").exists()


def test_an_editable_install_the_run_replaced_comes_back_editable(editable_torch, tmp_path, monkeypatch):
    from envdoctor.facts import Facts, PythonEnv
    from envdoctor.plan import InstallPlan
    from envdoctor.plan import run as runmod
    from tests.test_install_restore import build_wheel, recording_console

    venv, project = editable_torch
    wheels = tmp_path / "wheels"
    build_wheel(wheels, "torch", "2.14.0")
    for name, value in isolated_pip_env(ENVDOCTOR_STATE_DIR=str(tmp_path / "state")).items():
        monkeypatch.setenv(name, value)
    for name in ("PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "PIP_FIND_LINKS"):
        monkeypatch.delenv(name, raising=False)
    plan = InstallPlan("pytorch", "2.14.0", "cpu", "3.11", "pip", commands=(
        (str(venv), "-m", "pip", "install", "torch==2.14.0", "--no-index", "--find-links", str(wheels)),
        (str(venv), "-m", "pip", "install", "--no-index", str(tmp_path / "missing.whl"))))
    con = recording_console()

    code = runmod.run_plan(con, plan, Facts(python=PythonEnv(executable=str(venv), version="3.11", env_kind="venv")),
                           assume_yes=True)

    out = con.file.getvalue()
    assert code == 1 and "✓ restored" in out, out
    assert f"--no-deps -e {project}" in out
    origin = runmod.read_origins(str(venv))["torch"]
    assert origin.editable and origin.location == str(project) and origin.version == "2.13.0"
