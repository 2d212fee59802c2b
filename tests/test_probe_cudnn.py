"""cuDNN probe: header encodings (v8 vs v9), ldconfig output, pip wheels, conda, header search."""

from __future__ import annotations

import sys

import pytest

from envdoctor.facts import CudaToolkit, PythonEnv
from envdoctor.probe import cudnn
from probe_helpers import SYSTEM_PATH, context, link, put, raw, script


@pytest.mark.parametrize("fixture,version", [
    ("cudnn_version_8.9.7_excerpt.h", "8.9.7"),  # CUDNN_VERSION = M*1000 + m*100 + p
    ("cudnn_version_v9_jetson_jp6_grep.txt", "9.3.0"),  # CUDNN_VERSION = M*10000 + m*100 + p
    ("cudnn_version_9.16.0_grep.txt", "9.16.0"),
    ("cudnn_h_5.1.10_grep.txt", "5.1.10"),  # cuDNN <= 7 kept the defines in cudnn.h
])
def test_header_versions(fixture, version):
    assert cudnn.parse_cudnn_header(raw(f"cudnn/{fixture}")) == version


def test_header_without_defines():
    assert cudnn.parse_cudnn_header(raw("cuda/cuda_runtime_api_13.0_excerpt.h")) is None


def test_ldconfig_output():
    assert cudnn.parse_ldconfig(raw("ldconfig/this_machine.txt")) == []  # CUDA 13.0 libraries, no cuDNN
    assert cudnn.parse_ldconfig(raw("ldconfig/cudnn9_install_guide.txt")) == [
        ("libcudnn.so.9", "9", "/usr/lib/x86_64-linux-gnu/libcudnn.so.9")]
    sub_library = "\tlibcudnn_ops.so.9 (libc6,x86-64) => /usr/lib/x86_64-linux-gnu/libcudnn_ops.so.9\n"
    assert cudnn.parse_ldconfig(sub_library) == []


def test_library_file_name_gives_full_version():
    assert cudnn.version_from_library_name("/usr/lib/x86_64-linux-gnu/libcudnn.so.9.3.0", "9") == "9.3.0"
    assert cudnn.version_from_library_name("/usr/lib/x86_64-linux-gnu/libcudnn.so.9", "9") == "9"


def test_pip_and_conda():
    env = PythonEnv(packages={"nvidia-cudnn-cu12": "9.1.0.70", "torch": "2.6.0"},
                    nvidia_wheel_dirs={"nvidia.cudnn": "/v/lib/python3.12/site-packages/nvidia/cudnn"},
                    conda_packages={"cudnn": "8.9.7.29"}, env_path="/opt/conda/envs/x")
    found = cudnn.from_pip(env) + cudnn.from_conda(env)
    assert [(c.version, c.source, c.path) for c in found] == [
        ("9.1.0", "pip:nvidia-cudnn-cu12", "/v/lib/python3.12/site-packages/nvidia/cudnn"),
        ("8.9.7", "conda:cudnn", "/opt/conda/envs/x"),
    ]


def test_headers_in_system_toolkit_and_jetson_alternatives(tmp_path):
    # JetPack 6: /usr/include/cudnn_version.h -> /etc/alternatives/... -> aarch64-linux-gnu/cudnn_version_v9.h
    put(tmp_path, "/usr/include/aarch64-linux-gnu/cudnn_version_v9.h", raw("cudnn/cudnn_version_v9_jetson_jp6_grep.txt"))
    link(tmp_path, "/etc/alternatives/cudnn_version_h", "/usr/include/aarch64-linux-gnu/cudnn_version_v9.h")
    link(tmp_path, "/usr/include/cudnn_version.h", "/etc/alternatives/cudnn_version_h")
    put(tmp_path, "/opt/cuda-11.8/include/cudnn_version.h", raw("cudnn/cudnn_version_8.9.7_excerpt.h"))
    ctx = context(tmp_path)
    found = cudnn.from_headers(ctx, PythonEnv(), [CudaToolkit(version="11.8", root="/opt/cuda-11.8")])
    assert [(c.version, c.source) for c in found] == [
        ("9.3.0", "header:/usr/include/cudnn_version.h"),  # the same file as the v9 one: listed once
        ("8.9.7", "header:/opt/cuda-11.8/include/cudnn_version.h"),
    ]


def test_header_in_pip_wheel_dir_when_the_package_is_unknown(tmp_path):
    put(tmp_path, "/v/nvidia/cudnn/include/cudnn_version.h", raw("cudnn/cudnn_version_9.16.0_grep.txt"))
    env = PythonEnv(nvidia_wheel_dirs={"nvidia.cudnn": "/v/nvidia/cudnn"})
    found = cudnn.from_headers(context(tmp_path), env, [])
    assert [(c.version, c.path) for c in found] == [("9.16.0", "/v/nvidia/cudnn/include/cudnn_version.h")]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="ldconfig is Linux only")
def test_ldconfig_is_run_and_links_followed(tmp_path):
    put(tmp_path, "/usr/lib/x86_64-linux-gnu/libcudnn.so.9.3.0", b"\x7fELF")
    link(tmp_path, "/usr/lib/x86_64-linux-gnu/libcudnn.so.9", "libcudnn.so.9.3.0")
    fake = script(tmp_path, "/fakebin/ldconfig", f"cat '{(tmp_path / 'out.txt')}'")
    put(tmp_path, "/out.txt", "3 libs found in cache `/etc/ld.so.cache'\n"
        "\tlibcudnn_ops.so.9 (libc6,x86-64) => /usr/lib/x86_64-linux-gnu/libcudnn_ops.so.9\n"
        "\tlibcudnn.so.9 (libc6,x86-64) => /usr/lib/x86_64-linux-gnu/libcudnn.so.9\n"
        "\tlibcudnn.so (libc6,x86-64) => /usr/lib/x86_64-linux-gnu/libcudnn.so\n")
    ctx = context(tmp_path, path=f"{fake.parent}:{SYSTEM_PATH}")
    found = cudnn.from_ldconfig(ctx)
    assert [(c.version, c.source, c.path) for c in found] == [("9.3.0", "ldconfig", "/usr/lib/x86_64-linux-gnu/libcudnn.so.9")]


def test_whole_probe_on_empty_machine(tmp_path):
    ctx = context(tmp_path, path="/nonexistent")
    assert cudnn.probe(ctx, PythonEnv(), []) == []
    assert ctx.errors == []
