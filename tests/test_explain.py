"""Error signatures (matrices/signatures.toml) on real error texts copied from public issues
(tests/fixtures/logs/, each file names its issue), and the judging of a match on a machine."""

import re
from pathlib import Path

import pytest

from envdoctor.explain import _states_a_fact, clean, explain, find, parse_signatures, signatures
from envdoctor.facts import load_facts
from envdoctor.matrix.loader import MatrixError, load

FIXTURES = Path(__file__).resolve().parent / "fixtures"
LOGS = sorted((FIXTURES / "logs").glob("*.log"))
MACHINES = FIXTURES / "machines"
REQUIRED = [  # the texts issue 4 lists; each must be recognised by some signature
    "no kernel image is available for execution on the device",
    "NVIDIA GeForce RTX 5090 with CUDA capability sm_120 is not compatible with the current PyTorch installation.",
    "The NVIDIA driver on your system is too old (found version 11040).",
    "CUDA driver version is insufficient for CUDA runtime version",
    "Found no NVIDIA driver on your system.",
    "AssertionError: Torch not compiled with CUDA enabled",
    "ImportError: libcudnn.so.9: cannot open shared object file: No such file or directory",
    "Could not load dynamic library 'libcudart.so.11.0'; dlerror: libcudart.so.11.0: cannot open shared object file",
    "Cannot dlopen some GPU libraries.",
    "Loaded runtime CuDNN library: 9.1.0 but source was compiled with: 9.3.0.",
    "CUDA backend failed to initialize: Unable to load cuDNN.",
    "JAX plugin jax_cuda12_plugin version 0.9.2 is installed, but it is not compatible with the installed jaxlib version 0.9.0.1",
    "Illegal instruction (core dumped)",
    "ImportError: DLL load failed while importing _pywrap_tensorflow_internal: The specified module could not be found.",
    "ERROR: No matching distribution found for tensorflow",
    "RuntimeError: operator torchvision::nms does not exist",
    "OSError: libtorchaudio.so: undefined symbol: _ZN3c10",
    "A module that was compiled using NumPy 1.x cannot be run in\nNumPy 2.0.0 as it may crash.",
    "_pickle.UnpicklingError: Weights only load failed.",
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.",
    "XlaRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying to allocate 7406166528 bytes.",
    "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.",
    "Failed to initialize NVML: Driver/library version mismatch",
    "CUDA error: the provided PTX was compiled with an unsupported toolchain.",
    "RuntimeError: cuDNN error: CUDNN_STATUS_NOT_INITIALIZED",
    "RuntimeError: NCCL error in: ProcessGroupNCCL.cpp:825, unhandled system error, NCCL version 2.7.8",
    "You are using GPU version PaddlePaddle, but there is no GPU detected on your machine.",
]


def header(path: Path) -> dict:
    return dict(re.findall(r"^# (\w+): (.*)$", path.read_text(encoding="utf-8"), re.M))


def test_signature_file_is_valid_and_every_row_has_provenance():
    sigs = signatures()
    assert len(sigs) >= 27
    load("signatures")  # the loader refuses rows without source/checked


@pytest.mark.parametrize("log", LOGS, ids=lambda p: p.name)
def test_every_log_names_its_public_source_and_is_recognised(log):
    source = header(log).get("source", "")
    assert source.startswith("https://github.com/")
    assert find(log.read_text(encoding="utf-8"))


def _folded_and_quoted(text: str) -> str:
    import textwrap

    return "\n".join("> " + line for line in textwrap.fill(text, 60, break_on_hyphens=False, break_long_words=False).splitlines())


@pytest.mark.parametrize("sig", signatures(), ids=lambda s: s.id)
def test_every_signature_is_tested_on_the_real_text_of_its_source(sig):
    if sig.examples:  # the framework's own message: as one line, and wrapped at 60 columns inside a Markdown quote
        for example in sig.examples:
            assert sig.id in {m.signature.id for m in find(example)}, example
            assert sig.id in {m.signature.id for m in find(_folded_and_quoted(example))}, example
        return
    logs = [p for p in LOGS if header(p).get("source") == sig.source]
    assert logs, f"no fixture log copied from {sig.source}"
    assert any(m.signature.id == sig.id for p in logs for m in find(p.read_text(encoding="utf-8")))


@pytest.mark.parametrize("text", REQUIRED)
def test_the_texts_the_issue_lists_are_recognised(text):
    assert find(text)


@pytest.mark.parametrize("text", ["", "Training finished, loss=0.012", "UserWarning: TypedStorage is deprecated",
                                  "CUDA available: True; 1 GPU(s)", "Successfully installed torch-2.6.0"])
def test_ordinary_text_matches_nothing(text):
    assert find(text) == []


def test_ansi_colours_and_carriage_returns_are_removed():
    text = "\x1b[31mRuntimeError: CUDA error: no kernel \x1b[1mimage\x1b[0m is available for execution on the device\x1b[0m\r\n"
    assert clean(text) == "RuntimeError: CUDA error: no kernel image is available for execution on the device\n"
    (match,) = find(text)
    assert match.signature.id == "no-kernel-image" and "\x1b" not in match.excerpt


def test_windows_paths_are_fine():
    text = (FIXTURES / "logs" / "torch-fbgemm-dll.log").read_text(encoding="utf-8")
    match = _by_id(find(text), "fbgemm.dll")
    assert match.groups["dll"] == "fbgemm.dll"
    assert "D:\\ai-toolkit" in match.excerpt


def _by_id(matches, group_value):
    return next(m for m in matches if group_value in m.groups.values())


def test_matches_come_in_text_order_and_groups_fill_the_cause():
    found = find((FIXTURES / "logs" / "tf-cannot-dlopen.log").read_text(encoding="utf-8"))
    ids = [m.signature.id for m in found]
    assert ids.index("tf-could-not-load-dynamic-library") < ids.index("tf-cannot-dlopen-gpu-libraries")
    assert [m.position for m in found] == sorted(m.position for m in found)
    first = found[ids.index("tf-could-not-load-dynamic-library")]
    assert "libcusolver.so.11" in first.cause


def test_the_buried_cause_of_a_long_noisy_log_is_found():
    text = (FIXTURES / "logs" / "long-noisy-training.log").read_text(encoding="utf-8")
    assert len(text.splitlines()) > 400
    match = {m.signature.id: m for m in find(text)}["sm-not-compatible"]
    assert match.groups["sm"] == "sm_120"


def test_a_machine_that_shows_the_cause_confirms_it_and_gives_its_fix():
    text = (FIXTURES / "logs" / "driver-too-old-found-version.log").read_text(encoding="utf-8")
    result = explain(text, load_facts(MACHINES / "diag-driver-old.json"))
    (item,) = result.matches
    assert item.code == "driver-too-old" and item.confirmed is not None
    assert item.fix == item.confirmed.fix
    assert [f.code for f in result.findings] == ["driver-too-old"]


