"""`envdoctor dockerfile`: the parser, the described machine, and every finding on a Dockerfile that
triggers it and a close one that does not (the real CLI in a subprocess). Real projects' Dockerfiles
are in tests/fixtures/dockerfiles/real/ (repository, path and commit in each header)."""

from __future__ import annotations

import json

import pytest

from conftest import FIXTURES, judge_build_file, run_cli
from envdoctor.container.parse import BuildFileError, parse_dockerfile
from envdoctor.container.shell import run_steps
from envdoctor.container.to_facts import describe_stage

DOCKERFILES = FIXTURES / "dockerfiles"
MADE = DOCKERFILES / "made"
REAL = DOCKERFILES / "real"
HOSTS = DOCKERFILES / "hosts"
ENV = {"NO_COLOR": "1", "COLUMNS": "200"}


def judge(path, *args):
    return judge_build_file("dockerfile", path, *args)


def problems(document) -> set[tuple[str, str]]:
    return {(f["code"], f["severity"]) for f in document["findings"] if f["severity"] != "info"}


def codes(document) -> set[str]:
    return {f["code"] for f in document["findings"]}


# --- every finding: a Dockerfile that triggers it, and a close one that does not -----------------------

CASES = [
    # (triggers, close, code, severity, line of the finding)
    ("cpu-torch", "cuda-torch", "cpu-only-build", "error", 4),
    ("arm-torch", "cuda-torch", "cpu-only-build", "error", 4),
    ("jax-plain", "jax-cuda", "cpu-only-build", "error", 4),
    ("paddle-cpu", "paddle-gpu", "cpu-only-build", "error", 4),
    ("tf-plain", "tf-and-cuda", "cuda-libs-missing", "error", 4),
    ("jax-local", "jax-local-cudnn", "cuda-libs-missing", "error", 4),
    ("companion", "companion-ok", "companion-mismatch", "error", 4),
    ("python313", "python312", "python-unsupported", "error", 3),
    ("no-python", "cuda-torch", "python-unsupported", "error", 3),
    ("alpine", "python312", "glibc-too-old", "error", 2),
    ("ld-path", "ld-path-ok", "library-path-shadowing", "warning", 5),
    ("apex-runtime", "apex-devel", "extension-build-mismatch", "error", 5),
    ("flash-heredoc", "apex-devel", "extension-build-mismatch", "error", 5),
    ("visible-void", "visible-all", "container-gpu-missing", "error", 3),
    ("visible-void", "visible-all", "cuda-visible-devices", "warning", 3),
    ("jetson-registry", "jetson-index", "jetson-wrong-wheel", "error", 4),
]


@pytest.mark.parametrize("trigger,close,code,severity,line", CASES, ids=[f"{c[2]}:{c[0]}" for c in CASES])
def test_finding_fires_and_its_close_case_does_not(trigger, close, code, severity, line):
    fired = judge(MADE / f"{trigger}.Dockerfile")
    found = [f for f in fired["findings"] if f["code"] == code]
    assert found and found[0]["severity"] == severity, fired["findings"]
    assert found[0]["line"] == line
    assert code not in codes(judge(MADE / f"{close}.Dockerfile"))


def test_a_wheel_brings_its_own_cuda_runtime_the_base_image_cuda_does_not_decide():
    # FROM nvidia/cuda:11.8.0-runtime + torch 2.6.0 from the cu124 index: nothing to "match"; the host driver decides.
    document = judge(MADE / "cuda-torch.Dockerfile")
    assert not problems(document)
    requirement = next(f for f in document["findings"] if f["code"] == "host-driver-required")
    assert requirement["severity"] == "info"
    assert "525.60.13" in requirement["title"]  # CUDA 12.x wheels: minor-version compatibility minimum
    assert "independent of the base image's CUDA" in requirement["detail"]
    assert document["facts"]["python"]["packages"]["torch"] == "2.6.0+cu124"
    assert "cu118" not in json.dumps(document["findings"])


