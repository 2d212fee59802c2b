"""CUDA toolkit probe: version parsers on verbatim files, toolkit trees, the real CUDA 13.0 here."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from envdoctor.probe import ProbeContext, toolkit
from probe_helpers import SYSTEM_PATH, context, link, put, raw, script


@pytest.mark.parametrize("fixture,version", [
    ("13.0.88_this_machine.txt", "13.0"),
    ("12.4.131.txt", "12.4"),
    ("11.8.89.txt", "11.8"),
    ("11.5.119.txt", "11.5"),
    ("10.2.89.txt", "10.2"),
    ("10.2.300_jetson.txt", "10.2"),
])
def test_nvcc_version(fixture, version):
    assert toolkit.parse_nvcc_version(raw(f"nvcc/{fixture}")) == version


def test_version_files():
    assert toolkit.parse_version_json(raw("cuda/version_11.5.2.json")) == "11.5"
    assert toolkit.parse_version_txt(raw("cuda/version_10.0.130.txt")) == "10.0"
    assert toolkit.parse_cudart_header(raw("cuda/cuda_runtime_api_13.0_excerpt.h")) == "13.0"
    assert toolkit.parse_version_json('{"cuda": {"name": "CUDA SDK", "version": "11.8.20220929"}}') == "11.8"
    assert toolkit.parse_version_json("not json") is None


def test_wrapper_script():
    assert toolkit.wrapped_nvcc('#!/bin/sh\nexec /usr/local/cuda-13.0/bin/nvcc "$@"\n') == "/usr/local/cuda-13.0/bin/nvcc"
    assert toolkit.wrapped_nvcc("\x7fELF...") is None


def _toolkit_tree(root: Path, name: str, version_json: str | None = None, header: str | None = None) -> None:
    script(root, f"/usr/local/{name}/bin/nvcc", "echo should-not-run; exit 3")
    if version_json:
        put(root, f"/usr/local/{name}/version.json", version_json)
    if header:
        put(root, f"/usr/local/{name}/include/cuda_runtime_api.h", header)


def test_every_toolkit_and_the_active_one(tmp_path):
    _toolkit_tree(tmp_path, "cuda-11.5", version_json=raw("cuda/version_11.5.2.json"))
    _toolkit_tree(tmp_path, "cuda-13.0", header=raw("cuda/cuda_runtime_api_13.0_excerpt.h"))
    put(tmp_path, "/usr/local/cuda-10.0/version.txt", raw("cuda/version_10.0.130.txt"))
    link(tmp_path, "/usr/local/cuda", "/usr/local/cuda-11.5")
    ctx = context(tmp_path)
    active, found = toolkit.probe(ctx)
    assert [(t.root, t.version, t.found_by) for t in found] == [
        ("/usr/local/cuda-11.5", "11.5", "/usr/local"),
        ("/usr/local/cuda-10.0", "10.0", "/usr/local"),
        ("/usr/local/cuda-13.0", "13.0", "/usr/local"),
    ]
    assert active.root == "/usr/local/cuda-11.5"  # what /usr/local/cuda points to
    assert ctx.errors == []  # no nvcc was run: files answered


def test_nvcc_on_path_through_a_wrapper_wins(tmp_path):
    _toolkit_tree(tmp_path, "cuda-13.0", header=raw("cuda/cuda_runtime_api_13.0_excerpt.h"))
    _toolkit_tree(tmp_path, "cuda-12.4", version_json='{"cuda": {"name": "CUDA SDK", "version": "12.4.1"}}')
    link(tmp_path, "/usr/local/cuda", "cuda-12.4")
    wrapper = script(tmp_path, "/opt/bin/nvcc", 'exec /usr/local/cuda-13.0/bin/nvcc "$@"')
    active, found = toolkit.probe(context(tmp_path, path=f"{wrapper.parent}:{SYSTEM_PATH}"))
    assert (active.root, active.version, active.found_by, active.nvcc) == ("/usr/local/cuda-13.0", "13.0", "PATH", "/opt/bin/nvcc")
    assert {t.root for t in found} == {"/usr/local/cuda-13.0", "/usr/local/cuda-12.4"}


def test_cuda_home_outside_usr_local(tmp_path):
    put(tmp_path, "/opt/tk/version.json", '{"cuda": {"name": "CUDA SDK", "version": "12.8.1"}}')
    active, found = toolkit.probe(context(tmp_path, CUDA_HOME="/opt/tk"))
    assert (active.root, active.version, active.found_by, active.nvcc) == ("/opt/tk", "12.8", "CUDA_HOME", None)


def test_cuda_home_pointing_nowhere_is_ignored(tmp_path):
    assert toolkit.probe(context(tmp_path, CUDA_HOME="/nope")) == (None, [])


def test_version_from_wheel_dist_info(tmp_path):
    script(tmp_path, "/usr/local/cuda-13.0/bin/nvcc", "exit 3")
    put(tmp_path, "/usr/local/cuda-13.0/dist-info/nvidia_cuda_nvcc-13.0.88.dist-info/METADATA", "Name: nvidia-cuda-nvcc\n")
    active, _ = toolkit.probe(context(tmp_path))
    assert active.version == "13.0"


def test_nvcc_run_when_no_file_tells(tmp_path):
    script(tmp_path, "/usr/local/cuda-12.4/bin/nvcc", f"cat '{Path(__file__).parent / 'fixtures/raw/nvcc/12.4.131.txt'}'")
    active, _ = toolkit.probe(context(tmp_path))
    assert active.version == "12.4"


@pytest.mark.skipif(not Path("/usr/local/cuda-13.0/bin/nvcc").exists(), reason="the development machine's CUDA 13.0")
def test_real_toolkit_on_this_machine():
    """This machine: /usr/local/bin/nvcc is a wrapper for /usr/local/cuda-13.0, /usr/local/cuda links there."""
    import os

    ctx = ProbeContext(python=sys.executable, environ=dict(os.environ))
    active, found = toolkit.probe(ctx)
    assert active is not None and active.version == "13.0" and active.root == "/usr/local/cuda-13.0"
    assert active.found_by == ("PATH" if shutil.which("nvcc") else "/usr/local")
    assert [t.root for t in found].count("/usr/local/cuda-13.0") == 1