def test_the_first_confirmed_code_wins():
    text = "RuntimeError: Found no NVIDIA driver on your system."
    assert explain(text, load_facts(MACHINES / "diag-nvml-mismatch.json")).matches[0].code == "driver-library-mismatch"
    assert explain(text, load_facts(MACHINES / "diag-cpu-box.json")).matches[0].code == "no-gpu-platform"


def test_an_unconfirmed_cause_keeps_the_generic_fix_and_claims_nothing_about_the_machine():
    text = (FIXTURES / "logs" / "cuda-out-of-memory.log").read_text(encoding="utf-8")
    (item,) = explain(text, load_facts(MACHINES / "diag-clean-rtx4090.json")).matches
    assert item.code == "cuda-out-of-memory" and item.confirmed is None
    assert "expandable_segments" in item.fix[-1]


def test_reinstall_signatures_add_this_machines_install_command():
    text = "RuntimeError: CUDA error: no kernel image is available for execution on the device"
    (item,) = explain(text, load_facts(MACHINES / "rtx5090-r570.json")).matches
    commands = [f for f in item.fix if isinstance(f, tuple)]
    assert commands and "torch" in " ".join(commands[0])


@pytest.mark.parametrize("row, problem", [
    ({"id": "x", "framework": "cuda", "pattern": "(", "codes": ["a"], "cause": "c", "fix": "f"}, "bad pattern"),
    ({"id": "x", "framework": "cuda", "pattern": "a", "codes": [], "cause": "c", "fix": "f"}, "codes"),
    ({"id": "x", "framework": "cuda", "pattern": "a", "codes": ["Not Kebab"], "cause": "c", "fix": "f"}, "codes"),
    ({"id": "x", "framework": "cuda", "pattern": "a", "codes": ["a"], "fix": "f"}, "cause"),
    ({"id": "x", "framework": "cuda", "pattern": "(?P<lib>a)", "codes": ["a"], "cause": "c {libb}", "fix": "f"}, "libb"),
])
def test_broken_signature_rows_are_refused(row, problem):
    with pytest.raises(MatrixError, match=problem):
        parse_signatures({"signature": [dict(row, source="s", checked="2026-11-29")]})


def test_duplicate_ids_are_refused():
    row = {"id": "x", "framework": "cuda", "pattern": "a", "codes": ["a"], "cause": "c", "fix": "f", "source": "s"}
    with pytest.raises(MatrixError, match="duplicate"):
        parse_signatures({"signature": [row, row]})


def _python(facts, version):
    import dataclasses

    return dataclasses.replace(facts, python=dataclasses.replace(facts.python, version=version, packages={}))


def test_no_matching_distribution_is_confirmed_when_no_release_fits_this_python():
    facts = _python(load_facts(MACHINES / "windows-tf.json"), "3.14.0")
    (item,) = explain("ERROR: No matching distribution found for tensorflow", facts).matches
    assert item.code == "python-unsupported" and item.confirmed is not None
    assert "3.14" in item.confirmed.title


def test_no_matching_distribution_on_a_supported_python_is_not_blamed_on_python():
    facts = _python(load_facts(MACHINES / "windows-tf.json"), "3.12.1")
    (item,) = explain("ERROR: No matching distribution found for tensorflow", facts).matches
    assert item.confirmed is None
    assert any(isinstance(f, tuple) and "tensorflow==" in " ".join(f) for f in item.fix)  # this machine's command


@pytest.mark.parametrize("name, text", [
    ("diag-jaxlib-no-plugin", "AssertionError: Torch not compiled with CUDA enabled"),  # a CPU-only jaxlib
    ("diag-dup-tf-cpu", "RuntimeError: operator torchvision::nms does not exist"),  # tensorflow + tensorflow-cpu
    ("diag-paddle-kepler", "RuntimeError: CUDA error: no kernel image is available for execution on the device"),
    ("diag-torch-cpu-gpu", "W tensorflow/core/common_runtime/gpu/gpu_device.cc:2256] Cannot dlopen some GPU libraries."),
])
def test_another_frameworks_problem_does_not_confirm_a_frameworks_error(name, text):
    (item,) = explain(text, load_facts(MACHINES / f"{name}.json")).matches
    assert item.confirmed is None, item.confirmed.title


def test_a_missing_tensorflow_wheel_is_not_blamed_on_the_installed_torch():
    (item,) = explain("ERROR: No matching distribution found for tensorflow",
                      load_facts(MACHINES / "diag-py314-torch25.json")).matches
    assert item.code == "python-unsupported" and "TensorFlow" in item.confirmed.title


def test_a_group_of_another_alternative_falls_back_to_its_text():
    (match,) = find("ncclSystemError: System call (e.g. socket, malloc) or external library call failed")
    assert "NCCL failed (an NCCL call returned an error)" in match.cause
    (match,) = find("RuntimeError: NCCL error in: ProcessGroupNCCL.cpp:825, unhandled system error, NCCL version 2.7.8")
    assert "NCCL failed (unhandled system error)" in match.cause


def test_tput_resets_and_terminal_links_are_removed():
    red, reset = "\x1b[31m", "\x1b(B\x1b[m"  # what `tput setaf 1` / `tput sgr0` write
    link = "\x1b]8;;https://example.org\x1b\\docs\x1b]8;;\x1b\\"
    text = f"{red}RuntimeError: CUDA error: no kernel image{reset} is available for execution on the device {link}\x1b7\x1b8"
    assert clean(text) == "RuntimeError: CUDA error: no kernel image is available for execution on the device docs"
    assert [m.signature.id for m in find(text)] == ["no-kernel-image"]


def test_typographic_quotes_a_browser_or_chat_app_typed_are_ascii_quotes():
    # the torch loader's message as a reporter pasted it from a chat app, quotes curled
    text = "OSError: Error loading \u201cC:\\env\\Lib\\site-packages\\torch\\lib\\fbgemm.dll\u201d or one of its dependencies."
    assert '"C:\\env' in clean(text) and "\u201c" not in clean(text)
    (match,) = find(text)
    assert match.signature.id == "sys-torch-dll-error-loading-bare" and match.groups["dll"] == "fbgemm.dll"


def test_the_cause_a_reporter_names_picks_among_a_messages_candidates():
    from envdoctor.facts import SCHEMA, Facts

    message = ("Specified provider 'CUDAExecutionProvider' is not in available provider names. "
               "Available providers: 'AzureExecutionProvider, CPUExecutionProvider'")
    alone = explain(message, Facts.from_dict({"schema": SCHEMA}), machine_described=True)
    assert alone.diagnosis[0] == "cpu-only-build"
    said = explain("I have installed both onnxruntime and onnxruntime-gpu on a GPU machine.\n" + message,
                   Facts.from_dict({"schema": SCHEMA}), machine_described=True)
    assert said.diagnosis[0] == "duplicate-install"


def test_every_signature_has_a_literal_to_prefilter_on():
    """A pattern without one is run over the whole text: with 500 signatures that breaks explain's 1 s budget.
    A reporter's symptom words are searched only in the text's first 100,000 characters, so they may lack one."""
    assert [s.id for s in signatures() if not s.needles and not s.symptom] == []


