"""Package indexes and mirrors (issue 10 §4): the printed command is one that works on the user's network.

--index-url / ENVDOCTOR_INDEX replace the vendor's index; --mirror NAME (recipes/mirrors.toml) maps it to
a known mirror; the configured default registry (PIP_INDEX_URL, pip.conf, UV_INDEX_URL) is honoured
and never replaced. Plans for recorded machines (offline) and for a real venv made here.
"""

import json
import os
import subprocess
import sys

import pytest

from envdoctor.matrix.loader import load
from envdoctor.plan.common import configured_index
from tests.conftest import FIXTURES, ROOT
from tests.test_install_restore import make_venv

A100 = str(FIXTURES / "machines" / "a100-current.json")


def envdoctor(*args, cwd=None, **env):
    full = {k: v for k, v in os.environ.items()
            if k not in ("PIP_INDEX_URL", "UV_INDEX_URL", "UV_DEFAULT_INDEX", "ENVDOCTOR_INDEX", "ENVDOCTOR_MIRROR")}
    full.update({"PYTHONPATH": str(ROOT), "PIP_CONFIG_FILE": os.devnull, **env})
    return subprocess.run([sys.executable, "-m", "envdoctor", *args], cwd=cwd or ROOT, env=full, capture_output=True,
                          text=True, timeout=120)


def plan(*args, **env):
    result = envdoctor("install", *args, "--json", **env)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def install_command(document):
    return next(argv for argv in document["commands"] if "install" in argv and "uninstall" not in argv)


def test_every_mirror_row_names_its_source_and_maps_a_vendor_index():
    rows = load("mirrors", kind="recipes")["mirror"]
    assert {r["name"] for r in rows} >= {"nju", "sjtu", "aliyun"}
    for row in rows:
        assert row["kind"] in ("index", "find-links") and row["url"].endswith("/") and row["upstream"].endswith("/")
        assert row["source"] and row["checked"] == "2026-12-01"


def test_an_index_mirror_replaces_the_vendors_index_in_the_command():
    vendor = plan("pytorch", "--facts", A100, "--cuda", "cpu")
    mirrored = plan("pytorch", "--facts", A100, "--cuda", "cpu", "--mirror", "nju")
    assert vendor["index_url"] == "https://download.pytorch.org/whl/cpu"
    assert mirrored["index_url"] == "https://mirror.nju.edu.cn/pytorch/whl/cpu"
    argv = install_command(mirrored)
    assert argv[argv.index("--index-url") + 1] == "https://mirror.nju.edu.cn/pytorch/whl/cpu"
    assert [t for t in argv if "==" in t] == [t for t in install_command(vendor) if "==" in t]  # same pins


def test_a_find_links_mirror_pins_the_build_so_the_registry_cannot_supply_another():
    document = plan("pytorch", "--facts", A100, "--cuda", "cpu", "--mirror", "aliyun")
    argv = install_command(document)
    assert "--index-url" not in argv and argv[argv.index("--find-links") + 1] == "https://mirrors.aliyun.com/pytorch-wheels/cpu"
    torch = next(t for t in argv if t.startswith("torch=="))
    assert torch.endswith("+cpu")


def test_the_users_index_replaces_the_vendors_from_the_option_or_the_environment():
    by_option = plan("paddle", "--facts", A100, "--index-url", "https://mirror.example/paddle/cu130/")
    by_env = plan("paddle", "--facts", A100, ENVDOCTOR_INDEX="https://mirror.example/paddle/cu130/")
    for document in (by_option, by_env):
        argv = install_command(document)
        assert argv[argv.index("--index-url") + 1] == "https://mirror.example/paddle/cu130/"
        assert any("ENVDOCTOR_INDEX" in r for r in document["reasons"])


@pytest.mark.parametrize("args, message", [
    (["--mirror", "nowhere"], "--mirror 'nowhere' is not a known mirror (choose nju, sjtu, aliyun"),
    (["--index-url", "not a url"], "--index-url 'not a url' is not a URL"),
    (["--index-url", ""], "--index-url is empty: give a value, or leave the option out for the default"),
])
def test_a_bad_mirror_or_index_is_a_usage_error(args, message):
    result = envdoctor("install", "pytorch", "--facts", A100, *args)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.startswith("envdoctor: error: " + message) and len(result.stderr.splitlines()) == 1


@pytest.fixture(scope="module")
def bare(tmp_path_factory):
    return make_venv(tmp_path_factory.mktemp("bare") / "venv", with_pip=False)


def test_pip_conf_and_pip_index_url_name_the_default_registry(bare, tmp_path):
    conf = tmp_path / "pip.conf"
    conf.write_text("[global]\nindex-url = https://mirror.example/simple\n")
    assert configured_index("pip", {"PIP_CONFIG_FILE": str(conf), "HOME": str(tmp_path)}) == ("https://mirror.example/simple", str(conf))
    assert configured_index("pip", {"PIP_INDEX_URL": "https://env.example/simple", "PIP_CONFIG_FILE": str(conf)})[1] == "PIP_INDEX_URL"
    assert configured_index("pip", {"PIP_CONFIG_FILE": os.devnull, "HOME": str(tmp_path)}) is None

    # a pip plan on the registry: pip reads the mirror itself, the plan says so and leaves the command alone
    pip_plan = plan("tensorflow", "--python", str(bare), PIP_CONFIG_FILE=str(conf), HOME=str(tmp_path))
    assert any(f"the default registry is https://mirror.example/simple (from {conf})" in r for r in pip_plan["reasons"])
    assert "--index-url" not in install_command(pip_plan)
    # uv reads no pip.conf: its command names the mirror
    uv_plan = plan("tensorflow", "--python", str(bare), "--manager", "uv", PIP_CONFIG_FILE=str(conf), HOME=str(tmp_path))
    argv = install_command(uv_plan)
    assert argv[argv.index("--index-url") + 1] == "https://mirror.example/simple"
    # uv's own setting: uv reads it, nothing added
    uv_own = plan("tensorflow", "--python", str(bare), "--manager", "uv", UV_INDEX_URL="https://uv.example/simple")
    assert "--index-url" not in install_command(uv_own)
    # a vendor index used directly on a mirror network: the way to a mirror is pointed out
    vendor = plan("pytorch", "--python", str(bare), "--cuda", "cpu", PIP_INDEX_URL="https://mirror.example/simple")
    assert any("pass --mirror NAME" in w for w in vendor["warnings"])


def test_a_recorded_machine_is_planned_without_this_machines_registry(tmp_path):
    document = plan("tensorflow", "--facts", A100, PIP_INDEX_URL="https://mirror.example/simple")
    assert not any("default registry" in r for r in document["reasons"])
