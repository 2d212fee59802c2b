"""`envdoctor explain` end to end: the real CLI in a subprocess, on real logs and recorded machines."""

import json
import sys
from pathlib import Path

FIXTURES = Path(__file__).resolve().parent / "fixtures"
LOGS = FIXTURES / "logs"
MACHINES = FIXTURES / "machines"


def facts(name):
    return str(MACHINES / f"{name}.json")


def test_text_argument_with_a_confirming_machine(cli):
    r = cli("explain", "RuntimeError: The NVIDIA driver on your system is too old (found version 11040).",
            "--facts", facts("diag-driver-old"), env={"NO_COLOR": "1"})
    assert r.returncode == 1, r.stderr
    assert "[driver-too-old]" in r.stdout and "525.60.13" in r.stdout and "470.182.03" in r.stdout
    assert "$ " in r.stdout  # this machine's command, from the planner


def test_file_json_shape(cli):
    r = cli("explain", "--file", str(LOGS / "torchvision-nms.log"), "--facts", facts("diag-companion-version"), "--json")
    assert r.returncode == 1, r.stderr
    doc = json.loads(r.stdout)
    (match,) = doc["matches"]
    assert {"code", "signature", "excerpt", "cause", "fix"} <= set(match)
    assert match["code"] == "companion-mismatch" and match["signature"] == "torchvision-nms-missing"
    assert "operator torchvision::nms does not exist" in match["excerpt"]
    assert doc["findings"] and doc["findings"][0]["code"] == "companion-mismatch"


def test_stdin_with_the_long_noisy_log(cli):
    text = (LOGS / "long-noisy-training.log").read_text(encoding="utf-8")
    r = cli("explain", "-", "--facts", facts("rtx5090-r570"), "--json", input_text=text)
    assert r.returncode == 1, r.stderr
    (match,) = json.loads(r.stdout)["matches"]
    assert match["signature"] == "sm-not-compatible" and match["code"] == "gpu-arch-unsupported"
    assert "\x1b" not in match["excerpt"] and "sm_120" in match["excerpt"]


def test_file_dash_reads_a_pasted_report_from_stdin(cli):
    report = (Path(__file__).parent / "fixtures" / "pasted" / "yolo_banner_cpu_torch_1495.txt").read_text(encoding="utf-8")
    r = cli("explain", "--file", "-", "--json", input_text=report.split("# ---\n", 1)[1])
    assert r.returncode == 1, r.stderr
    doc = json.loads(r.stdout)
    assert doc["diagnosis"] == ["cpu-only-build"]
    assert "torch 2.0.0+cpu (quoted)" in doc["machine"]["read"]
    empty = cli("explain", "--file", "-", input_text="")
    assert empty.returncode == 2 and "standard input is empty" in empty.stderr


def test_real_logs_of_each_framework_through_the_cli(cli):
    for name in ("jax-plugin-mismatch", "tf-msvcp140", "paddle-cannot-load-cudnn"):
        log = LOGS / f"{name}.log"
        r = cli("explain", "--file", str(log), "--facts", facts("diag-clean-rtx4090"), "--json")
        assert r.returncode == 1, (log.name, r.stderr)
        assert json.loads(r.stdout)["matches"], log.name


def test_unknown_text_says_so_and_suggests_check(cli):
    r = cli("explain", "segmentation of the images finished in 3.2 s", "--facts", facts("diag-clean-rtx4090"),
            env={"NO_COLOR": "1"})
    assert r.returncode == 0
    assert "No known error signature" in r.stdout and "envdoctor check" in r.stdout
    r = cli("explain", "nothing to see", "--facts", facts("diag-clean-rtx4090"), "--json")
    doc = json.loads(r.stdout)
    assert (doc["diagnosis"], doc["matches"], doc["findings"], doc["other_problems"]) == ([], [], [], 0)
    assert doc["machine"]["judged"] == "the recorded machine diag-clean-rtx4090.json"


def test_usage_errors_exit_2_with_one_line(cli, tmp_path):
    for args in (("explain",), ("explain", "x", "--file", str(LOGS / "no-kernel-image.log")),
                 ("explain", "--file", str(tmp_path / "missing.log")),
                 ("explain", "x", "--facts", str(tmp_path / "missing.json"))):
        r = cli(*args)
        assert r.returncode == 2, args
        assert r.stderr.count("\n") == 1 and r.stderr.startswith("envdoctor: error:"), r.stderr


def test_probes_this_machine_without_facts(cli):
    r = cli("explain", "Torch not compiled with CUDA enabled", "--json", "--python", sys.executable)
    assert r.returncode == 1, r.stderr
    (match,) = json.loads(r.stdout)["matches"]
    assert match["code"] in ("cpu-only-build", "no-gpu-platform", "jetson-wrong-wheel", "rosetta-python")


def test_a_log_longer_than_the_limit_keeps_its_start_and_its_end(cli, tmp_path):
    from envdoctor.commands.explain import HEAD_BYTES, TAIL_BYTES

    noise = b"step 100 loss=0.25 lr=1e-4 all fine here\n"
    log = tmp_path / "huge.log"
    with open(log, "wb") as fh:
        fh.write(b"Could not load dynamic library 'libcudnn.so.8'; dlerror: not found\n")
        fh.write(noise * ((HEAD_BYTES + TAIL_BYTES) // len(noise) + 1000))
        fh.write(b"RuntimeError: CUDA error: no kernel image is available for execution on the device\n")
    r = cli("explain", "--file", str(log), "--facts", facts("diag-clean-rtx4090"), "--json")
    assert r.returncode == 1, r.stderr
    ids = [m["signature"] for m in json.loads(r.stdout)["matches"]]
    assert ids.index("tf-could-not-load-dynamic-library") < ids.index("no-kernel-image")


def test_read_log_streams_a_pipe_and_skips_nothing_of_a_short_log():
    import io

    from envdoctor.commands.explain import HEAD_BYTES, TAIL_BYTES, read_log

    class Pipe(io.BytesIO):
        def seekable(self):
            return False

    line = b"x" * 99 + b"\n"
    short = line * ((HEAD_BYTES + TAIL_BYTES) // len(line))
    assert read_log(io.BytesIO(short)) == (short, False) == read_log(Pipe(short))
    long = short + b"the end\n"
    for stream in (io.BytesIO(long), Pipe(long)):
        data, truncated = read_log(stream)
        assert data.endswith(b"the end\n") and data.startswith(b"x" * 99) and truncated
        assert len(data) == HEAD_BYTES + 1 + TAIL_BYTES
