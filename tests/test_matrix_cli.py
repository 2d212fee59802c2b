"""`envdoctor matrix` end to end on recorded machines: the table and the plan agree."""

import json
import sys
import types

import pytest
from packaging.version import Version

from envdoctor.facts import load_facts
from envdoctor.plan import VERDICTS, Candidate, PlanRequest, evaluate_all
from envdoctor.render.matrix import python_span, shown
from tests.conftest import FIXTURES, run_cli

MACHINES = FIXTURES / "machines"


def machine(name):
    return str(MACHINES / f"{name}.json")


def matrix_json(framework, name, *args):
    result = run_cli("matrix", framework, "--facts", machine(name), "--json", *args)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def install_json(framework, name, *args):
    return json.loads(run_cli("install", framework, "--facts", machine(name), "--json", *args).stdout)


def cells(stdout):
    """The console table as {release: {build: cell text}}."""
    lines = stdout.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("release "))
    builds = [h.strip() for h in lines[header].split("┃")[1:-1]]
    table = {}
    for line in lines[header + 2:]:
        if "│" not in line:
            break
        parts = [p.strip() for p in line.split("│")]
        table[parts[0]] = dict(zip(builds, parts[1:-1]))
    return table


@pytest.mark.parametrize("name", ["rtx5090-r570", "gtx1080-current", "amd-mi300", "apple-silicon", "jetson-thor",
                                  "jetson-orin-jp62", "jetson-orin-jp51"])
def test_the_chosen_cell_is_the_install_plan(name):
    doc = matrix_json("pytorch", name)
    plan = install_json("pytorch", name)
    assert doc["schema"] == "envdoctor.matrix/1" and doc["framework"] == "pytorch"
    assert doc["chosen"] == {"version": plan["version"], "build": plan["build"]}
    chosen = [c for c in doc["candidates"] if c["chosen"]]
    assert len(chosen) == 1 and chosen[0]["verdict"] == "fits"
    assert {c["verdict"] for c in doc["candidates"]} <= set(VERDICTS)


@pytest.mark.parametrize("framework, name", [("tensorflow", "t4-r550-py310"), ("jax", "a100-current"),
                                             ("paddle", "t4-r550-py310"), ("tensorflow", "apple-silicon")])
def test_every_framework_has_a_table_that_agrees_with_its_plan(framework, name):
    doc = matrix_json(framework, name)
    plan = install_json(framework, name)
    assert doc["chosen"] == {"version": plan["version"], "build": plan["build"]}
    table = cells(run_cli("matrix", framework, "--facts", machine(name)).stdout)
    assert table[plan["version"]][plan["build"]] == "★"


def test_console_table_marks_this_machine():
    result = run_cli("matrix", "pytorch", "--facts", machine("rtx5090-r570"))
    assert result.returncode == 0
    plan = install_json("pytorch", "rtx5090-r570")
    table = cells(result.stdout)
    assert table[plan["version"]][plan["build"]] == "★"
    newest = next(iter(table))
    assert table[newest]["cu130"] == "drv"  # CUDA 13 needs driver 580; this one is 570
    assert table["2.7.1"]["cu126"] == "gpu"  # no sm_120 kernels in cu126
    assert "…" not in result.stdout  # never squeezed, even on an 80-column pipe
    assert "driver 570.124.04 (CUDA 12.8), NVIDIA GeForce RTX 5090 sm_120" in result.stdout.splitlines()[0]
    assert "cu130: needs driver ≥ 580, you have 570.124.04" in result.stdout


def test_pascal_on_a_new_driver_is_told_about_kernels_not_the_driver():
    table = cells(run_cli("matrix", "pytorch", "--facts", machine("gtx1080-current")).stdout)
    newest = next(iter(table))
    assert table[newest]["cu130"] == "gpu"
    assert "★" in table[install_json("pytorch", "gtx1080-current")["version"]].values()


def test_builds_not_for_this_machine_are_hidden_unless_all():
    plain = run_cli("matrix", "pytorch", "--facts", machine("rtx5090-r570"))
    assert "rocm" not in cells(plain.stdout)[next(iter(cells(plain.stdout)))]
    assert "not for this machine not shown" in plain.stdout and "--all shows them" in plain.stdout
    everything = run_cli("matrix", "pytorch", "--facts", machine("rtx5090-r570"), "--all")
    assert any(b.startswith("rocm") for b in cells(everything.stdout)[next(iter(cells(everything.stdout)))])