def test_a_reporters_words_are_skipped_only_where_none_of_their_literals_is():
    """Symptom patterns have no needle; their hints (one literal per alternative, required groups
    included) must skip no real report that the plain pattern matches."""
    from envdoctor.explain import _hints, _parse, _search
    from envdoctor.textnorm import normalise

    assert _hints(_parse(r"\b(?:goes|went) (?:OOM|out of (?:GPU )?memory)\b")) == ("goes", "went")  # the group whose shortest literal is longest
    assert _hints(_parse(r"(?:the )?gpu|(?:a )?cpu")) == ("cpu", "gpu")
    assert _hints(_parse(r"(?:the )?\w+ is (?:up)?")) == ()  # "is" is too short to tell texts apart
    hinted = [s for s in signatures() if s.hints]
    assert len(hinted) >= 5
    reports = sorted((Path(__file__).parent / "fixtures" / "reports").glob("*.txt"))
    for path in reports:
        flat = normalise(path.read_text(encoding="utf-8").partition("\n# ---\n")[2]).flat
        for sig in hinted:
            assert bool(_search(sig, flat, flat.lower())) == bool(sig.pattern.search(flat)), (path.name, sig.id)


@pytest.mark.parametrize("log", LOGS, ids=lambda p: p.name)
def test_the_prefiltered_search_finds_what_a_plain_search_finds(log):
    from envdoctor.textnorm import normalise

    doc = normalise(log.read_text(encoding="utf-8"))
    plain = {s.id for s in signatures() if s.pattern.search(doc.flat)}
    if any(s.id in plain for s in signatures() if not (s.symptom or s.noise)):  # a message: a reporter's words
        plain -= {s.id for s in signatures() if s.symptom and not _states_a_fact(s)}  # are not heard (or searched)
    assert {m.signature.id for m in find(doc)} == plain


# --- checks that need the message: judged only on a machine the text describes (helper F) ----------

from envdoctor.facts import Facts  # noqa: E402


def _facts(data: dict) -> Facts:
    return Facts.from_dict({"schema": "envdoctor.facts/1", **data})


def test_jetson_without_a_recorded_build_is_the_wrong_wheel():
    text = "I successfully install the torch on my jetson nano, but cuda.is_available() returns false"
    facts = _facts({"jetson": {"l4t": "32.4.3", "jetpack": "4.4"}})
    result = explain(text, facts, machine_described=True)
    assert result.diagnosis[0] == "jetson-wrong-wheel"
    assert result.matches[0].confirmed is not None
    assert explain(text, facts, machine_described=False).matches[0].confirmed is None


def test_container_that_shows_no_gpu():
    text = "I pulled the official docker image but I'm getting torch.cuda.is_available() = False."
    result = explain(text, _facts({"host": {"container": "docker"}}), machine_described=True)
    assert result.diagnosis[0] == "container-gpu-missing"
    with_gpu = _facts({"host": {"container": "docker"}, "nvidia": {"gpus": [{"index": 0, "name": "Tesla T4"}]}})
    assert explain(text, with_gpu, machine_described=True).diagnosis[0] != "container-gpu-missing"


def test_cpu_tag_confirms_cpu_only_build():
    text = "ValueError: Invalid CUDA 'device=0' requested. Use 'device=cpu' or pass valid CUDA device(s) if available"
    result = explain(text, _facts({"python": {"packages": {"torch": "2.1.0+cpu"}}}), machine_described=True)
    assert result.diagnosis == ("cpu-only-build",) and result.matches[0].confirmed is not None
    cuda = explain(text, _facts({"python": {"packages": {"torch": "2.1.0+cu121"}}}), machine_described=True)
    assert cuda.matches[0].confirmed is None


@pytest.mark.parametrize("text", [
    'device = "cuda" if torch.cuda.is_available() else "cpu"',
    "Is CUDA available: True",
    "torch.cuda.is_available() True",
])
def test_is_available_false_needs_false(text):
    assert not [m for m in find(text) if m.signature.id == "pt-cuda-is-available-false"]


def test_word_prefilter_keeps_matches_in_long_logs():
    filler = "step 1 loss=0.5 lr=1e-4\n" * 20_000
    for message in ("RuntimeError: CUDA error: no kernel image is available for execution on the device",
                    "ValueError: Invalid CUDA 'device=0' requested. Use 'device=cpu' or pass valid CUDA device(s)",
                    "DeepSpeed Op Builder: Installed CUDA version 12.0 does not match the version torch was compiled with 11.8",
                    "E external/xla/xla/stream_executor/cuda/cuda_driver.cc:268] failed call to cuInit: CUDA_ERROR_NO_DEVICE: "
                    "no CUDA-capable device is detected"):
        short = {m.signature.id for m in find(message)}
        assert short and {m.signature.id for m in find(filler + message + "\n" + filler)} == short


def test_two_copies_are_the_cause_when_no_message_is_there():
    facts = _facts({"python": {"packages": {"torch": "0.4.1|1.0.0.dev20180921"}}})
    assert explain("conda list shows both", facts, machine_described=True).diagnosis == ("duplicate-install",)
    assert explain("conda list shows both", facts, machine_described=False).diagnosis == ()


def test_text_typed_right_after_a_fence_is_kept():
    from envdoctor.textnorm import normalise

    text = ("I am getting the error\n\n```NVIDIA GeForce RTX 5090 with CUDA capability sm_120 is not compatible with "
            "the current PyTorch installation.\n```\n```python\nimport torch\n```\n")
    assert "```" not in normalise(text).text and "python" not in normalise(text).text
    assert "NVIDIA GeForce RTX 5090 with CUDA capability sm_120" in normalise(text).text


def test_loader_version_message_without_its_quotes():
    # Markdown renders `GLIBCXX_3.4.29' as code and the quotes are lost when the page is copied
    text = "ImportError: /x/libstdc++.so.6: version GLIBCXX_3.4.29 not found (required by /y/plugin.so)"
    assert "sys-glibcxx-version-not-found" in {m.signature.id for m in find(text)}


def test_a_candidate_the_described_machine_rules_out_is_skipped():
    # "torch.cuda.is_available() False" most often means a CPU build, but not when the text shows a +cu torch
    from envdoctor.read import read_machine

    text = ">>> print(torch.__version__)\n2.1.0+cu121\n>>> torch.cuda.is_available()\nFalse\n"
    described, _ = read_machine(text)
    facts = Facts.from_dict(described)
    (item,) = explain(text, facts, machine_described=True).matches
    assert item.code != "cpu-only-build" and item.code in item.match.signature.codes
    assert explain(text, facts, machine_described=False).matches[0].code == "cpu-only-build"  # this machine did not print it


# --- a CUDA library of another CUDA major than the described machine's; a CPU torch on a CUDA machine

def _described(text: str):
    from envdoctor.read import read_machine
    from envdoctor.textnorm import normalise

    normal = normalise(text).text
    return explain(normal, _facts(read_machine(normal)[0]), machine_described=True)


