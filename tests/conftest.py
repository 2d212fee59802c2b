import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session", autouse=True)
def _private_cache(tmp_path_factory):
    """Parsed-matrix cache of this test session only (inherited by CLI subprocesses)."""
    os.environ["ENVDOCTOR_CACHE_DIR"] = str(tmp_path_factory.mktemp("envdoctor-cache"))
    yield
    os.environ.pop("ENVDOCTOR_CACHE_DIR", None)
FIXTURES = ROOT / "tests" / "fixtures"


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
