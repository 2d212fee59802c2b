"""A message quoted only in part still names its signature (envdoctor/fragments.py); a reporter's
description of a symptom counts only where no program message is in the text."""

from pathlib import Path

from envdoctor import fragments
from envdoctor.explain import find, signatures

PASTED = Path(__file__).parent / "fixtures" / "pasted"


def _ids(text: str) -> set[str]:
    return {m.signature.id for m in find(text)}


def test_the_middle_of_a_long_message_names_its_signature():
    # torchvision's _assert_has_ops message, quoted from its second sentence on (Xilinx/Vitis-AI#943)
    text = (PASTED / "stated_versions_vitis_torchvision.txt").read_text(encoding="utf-8").split("# ---\n", 1)[1]
    assert "companion-mismatch" in {m.signature.codes[0] for m in find(text)}


def test_a_fragment_next_to_the_whole_message_adds_nothing():
    whole = ("RuntimeError: Couldn't load custom C++ ops. This can happen if your PyTorch and torchvision versions are "
             "incompatible, or if you had errors while compiling torchvision from source.")
    assert len(find(whole)) == 1


def test_a_later_copy_of_a_matched_message_is_no_fragment_of_another():
    # rongzhaoLiu/DFDNet-style log: THCudaCheck's line first, the RuntimeError repeating it ten lines on.
    # "cuda runtime error (101) : invalid device" shares seven words with error (98)'s "invalid device function".
    text = ("THCudaCheck FAIL file=/pytorch/torch/csrc/cuda/Module.cpp line=59 error=101 : invalid device ordinal\n"
            + "".join(f'  File "/home/u/project/options/base_options.py", line {n}, in parse\n    x = y\n' for n in range(8))
            + "RuntimeError: cuda runtime error (101) : invalid device ordinal at /pytorch/torch/csrc/cuda/Module.cpp:59\n")
    assert _ids(text) == {"cuda-invalid-device-ordinal"}


def test_traceback_frames_and_common_words_are_no_fragment():
    frames = ('Traceback (most recent call last):\n  File "/usr/lib/python3.10/site-packages/torch/cuda/__init__.py", '
              "line 293, in _lazy_init\n    torch._C._cuda_init()\n")
    assert find(frames) == []
    assert find("Please check your version and see if the error is in the file on line 3 of the call.") == []


def test_every_fragment_run_belongs_to_one_signature_only():
    table = fragments.index(signatures())
    assert table  # examples give runs
    assert all(len(run) == fragments.SHINGLE for run in table)


def test_the_loaders_words_around_another_library_name_no_signature():
    # "cannot open shared object file" around libssl is no libcudart message; a cuBLAS call under another
    # status is that status's own message, which the whole-message match names
    assert find("ImportError: libssl.so.1.1: cannot open shared object file: No such file or directory") == []
    call = ("RuntimeError: CUDA error: CUBLAS_STATUS_NOT_SUPPORTED when calling `cublasGemmStridedBatchedEx(handle, opa, opb, "
            "(int)m, (int)n, (int)k, (void*)&falpha, a, CUDA_R_16BF, (int)lda, stridea, b, CUDA_R_16BF, (int)ldb, strideb, "
            "(void*)&fbeta, c, CUDA_R_16BF, (int)ldc, stridec, (int)num_batches, compute_type, CUBLAS_GEMM_DEFAULT_TENSOR_OP)`")
    assert _ids(call) == {"pt-cublas-not-supported"}


def test_digits_do_not_decide_a_fragment():
    assert [w for w, _, _ in fragments.words("libcudart.so.11.0 (found version 11040)")] == [
        "libcudart", "so", "#", "#", "found", "version", "#"]


def test_a_symptom_is_heard_only_without_a_message():
    from envdoctor.explain import explain
    from envdoctor.facts import SCHEMA, Facts

    sig = next(s for s in signatures() if s.id == "sys-symptom-cannot-use-gpu")
    alone = explain(sig.examples[0], Facts.from_dict({"schema": SCHEMA}), machine_described=True)
    assert sig.id in {e.match.signature.id for e in alone.matches}
    message = sig.examples[0] + "\nRuntimeError: CUDA error: no kernel image is available for execution on the device"
    both = explain(message, Facts.from_dict({"schema": SCHEMA}), machine_described=True)
    assert sig.id not in {e.match.signature.id for e in both.matches}
    assert both.diagnosis[0] == "gpu-arch-unsupported"


def test_a_message_inside_a_harmless_line_does_not_silence_the_reporters_words():
    # JAX's INFO line about the TPU backend holds jaxlib's "has no attribute" text (google-research/multinerf
    # report, tests/fixtures/reports/3316): it is noise, so the reporter's own words still count
    text = ("I0808 20:59:00.964296 139857030612800 xla_bridge.py:328] Unable to initialize backend 'tpu': module "
            "'jaxlib.xla_extension' has no attribute 'get_tpu_client'\nTraining is slow: my GPU is not being used.")
    assert "jax-api-missing-in-jaxlib" not in _ids(text)
    assert "sys-symptom-runs-on-cpu" in _ids(text)
    assert "sys-symptom-runs-on-cpu" not in _ids("RuntimeError: No CUDA GPUs are available\nmy GPU is not being used.")


def test_pythons_version_banner_is_no_messages_fragment():
    # a report that prints its Python (oobabooga/text-generation-webui's launcher line) quotes no launcher refusal
    text = "** Python version: 3.11.9 (tags/v3.11.9:de54cf5, Apr  2 2024, 10:12:12) [MSC v.1938 64 bit (AMD64)]\n"
    assert _ids(text) == set()
    banner = "(tags/v3.13.3:6280bb5, Apr  8 2025, 14:47:33) [MSC v.1943 64 bit (AMD64)]"
    assert not any(run for sig in signatures() for example in sig.examples if banner in example
                   for run in fragments._runs(example) if "msc" in run)


def test_the_windows_shells_words_around_another_command_name_no_signature():
    # abetlen/llama-cpp-python: a bash-style variable typed into cmd.exe is no missing nvidia-smi
    text = ("but it gives me error: 'CMAKE_ARGS' is not recognized as an internal or external command,\n"
            "operable program or batch file.")
    assert _ids(text) == set()
    assert "sys-nvidia-smi-not-recognized-windows" in _ids(text.replace("CMAKE_ARGS", "nvidia-smi"))