def _pasted(name: str) -> str:
    return (FIXTURES / "pasted" / name).read_text(encoding="utf-8").split("# ---\n", 1)[1]


def test_a_cuda11_library_on_a_cuda12_machine_is_a_build_for_the_other_cuda():
    result = _described(_pasted("onnxruntime_cublaslt11_nvcc121.txt"))  # fudan-generative-vision/hallo#203
    assert result.diagnosis[0] == "cuda-libs-missing"
    confirmed = next(e.confirmed for e in result.matches if e.confirmed is not None)
    assert "CUDA 11" in confirmed.title and "CUDA 12" in confirmed.title
    assert "cuda_toolkit.version=12.1" in confirmed.evidence
    assert any("for CUDA 12" in str(f) for f in confirmed.fix)


@pytest.mark.parametrize("library, machine, confirmed", [
    ("cudart64_110.dll", {"python": {"packages": {"nvidia-cublas-cu12": "12.1.3.1"}}}, True),
    ("libcudart.so.12", {"cuda_toolkit": {"version": "11.8"}}, True),
    ("libcublas.so.11", {"cuda_toolkit": {"version": "11.8"}}, False),  # same major: a path problem, not a build
    ("libcudnn.so.8", {"cuda_toolkit": {"version": "12.1"}}, False),  # cuDNN's major is not CUDA's
    ("libcudart.so.12", {"nvidia": {"driver_cuda": "11.4"}}, False),  # the driver alone: only an older major
    ("libcublas.so.11", {"nvidia": {"driver_cuda": "12.2"}}, True),
])
def test_the_soname_major_is_compared_with_the_machines_cuda(library, machine, confirmed):
    from envdoctor.explain import Match, _library_for_other_cuda

    sig = next(s for s in signatures() if "cuda-libs-missing" in s.codes)
    match = Match(sig, f"OSError: {library}: cannot open shared object file: No such file or directory", 0)
    assert (_library_for_other_cuda(match, _facts(machine)) is not None) is confirmed


def test_a_cpu_torch_on_a_machine_with_cuda_is_the_cause_without_any_error_message():
    text = "CUDA Version: 11.6\nPython 3.8.15\npytorch 1.13.1+cpu"  # ultralytics/ultralytics#227
    assert _described(text).diagnosis == ("cpu-only-build",)
    assert _described("Python 3.8.15\npytorch 1.13.1+cpu").diagnosis == ()  # no CUDA on that machine: nothing wrong


RIFFUSION_EXTRA_INDEX = (  # riffusion/riffusion-hobby#145, as pasted
    "I have tested the installation via\n\n(riffusion) C:\\Users\\m>pip3 install torch torchvision torchaudio "
    "--extra-index-url https://download.pytorch.org/whl/cu116\n\nbut it all seems to be installed correctly, however I "
    "get that error when using CUDA\n\nI am on Windows 10, on RTX2060 and using CUDA 11_6\n")


def test_an_unpinned_torch_from_an_extra_cuda_index_on_windows_is_the_cpu_build():
    result = _described(RIFFUSION_EXTRA_INDEX)
    assert result.diagnosis == ("cpu-only-build",)
    assert "cu116" in result.findings[0].title and "--index-url" in result.findings[0].fix[0]
    # the same command on Linux installs the default index's CUDA build; a pinned torch takes the index's own
    assert _described(RIFFUSION_EXTRA_INDEX.replace("C:\\Users\\m>", "$ ").replace("Windows 10", "Ubuntu 22.04")).diagnosis == ()
    assert _described(RIFFUSION_EXTRA_INDEX.replace("install torch ", "install torch==1.13.1+cu116 ")).diagnosis == ()


def test_conda_cpu_build_confirms_torch_not_compiled_with_cuda():
    text = _pasted("conda_list_grep_pytorch_cpu.txt") + "\nAssertionError: Torch not compiled with CUDA enabled\n"
    result = _described(text)  # meta-pytorch/data#315's conda list, torch's own assertion message
    assert result.diagnosis[0] == "cpu-only-build"
    assert any(e.confirmed is not None and "cuda_build=False" in e.confirmed.evidence[0] for e in result.matches)


JAX_OUTDATED_CUDNN = (  # conda-forge/jax-feedstock#149, as pasted
    "CUDA backend failed to initialize: Unable to use CUDA because of the following issues with CUDA components:\n"
    "Outdated cuDNN installation found.\nVersion JAX was built against: 8907\nMinimum supported: 9100\n"
    "Installed version: 8907\nThe local installation version must be no lower than 9100..(Set TF_CPP_MIN_LOG_LEVEL=0 "
    "and rerun for more info.)\n")


@pytest.mark.parametrize("prefix", ["", "E   "])  # as printed, and inside a pytest failure report
def test_jax_outdated_cudnn_is_a_cudnn_mismatch(prefix):
    text = "".join(prefix + line + "\n" for line in JAX_OUTDATED_CUDNN.splitlines())
    result = _described(text)
    assert result.diagnosis[0] == "cudnn-mismatch"
    from envdoctor.read import versions_quoted

    assert versions_quoted.parse(text)["frameworks"] == {"jax": {"cudnn": "8.9.7"}}


# --- where the described program ran decides among a message's candidates; Paddle's CPU package ------

@pytest.mark.parametrize("facts, code", [
    ({"host": {"os": "linux", "wsl": True}}, "wsl-gpu-setup"),
    ({"host": {"os": "linux", "arch": "aarch64"}, "jetson": {"l4t": "35.4.1"}}, "jetson-wrong-wheel"),
    ({"host": {"container": "docker"}}, "container-gpu-missing"),
    ({"host": {"os": "linux"}}, "cpu-only-build"),
])
def test_a_candidate_tied_to_where_the_program_ran_comes_first(facts, code):
    text = "torch.cuda.is_available() returns False"
    assert explain(text, _facts(facts), machine_described=True).diagnosis[0] == code


def test_tensorflow_symptom_names_native_windows_only_on_windows():
    text = "I can't get Tensorflow to detect my gpu in Python."
    assert explain(text, _facts({"host": {"os": "windows"}}), machine_described=True).diagnosis == ("tf-windows-native-gpu",)
    assert explain(text, _facts({"host": {"os": "linux"}}), machine_described=True).diagnosis == ("cuda-libs-missing",)


def test_paddle_cpu_package_named_on_a_cuda_machine_is_the_cause():
    facts = {"python": {"packages": {"paddlepaddle": "3.1.0"}}, "nvidia": {"driver_version": "525.60.13"}}
    assert explain("use cpu for inference, how to solve it", _facts(facts), machine_described=True).diagnosis == ("cpu-only-build",)
    both = {"python": {"packages": {"paddlepaddle": "3.1.0", "paddlepaddle-gpu": "3.1.0"}}, "nvidia": {"driver_version": "525.60.13"}}
    assert "cpu-only-build" not in explain("use cpu for inference", _facts(both), machine_described=True).diagnosis


