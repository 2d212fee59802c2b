"""matrices/base_images.toml through container/base_images.py: image references -> what they contain."""

from __future__ import annotations

import pytest

from envdoctor.container.base_images import _data, describe, require_cuda_driver, split_reference

CASES = [
    # reference, family, distro, glibc, cuda, flavour, nvcc, cudnn, python
    ("nvidia/cuda:12.4.1-runtime-ubuntu22.04", "nvidia-cuda", "Ubuntu 22.04", "2.35", "12.4.1", "runtime", False, None, None),
    ("nvidia/cuda:12.4.1-cudnn-devel-ubuntu22.04", "nvidia-cuda", "Ubuntu 22.04", "2.35", "12.4.1", "devel", True, "9", None),
    ("nvidia/cuda:11.8.0-cudnn8-runtime-ubuntu20.04", "nvidia-cuda", "Ubuntu 20.04", "2.31", "11.8.0", "runtime", False, "8", None),
    ("nvidia/cuda:11.3.1-runtime-cudnn8-ubuntu20.04", "nvidia-cuda", "Ubuntu 20.04", "2.31", "11.3.1", "runtime", False, "8", None),
    ("nvcr.io/nvidia/cuda:12.8.0-base-ubi9", "nvidia-cuda", "RHEL-compatible 9", "2.34", "12.8.0", "base", False, None, None),
    ("nvidia/cuda:12.6.3-devel-rockylinux8", "nvidia-cuda", "RHEL-compatible 8", "2.28", "12.6.3", "devel", True, None, None),
    ("nvidia/cuda:13.0.0-cudnn-runtime-ubuntu24.04@sha256:abc", "nvidia-cuda", "Ubuntu 24.04", "2.39", "13.0.0", "runtime", False, "9", None),
    # pytorch/pytorch: OS and Python are docker.Makefile defaults that changed across releases: unknown
    ("pytorch/pytorch:2.6.0-cuda12.4-cudnn9-runtime", "pytorch", None, None, "12.4", "runtime", False, "9", None),
    # NGC rows are per container and release, from the release notes; nvcc is not stated there: unknown
    ("nvcr.io/nvidia/paddlepaddle:24.05-py3", "ngc", "Ubuntu 22.04", "2.35", "12.4.1", None, None, "9.1.0.70", "3.10"),
    ("nvcr.io/nvidia/paddlepaddle:23.11-py3", "ngc", "Ubuntu 22.04", "2.35", "12.3.0", None, None, "8.9.5", "3.8"),
    ("nvcr.io/nvidia/tensorflow:21.05-tf2-py3", "ngc", "Ubuntu 20.04", "2.31", "11.3.0", None, None, "8.2.0.51", "3.8"),
    ("nvcr.io/nvidia/pytorch:25.12-py3", "ngc", None, None, "13.1.0", None, None, None, "3.12"),  # OS, cuDNN not read
    # a release no row names is unknown, and one container's row never describes another container
    ("nvcr.io/nvidia/pytorch:24.05-py3", "ngc", None, None, None, None, None, None, None),
    ("nvcr.io/nvidia/jax:24.05-py3", "ngc", None, None, None, None, None, None, None),
    ("python:3.12-slim-bookworm", "python", "Debian 12", "2.36", None, None, False, None, "3.12"),
    ("python:3.11.9-bullseye", "python", "Debian 11", "2.31", None, None, False, None, "3.11"),
    ("python:3.12", "python", None, None, None, None, False, None, "3.12"),  # follows Debian's current release
    ("python:3.12-alpine3.20", "python", "Alpine", None, None, None, False, None, "3.12"),
    ("ubuntu:jammy", "ubuntu", "Ubuntu 22.04", "2.35", None, None, False, None, None),
    ("debian:bookworm-slim", "debian", "Debian 12", "2.36", None, None, False, None, None),
    ("nvcr.io/nvidia/l4t-base:r36.2.0", "l4t", "Ubuntu 22.04", "2.35", None, None, None, None, None),
    ("myorg/trainer:1.0", None, None, None, None, None, None, None, None),
]


