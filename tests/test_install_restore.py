"""`install --run` puts each package back from where it came (issue 10 §1), for real.

Real venvs made here, real pip, tiny real wheels built here, package indexes served by
`http.server` on 127.0.0.1 (and a direct file install): the restore of a failed run needs the
default registry for one package, the vendor's index for another and the recorded URL for a third.
pip's own configuration is switched off (PIP_CONFIG_FILE=os.devnull) so only these indexes exist.
"""

import functools
import http.server
import io
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from rich.console import Console

from envdoctor.facts import Facts, PythonEnv
from envdoctor.plan import InstallPlan
from envdoctor.plan import run as runmod
from tests.conftest import build_wheel  # noqa: F401  (also imported from here by other test_install_* files)

PIP_VARIABLES = ("PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "PIP_FIND_LINKS", "PIP_NO_INDEX", "PIP_CONSTRAINT",
                 "PIP_REQUIRE_VIRTUALENV", "UV_INDEX_URL", "UV_DEFAULT_INDEX")


# --- helpers shared with the other test_install_* files --------------------------------------------

def simple_index(root: Path, *packages: tuple[str, str]) -> Path:
    """A PEP 503 layout (simple/<project>/<wheel>) that http.server's directory listings serve as an index."""
    for name, version in packages:
        build_wheel(root / "simple" / name, name, version)
    return root


class Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


class IndexServer:
    """http.server on 127.0.0.1 serving `root`; records every path asked for."""

    def __init__(self, root: Path):
        seen = self.seen = []

        class Handler(Quiet):
            def do_GET(self):
                seen.append(self.path)
                super().do_GET()

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Handler, directory=str(root)))
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/simple/"

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


def make_venv(path: Path, with_pip: bool = True) -> Path:
    argv = [sys.executable, "-m", "venv", str(path)] + ([] if with_pip else ["--without-pip"])
    subprocess.run(argv, check=True, timeout=180)
    return path / ("Scripts/python.exe" if sys.platform == "win32" else "bin/python")


def isolated_pip_env(**extra) -> dict:
    """This process's environment without any pip/uv index configuration, plus `extra`."""
    env = {k: v for k, v in os.environ.items() if k not in PIP_VARIABLES}
    env.update(PIP_CONFIG_FILE=os.devnull, PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_RETRIES="0", **extra)
    return env


def pip(python: Path, *args: str, env=None) -> None:
    subprocess.run([str(python), "-m", "pip", *args, "--quiet"], check=True, timeout=180, env=env or isolated_pip_env())


def installed(python: Path) -> dict:
    out = subprocess.run([str(python), "-m", "pip", "freeze"], capture_output=True, text=True, check=True, timeout=120,
                         env=isolated_pip_env()).stdout
    return {n: v for n, (v, _) in runmod.parse_freeze(out).items()}


def recording_console() -> Console:
    return Console(file=io.StringIO(), width=300, no_color=True)


# --- the restore needs three sources ---------------------------------------------------------------

@pytest.fixture
def registry(tmp_path):
    """The default registry (PIP_INDEX_URL): demo-base 1.0 and 2.0; nothing of demo-vendor."""
    server = IndexServer(simple_index(tmp_path / "registry", ("demo-base", "1.0"), ("demo-base", "2.0")))
    yield server
    server.close()


@pytest.fixture
def vendor(tmp_path):
    """The vendor's index (the plan's --index-url): demo-vendor 1.0 and 2.0, demo-base 2.0 only (as
    PyTorch's index carries setuptools 80.9.0 but not the 65.5.0 a venv came with)."""
    server = IndexServer(simple_index(tmp_path / "vendor", ("demo-vendor", "1.0"), ("demo-vendor", "2.0"),
                                      ("demo-base", "2.0"), ("demo-local", "2.0")))
    yield server
    server.close()


def test_a_failed_run_restores_each_package_from_where_it_came(tmp_path, registry, vendor, monkeypatch):
    venv = make_venv(tmp_path / "venv")
    local = build_wheel(tmp_path / "local", "demo-local", "1.0")  # installed from a file: direct_url.json
    pip(venv, "install", "demo-base==1.0", env=isolated_pip_env(PIP_INDEX_URL=registry.url))
    pip(venv, "install", "demo-vendor==1.0", "--index-url", vendor.url)
    pip(venv, "install", str(local), "--no-index")
    before = installed(venv)
    assert before["demo-base"] == "1.0" and before["demo-vendor"] == "1.0" and before["demo-local"].startswith("@ file:")

    for name, value in isolated_pip_env(PIP_INDEX_URL=registry.url).items():
        monkeypatch.setenv(name, value)
    for name in PIP_VARIABLES[1:]:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("ENVDOCTOR_STATE_DIR", str(tmp_path / "state"))
    upgrade = (str(venv), "-m", "pip", "install", "demo-base==2.0", "demo-vendor==2.0", "demo-local==2.0",
               "--index-url", vendor.url)
    failing = (str(venv), "-m", "pip", "install", "--no-index", str(tmp_path / "does-not-exist.whl"))
    plan = InstallPlan("demo_vendor", "2.0", "cpu", "3.11", "pip", index_url=vendor.url, commands=(upgrade, failing))
    facts = Facts(python=PythonEnv(executable=str(venv), version="3.11", env_kind="venv"))
    con = recording_console()

    code = runmod.run_plan(con, plan, facts, assume_yes=True)

    out = con.file.getvalue()
    assert code == 1, out
    assert installed(venv) == before, out
    assert "✓ restored" in out
    restores = [line for line in out.splitlines() if line.startswith("  $ ") and "--no-deps" in line]
    # demo-base came from the default registry: never looked up on the vendor's index
    base = [line for line in restores if "demo-base==1.0" in line]
    assert base and not any("--index-url" in line for line in base), restores
    # demo-vendor is not on the default registry: found on the plan's index after the registry said no
    assert restores[-1].endswith(f"demo-vendor==1.0 --index-url {vendor.url}"), restores
    # demo-local came from a file: reinstalled from that file, not looked up by name anywhere
    assert any(f"demo-local @ {local.as_uri()}" in line and "--index-url" not in line for line in restores), restores


def test_sources_follow_the_record_and_never_put_the_plans_index_first():
    before = runmod.Snapshot(runmod.parse_freeze(
        "setuptools==65.5.0\ntorch==2.3.1+cu121\nsix @ file:///w/six-1.16.0-py2.py3-none-any.whl\n"))
    plan = InstallPlan("pytorch", "2.9.1", "cu128", "3.12", "pip", index_url="https://mirror.nju.edu.cn/pytorch/whl/cu128",
                       commands=(("/v/bin/python", "-m", "pip", "install", "torch==2.9.1",
                                  "--index-url", "https://mirror.nju.edu.cn/pytorch/whl/cu128"),))
    vendor = ["--index-url", "https://mirror.nju.edu.cn/pytorch/whl/cu128"]
    assert runmod.sources_for("setuptools", before, plan) == [[], vendor]
    # the previous build's own index, on the plan's mirror, before the registry
    assert runmod.sources_for("torch", before, plan) == [
        ["--index-url", "https://mirror.nju.edu.cn/pytorch/whl/cu121"], [], vendor]
    assert runmod.sources_for("six", before, plan) == [[]]