def test_a_generic_wrapper_gives_way_to_the_specific_message():
    text = ("RuntimeError: CUDA error: CUDA driver version is insufficient for CUDA runtime version\n"
            "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect.")
    result = explain(text, _facts({}), machine_described=True)
    assert [e.match.signature.id for e in result.matches] == ["cuda-driver-insufficient"]
    alone = explain("CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below "
                    "might be incorrect.", _facts({}), machine_described=True)
    assert alone.diagnosis == ("cuda-kernel-fault",)


@pytest.mark.parametrize("engine", ["apptainer", "kubernetes"])
def test_insufficient_driver_in_a_container_without_gpu_is_the_container(engine):
    text = "CUDA error: CUDA driver version is insufficient for CUDA runtime version"
    assert explain(text, _facts({"host": {"container": engine}}), machine_described=True).diagnosis[0] == "container-gpu-missing"
    assert explain(text, _facts({"host": {"os": "linux"}}), machine_described=True).diagnosis[0] == "driver-too-old"


def test_a_kernel_assert_is_the_programs_own_error_not_an_environment_cause():
    text = ("../aten/src/ATen/native/cuda/Loss.cu:250: nll_loss_forward_reduce_cuda_kernel_2d: block: [0,0,0], thread: [5,0,0] "
            "Assertion `t >= 0 && t < n_classes` failed.\nRuntimeError: CUDA error: device-side assert triggered\n"
            "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect.")
    result = explain(text, _facts({}), machine_described=True)
    assert result.diagnosis == () and result.matches == ()
    assert {m.signature.id for m in result.program_errors} == {"pt-device-assert-index-failed", "cuda-assert"}
    assert "program_errors" in result.to_dict()


def test_an_illegal_memory_access_is_the_programs_error_and_no_fallback_speaks_over_it():
    """ggml-org/llama.cpp-style: a CUDA illegal memory access bisected to a commit, on an RTX 5090 named
    in the text: neither a kernel-fault cause nor the new-GPU fallback is claimed (10 of 13 such threads
    were the program's own bug)."""
    from envdoctor.complete import complete
    from envdoctor.read import read_machine
    from envdoctor.textnorm import normalise

    report = next((Path(__file__).parent / "fixtures" / "reports").glob("7027-*.txt"))
    text = normalise(report.read_text(encoding="utf-8").split("\n# ---\n", 1)[1]).text
    result = explain(text, complete(_facts(read_machine(text)[0])), machine_described=True)  # as `explain` runs
    assert result.diagnosis == () and [m.signature.id for m in result.program_errors] == ["cuda-illegal-address"]


@pytest.mark.parametrize("facts, code", [
    ({"host": {"os": "windows"}, "amd": {"gpus": [{"name": "AMD RX 6800"}]}}, "no-gpu-platform"),
    ({"host": {"os": "windows"}, "nvidia": {"gpus": [{"name": "NVIDIA GeForce RTX 3060"}]}}, "cpu-only-build"),
])
def test_webui_gpu_check_on_an_amd_machine_is_no_nvidia_gpu(facts, code):
    text = "RuntimeError: Torch is not able to use GPU; add --skip-torch-cuda-test to COMMANDLINE_ARGS variable to disable this check"
    assert explain(text, _facts(facts), machine_described=True).diagnosis[0] == code


def test_linux_tensorflow_wheel_is_no_cpu_only_build():
    from envdoctor.facts import SCHEMA, Facts

    text = 'print("Num GPUs Available: ", len(tf.config.list_physical_devices("GPU")))\nNum GPUs Available:  0'
    linux = Facts.from_dict({"schema": SCHEMA, "host": {"os": "linux"}, "python": {"packages": {"tensorflow": "2.14.0"}}})
    cpu = Facts.from_dict({"schema": SCHEMA, "host": {"os": "linux"}, "python": {"packages": {"tensorflow-cpu": "2.14.0"}}})
    assert explain(text, linux, machine_described=True).diagnosis[0] == "cuda-libs-missing"
    assert explain(text, cpu, machine_described=True).diagnosis[0] != "cuda-libs-missing"


def test_every_flat_position_maps_back_to_the_same_character_of_the_text():
    import random

    from envdoctor.textnorm import normalise

    rng = random.Random(3)  # seeded: the same 3000 texts each run
    for _ in range(3000):
        text = "".join(rng.choice("ab c\n\t  \r\n") for _ in range(rng.randint(0, 60)))
        doc = normalise(text)
        for i, char in enumerate(doc.flat):
            mapped = doc.text[doc._to_text(i)]
            assert mapped == char if char != " " else mapped.isspace(), (text, i)


def test_full_width_punctuation_of_a_cjk_report_reads_as_ascii():
    """PaddlePaddle/Paddle#24805-style text: full-width colon and brackets, typed by a Chinese input method."""
    from envdoctor.read import read_machine
    from envdoctor.textnorm import normalise

    text = "系统环境：Ubuntu 18.04\nPython版本：3.7\n报错：ImportError：libcudart.so.10.0：cannot open shared object file"
    doc = normalise(text)
    assert len(doc.text) == len(text) and "Python版本:3.7" in doc.text
    assert read_machine(doc.text)[0]["python"]["version"] == "3.7"
    assert _described(text).diagnosis[0] == "cuda-libs-missing"


def test_a_templates_bracketed_example_is_no_fact():
    from envdoctor.read import read_machine
    from envdoctor.textnorm import normalise

    facts = read_machine(normalise("- OS Platform and Distribution (e.g., Linux Ubuntu 16.04): Jetson - Jp 4.6\n"
                         "- GPU model and memory: Jetson AGX/ 32GB\n"
                         "4）系统环境：请说明系统类型、版本（如Mac OS 10.14）、Python版本\n").text)[0]
    assert facts["jetson"] == {"jetpack": "4.6", "model": "Jetson AGX"}
    assert "host" not in facts or facts["host"].get("os") is None


def test_a_cause_the_context_names_gets_that_causes_fix():
    """Langchain-Chatchat#3064-style: torch's CPU-build message on a Mac is no-gpu-platform, and the
    fix is not "install a CUDA build"."""
    (item,) = _described("Mac M3，运行报错：AssertionError: Torch not compiled with CUDA enabled").matches
    assert item.code == "no-gpu-platform"
    assert "no NVIDIA GPU" in item.fix[0] and not any("CUDA build of PyTorch" in str(f) for f in item.fix)


def test_a_container_without_a_gpu_on_a_mac_is_no_gpu_platform():
    """myshell-ai/MeloTTS-style: `docker run --gpus all` on an M1 MacBook; on Linux the same message is the
    container toolkit's."""
    message = ('sudo docker run --gpus all -it -p 8888:8888 melotts\n'
               'docker: Error response from daemon: could not select device driver "" with capabilities: [[gpu]].')
    assert _described("docker build successfully. my macbookpro is M1 chip.\n" + message).diagnosis[0] == "no-gpu-platform"
    assert _described("docker build successfully on my Ubuntu 22.04 server.\n" + message).diagnosis[0] == "container-gpu-missing"