@pytest.mark.parametrize("reference,family,distro,glibc,cuda,flavour,nvcc,cudnn,python", CASES, ids=[c[0] for c in CASES])
def test_describe(reference, family, distro, glibc, cuda, flavour, nvcc, cudnn, python):
    image = describe(reference)
    assert image.family == family
    assert (image.distro.label if image.distro else None) == distro
    assert (image.distro.glibc if image.distro else None) == glibc
    assert (image.cuda, image.flavour, image.nvcc, image.cudnn, image.python) == (cuda, flavour, nvcc, cudnn, python)


def test_require_cuda_and_its_driver():
    assert describe("nvidia/cuda:12.4.1-runtime-ubuntu22.04").require_cuda == "12.4"
    assert require_cuda_driver("12.4") == "550"
    assert require_cuda_driver("11.8") == "520"


def test_framework_images_ship_their_framework():
    assert describe("pytorch/pytorch:2.6.0-cuda12.4-cudnn9-runtime").packages == {"torch": "2.6.0+cu124"}
    tf = describe("tensorflow/tensorflow:2.17.0-gpu")
    assert tf.packages == {"tensorflow": "2.17.0"} and tf.extras == ("and-cuda",)
    assert describe("tensorflow/tensorflow:2.17.0").extras == ()


def test_split_reference():
    assert split_reference("localhost:5000/team/img") == ("localhost:5000/team/img", "latest")
    assert split_reference("Nvidia/CUDA:12.4.1-base-ubuntu22.04") == ("nvidia/cuda", "12.4.1-base-ubuntu22.04")


def test_ngc_rows_name_their_release_notes():
    rows = _data()["ngc_release"]
    assert rows
    for row in rows:
        assert row["containers"] and row["releases"] and row["checked"] == "2026-12-01"
        assert row["source"].startswith("https://docs.nvidia.com/deeplearning/")
    seen = [(c, r) for row in rows for c in row["containers"] for r in row["releases"]]
    assert len(seen) == len(set(seen))  # one row per container and release


def test_ngc_documented_framework_and_driver_requirement():
    image = describe("nvcr.io/nvidia/pytorch:25.12-py3")
    assert image.packages == {"torch": "2.10.0a0+b4e4ee81d3"} and image.require_cuda == "13.1"
    assert image.env == {}  # no release note read states TORCH_CUDA_ARCH_LIST


def test_nvjitlink_exists_only_from_cuda_12():
    minimum = {row["name"]: row["min_cuda"] for row in _data()["cuda_library"]}
    assert minimum["nvjitlink"] == "12.0"
    assert "nvjitlink" not in describe("nvidia/cuda:11.8.0-runtime-ubuntu22.04").libraries
    assert "nvjitlink" in describe("nvidia/cuda:12.4.1-runtime-ubuntu22.04").libraries
    assert "nvjitlink" not in describe("pytorch/pytorch:2.0.1-cuda11.7-cudnn8-runtime").libraries
    assert "cublas" in describe("nvidia/cuda:11.8.0-devel-ubuntu22.04").libraries


def test_every_row_names_a_source_url_and_no_unused_keys():
    for row in _data()["distro"]:
        assert "http" in row["source"], row  # the rhel rows included: a page, not "package manifest"
    assert all("default_os" not in row for row in _data()["family"])
    for table in ("cuda_library", "cuda_package"):
        for row in _data()[table]:
            assert row["source"].startswith("https://") and row["checked"], row


def test_wheel_platform_rows_give_the_glibc_a_manylinux_tag_needs():
    from envdoctor.container.base_images import wheel_platform_glibc
    from envdoctor.matrix.loader import MatrixError

    assert wheel_platform_glibc("manylinux2014") == "2.17"  # PEP 599
    assert wheel_platform_glibc("manylinux_2_28") == "2.28"  # PEP 600: manylinux_x_y needs glibc x.y
    with pytest.raises(MatrixError):
        wheel_platform_glibc("manylinux_9_99")