def test_host_driver_checked_against_facts_host():
    old = judge(MADE / "cuda-torch.Dockerfile", "--facts", str(HOSTS / "driver-470.json"))
    too_old = [f for f in old["findings"] if f["code"] == "driver-too-old"]
    assert {f["line"] for f in too_old} == {2, 4}  # the image's NVIDIA_REQUIRE_CUDA (FROM) and torch's wheel (RUN)
    new = judge(MADE / "cuda-torch.Dockerfile", "--facts", str(HOSTS / "driver-570.json"))
    assert "driver-too-old" not in codes(new)


def test_no_gpu_intended_no_gpu_findings():
    document = judge(MADE / "python-cpu.Dockerfile")
    assert not problems(document)
    assert "host-driver-required" not in codes(document)
    assert document["facts"].get("nvidia") is None


def test_corrected_lines():
    cpu = judge(MADE / "cpu-torch.Dockerfile")
    fix = next(f for f in cpu["findings"] if f["code"] == "cpu-only-build")
    assert fix["corrected"].startswith("RUN pip install torch==2.6.0 --index-url https://download.pytorch.org/whl/cu")
    apex = judge(MADE / "apex-runtime.Dockerfile")
    nvcc = next(f for f in apex["findings"] if f["code"] == "extension-build-mismatch")
    assert nvcc["corrected"] == "FROM nvidia/cuda:12.4.1-devel-ubuntu22.04" and nvcc["corrected_line"] == 2
    heredoc = judge(MADE / "flash-heredoc.Dockerfile")
    mismatch = next(f for f in heredoc["findings"] if f["severity"] == "error")
    assert "nvcc is CUDA 11.8" in mismatch["title"] and mismatch["corrected"] == "FROM nvidia/cuda:12.4.0-devel-ubuntu22.04"
    ld = judge(MADE / "ld-path.Dockerfile")
    shadow = next(f for f in ld["findings"] if f["code"] == "library-path-shadowing")
    assert "/usr/local/cuda/lib64" not in (shadow["corrected"] or "")


def test_multistage_args_requirements_file_and_uv():
    document = judge(MADE / "multistage-args.Dockerfile")
    assert document["base_image"]["reference"] == "nvidia/cuda:12.4.1-runtime-ubuntu22.04"  # ARG defaults substituted
    assert [s["name"] for s in document["stages"]] == ["base", "deps", "docs", "final"]
    packages = document["facts"]["python"]["packages"]
    assert packages["torch"] == "2.6.0+cu124"  # from requirements.txt and its --extra-index-url
    assert packages["torchvision"] == "0.20.0+cu124" and packages["jax"] == "0.5.0"
    assert "mkdocs" not in packages  # the docs stage is not in the final stage's chain
    assert problems(document) == {("companion-mismatch", "error"), ("cpu-only-build", "error")}
    lines = {f["code"]: f["line"] for f in document["findings"]}
    assert lines["companion-mismatch"] == 9 and lines["cpu-only-build"] == 14


def test_build_arg_and_target():
    document = judge(MADE / "multistage-args.Dockerfile", "--build-arg", "FLAVOUR=devel", "--target", "base")
    assert document["base_image"]["flavour"] == "devel"
    assert document["facts"]["python"]["packages"] == {}


# --- real projects' Dockerfiles ------------------------------------------------------------------------

def test_real_runtime_image_building_flash_attn():
    # koble-ai/deep-learning-images: flash-attn on the -runtime pytorch image (no nvcc); a prebuilt wheel may save it
    document = judge(REAL / "koble-ai-deep-learning-images.Dockerfile")
    finding = next(f for f in document["findings"] if f["code"] == "extension-build-mismatch")
    assert finding["severity"] == "warning" and finding["line"] == 3
    assert finding["corrected"] == "FROM pytorch/pytorch:2.6.0-cuda12.4-cudnn9-devel"


def test_real_devel_image_without_arch_list():
    document = judge(REAL / "ai-compiler-study-test-attn.Dockerfile")
    assert problems(document) == {("extension-build-mismatch", "warning")}
    assert "TORCH_CUDA_ARCH_LIST" in next(f["title"] for f in document["findings"] if f["severity"] == "warning")


