"""matrices/gpus.toml and the binary-compatibility rule (build_runs_on)."""

import shutil

import pytest

from envdoctor.matrix import gpus
from envdoctor.matrix.loader import MatrixError, data_dir, load_file

# What torch.cuda.get_arch_list() prints for the PyPI wheels (reference/pytorch.md §2, wheel scans).
CU126 = ["sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86", "sm_90"]
CU130 = ["sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120"]
CU130_AARCH64 = ["sm_80", "sm_90", "sm_100", "sm_110", "sm_120"]


def test_bundled_file_is_valid():
    gpus.validate()


@pytest.mark.parametrize("name, cc", [
    ("NVIDIA GeForce RTX 5090", "12.0"),
    ("NVIDIA RTX PRO 6000 Blackwell Workstation Edition", "12.0"),
    ("NVIDIA GB10", "12.1"),
    ("NVIDIA B200", "10.0"),
    ("NVIDIA GB200", "10.0"),
    ("NVIDIA H100 80GB HBM3", "9.0"),
    ("NVIDIA H200", "9.0"),
    ("NVIDIA GH200 480GB", "9.0"),
    ("NVIDIA L4", "8.9"),
    ("NVIDIA L40S", "8.9"),
    ("NVIDIA GeForce RTX 4070", "8.9"),
    ("NVIDIA A100-SXM4-80GB", "8.0"),
    ("NVIDIA A10G", "8.6"),
    ("NVIDIA GeForce RTX 3060", "8.6"),
    ("Tesla T4", "7.5"),
    ("NVIDIA GeForce RTX 2080 Ti", "7.5"),
    ("NVIDIA GeForce GTX 1660 SUPER", "7.5"),
    ("Tesla V100-SXM2-16GB", "7.0"),
    ("Tesla P100-PCIE-16GB", "6.0"),
    ("NVIDIA GeForce GTX 1080", "6.1"),
    ("Tesla P40", "6.1"),
    ("NVIDIA GeForce GTX 960", "5.2"),
    ("Orin (nvgpu)", "8.7"),
    ("NVIDIA Jetson AGX Orin Developer Kit", "8.7"),
    ("NVIDIA Thor", "11.0"),
    ("NVIDIA Jetson AGX Xavier", "7.2"),
    ("GeForce GTX 580", "2.0"),
    ("Tesla M2070", "2.0"),
    ("Quadro 4000", "2.0"),
    ("Quadro RTX 4000", "7.5"),  # not the Fermi Quadro 4000
    ("GeForce GT 625M", "2.1"),
    ("GeForce GTX 560 Ti", "2.1"),
    ("NVIDIA GeForce GT 1030", "6.1"),
    # written without the space, as issue forms often have it: never a Jetson TX1/TX2 inside "GTX1080"/"RTX2080"
    ("RTX2080 Ti", "7.5"),
    ("GeForce GTX1060 6GB", "6.1"),
    ("gtx1080", "6.1"),
    ("RTX3090", "8.6"),
    ("Jetson TX2", "6.2"),
    ("tx1", "5.3"),
])
def test_product_names(name, cc):
    assert gpus.compute_capability_for_name(name) == cc


def test_unknown_product():
    assert gpus.compute_capability_for_name("Matrox G200") is None


@pytest.mark.parametrize("cc, cuda, ok", [
    ("12.0", "12.6", False), ("12.0", "12.8", True), ("12.1", "12.8", False), ("12.1", "12.9", True),
    ("6.1", "12.9", True), ("6.1", "13.0", False), ("7.0", "13.0", False), ("7.5", "13.2", True),
    ("11.0", "12.9", False), ("11.0", "13.0", True), ("10.1", "13.0", False), ("3.7", "12.0", False),
    ("2.0", "8.0", True), ("2.1", "9.0", False), ("2.1", "3.0", False),
])
def test_cuda_can_build(cc, cuda, ok):
    assert gpus.cuda_can_build(cc, cuda) is ok


def test_cuda_can_build_unknown_cc():
    assert gpus.cuda_can_build("4.0", "12.0") is None


def test_exact_cubin_runs():
    verdict = gpus.build_runs_on(CU130, "12.0")
    assert verdict and verdict.via == "cubin" and verdict.kernel == "sm_120"


@pytest.mark.parametrize("cc, kernel", [("8.9", "sm_86"), ("6.1", "sm_60"), ("12.1", "sm_120"), ("10.3", "sm_100")])
def test_same_major_older_minor_cubin_runs(cc, kernel):
    arch_list = CU126 if cc == "6.1" else CU130
    verdict = gpus.build_runs_on(arch_list, cc)
    assert verdict.runs and verdict.kernel == kernel


def test_no_kernels_for_pascal_in_cuda13_build():
    verdict = gpus.build_runs_on(CU130, "6.1")
    assert not verdict
    assert "no kernels for sm_61" in verdict.reason


