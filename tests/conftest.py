import base64
import hashlib
import os
import signal
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

# A job started in the background (`cmd &` from a script, nohup) inherits SIGINT ignored, and so would
# every process the Ctrl-C tests start: give SIGINT its default meaning again (children then get SIG_DFL).
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session", autouse=True)
def _private_cache(tmp_path_factory):
    """Parsed-matrix cache of this test session only (inherited by CLI subprocesses)."""
    os.environ["ENVDOCTOR_CACHE_DIR"] = str(tmp_path_factory.mktemp("envdoctor-cache"))
    yield
    os.environ.pop("ENVDOCTOR_CACHE_DIR", None)
FIXTURES = ROOT / "tests" / "fixtures"


def judge_build_file(command, path, *args):
    """`envdoctor dockerfile|compose PATH --json`: its document, after checking its schema and that the
    exit status says whether it holds an error."""
    import json

    result = run_cli(command, str(path), "--json", *args, env={"NO_COLOR": "1", "COLUMNS": "200"})
    assert result.returncode in (0, 1), result.stderr
    document = json.loads(result.stdout)
    assert document["schema"] == f"envdoctor.{command}/1"
    assert result.returncode == (1 if any(f["severity"] == "error" for f in document["findings"]) else 0)
    return document


def run_cli(*args, env=None, input_text=None, timeout=120):
    """Run the real CLI in a subprocess (`python -m envdoctor`), like a user would."""
    full_env = dict(os.environ)
    full_env.pop("NO_COLOR", None)
    if env:
        full_env.update(env)
    return subprocess.run(
        [sys.executable, "-m", "envdoctor", *args],
        capture_output=True, text=True, env=full_env, input=input_text, timeout=timeout,
    )


@pytest.fixture
def cli():
    return run_cli


def build_wheel(folder: Path, name: str, version: str) -> Path:
    """A minimal valid pure-Python wheel: one module with __version__, METADATA, WHEEL, RECORD."""
    module = name.replace("-", "_")
    dist_info = f"{module}-{version}.dist-info"
    files = {
        f"{module}/__init__.py": f"__version__ = {version!r}\n",
        f"{dist_info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
        f"{dist_info}/WHEEL": "Wheel-Version: 1.0\nGenerator: envdoctor-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = []
    for path, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
        record.append(f"{path},sha256={digest},{len(text.encode())}")
    files[f"{dist_info}/RECORD"] = "\n".join(record + [f"{dist_info}/RECORD,,"]) + "\n"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{module}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as zf:
        for name_in_zip, text in files.items():
            zf.writestr(name_in_zip, text)
    return path