# --- a message whose cause depends on the host OS; a torch build's kernels when the platform is unknown

def test_no_nccl_built_in_is_the_platform_on_windows_and_a_cpu_build_on_linux():
    message = "RuntimeError: Distributed package doesn't have NCCL built in"
    windows = message + '\n  File "C:\\anaconda\\envs\\clip\\lib\\site-packages\\torch\\distributed\\distributed_c10d.py"\n'
    linux = message + '\n  File "/home/ann/venv/lib/python3.11/site-packages/torch/distributed/distributed_c10d.py"\n'
    assert _described(windows).diagnosis[0] == "nccl-error"
    assert _described(linux).diagnosis[0] == "cpu-only-build"


def test_a_gpu_no_platform_build_of_the_tag_covers_is_unsupported_when_the_os_is_unknown():
    # cu129 wheels of torch 2.8 start at sm_70 on every platform: a GTX 1070 (sm_61) has no kernels in any
    from envdoctor.complete import complete
    from envdoctor.read import read_machine

    def judged(text: str) -> tuple[str, ...]:  # as `explain` does: the described machine, completed
        return explain(text, complete(_facts(read_machine(text)[0])), machine_described=True).diagnosis

    text = "Setup: GTX 1070, 16 GB RAM. Versions: PyTorch 2.8.0 + cu129. A kernel-related error at startup."
    assert judged(text)[:1] == ("gpu-arch-unsupported",)
    # an RTX 3060 (sm_86) is covered by all of them: nothing is claimed from the machine
    assert "gpu-arch-unsupported" not in judged(text.replace("GTX 1070", "RTX 3060"))


def test_by_os_must_name_one_of_the_rows_codes():
    row = {"id": "x", "framework": "pytorch", "pattern": "some long literal message", "codes": ["cpu-only-build"],
           "cause": "c", "fix": "f", "source": "s", "checked": "2026-12-06", "by_os": {"windows": "nccl-error"}}
    with pytest.raises(MatrixError, match="by_os"):
        parse_signatures({"signature": [row]})


@pytest.mark.parametrize("cc, runtime, unsupported", [
    ("8.6", "10.2", True),  # an RTX 30xx under a CUDA 10.2 Paddle (report 1559's log)
    ("8.6", "11.0", False),  # CUDA 11.0 builds sm_80, whose code runs on sm_86
    ("12.0", "12.6", True),  # an RTX 50xx under a CUDA 12.6 Paddle
    ("12.0", "12.9", False),
])
def test_paddle_on_a_cuda_runtime_that_cannot_reach_the_gpus_generation(cc, runtime, unsupported):
    from envdoctor.complete import complete
    from envdoctor.read import read_machine

    text = (">>> paddle.utils.run_check()\nRunning verify PaddlePaddle program ...\n"
            f"W0617 18:00:22.433677 19572 device_context.cc:404] Please NOTE: device: 0, GPU Compute Capability: {cc}, "
            f"Driver API Version: 13.0, Runtime API Version: {runtime}\n")
    diagnosis = explain(text, complete(_facts(read_machine(text)[0])), machine_described=True).diagnosis
    assert ("gpu-arch-unsupported" in diagnosis) is unsupported


def test_a_cause_the_context_chose_ranks_before_the_messages_own_first_causes():
    # report 1645 (bitsandbytes under WSL): the CPU-library warning alone votes companion-mismatch, but
    # "libcuda.so not found" under WSL is WSL's missing /usr/lib/wsl/lib
    text = ("WSL CUDA install on Windows 10: GPU not detected\n"
            "CUDA SETUP: WARNING! libcuda.so not found! Do you have a CUDA driver installed? If you are on a cluster, "
            "make sure you are on a CUDA machine!\n"
            "UserWarning: The installed version of bitsandbytes was compiled without GPU support. 8-bit optimizers, "
            "8-bit multiplication, and GPU quantization are unavailable.\n")
    assert _described(text).diagnosis[0] == "wsl-gpu-setup"
    assert _described(text.replace("WSL CUDA install on Windows 10", "Ubuntu 22.04 server")).diagnosis[0] != "wsl-gpu-setup"


# --- builds the matrices know only by their CUDA, or not at all; IPEX next to torch --------------

@pytest.mark.parametrize("text, unsupported", [
    ("Ubuntu 20.04, RTX 4090, TensorFlow==2.3.", True),  # TF 2.3 was built with CUDA 10.1: no sm_8x
    ("Ubuntu 20.04, RTX 2080, TensorFlow==2.3.", False),  # sm_75: CUDA 10.1 builds it
    ("Ubuntu 18.04, GeForce GTX 1080, tensorflow-gpu 1.12", False),
    ("I'm on an NVIDIA GeForce 3090 GPU with torch 1.7.1+cu102", True),  # CUDA 10.2 has no sm_8x
    ("I'm on an NVIDIA GeForce 3090 GPU with torch 1.7.1+cu110", False),
    ("my 5070ti machine, pytorch version(2.1.2)", True),  # no build of torch 2.1 carries sm_120
    ("my 5070ti machine, pytorch version(2.7.0)", False),  # its cu128 build does
])
def test_arch_from_a_builds_cuda_or_from_all_of_a_releases_builds(text, unsupported):
    assert ("gpu-arch-unsupported" in _completed(text)) is unsupported


def test_ipex_must_share_torchs_major_minor():
    assert _completed("### Versions\ntorch 2.7.1\nipex 2.8\n")[:1] == ("companion-mismatch",)
    assert "companion-mismatch" not in _completed("### Versions\ntorch 2.8.0\nipex 2.8\n")


def _completed(text: str) -> list[str]:
    """The diagnosis of the machine a text describes, after the completion stage (as `explain` runs it)."""
    from envdoctor.complete import complete
    from envdoctor.read import read_machine

    return explain(text, complete(_facts(read_machine(text)[0])), machine_described=True).diagnosis


def test_an_illegal_instruction_on_an_apple_silicon_mac_is_rosetta():
    text = "on my MacBook Pro M1:\n\nzsh: illegal hardware instruction  ./build/bin/main -m model.bin\n"
    assert _completed(text)[0] == "rosetta-python"
    assert _completed(text.replace("MacBook Pro M1", "MacBook Pro"))[0] == "cpu-instructions-unsupported"  # an Intel Mac, perhaps


def test_a_machine_said_to_have_no_nvidia_gpu_is_the_cause_when_no_message_is():
    text = "What is the flag for AMD with Radeon? Sorry, but I'm not using Nvidia(Cuda)."
    assert _completed(text) == ("no-gpu-platform",)
    assert _completed("What is the flag for the device? I'm using Nvidia.") == ()
    # an AMD machine's ROCm or DirectML report is not about CUDA: no GPU platform is no cause there
    assert _completed("GPU: Radeon RX 6600\nrocm-smi shows the card, HIP kernels run slowly") == ()