def test_real_pip_without_python():
    document = judge(REAL / "khlam-docker-pytorch.Dockerfile")
    assert ("python-unsupported", "error") in problems(document)
    assert document["facts"]["python"]["packages"]["torch"] == "1.10.1+cu113"  # -f .../cu113/torch_stable.html


def test_an_ngc_release_the_matrix_does_not_know_is_unknown_not_empty():
    document = judge(MADE / "ngc-flash.Dockerfile")
    assert not problems(document)
    # NGC PyTorch 24.05's contents are not in matrices/base_images.toml (its release notes were not verified):
    # unknown, so neither nvcc nor Python is claimed, and nothing is reported as missing
    assert document["base_image"]["cuda"] is None and document["base_image"]["nvcc"] is None
    assert document["facts"]["python"]["version"] is None


def test_real_images_with_nothing_wrong():
    assert not problems(judge(REAL / "alufia-test.Dockerfile"))
    stripedhyena = judge(REAL / "togethercomputer-stripedhyena.Dockerfile")  # NGC 23.04: contents not in the matrix
    assert not problems(stripedhyena)  # unknown is not absent: no "no nvcc" guess
    mteb = judge(REAL / "mteb-multistage.Dockerfile")
    assert not problems(mteb) and mteb["base_image"]["reference"] == "python:3.12-bookworm"
    assert mteb["not_read"]  # `pip install ".[api]"`: the project's own dependencies are unknown


# --- parser units ----------------------------------------------------------------------------------------

def test_parser_continuations_heredocs_json_form_and_mounts():
    text = ("FROM ubuntu:22.04\n"
            "RUN --mount=type=cache,target=/root/.cache \\\n    pip install \\\n      torch==2.6.0   # pinned\n"
            "RUN [\"python3\", \"-m\", \"pip\", \"install\", \"jax[cuda12]==0.5.0\"]\n"
            "RUN <<EOS\n# comment\nconda install -y -c nvidia pytorch-cuda=12.1 && micromamba install -y python=3.11\nEOS\n")
    df = parse_dockerfile(text)
    runs = [i for i in df.stages[0].instructions if i.cmd == "RUN"]
    steps = [s for ins in runs for s in run_steps(ins, {})]
    assert [(s.kind, s.line) for s in steps] == [("pip", 2), ("pip", 5), ("conda", 6), ("conda", 6)]
    assert steps[0].requirements[0].specifier == "==2.6.0"
    assert steps[1].requirements[0].extras == ("cuda12",)
    assert steps[2].channels == ["nvidia"] and steps[3].packages == ["python=3.11"]


def test_arg_substitution_forms():
    df = parse_dockerfile("ARG V=12.4.1\nARG OS\nFROM nvidia/cuda:${V}-runtime-${OS:-ubuntu22.04} AS a\nFROM a\n")
    assert df.stages[0].base == "nvidia/cuda:12.4.1-runtime-ubuntu22.04"
    assert df.chain(df.stage())[0].index == 0
    described = describe_stage(df, df.stage(), None)
    assert described.facts["host"]["glibc"] == "2.35" and described.facts["cuda_toolkit"]["nvcc"] is None


@pytest.mark.parametrize("text,message", [
    ("RUN echo hi\n", "no FROM"),
    ("\x00\x01binary", "binary"),
])
def test_parser_rejects_what_is_not_a_dockerfile(text, message):
    with pytest.raises(BuildFileError, match=message):
        parse_dockerfile(text)


@pytest.mark.parametrize("make", [
    lambda tmp: tmp / "missing" / "Dockerfile",
    lambda tmp: tmp,  # a folder without a Dockerfile
    lambda tmp: (tmp / "Dockerfile.bin").write_bytes(b"\x00\xff\xfe" * 10) and tmp / "Dockerfile.bin",
    lambda tmp: (tmp / "Dockerfile.nofrom").write_text("RUN pip install torch\n") and tmp / "Dockerfile.nofrom",
])
def test_bad_input_is_one_line_and_exit_2(tmp_path, make):
    result = run_cli("dockerfile", str(make(tmp_path)), env=ENV)
    assert result.returncode == 2
    assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr


def test_bad_host_facts_is_exit_2(tmp_path):
    bad = tmp_path / "host.json"
    bad.write_text("{not json")
    result = run_cli("dockerfile", str(MADE / "cuda-torch.Dockerfile"), "--facts", str(bad), env=ENV)
    assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1


def test_console_output_names_lines_and_corrections():
    result = run_cli("dockerfile", str(MADE / "apex-runtime.Dockerfile"), env=ENV)
    assert result.returncode == 1
    assert "line 5: apex compiles CUDA code, and this image has no nvcc [extension-build-mismatch]" in result.stdout
    assert "corrected (line 2): FROM nvidia/cuda:12.4.1-devel-ubuntu22.04" in result.stdout
    assert result.stdout.strip().splitlines()[-1].startswith("1 error")


def _described(text):
    df = parse_dockerfile(text)
    return describe_stage(df, df.stage(), None)


def test_apt_cuda_and_cudnn_packages_add_to_the_image():
    described = _described("FROM ubuntu:22.04\n"
                           "RUN apt-get update && apt-get install -y --no-install-recommends cuda-toolkit-12-4 "
                           "libcudnn9-cuda-12 python3.11 python3-pip\n")
    facts = described.facts
    assert facts["cuda_toolkit"]["version"] == "12.4" and facts["cuda_toolkit"]["nvcc"]
    assert [c["version"] for c in facts["cudnn"]] == ["9"]
    assert facts["python"]["version"] == "3.11"
    assert described.origins["cuda_toolkit"] == 2 and described.origins["cudnn"] == 2


def test_system_cudnn_from_apt_satisfies_a_local_jax(tmp_path):
    dockerfile = tmp_path / "Dockerfile"
    dockerfile.write_text("FROM nvidia/cuda:12.4.1-runtime-ubuntu22.04\n"
                          "RUN apt-get update && apt-get install -y python3-pip libcudnn9-cuda-12=9.1.0.70-1\n"
                          "RUN python3 -m pip install \"jax[cuda12_local]==0.5.0\"\n")
    assert "cuda-libs-missing" not in codes(judge(dockerfile))


def test_conda_and_uv_installs_are_read():
    described = _described("FROM continuumio/miniconda3\n"
                           "RUN micromamba install -y -n base -c conda-forge python=3.11 cuda-nvcc=12.4 cudnn=9.1.0\n"
                           "RUN conda run -n base uv pip install --torch-backend=cu124 torch==2.6.0\n")
    facts = described.facts
    assert facts["python"]["version"] == "3.11"
    assert facts["cuda_toolkit"]["version"] == "12.4" and facts["cudnn"][0]["version"] == "9.1.0"
    assert facts["python"]["packages"]["torch"] == "2.6.0+cu124"


def test_requirements_file_outside_the_context_is_not_read(tmp_path):
    dockerfile = tmp_path / "Dockerfile"
    dockerfile.write_text("FROM nvidia/cuda:12.4.1-runtime-ubuntu22.04\nRUN apt-get install -y python3-pip\n"
                          "RUN pip install -r ../../etc/requirements.txt -r missing.txt\n")
    document = judge(dockerfile)
    assert [n["line"] for n in document["not_read"]] == [3, 3]
    assert "python" not in (document["facts"].get("recorded") or [])  # the package list is not complete


def test_requirements_file_found_through_its_copy_line(tmp_path):
    (tmp_path / "deps").mkdir()
    (tmp_path / "deps" / "gpu.txt").write_text("torch==2.6.0\ntorchvision==0.21.0\n--index-url https://download.pytorch.org/whl/cu126\n")
    dockerfile = tmp_path / "Dockerfile"
    dockerfile.write_text("FROM nvidia/cuda:12.6.3-runtime-ubuntu24.04\nRUN apt-get install -y python3-pip\n"
                          "WORKDIR /app\nCOPY deps/gpu.txt /opt/req.txt\nCOPY . .\n"
                          "RUN pip install --break-system-packages -r /opt/req.txt\n")
    document = judge(dockerfile)
    assert document["facts"]["python"]["packages"]["torch"] == "2.6.0+cu126" and not document["not_read"]
    assert document["facts"]["python"]["version"] == "3.12"


