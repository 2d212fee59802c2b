"""The corpus of real bug reports (tests/fixtures/reports/): well-formed, and `explain` survives every one.

Accuracy is measured by benchmarks/triage_accuracy.py, not asserted here.
"""

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
REPORTS = sorted((ROOT / "tests" / "fixtures" / "reports").glob("*.txt"), key=lambda p: int(p.name.split("-", 1)[0]))

CODES = {
    # existing
    "driver-too-old", "gpu-arch-unsupported", "jetson-wrong-wheel", "no-nvidia-driver",
    "driver-library-mismatch", "wsl-gpu-setup", "no-gpu-platform", "cpu-only-build", "duplicate-install",
    "companion-mismatch", "library-path-shadowing", "cuda-libs-missing", "cudnn-mismatch",
    "tf-windows-native-gpu", "cuda-visible-devices", "jax-version-skew", "nccl-error", "numpy-abi-mismatch",
    "python-unsupported", "rosetta-python", "cpu-instructions-unsupported", "weights-only-load",
    "windows-dll-missing", "cuda-out-of-memory", "glibc-too-old", "toolkit-without-driver",
    # new
    "fabric-manager-missing", "libstdcxx-too-old", "cuda-init-failed", "cuda-kernel-fault",
    "gpu-hardware-fault", "container-gpu-missing", "shm-too-small", "extension-build-mismatch",
    "ptxas-too-old", "determinism-setting", "mps-op-unsupported",
    "host-driver-required",  # envdoctor dockerfile/compose: the driver the image's GPU code needs (info)
}


def parse(path: Path) -> tuple[dict, str]:
    text = path.read_text(encoding="utf-8")
    head, sep, body = text.partition("\n# ---\n")
    assert sep, f"{path.name}: no '# ---' line ending the header"
    header = {}
    for line in head.splitlines():
        assert line.startswith("# ") and ":" in line, f"{path.name}: header line {line!r}"
        key, _, value = line[2:].partition(":")
        header[key.strip()] = value.strip()
    return header, body


def test_corpus_size():
    assert len(REPORTS) >= 70
    healthy = [p for p in REPORTS if parse(p)[0].get("cause") == "none"]
    assert len(healthy) >= 6


@pytest.mark.parametrize("path", REPORTS, ids=lambda p: p.name.split("-", 1)[0])
def test_report_header(path):
    assert re.fullmatch(r"\d{3,}-[a-z0-9][a-z0-9-]*\.txt", path.name)
    header, body = parse(path)
    for key in ("url", "cause", "also", "confirmed", "split"):
        assert key in header, f"{path.name}: missing '# {key}:'"
    assert header["url"].startswith("https://github.com/")
    assert header["cause"] == "none" or header["cause"] in CODES, header["cause"]
    for code in filter(None, (c.strip() for c in header["also"].split(","))):
        assert code in CODES, f"{path.name}: unknown also code {code}"
    assert header["split"] in ("dev", "held")
    assert header["confirmed"], f"{path.name}: empty '# confirmed:'"
    assert body.strip(), f"{path.name}: empty body"


def test_each_thread_once():
    urls = [parse(p)[0]["url"] for p in REPORTS]
    assert len(urls) == len(set(urls))


@pytest.mark.parametrize("path", REPORTS, ids=lambda p: p.name.split("-", 1)[0])
def test_explain_survives(path, tmp_path):
    log = tmp_path / "report.log"
    log.write_text(parse(path)[1], encoding="utf-8")
    r = subprocess.run([sys.executable, "-m", "envdoctor", "explain", "--json", "--file", str(log)],
                       cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert r.returncode in (0, 1), r.stderr[-2000:]
    assert "Traceback" not in r.stderr, r.stderr[-2000:]
    assert isinstance(json.loads(r.stdout), dict)