def test_a_mac_asked_for_cuda_without_a_message_has_no_gpu_platform():
    # kohya_ss #577, faster-whisper on a MacBook Pro: the reporter asks for CUDA on a Mac
    text = "When I try to do the lora training on my MacBook, it keeps asking for cuda libraries. Where can i disable cuda?"
    assert _completed(text) == ("no-gpu-platform",)
    assert _completed("I keep getting asked for cuda libraries on my MacBook.") == ("no-gpu-platform",)
    # CUDA named only in an environment template's fields or a program's log line asks for nothing
    template = "I get NaN losses on my MacBook.\n\nCUDA used to build PyTorch: None\n- CUDA/cuDNN version: no\n"
    assert _completed(template) == ()
    log = "It runs slowly on my MacBook.\n2026-05-17 23:01:40,132 [INFO] Neither TORCH CUDA nor MPS version installed\n"
    assert _completed(log) == ()


def test_mlx_found_nowhere_on_a_mac_is_a_python_under_rosetta():
    text = "Apple M2 Pro\n$ pip3 install mlx\nERROR: Could not find a version that satisfies the requirement mlx (from versions: none)\n"
    assert _completed(text)[0] == "rosetta-python"
    assert "rosetta-python" not in _completed(text.replace("requirement mlx", "requirement mlx-lm"))


def test_onnxruntime_needing_another_cudnn_major_than_the_machine_has_is_a_cudnn_mismatch():
    message = ("[W:onnxruntime:Default, onnxruntime_pybind_state.cc:965 CreateExecutionProviderInstance] Failed to create "
               "CUDAExecutionProvider. Require cuDNN 8.* and CUDA 12.*. Please install all dependencies\n")
    assert _completed("The cuda is 12.6 and the cudnn is 9.3.\n" + message)[0] == "cudnn-mismatch"
    assert _completed("The cuda is 12.6 and the cudnn is 8.9.\n" + message)[0] != "cudnn-mismatch"


def test_rosetta_comes_first_only_for_the_messages_it_explains():
    text = "on my MacBook Pro M1\nERROR: No matching distribution found for torch==2.0.1+cu118\n"
    assert _completed(text)[:1] != ("rosetta-python",)


def test_a_device_string_cut_before_the_device_names_nothing():
    # the head of torch's device-string error is shared by every device name: "mps" (Rosetta) is cut off
    cut = "RuntimeError: Expected one of cpu, cuda, xpu, mkldnn, opengl, opencl, ideep, hip, ve, ort, mlc, xla, lazy, vulkan, meta, hpu .."
    assert "rosetta-python" not in _completed(cut)
    assert _completed(cut.replace(" ..", " device type at start of device string: mps"))[:1] == ("rosetta-python",)


def test_an_ngc_image_older_than_the_gpu_is_the_arch_not_the_container_runtime():
    text = ("WARNING: Detected NVIDIA GeForce RTX 3090 GPU, which is not yet supported in this version of the container\n"
            "ERROR: No supported GPU(s) detected to run this container\n")
    assert _completed(text)[:1] == ("gpu-arch-unsupported",)
    assert _completed(text.splitlines()[1])[:1] == ("container-gpu-missing",)


@pytest.mark.parametrize("listing, mismatch", [
    ("tensorflow 2.15.0\nkeras 3.3.3", True),  # TensorFlow 2.15 pins keras <2.16
    ("tensorflow 2.16.1\nkeras 2.15.0", True),  # and 2.16 keras >= 3
    ("tensorflow 2.16.1\nkeras 3.3.3", False),
    ("tensorflow 2.7.0\nkeras 2.8.0", True),  # before the matrix's rows: keras of TensorFlow's own minor
    ("tensorflow 2.7.0\nkeras 2.7.0", False),
])
def test_keras_outside_what_tensorflow_pins(listing, mismatch):
    assert ("companion-mismatch" in _completed("Package Version\n---------- -------\n" + listing)) is mismatch


@pytest.mark.parametrize("build, too_old", [
    ("py3.8_cuda10.2.89_cudnn7.6.5_0", True),  # CUDA 10.2 needs the 440.33 of its own release
    ("py36_cuda9.0.176_cudnn7.1.2_1", False),  # the older spelling: CUDA 9.0 runs on 418
    ("py3.8_cuda10.1.243_cudnn7.6.3_0", False),
])
def test_a_conda_torch_built_for_a_cuda_newer_than_the_driver(build, too_old):
    text = ("# Name                    Version                   Build  Channel\n"
            f"pytorch                   1.7.0           {build}    pytorch\n"
            "| NVIDIA-SMI 418.67       Driver Version: 418.67       CUDA Version: 10.1     |\n")
    assert ("driver-too-old" in _completed(text)) is too_old


def test_no_gpu_does_not_explain_an_extension_missing_a_torch_symbol():
    text = ("- Ubuntu 20.04\n- CPU only (my laptop does not have a GPU)\n"
            "ImportError: /home/a/.local/lib/python3.8/site-packages/torch_points_kernels/points_cpu.so: undefined symbol: "
            "_ZN5torch3jit6tracer9addInputsEPNS0_4NodeEPKcRKN3c1013TensorOptionsE\n")
    assert _completed(text)[:1] == ("extension-build-mismatch",)


def test_no_kernel_image_is_a_jetson_wheel_only_on_a_jetson():
    message = "RuntimeError: CUDA error: no kernel image is available for execution on the device"
    assert _completed(f"I use torch 2.1.0+cu121 on an RTX 3090 GPU.\n{message}")[:1] == ("gpu-arch-unsupported",)
    assert "jetson-wrong-wheel" not in _completed(f"I use torch 2.1.0+cu121 on an RTX 3090 GPU.\n{message}")
    assert _completed(f"Jetson AGX Orin, torch 2.1.0\n{message}")[:1] == ("jetson-wrong-wheel",)


def test_a_jetson_and_one_framework_without_a_message_is_the_jetson_build():
    text = "我专门买了一个Nvidia Jetson NX，但安装时发现paddle官网的描述是：安装环境需要处理器架构是x86_64。"
    assert _completed(text) == ("jetson-wrong-wheel",)
    assert _completed(text.replace("paddle", "paddle 和 torch")) == ()  # which framework is unknown


def test_a_gpu_only_new_torch_runs_on_without_a_message_or_a_version():
    # the shape of comfyanonymous/ComfyUI reports: a new GPU, torch never named, no error line
    text = "I have an RTX 5080 and ComfyUI does nothing when I queue a prompt. Running in Ubuntu."
    assert _completed(text) == ("gpu-arch-unsupported",)
    assert _completed(text.replace("RTX 5080", "RTX 3080")) == ()  # every torch 2.x runs on it
    assert _completed(text + " torch 2.8.0+cu128") == ()  # the version is known: the rules judge it
    assert _completed(text.replace("ComfyUI", "TensorFlow")) == ()  # another framework's releases


def test_a_cpu_torch_in_a_text_about_the_gpu_is_the_cause_without_a_message():
    # oobabooga/text-generation-webui: a collect_env of a CPU build pasted, no error line
    text = "Why is my GPU not used?\n\nPyTorch version: 2.0.1+cpu\nIs debug build: False\n"
    assert _completed(text) == ("cpu-only-build",)
    assert _completed(text.replace("Why is my GPU not used?", "Training runs.")) == ()