def test_cudnn_wheel_named_explicitly_satisfies_a_local_jax(tmp_path):
    dockerfile = tmp_path / "Dockerfile"
    dockerfile.write_text("FROM nvidia/cuda:12.4.1-runtime-ubuntu22.04\nRUN apt-get install -y python3-pip\n"
                          "RUN pip install \"jax[cuda12_local]==0.5.0\" nvidia-cudnn-cu12\n")
    document = judge(dockerfile)
    assert "cuda-libs-missing" not in codes(document)
    assert {"version": None, "source": "pip:nvidia-cudnn-cu12", "path": None} in document["facts"]["cudnn"]


# --- the image's architecture, libraries from the data, bounded reads, wording ---------------------------

def test_cudnn_lies_in_the_image_architectures_library_directory():
    arm = _described("FROM --platform=linux/arm64 nvidia/cuda:12.4.1-cudnn-runtime-ubuntu22.04\n"
                     "RUN apt-get update && apt-get install -y libcudnn9-cuda-12\n")
    assert [c["path"] for c in arm.facts["cudnn"]] == ["/usr/lib/aarch64-linux-gnu/libcudnn.so.9"] * 2
    amd = _described("FROM nvidia/cuda:12.4.1-cudnn-runtime-ubuntu22.04\n")
    assert amd.facts["cudnn"][0]["path"] == "/usr/lib/x86_64-linux-gnu/libcudnn.so.9"
    ubi = _described("FROM nvidia/cuda:11.8.0-cudnn8-runtime-ubi8\n")
    assert ubi.facts["cudnn"][0]["path"] == "/usr/lib64/libcudnn.so.8"


def test_apt_cuda_packages_bring_the_libraries_the_data_lists():
    libraries = _described("FROM ubuntu:22.04\nRUN apt-get install -y cuda-libraries-11-8\n").libraries
    assert {"cublas", "cufft", "npp"} <= libraries and "nvjitlink" not in libraries  # nvJitLink: CUDA 12.0 on
    assert "nvjitlink" in _described("FROM ubuntu:22.04\nRUN apt-get install -y cuda-toolkit-12-4\n").libraries
    assert "cublas" not in _described("FROM ubuntu:22.04\nRUN apt-get install -y cuda-nvcc-12-4\n").libraries


def test_a_requirements_file_too_large_is_not_read_not_cut(tmp_path):
    from envdoctor.container.to_facts import MAX_REQUIREMENTS_BYTES

    lines = ["torch==2.6.0"] + [f"package-{i}==1.0" for i in range(MAX_REQUIREMENTS_BYTES // 16 + 10)]
    (tmp_path / "requirements.txt").write_text("\n".join(lines) + "\n")
    assert (tmp_path / "requirements.txt").stat().st_size > MAX_REQUIREMENTS_BYTES
    dockerfile = tmp_path / "Dockerfile"
    dockerfile.write_text("FROM nvidia/cuda:12.4.1-runtime-ubuntu22.04\nRUN apt-get install -y python3-pip\n"
                          "COPY requirements.txt .\nRUN pip install -r requirements.txt\n")
    document = judge(dockerfile)
    assert [(n["line"], "too large" in n["what"]) for n in document["not_read"]] == [(4, True)]
    assert "torch" not in document["facts"]["python"]["packages"]


def test_the_arch_list_fix_without_host_facts_names_what_to_put_there():
    document = judge(REAL / "ai-compiler-study-test-attn.Dockerfile")
    finding = next(f for f in document["findings"] if "TORCH_CUDA_ARCH_LIST" in f["title"])
    assert "nvidia-smi --query-gpu=compute_cap" in finding["corrected"]
    assert "8.0;8.6;9.0" not in json.dumps(finding)  # no invented list of GPUs


def test_only_information_is_no_errors_or_warnings():
    result = run_cli("dockerfile", str(REAL / "alufia-test.Dockerfile"), env=ENV)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == "no errors or warnings"
    assert "no problems found" not in result.stdout
