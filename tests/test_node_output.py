"""Node-local output: --format oneline | prometheus | markdown, --textfile-dir, --profile node,
`facts --ansible-fact`. The real CLI in a subprocess, on recorded machines or a fake nvidia-smi."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import run_cli
from probe_helpers import FAKEBIN, SYSTEM_PATH

from envdoctor.findings import Finding
from envdoctor.render.oneline import fit, oneline
from envdoctor.render.prometheus import escape_label, exposition

ROOT = Path(__file__).resolve().parent.parent
MACHINES = ROOT / "tests" / "fixtures" / "machines"
ENV = {"ENVDOCTOR_NVML": "0", "NO_COLOR": "1", "COLUMNS": "200"}
SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(?:[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\.)*",?)*\})? (\S+)$')


def check(*args, **env):
    return run_cli("check", *args, env={**ENV, **env})


def machine(name: str) -> str:
    return str(MACHINES / name)


def finding(code: str, title: str, severity: str = "error") -> Finding:
    return Finding(code=code, severity=severity, title=title, detail="d")


# --- oneline ------------------------------------------------------------------------------------

def test_oneline_ok_and_first_error_with_count():
    assert oneline([]) == "ok"
    assert oneline([finding("no-gpu-platform", "no GPU", "info")]) == "ok"
    line = oneline([finding("driver-too-old", "driver 470 too old"), finding("cudnn-mismatch", "x"),
                    finding("x", "warn", "warning")])
    assert line == "driver-too-old: driver 470 too old (+1 more)"
    assert oneline([finding("x", "warn", "warning")], strict=True) == "x: warn"


def test_oneline_is_one_ascii_line_of_at_most_80():
    title = "torch 2.6.0+cu124 needs NVIDIA driver ≥ 525.60.13\n(CUDA 12.4) — this one is 470.82 " + "x" * 200
    line = oneline([finding("driver-too-old", title)] * 3)
    assert len(line) <= 80 and "\n" not in line and line.isascii()
    assert line.startswith("driver-too-old: torch 2.6.0+cu124 needs NVIDIA driver >= 525.60.13")
    assert line.endswith("... (+2 more)")
    assert oneline([], unknown="nvidia-smi: timed out after 5 s") == "unknown: nvidia-smi: timed out after 5 s"
    assert len(fit("a" * 500)) == 80


@pytest.mark.parametrize("name", sorted(p.name for p in MACHINES.glob("*.json")))
def test_oneline_cli_on_every_recorded_machine(name):
    result = check("--facts", machine(name), "--format", "oneline")
    assert result.returncode in (0, 1), result.stderr
    lines = result.stdout.split("\n")
    assert len(lines) == 2 and lines[1] == "" and len(lines[0]) <= 80 and lines[0].isascii()
    assert (lines[0] == "ok") == (result.returncode == 0)


# --- prometheus ---------------------------------------------------------------------------------

def parse_exposition(text: str) -> dict[str, list[tuple[str, str]]]:
    """Every sample by metric name; asserts the text-format grammar line by line (no timestamps)."""
    samples: dict[str, list[tuple[str, str]]] = {}
    typed = set()
    for line in text.splitlines():
        if line.startswith("# HELP ") or line.startswith("# TYPE "):
            if line.startswith("# TYPE "):
                typed.add(line.split()[2])
            continue
        m = SAMPLE.match(line)
        assert m, f"not a sample line: {line!r}"
        float(m.group(3))
        base = re.sub(r"_(sum|count|bucket)$", "", m.group(1))  # a summary's or histogram's series
        assert m.group(1) in typed or base in typed, f"{m.group(1)} has no TYPE line before it"
        samples.setdefault(m.group(1), []).append((m.group(2) or "", m.group(3)))
    return samples


def test_prometheus_cli_healthy_machine():
    result = check("--facts", machine("a100-current.json"), "--format", "prometheus")
    assert result.returncode == 0, result.stderr
    samples = parse_exposition(result.stdout)
    assert samples["envdoctor_healthy"] == [("", "1")]
    assert samples["envdoctor_gpus"] == [("", "2")]
    [(labels, value)] = samples["envdoctor_info"]
    assert value == "1" and 'driver_version="580.95.05"' in labels and 'envdoctor_version="' in labels
    assert "envdoctor_finding" not in samples
    assert float(samples["envdoctor_last_run_timestamp_seconds"][0][1]) > 1.7e9


def test_prometheus_findings_are_codes_and_severities():
    result = check("--facts", machine("diag-driver-old.json"), "--format", "prometheus")
    samples = parse_exposition(result.stdout)
    assert result.returncode == 1 and samples["envdoctor_healthy"] == [("", "0")]
    assert ('{code="driver-too-old",severity="error"}', "1") in samples["envdoctor_finding"]
    for labels, _ in samples["envdoctor_finding"]:
        assert set(re.findall(r'(\w+)="', labels)) == {"code", "severity"}


def test_prometheus_label_escaping_and_unknown_health():
    assert escape_label('a"b\\c\nd') == 'a\\"b\\\\c\\nd'
    facts = {"schema": "envdoctor.facts/1", "python": {"version": '3.12"\n'}}
    text = exposition(facts, [finding("x", "t")], None, "0.1.0", now=5)
    samples = parse_exposition(text)
    assert "envdoctor_healthy" not in samples and "envdoctor_gpus" not in samples  # unknown: absent
    assert 'python="3.12\\"\\n"' in samples["envdoctor_info"][0][0]
    assert samples["envdoctor_last_run_timestamp_seconds"] == [("", "5.000")]


@pytest.mark.skipif(not shutil.which("promtool"), reason="promtool not installed (Debian package prometheus)")
@pytest.mark.parametrize("name", ["a100-current.json", "diag-driver-old.json", "cpu-only.json"])
def test_promtool_accepts_the_exposition(name):
    text = check("--facts", machine(name), "--format", "prometheus").stdout
    result = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True, text=True, timeout=30)
    assert result.returncode == 0, result.stdout + result.stderr


def test_textfile_dir_is_written_atomically(tmp_path):
    (tmp_path / "envdoctor.prom").write_text("old\n")
    result = check("--facts", machine("diag-driver-old.json"), "--format", "oneline", "--textfile-dir", str(tmp_path))
    assert result.returncode == 1 and result.stdout.startswith("driver-too-old: ")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["envdoctor.prom"]  # no temporary file left
    samples = parse_exposition((tmp_path / "envdoctor.prom").read_text())
    assert samples["envdoctor_healthy"] == [("", "0")]
    assert oct((tmp_path / "envdoctor.prom").stat().st_mode & 0o777) == "0o644"


def test_textfile_dir_missing_is_exit_2(tmp_path):
    result = check("--facts", machine("a100-current.json"), "--textfile-dir", str(tmp_path / "nope"))
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.count("\n") == 1 and "no such directory" in result.stderr


# --- formats and options ------------------------------------------------------------------------

def test_json_short_form_equals_format_json():
    long = json.loads(check("--facts", machine("a100-current.json"), "--format", "json").stdout)
    short = json.loads(check("--facts", machine("a100-current.json"), "--json").stdout)
    long.pop("timings"), short.pop("timings")
    assert long == short and long["schema"] == "envdoctor.report/1"


@pytest.mark.parametrize("args,message", [
    (["--format", "yaml"], "choose one of console, json, markdown, oneline, prometheus"),
    (["--json", "--format", "oneline"], "give one output format"),
    (["--json", "--markdown"], "give one output format"),
    (["--profile", "cluster"], "choose one of default, node"),
    (["--profile", "node", "--deep"], "drop --deep"),
])
def test_bad_choices_exit_2_with_one_line(args, message):
    result = check("--facts", machine("a100-current.json"), *args)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.count("\n") == 1 and message in result.stderr


def test_markdown_is_redacted_unless_asked(tmp_path):
    facts = json.loads((MACHINES / "a100-current.json").read_text())
    facts.setdefault("host", {})["hostname"] = "gpu-node-secret-042"
    path = tmp_path / "machine.json"
    path.write_text(json.dumps(facts))
    redacted = check("--facts", str(path), "--markdown")
    plain = check("--facts", str(path), "--format", "markdown", "--no-redact")
    assert redacted.returncode == 0 and plain.returncode == 0, redacted.stderr + plain.stderr
    assert "## envdoctor report" in redacted.stdout
    assert "gpu-node-secret-042" not in redacted.stdout
    assert "gpu-node-secret-042" in plain.stdout


# --- node profile -------------------------------------------------------------------------------

def test_node_profile_replay_exit_codes():
    assert check("--facts", machine("a100-current.json"), "--profile", "node", "--format", "oneline").returncode == 0
    bad = check("--facts", machine("diag-driver-old.json"), "--profile", "node", "--format", "oneline")
    assert bad.returncode == 1 and bad.stdout.startswith("driver-too-old: ")


def test_node_profile_hung_nvidia_smi_is_unknown_not_healthy():
    result = check("--profile", "node", "--format", "prometheus", PATH=f"{FAKEBIN / 'hang'}:{SYSTEM_PATH}",
                   ENVDOCTOR_PROBE_TIMEOUT="1")
    assert result.returncode == 2, result.stdout + result.stderr
    assert "envdoctor_healthy" not in parse_exposition(result.stdout)
    line = check("--profile", "node", "--format", "oneline", PATH=f"{FAKEBIN / 'hang'}:{SYSTEM_PATH}",
                 ENVDOCTOR_PROBE_TIMEOUT="1")
    assert line.returncode == 2 and line.stdout.startswith("unknown: nvidia-smi: ") and len(line.stdout) <= 81


def test_node_profile_whole_run_budget_ends_a_wedged_probe(tmp_path):
    """A probe that outlives the whole-run budget: the run ends at the budget with exit 2, and the
    textfile says nothing of health."""
    result = check("--profile", "node", "--format", "oneline", "--textfile-dir", str(tmp_path),
                   PATH=f"{FAKEBIN / 'hang'}:{SYSTEM_PATH}", ENVDOCTOR_PROBE_TIMEOUT="30", ENVDOCTOR_NODE_BUDGET="1")
    assert result.returncode == 2
    assert result.stdout == "unknown: probes did not finish within 1 s\n"
    assert "envdoctor_healthy" not in parse_exposition((tmp_path / "envdoctor.prom").read_text())


def test_node_profile_healthy_classic_gpu():
    result = check("--profile", "node", "--format", "oneline", PATH=f"{FAKEBIN / 'classic'}:{SYSTEM_PATH}")
    assert result.returncode in (0, 1), result.stdout + result.stderr
    assert not result.stdout.startswith("unknown")


# --- ansible fact -------------------------------------------------------------------------------

def test_ansible_fact_is_one_object_and_exits_0():
    result = run_cli("facts", "--ansible-fact", env={**ENV, "PATH": f"{FAKEBIN / 'classic'}:{SYSTEM_PATH}"})
    assert result.returncode == 0
    document = json.loads(result.stdout)
    assert set(document) >= {"ok", "exit", "summary", "facts", "findings", "envdoctor_version"}
    assert document["schema"] == "envdoctor.ansible-fact/1"
    assert document["ok"] == (document["exit"] == 0) and len(document["summary"]) <= 80


def test_ansible_fact_on_bad_input_still_one_object_exit_0(tmp_path):
    result = run_cli("facts", "--ansible-fact", "--python", str(tmp_path / "no-python"), env=ENV)
    assert result.returncode == 0
    document = json.loads(result.stdout)
    assert document["ok"] is False and document["exit"] == 2 and document["summary"].startswith("unknown: ")
    assert document["facts"] is None and document["findings"] == []


def test_ansible_fact_wedged_probe_still_one_object(tmp_path):
    result = run_cli("facts", "--ansible-fact", "--profile", "node",
                     env={**ENV, "PATH": f"{FAKEBIN / 'hang'}:{SYSTEM_PATH}", "ENVDOCTOR_PROBE_TIMEOUT": "30",
                          "ENVDOCTOR_NODE_BUDGET": "1"})
    assert result.returncode == 0
    document = json.loads(result.stdout)
    assert (document["ok"], document["exit"]) == (False, 2) and "within 1 s" in document["summary"]


def test_facts_markdown():
    result = run_cli("facts", "--markdown", env={**ENV, "PATH": f"{FAKEBIN / 'classic'}:{SYSTEM_PATH}"})
    assert result.returncode == 0, result.stderr
    assert "GTX 960" in result.stdout


def test_facts_file_only_with_ansible_fact():
    result = run_cli("facts", "--facts", machine("a100-current.json"), env=ENV)
    assert result.returncode == 2 and result.stdout == "" and "--ansible-fact" in result.stderr
    fact = json.loads(run_cli("facts", "--ansible-fact", "--facts", machine("diag-driver-old.json"), env=ENV).stdout)
    assert (fact["ok"], fact["exit"]) == (False, 1) and fact["summary"].startswith("driver-too-old: ")


def test_facts_without_nvidia_or_python_cannot_be_judged(tmp_path):
    partial = tmp_path / "partial.json"
    partial.write_text(json.dumps({"schema": "envdoctor.facts/1", "host": {"os": "linux", "hostname": "n1"},
                                   "recorded": ["host"]}))
    line = check("--facts", str(partial), "--profile", "node", "--format", "oneline")
    assert line.returncode == 2 and line.stdout.startswith("unknown: ") and "NVIDIA or Python" in line.stdout
    prom = check("--facts", str(partial), "--profile", "node", "--format", "prometheus")
    assert prom.returncode == 2
    assert not [s for s in prom.stdout.splitlines() if s.startswith("envdoctor_healthy")]
    recorded = tmp_path / "recorded.json"  # a probe looked: no NVIDIA driver, Python seen -> judged
    recorded.write_text(json.dumps({"schema": "envdoctor.facts/1", "host": {"os": "linux", "hostname": "n1"},
                                    "python": {"version": "3.12.3", "packages": {}},
                                    "recorded": ["host", "python", "nvidia"]}))
    assert not check("--facts", str(recorded), "--profile", "node", "--format", "oneline").stdout.startswith("unknown")


def test_facts_profile_node_is_bounded_by_the_node_budget():
    hung = run_cli("facts", "--profile", "node",
                   env={**ENV, "PATH": f"{FAKEBIN / 'hang'}:{SYSTEM_PATH}", "ENVDOCTOR_PROBE_TIMEOUT": "30",
                        "ENVDOCTOR_NODE_BUDGET": "1"})
    assert hung.returncode == 2 and hung.stdout == ""
    assert hung.stderr.count("\n") == 1 and "did not finish within 1 s" in hung.stderr
    plain = run_cli("facts", "--profile", "node", env={**ENV, "PATH": SYSTEM_PATH})
    assert plain.returncode == 0 and json.loads(plain.stdout)["schema"] == "envdoctor.facts/1"
    assert "ENVDOCTOR_NODE_BUDGET" in run_cli("facts", "--help", env={**ENV, "COLUMNS": "300"}).stdout
