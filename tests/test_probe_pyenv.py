"""The target-interpreter script: installed distributions read from *.dist-info folder names."""

from __future__ import annotations

import json
import os
import sys

from envdoctor import proc
from envdoctor.probe import pyenv


def _run(site, *extra_paths):
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONPATH": os.pathsep.join([str(site), *map(str, extra_paths)])}
    # -S: no site-packages of the interpreter running the tests, only the folders given here
    result = proc.run([sys.executable, "-S", str(pyenv.SCRIPT)], timeout=30, env=env)
    assert result.ok, result.describe_failure()
    return json.loads(result.stdout)


def test_wanted_distributions_from_folder_names(tmp_path):
    site = tmp_path / "site"
    for name in ("torch-2.6.0+cu124.dist-info", "nvidia_cudnn_cu12-9.1.0.70.dist-info", "Jax-0.4.35.dist-info",
                 "requests-2.32.0.dist-info", "tensorflow_cpu-2.18.0.dist-info", "numpy-2.1.0.dist-info",
                 "numpy_financial-1.0.0.dist-info", "paddlepaddle_gpu-3.0.0-py3.10.egg-info"):
        (site / name).mkdir(parents=True)
    (site / "keras.egg-info").mkdir()
    (site / "keras.egg-info" / "PKG-INFO").write_text("Metadata-Version: 2.1\nName: keras\nVersion: 3.6.0\n\nbody\n")
    packages = _run(site)["packages"]
    for key, version in {"torch": "2.6.0+cu124", "nvidia-cudnn-cu12": "9.1.0.70", "jax": "0.4.35",
                         "tensorflow-cpu": "2.18.0", "numpy": "2.1.0", "paddlepaddle-gpu": "3.0.0", "keras": "3.6.0"}.items():
        assert packages[key] == version, key
    assert "requests" not in packages and "numpy-financial" not in packages


def test_two_copies_of_one_distribution_stay_visible(tmp_path):
    (tmp_path / "a" / "torch-2.5.1.dist-info").mkdir(parents=True)
    (tmp_path / "b" / "torch-2.6.0.dist-info").mkdir(parents=True)
    assert _run(tmp_path / "a", tmp_path / "b")["packages"]["torch"] == "2.5.1|2.6.0"


def test_this_interpreter_is_described_in_process_exactly_as_by_the_script():
    """When the target is envdoctor's own interpreter the script runs in-process: same answer."""
    import json
    import os
    import sys

    from envdoctor import proc
    from envdoctor.probe import ProbeContext, pyenv

    ctx = ProbeContext(python=sys.executable, environ=dict(os.environ))
    assert pyenv._is_this_interpreter(ctx)
    in_process = pyenv.probe(ctx)
    script = proc.run([sys.executable, str(pyenv.SCRIPT)], timeout=30)
    assert in_process == pyenv.parse(script.stdout, ctx)
    assert json.loads(script.stdout)["executable"] == sys.executable


def test_an_explicit_python_that_names_no_executable_is_a_usage_error(tmp_path):
    import pytest

    from envdoctor.errors import UsageError

    (tmp_path / "not-executable").write_text("")
    for given, why in ((str(tmp_path / "missing"), "no such file"), (str(tmp_path), "it is a directory"),
                       (str(tmp_path / "not-executable"), "not an executable file"),
                       ("python-that-is-nowhere", "not found on PATH")):
        with pytest.raises(UsageError, match=f"^cannot run target interpreter {given}: {why}$"):
            pyenv.resolve_target(given, {})
    assert pyenv.resolve_target(sys.executable, {"VIRTUAL_ENV": str(tmp_path)}) == sys.executable


def test_a_target_that_runs_but_prints_no_json_is_a_probe_error(tmp_path):
    from envdoctor.probe import ProbeContext

    for stdout, message in (("", "printed nothing"), ("[1, 2]", "expected a JSON object, got list"),
                            ("5", "expected a JSON object, got int"), ("Python 2.7", "unreadable output")):
        ctx = ProbeContext(python="/bin/true", environ={})
        env = pyenv.parse(stdout, ctx)
        assert env.executable == "/bin/true" and env.version is None
        [error] = ctx.errors
        assert error.probe == "python" and message in error.message


def test_packages_are_listed_in_name_order_whatever_the_folder_order(tmp_path):
    for name in ("torch-2.6.0.dist-info", "numpy-2.1.0.dist-info", "jax-0.4.35.dist-info", "keras-3.6.0.dist-info"):
        (tmp_path / name).mkdir()
    assert list(_run(tmp_path)["packages"]) == ["jax", "keras", "numpy", "torch"]


def test_another_name_for_this_interpreter_in_its_folder_is_described_in_process(tmp_path):
    """An activated venv names bin/python while envdoctor runs as bin/python3: the same interpreter."""
    import pytest

    from envdoctor.probe import ProbeContext

    here = os.path.dirname(sys.executable)
    twins = [os.path.join(here, n) for n in ("python", "python3") if os.path.join(here, n) != sys.executable
             and os.path.realpath(os.path.join(here, n)) == os.path.realpath(sys.executable)]
    if not twins:
        pytest.skip("this interpreter has no second name in its folder")
    ctx = ProbeContext(python=twins[0], environ=dict(os.environ))
    assert pyenv._is_this_interpreter(ctx)
    script = proc.run([twins[0], str(pyenv.SCRIPT)], timeout=30)
    assert pyenv.probe(ctx) == pyenv.parse(script.stdout, ctx)
    # The base interpreter a venv links to lives elsewhere: a different environment, never in-process.
    real = os.path.realpath(sys.executable)
    if os.path.dirname(real) != here:
        assert not pyenv._is_this_interpreter(ProbeContext(python=real, environ=dict(os.environ)))


def test_the_chosen_target_and_why_reach_the_python_block(tmp_path):
    """resolve_target follows envdoctor.target's rule; the probe records the source in
    python.target_source and a stale VIRTUAL_ENV as an error that names it."""
    from envdoctor import target
    from envdoctor.probe import ProbeContext

    chosen = pyenv.resolve_target(None, {"VIRTUAL_ENV": str(tmp_path / "gone"), "PATH": ""})
    assert isinstance(chosen, target.Target) and chosen.stale == (f"VIRTUAL_ENV={tmp_path / 'gone'}",)
    ctx = ProbeContext(python=chosen)
    env = pyenv.probe(ctx)
    assert env.target_source == chosen.source and env.version
    assert [e.message for e in ctx.errors] == [f"VIRTUAL_ENV={tmp_path / 'gone'} names no Python interpreter "
                                               "(the environment was removed or moved): ignored"]
    named = pyenv.resolve_target(sys.executable, {})
    assert named.source == "--python" and pyenv.resolve_target(named, {}) is named