def test_words_that_state_a_fact_pick_the_message_candidate_even_around_it():
    # bentoml/BentoML: the reporter's sentence wraps torch's symptom
    text = ("When running BentoML service the worker process sets CUDA_VISIBLE_DEVICES=1, which makes PyTorch "
            "fail to detect GPU (torch.cuda.is_available() == False).")
    assert _completed(text)[0] == "cuda-visible-devices"
    assert _completed("In the worker, torch.cuda.is_available() == False.")[0] == "cpu-only-build"


def test_a_gpu_no_torch_release_of_the_matrix_runs_on_is_named_without_a_message():
    # AUTOMATIC1111/stable-diffusion-webui: a GT 730 is Fermi or Kepler, the reporter says which
    text = ("I couldn't run stable diffusion automatic1111 using Nvidia GeForce GT 730. According to my searches, "
            "It's because of my old GPU and the number of my compute capability (2.1).")
    assert _completed(text) == ("gpu-arch-unsupported",)
    assert _completed(text.replace("(2.1)", "(7.5)")) == ()
    assert _completed("My Tesla K80 does not work with ComfyUI") == ()  # torch 2.0's cu118 build still has sm_37


def test_a_driver_function_missing_from_libcuda_is_an_old_driver_not_the_catch_all_symbol():
    # inducer/pycuda: an extension built against CUDA 11 headers loads a driver without the _v2 function
    text = ("ImportError: /home/u/anaconda3/envs/v/lib/python3.7/site-packages/pycuda/"
            "_driver.cpython-37m-x86_64-linux-gnu.so: undefined symbol: cuDevicePrimaryCtxRelease_v2")
    assert _completed(text)[:1] == ("driver-too-old",)
    # a runtime (cudart) function is no driver function: the catch-all reading stays
    assert _completed(text.replace("cuDevicePrimaryCtxRelease_v2", "cudaMallocAsync"))[:1] == ("companion-mismatch",)


def test_cudnn_sub_libraries_of_two_releases_are_a_cudnn_mismatch_however_the_loader_spaces_it():
    # PaddlePaddle/PaddleSlim: the loader's "lib :undefined symbol: X , version lib" form
    text = ("Could not load library libcudnn_cnn_train.so.8.     Error: /home/u/anaconda3/envs/paddle/bin/../lib/"
            "libcudnn_ops_train.so.8 :undefined symbol: _ZN5cudnn3ops26JoinInternalPriorityStreamEP12cudnnContexti , "
            "version libcudnn_ops_infer.so.8")
    assert _completed(text)[:1] == ("cudnn-mismatch",)


def test_numba_loading_a_library_without_cuinit_is_a_path_pointing_elsewhere():
    text = ("Error: CUDA device intialisation problem. driver missing function: cuInit.\nRequires CUDA 7.5 or above.\n"
            "export NUMBAPRO_CUDA_DRIVER=/usr/local/cuda-9.0/lib64/libcudart.so")
    assert _completed(text)[:1] == ("library-path-shadowing",)


def test_a_fermi_gpu_named_without_a_message_is_too_old_for_every_torch():
    # pjreddie/darknet: "Your GPU too old. ... CC 2.1 such as GeForce GT 625M"
    text = "i have cuda 9.1 ( GeForce GT 625M ). I got this error when I run the command line examples."
    assert _completed(text) == ("gpu-arch-unsupported",)
    assert _completed(text.replace("GT 625M", "GTX 1060")) == ()


def test_pip_finding_only_old_releases_on_a_named_old_distribution_is_its_glibc():
    """microsoft/onnxruntime#24338: CentOS 7.9 (glibc 2.17), Python 3.11, only 1.15-1.16 offered."""
    text = ("(oichat) [root@cu72 open_webui]# python -V\nPython 3.11.11\n"
            "(oichat) [root@cu72 open_webui]# pip install onnxruntime==1.20.1\n"
            "ERROR: Could not find a version that satisfies the requirement onnxruntime==1.20.1 "
            "(from versions: 1.15.0, 1.15.1, 1.16.0, 1.16.1, 1.16.2, 1.16.3)\n"
            "ERROR: No matching distribution found for onnxruntime==1.20.1\n\n### OS Version\n\nCentOS 7.9\n")
    assert _completed(text)[0] == "glibc-too-old"
    # glibc 2.34, or 2.17 under a Python known to be old: the Python is the suspect
    assert _completed(text.replace("CentOS 7.9", "Rocky Linux 9.3"))[0] == "python-unsupported"
    assert _completed(text.replace("Python 3.11.11", "Python 3.6.8"))[0] == "python-unsupported"
    # an unknown Python: the releases pip lists show this platform had wheels (bitsandbytes#1537, CentOS 7), unless it
    # lists none at all (Paddle#14572: "(from versions: )" on Ubuntu 16.04 with Python 3.6)
    unknown = text.replace("Python 3.11.11\n", "")
    assert _completed(unknown)[0] == "glibc-too-old"
    assert _completed(unknown.replace("1.15.0, 1.15.1, 1.16.0, 1.16.1, 1.16.2, 1.16.3", "none"))[0] == "python-unsupported"


def test_a_stated_cuda_of_another_release_than_tensorflows_build_is_missing_libraries():
    """OpenNMT/OpenNMT-tf#638: TF 2.1 (built for CUDA 10.1, which it loads from the system) with CUDA 10.2."""
    text = ("I installed the latest version `2.8.1` . tf version is `2.1.0` and cuda version is `10.2`.\n"
            "However, the running process only occupies about 153MB GPU no matter the batch_size.")
    assert _completed(text)[:1] == ("cuda-libs-missing",)
    for same in ("10.1", "10.1.243"):  # the release it was built for: nothing wrong with its libraries
        assert "cuda-libs-missing" not in _completed(text.replace("`10.2`", f"`{same}`"))
    assert "cuda-libs-missing" not in _completed(text + "\nI also use torch 2.1.0")  # the text may be about torch


def test_amds_own_runtime_failing_is_not_explained_by_the_missing_nvidia_gpu():
    """ROCm/legacy-rocm-build#1361: rocminfo under WSL2 on an RX 580 finds no /dev/kfd."""
    text = ("I've tried to install rocm to use my RX580 GPU with TensorFlow.\n`/opt/rocm/bin/rocminfo`\n"
            "> ROCk module is NOT loaded, possibly no GPU devices\n"
            "Unable to open /dev/kfd read-write: No such file or directory\n"
            "Is there any way to use my RX580 GPU with WSL2 or should I do a separate installation for Ubuntu?")
    assert _completed(text)[:1] == ("wsl-gpu-setup",)
    # a CUDA message on the same AMD machine is still the missing NVIDIA GPU
    assert _completed("cupy on my AMD RX580 GPU: CUDARuntimeError: cudaErrorNoDevice: no CUDA-capable device is detected"
                      )[:1] == ("no-gpu-platform",)
