"""`envdoctor check --build`: the build probe on this machine's real CUDA 13.0 toolkit and gcc (cross-
checked against torch.utils.cpp_extension's own _find_cuda_home and a real nvcc compile), its parsers on
verbatim outputs, and the rules on recorded machines (a trigger and a near miss for each finding)."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from envdoctor.complete import complete
from envdoctor.diagnose import diagnose
from envdoctor.diagnose.build import arch_covers, parse_arch_list
from envdoctor.matrix.host_compilers import compiler_range, version_numbers
from envdoctor.facts import Facts, load_facts
from envdoctor.matrix.loader import load
from envdoctor.probe import ProbeContext
from envdoctor.probe import build as build_probe

ROOT = Path(__file__).resolve().parent.parent
MACHINES = ROOT / "tests" / "fixtures" / "machines"
BUILD_CODES = {"extension-build-mismatch", "build-toolchain-missing", "build-jobs-memory"}
NVCC = shutil.which("nvcc")
HOST_CONFIG = Path("/usr/local/cuda-13.0/include/crt/host_config.h")


def machine(name: str) -> Facts:
    return complete(load_facts(MACHINES / f"{name}.json"))


def build_findings(facts: Facts, code: str | None = None):
    return [f for f in diagnose(facts) if f.code in BUILD_CODES and (code is None or f.code == code)]


def with_build(facts: Facts, **changes) -> Facts:
    return dataclasses.replace(facts, build=dataclasses.replace(facts.build, **changes))


# --- parsers on verbatim outputs -------------------------------------------------------------------

@pytest.mark.parametrize("text, expected", [
    # this machine (Debian 12): `gcc --version`, `c++ --version`
    ("gcc (Debian 12.2.0-14+deb12u1) 12.2.0\nCopyright (C) 2022 Free Software Foundation, Inc.\n", ("gcc", "12.2.0")),
    ("c++ (Debian 12.2.0-14+deb12u1) 12.2.0\nCopyright (C) 2022 Free Software Foundation, Inc.\n", ("gcc", "12.2.0")),
    # Ubuntu 24.04's gcc-13 and clang-18, Fedora's gcc 14, Windows cl.exe (its banner goes to stderr)
    ("gcc (Ubuntu 13.2.0-23ubuntu4) 13.2.0\nCopyright (C) 2023 Free Software Foundation, Inc.\n", ("gcc", "13.2.0")),
    ("gcc (GCC) 14.2.1 20240912 (Red Hat 14.2.1-3)\nCopyright (C) 2024 Free Software Foundation, Inc.\n", ("gcc", "14.2.1")),
    ("Ubuntu clang version 18.1.3 (1ubuntu1)\nTarget: x86_64-pc-linux-gnu\nThread model: posix\n", ("clang", "18.1.3")),
    ("Microsoft (R) C/C++ Optimizing Compiler Version 19.38.33135 for x64\nCopyright (C) Microsoft Corporation.  "
     "All rights reserved.\n", ("msvc", "19.38.33135")),
    ("", (None, None)),
])
def test_compiler_versions(text, expected):
    assert build_probe.parse_compiler_version(text) == expected


def test_meminfo():
    text = "MemTotal:       24683656 kB\nMemFree:         1000000 kB\nMemAvailable:   24202964 kB\n"
    assert build_probe.parse_mem_available_mib(text) == 23635


@pytest.mark.skipif(not HOST_CONFIG.is_file(), reason="no CUDA 13.0 toolkit at /usr/local/cuda-13.0")
def test_host_config_of_the_real_cuda_13_toolkit_agrees_with_the_matrix():
    gcc_max = build_probe.parse_host_config_gcc_max(HOST_CONFIG.read_text(errors="replace"))
    assert gcc_max == 15
    _, high, _ = compiler_range("13.0", "gcc")
    assert high == (gcc_max + 1,)  # the matrix's exclusive bound is the toolkit's own "#if __GNUC__ > 15"


def test_host_compiler_matrix_is_ordered_and_complete():
    rows = load("host_compilers")["cuda"]
    versions = [tuple(int(x) for x in r["cuda"].split(".")) for r in rows]
    assert versions == sorted(versions) and len(set(versions)) == len(versions)
    for row in rows:
        assert row["checked"] and "cpp_extension.py" in row["source"] and "docs.nvidia.com" in row["source"]
        for kind in ("gcc", "clang"):
            if f"{kind}_min" in row:
                low, high, _ = compiler_range(row["cuda"], kind)
                assert low < high


def test_compiler_range_accessor_reads_the_matrix_rows():
    row = next(r for r in load("host_compilers")["cuda"] if "clang_min" in r)
    low, high, source = compiler_range(row["cuda"], "clang")
    assert (low, high, source) == (version_numbers(row["clang_min"]), version_numbers(row["clang_max_exclusive"]),
                                   row["source"])
    assert compiler_range("1.0", "gcc") is None and compiler_range(row["cuda"], "icc") is None
    assert version_numbers("gcc 13.2.0") == (13, 2, 0)
    with pytest.raises(ValueError):
        version_numbers("none")


@pytest.mark.parametrize("text, cc, covered", [
    ("8.0", "8.6", True),  # a cubin runs on a later minor of its major
    ("8.6", "8.0", False),
    ("7.5;8.0;8.6;9.0", "12.0", False),
    ("8.0+PTX", "12.0", True),  # PTX is JIT-compiled for newer GPUs
    ("9.0a", "9.0", True),
    ("9.0a", "10.0", False),
    ("7.0 7.5", "8.9", False),
])
def test_arch_coverage(text, cc, covered):
    assert arch_covers(parse_arch_list(text), cc) is covered


def test_named_architectures_are_not_judged():
    assert parse_arch_list("Ampere;Hopper") is None


# --- the rules on recorded machines ---------------------------------------------------------------

@pytest.mark.parametrize("name, code, severity, words", [
    ("build-nvcc-major", "extension-build-mismatch", "error", "PyTorch refuses"),
    ("build-nvcc-minor", "extension-build-mismatch", "warning", "minor mismatch"),
    ("build-gcc-too-new", "extension-build-mismatch", "error", "gcc 14.2.1 is newer"),
    ("build-no-toolkit", "extension-build-mismatch", "error", "CUDA_HOME is not set"),
    ("build-cudahome-differs", "extension-build-mismatch", "warning", "CUDA_HOME=/usr/local/cuda-12.4 is CUDA 12.4"),
    ("build-arch-missing", "extension-build-mismatch", "error", "has no code for this machine's GPU"),
    ("build-many-archs", "extension-build-mismatch", "info", "6 architectures"),
    ("build-tools-missing", "build-toolchain-missing", "warning", "ninja"),
    ("build-tools-missing", "build-toolchain-missing", "error", "Python.h"),
    ("build-tools-missing", "build-jobs-memory", "warning", "16 parallel compile jobs"),
])
def test_each_build_finding_fires_on_its_machine(name, code, severity, words):
    found = [f for f in build_findings(machine(name), code) if words in f.title]
    assert found, (name, [f.title for f in build_findings(machine(name))])
    assert found[0].severity == severity and found[0].fix


def test_a_clean_build_machine_has_no_build_finding():
    assert build_findings(machine("build-clean")) == []


def test_near_misses():
    clean = machine("build-clean")
    assert not build_findings(with_build(clean, nvcc_version="12.4", cuda_home_version="12.4"))
    assert not build_findings(with_build(clean, torch_cuda_arch_list="8.0"))  # sm_80 cubins run on the 4090
    assert not build_findings(with_build(clean, max_jobs="20"))  # 40 GiB of 56 free
    assert build_findings(with_build(clean, max_jobs="40"), "build-jobs-memory")
    gcc13 = [dataclasses.replace(c, version="13.3.0") for c in clean.build.compilers]
    assert not build_findings(with_build(clean, compilers=gcc13))  # the toolkit says gcc <= 13
    # the toolkit's own host_config.h decides over the matrix when it was read
    assert build_findings(with_build(clean, gcc_max=12))
    no_rules = dataclasses.replace(machine("build-nvcc-major"), build=None)
    assert not build_findings(no_rules)  # without --build nothing is judged


def test_the_mismatch_fix_is_the_planners_toolkit():
    from envdoctor.plan.cuda_toolkit import plan_toolkit

    recorded = machine("build-nvcc-major")  # on Ubuntu 22.04: NVIDIA's ubuntu2404 repository has no CUDA 12.4
    facts = dataclasses.replace(recorded, host=dataclasses.replace(recorded.host, distro="Ubuntu 22.04"))
    finding = build_findings(facts, "extension-build-mismatch")[0]
    plan = plan_toolkit(facts)
    assert plan.ok and plan.version == "12.4"
    assert finding.fix[:len(plan.commands)] == plan.commands


def test_a_cpu_torch_is_information_not_an_error():
    facts = machine("build-clean")
    cpu = dataclasses.replace(facts, python=dataclasses.replace(facts.python, packages={"torch": "2.6.0+cpu"}))
    found = build_findings(cpu, "extension-build-mismatch")
    assert [f.severity for f in found] == ["info"]


# --- this machine: the real CUDA 13.0 toolkit and gcc ---------------------------------------------

@pytest.fixture(scope="module")
def real_build():
    ctx = ProbeContext(python=sys.executable)
    return build_probe.probe(ctx, sys.executable), ctx


@pytest.mark.skipif(NVCC is None, reason="no nvcc on PATH")
def test_probe_reads_this_machines_toolkit(real_build):
    b, ctx = real_build
    assert ctx.errors == []
    out = subprocess.run([NVCC, "--version"], capture_output=True, text=True, timeout=60).stdout
    assert b.nvcc_version and f"release {b.nvcc_version}," in out
    assert os.path.isfile(os.path.join(b.nvcc_root, "bin", "nvcc"))
    host = next(c for c in b.compilers if c.role == "nvcc-host")
    if shutil.which("gcc"):
        version = subprocess.run(["gcc", "-dumpfullversion"], capture_output=True, text=True, timeout=30).stdout.strip()
        assert (host.kind, host.version) == ("gcc", version)
    assert b.python_h is os.path.isfile(os.path.join(b.python_include, "Python.h"))


@pytest.mark.skipif(NVCC is None, reason="no nvcc on PATH")
def test_cuda_home_is_the_one_torch_finds(real_build):
    cpp_extension = pytest.importorskip("torch.utils.cpp_extension")
    b, _ = real_build
    assert b.cuda_home == cpp_extension._find_cuda_home()


@pytest.mark.skipif(NVCC is None, reason="no nvcc on PATH")
def test_verdicts_on_this_machine_match_what_really_happens(real_build, tmp_path):
    """Where the rules find no host-compiler problem, nvcc really compiles a kernel with that compiler;
    the missing-headers finding fires exactly when CUDA_HOME has no cuda_runtime.h."""
    b, _ = real_build
    facts = dataclasses.replace(Facts(), build=b, recorded=("build",))
    found = build_findings(facts)
    compiler_verdict = [f for f in found if "nvcc accepts" in f.title]
    source = tmp_path / "k.cu"
    source.write_text("__global__ void k(float *x) { x[threadIdx.x] = 1.0f; }\nint main() { return 0; }\n")
    compiled = subprocess.run([NVCC, "-c", str(source), "-o", str(tmp_path / "k.o")], capture_output=True, text=True,
                              timeout=300)
    assert (compiled.returncode == 0) == (not compiler_verdict), compiled.stderr[-2000:]
    headers = os.path.isfile(os.path.join(b.cuda_home, "include", "cuda_runtime.h"))
    assert any("has no CUDA headers" in f.title for f in found) == (not headers)


def test_cli_check_build_on_this_machine():
    result = subprocess.run([sys.executable, "-m", "envdoctor", "check", "--build", "--json"], capture_output=True,
                            text=True, timeout=180, cwd=ROOT)
    assert result.returncode in (0, 1), result.stderr
    report = json.loads(result.stdout)
    assert "build" in report["facts"]["recorded"] and report["facts"]["build"]["cpu_count"]
    assert "build" in report["timings"]
    plain = subprocess.run([sys.executable, "-m", "envdoctor", "check", "--json"], capture_output=True, text=True,
                           timeout=180, cwd=ROOT)
    assert json.loads(plain.stdout)["facts"]["build"] is None  # without --build nothing runs a compiler


def test_cli_check_build_replays_a_recorded_machine():
    result = subprocess.run([sys.executable, "-m", "envdoctor", "check", "--build", "--facts",
                             str(MACHINES / "build-nvcc-major.json")], capture_output=True, text=True, timeout=120,
                            cwd=ROOT)
    assert result.returncode == 1, result.stderr
    assert "CUDA extension builds" in result.stdout and "extension-build-mismatch" in result.stdout
    # Ubuntu 24.04: NVIDIA's repository has no 12.4, so the fix names the planner rather than an apt command
    assert "envdoctor install cuda-toolkit --cuda 12.4" in result.stdout and "apt-get install" not in result.stdout


# --- one judgement of a toolkit against torch's CUDA, one finding per cause -----------------------------

def test_a_mismatched_cuda_home_gives_one_finding_with_and_without_build():
    facts = machine("build-nvcc-major")  # torch 2.6.0+cu124, the toolkit in /usr/local/cuda-11.8
    facts = dataclasses.replace(with_build(facts, cuda_home_from="CUDA_HOME"),
                                env={**facts.env, "CUDA_HOME": "/usr/local/cuda-11.8"})
    codes = ("library-path-shadowing", "extension-build-mismatch")
    with_build_rules = [f for f in diagnose(facts) if f.code in codes]
    assert [(f.code, f.severity) for f in with_build_rules] == [("extension-build-mismatch", "error")]
    without = [f for f in diagnose(dataclasses.replace(facts, build=None)) if f.code in codes]
    assert [f.code for f in without] == ["library-path-shadowing"]  # plain `check` still says it, once


@pytest.mark.parametrize("toolkit, torch, expected", [
    ("11.8", "12.4", "major"), ("12.8", "12.4", "minor"), ("12.4.1", "12.4", None), ("12.4", None, None),
    (None, "12.4", None), ("13.0", "12.9", "major"),
])
def test_toolkit_vs_torch_is_the_one_judgement(toolkit, torch, expected):
    from envdoctor.diagnose.build import toolkit_vs_torch

    assert toolkit_vs_torch(toolkit, torch) == expected


@pytest.mark.parametrize("text", ["570.124.04", "12.8", "555.99", "13.2.0", "8.6"])
def test_version_numbers_agrees_with_the_other_version_readers(text):
    from envdoctor.diagnose._common import version_tuple as lenient
    from envdoctor.matrix.drivers import version_tuple as strict

    assert version_numbers(text) == strict(text) == lenient(text)
    assert version_numbers(f"gcc {text} (Ubuntu)") == strict(text)
    assert version_numbers(f"cuda>={text}") == strict(text)
