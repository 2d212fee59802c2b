"""Which environment envdoctor looks at (issue 10 §2): --python → a live VIRTUAL_ENV / CONDA_PREFIX →
a .venv here or above → the python on PATH (never envdoctor's own) → envdoctor's own, said so.

Real venvs made by the test (without pip: fast, and nothing could be installed into them), and the
real CLI run from a project folder, as a pipx / `uv tool` install of envdoctor would be.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from envdoctor import target
from tests.conftest import ROOT
from tests.test_install_restore import build_wheel, make_venv

BIN = "Scripts" if sys.platform == "win32" else "bin"


@pytest.fixture(scope="module")
def envs(tmp_path_factory):
    """Three environments: an 'active' venv, a project with a .venv (holding a tiny torch), a conda-like prefix."""
    root = tmp_path_factory.mktemp("envs")
    active = make_venv(root / "active", with_pip=False)
    project = root / "project"
    dot = make_venv(project / ".venv", with_pip=False)
    wheel = build_wheel(root / "wheels", "torch", "2.13.0")
    site = next((project / ".venv").glob("lib/python*/site-packages"))
    import zipfile

    with zipfile.ZipFile(wheel) as zf:
        zf.extractall(site)  # a wheel unpacked is an installed distribution (no installer in a pip-less venv)
    conda = make_venv(root / "conda", with_pip=False)
    (project / "src" / "deep").mkdir(parents=True)
    return {"active": active, "project": project, "dot": dot, "conda": conda, "root": root}


def test_the_order_is_python_then_active_env_then_dot_venv_then_path_then_self(envs, tmp_path):
    deep = envs["project"] / "src" / "deep"
    environ = {"VIRTUAL_ENV": str(envs["active"].parent.parent), "CONDA_PREFIX": str(envs["conda"].parent.parent),
               "PATH": str(envs["conda"].parent)}
    chosen = target.choose("/some/python", environ, deep)
    assert (chosen, chosen.source) == ("/some/python", "--python")
    chosen = target.choose(None, environ, deep)
    assert (chosen, chosen.source) == (str(envs["active"]), "VIRTUAL_ENV")
    chosen = target.choose(None, {**environ, "VIRTUAL_ENV": ""}, deep)
    assert (chosen, chosen.source) == (str(envs["conda"]), "CONDA_PREFIX")
    chosen = target.choose(None, {"PATH": environ["PATH"]}, deep)  # from a subfolder of the project
    assert (chosen, chosen.source) == (str(envs["dot"]), ".venv")
    chosen = target.choose(None, {"PATH": environ["PATH"]}, tmp_path)
    assert chosen.source == "PATH" and Path(chosen).parent == envs["conda"].parent
    chosen = target.choose(None, {"PATH": str(tmp_path)}, tmp_path)
    assert (chosen, chosen.source, chosen.own) == (sys.executable, "self", True)


def test_a_stale_virtual_env_is_skipped_and_named(envs):
    chosen = target.choose(None, {"VIRTUAL_ENV": "/nonexistent", "PATH": ""}, envs["project"])
    assert chosen.source == ".venv" and chosen.stale == ("VIRTUAL_ENV=/nonexistent",)
    assert target.stale_warning(chosen.stale[0]).startswith("VIRTUAL_ENV=/nonexistent names no Python interpreter")


def test_envdoctors_own_interpreter_on_path_is_passed_over(envs, tmp_path):
    own_folder = os.path.dirname(sys.executable)
    chosen = target.choose(None, {"PATH": os.pathsep.join([own_folder, str(envs["conda"].parent)])}, tmp_path)
    assert chosen.source == "PATH" and Path(chosen).parent == envs["conda"].parent
    assert target.is_own_interpreter(sys.executable) and not target.is_own_interpreter(str(envs["dot"]))


def run_envdoctor(cwd: Path, *args: str, **env) -> subprocess.CompletedProcess:
    """The CLI as a tool install runs it: envdoctor's own interpreter, started in the user's folder."""
    full = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "CONDA_PREFIX", "NO_COLOR")}
    full.update(PYTHONPATH=str(ROOT), PATH=os.path.dirname(sys.executable), **env)
    return subprocess.run([sys.executable, "-m", "envdoctor", *args], cwd=cwd, env=full, capture_output=True,
                          text=True, timeout=120)


def test_a_tool_installed_envdoctor_looks_at_the_projects_venv(envs):
    result = run_envdoctor(envs["project"] / "src", "check", "--json")
    python = json.loads(result.stdout)["facts"]["python"]
    assert python["executable"] == str(envs["dot"])
    assert python["target_source"] == ".venv"
    assert python["packages"].get("torch") == "2.13.0"  # not envdoctor's own "none installed"

    report = run_envdoctor(envs["project"], "check", NO_COLOR="1").stdout
    assert f"target {envs['dot']} (chosen by .venv)" in report


def test_a_stale_virtual_env_is_a_warning_in_the_report_and_the_json(envs):
    result = run_envdoctor(envs["project"], "check", "--json", VIRTUAL_ENV="/nonexistent")
    document = json.loads(result.stdout)
    assert document["facts"]["python"]["target_source"] == ".venv"
    assert any(e["probe"] == "python" and e["message"].startswith("VIRTUAL_ENV=/nonexistent names no Python interpreter")
               for e in document["facts"]["errors"])
    report = run_envdoctor(envs["project"], "check", VIRTUAL_ENV="/nonexistent", NO_COLOR="1").stdout
    assert "VIRTUAL_ENV=/nonexistent names no Python interpreter" in report


def test_with_nothing_else_the_report_says_it_looks_at_envdoctors_own_interpreter(tmp_path):
    result = run_envdoctor(tmp_path, "check", "--json")
    python = json.loads(result.stdout)["facts"]["python"]
    assert python["target_source"] == "self" and python["executable"] == sys.executable