def test_cuda_and_version_options_narrow_the_table():
    doc = matrix_json("pytorch", "t4-r550-py310", "--cuda", "cu126", "--version", ">=2.8")
    assert doc["builds"] == ["cu126"]
    assert doc["candidates"] and all(Version(c["version"]) >= Version("2.8") for c in doc["candidates"])


def test_usage_errors():
    result = run_cli("matrix", "pytorch", "--facts", machine("cpu-only"), "--cuda", "cuda12")
    assert result.returncode == 2
    assert result.stderr == "envdoctor: error: --cuda 'cuda12': PyTorch builds name a CUDA minor too: 12.8 or cu128\n"
    result = run_cli("matrix", "caffe")
    assert result.returncode == 2 and "unknown framework 'caffe'" in result.stderr


def test_a_framework_without_candidates_says_so(monkeypatch):
    module = types.ModuleType("envdoctor.plan.nocandidates")
    module.choose = lambda facts, request: None
    monkeypatch.setitem(sys.modules, "envdoctor.plan.nocandidates", module)
    assert evaluate_all(load_facts(machine("cpu-only")), PlanRequest(framework="nocandidates")) is None


def test_hidden_columns_and_python_span():
    cands = [Candidate("2.9.1", "cu128", "fits", pythons=("3.10", "3.14", "3.9")),
             Candidate("2.9.1", "rocm6.4", "platform"), Candidate("2.8.0", "rocm6.4", "platform"),
             Candidate("2.8.0", "cu118", "other", "CUDA would have to be installed by hand")]
    drawn, hidden = shown(cands, show_all=False)
    assert hidden == ["rocm6.4"] and [c.build for c in drawn] == ["cu128", "cu118"]
    assert shown(cands, show_all=True) == (cands, [])
    assert python_span(("3.10", "3.14", "3.9")) == "3.9–3.14"
    assert python_span(("3.13t", "3.11", "3.13", "3.14t")) == "3.11–3.13"


def test_cells_that_do_not_fit_say_why():
    out = run_cli("matrix", "tensorflow", "--facts", machine("t4-r550-py310")).stdout
    doc = matrix_json("tensorflow", "t4-r550-py310")
    others = [c for c in doc["candidates"] if c["verdict"] == "other"]
    assert others and "Where ✗ does not fit:" in out
    for c in others:
        assert c["why"] in out


@pytest.mark.parametrize("framework", ["pytorch", "tensorflow", "jax", "paddle"])
def test_cuda_builds_are_not_for_a_machine_without_nvidia(framework):
    doc = matrix_json(framework, "cpu-only")
    cuda = [c for c in doc["candidates"] if c["build"].startswith("cu")]
    assert all(c["verdict"] == "platform" for c in cuda), [c for c in cuda if c["verdict"] != "platform"][:3]


@pytest.mark.parametrize("args, options", [(["--version", "99"], "--version 99"),
                                           (["--version", "2.0", "--cuda", "cu126"], "--version 2.0 --cuda cu126")])
def test_nothing_matching_the_options_says_so_not_the_platform(args, options):
    result = run_cli("matrix", "pytorch", "--facts", machine("t4-r550-py310"), *args)
    assert result.returncode == 0
    assert result.stdout.splitlines()[1] == f"No PyTorch release or build matches {options}."
    assert "platform" not in result.stdout


def test_only_builds_for_other_machines_point_to_all():
    result = run_cli("matrix", "jax", "--facts", machine("cpu-only"), "--cuda", "cu128")
    assert result.returncode == 0
    assert result.stdout.splitlines()[1] == "No JAX build matching --cuda cu128 is for this machine; --all shows the others anyway (cuda12)."
    assert "cuda12" in cells(run_cli("matrix", "jax", "--facts", machine("cpu-only"), "--cuda", "cu128", "--all").stdout)[
        matrix_json("jax", "cpu-only", "--cuda", "cu128")["candidates"][0]["version"]]