def test_newer_major_does_not_run_older_cubins():
    assert not gpus.build_runs_on(["sm_90", "sm_100"], "12.0")  # RTX 50 cannot use sm_100 code


def test_ptx_is_jit_compiled_on_newer_gpus():
    verdict = gpus.build_runs_on(["sm_80", "compute_90"], "12.0")
    assert verdict.runs and verdict.via == "ptx" and verdict.kernel == "compute_90"
    assert not gpus.build_runs_on(["compute_90"], "8.6")  # PTX never runs on older GPUs


def test_torch_arch_list_notation():
    assert gpus.build_runs_on(["8.0", "9.0+PTX"], "12.0").via == "ptx"
    assert gpus.build_runs_on(["7.5", "8.6"], "8.9").kernel == "sm_86"


def test_tegra_needs_its_own_cubin():
    # Orin (8.7): binary compatibility is desktop-only, so sm_80/sm_86 cubins do not run ...
    verdict = gpus.build_runs_on(CU130_AARCH64, "8.7")
    assert not verdict and "Jetson" in verdict.reason
    assert not gpus.build_runs_on(["sm_86"], "8.7")
    # ... but PTX does, and an exact cubin does
    assert gpus.build_runs_on(["sm_80", "compute_80"], "8.7").via == "ptx"
    assert gpus.build_runs_on(["sm_87"], "8.7").via == "cubin"
    # a Tegra cubin does not run on a desktop GPU of the same major
    assert not gpus.build_runs_on(["sm_87"], "8.9")


def test_thor_runs_only_sm110():
    assert gpus.build_runs_on(CU130_AARCH64, "11.0").kernel == "sm_110"
    assert not gpus.build_runs_on(["sm_80", "sm_90", "sm_100", "sm_120"], "11.0")  # cu128 aarch64


def test_arch_specific_and_family_suffixes():
    assert gpus.build_runs_on(["sm_90a"], "9.0")
    assert not gpus.build_runs_on(["sm_100a"], "10.3")  # 'a' = this exact GPU only
    assert gpus.build_runs_on(["sm_100f"], "10.3")  # 'f' = the family, minor >= 100's
    assert not gpus.build_runs_on(["compute_90a"], "10.0")
    assert not gpus.build_runs_on(["compute_100f"], "12.0")  # family PTX stays in its major


def test_bad_arch_entry():
    with pytest.raises(ValueError):
        gpus.build_runs_on(["sm_8x"], "8.6")


def test_sm_name():
    assert gpus.sm_name("12.1") == "sm_121"
    assert gpus.arch("8.7").tegra and not gpus.arch("8.6").tegra


# --- broken copies --------------------------------------------------------------------------------

def _broken(tmp_path, old, new):
    path = tmp_path / "gpus.toml"
    shutil.copy(data_dir() / "gpus.toml", path)
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))
    return path


def test_sm_must_match_cc(tmp_path):
    path = _broken(tmp_path, 'cc = "8.6"\nsm = "sm_86"', 'cc = "8.6"\nsm = "sm_80"')
    with pytest.raises(MatrixError, match=r"gpus.toml: \[\[arch\]\] row \d+ \(cc=8.6\): sm 'sm_80' does not match"):
        gpus.validate(load_file(path))


def test_product_needs_known_cc(tmp_path):
    path = _broken(tmp_path, 'family = "Jetson Orin"\ncc = "8.7"', 'family = "Jetson Orin"\ncc = "8.8"')
    with pytest.raises(MatrixError, match=r"\[\[product\]\] row \d+ \(Jetson Orin\): compute capability 8.8 has no \[\[arch\]\] row"):
        gpus.validate(load_file(path))


def test_bad_pattern(tmp_path):
    path = _broken(tmp_path, "pattern = 'Orin'", "pattern = 'Orin('")
    with pytest.raises(MatrixError, match="bad pattern"):
        gpus.validate(load_file(path))


def test_last_before_first(tmp_path):
    path = _broken(tmp_path, 'first_cuda = "8.0"\nlast_cuda = "12.9"', 'first_cuda = "8.0"\nlast_cuda = "7.5"')
    with pytest.raises(MatrixError, match="last_cuda is before first_cuda"):
        gpus.validate(load_file(path))


def test_missing_checked(tmp_path):
    path = _broken(tmp_path, 'source = "https://developer.nvidia.com/cuda-gpus (Jetson AGX Orin, Orin NX, Orin Nano)"\nchecked = "2026-11-29"\n',
                   'source = "https://developer.nvidia.com/cuda-gpus (Jetson AGX Orin, Orin NX, Orin Nano)"\n')
    with pytest.raises(MatrixError, match=r"\[\[product\]\] row \d+.*missing 'checked' date"):
        load_file(path)
