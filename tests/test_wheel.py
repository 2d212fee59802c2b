"""The built wheel carries matrices/ and recipes/ and its `envdoctor` runs in a fresh venv."""

import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out), str(ROOT)],
                   check=True, timeout=300)
    (built,) = out.glob("envdoctor-*.whl")
    return built


def test_wheel_contains_every_data_file(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    for kind in ("matrices", "recipes"):
        for path in (ROOT / kind).glob("*.toml"):
            assert f"envdoctor/_data/{kind}/{path.name}" in names, path.name


def test_installed_wheel_runs_check(wheel, tmp_path):
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    python = env_dir / "bin" / "python"
    subprocess.run([str(python), "-m", "pip", "install", "-q", str(wheel)], check=True, timeout=600)
    result = subprocess.run([str(env_dir / "bin" / "envdoctor"), "check", "--json"],
                            capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert result.returncode in (0, 1), result.stderr
    assert '"schema": "envdoctor.report/1"' in result.stdout
    # The data files are read from the installed package, not from this checkout.
    probe = subprocess.run([str(python), "-c", "from envdoctor.matrix.loader import data_dir; print(data_dir())"],
                           capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert str(env_dir) in probe.stdout, probe.stdout + probe.stderr
