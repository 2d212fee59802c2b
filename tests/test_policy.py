"""`--expect FILE`: the TOML policy, applied by `check` (and `fleet`), on recorded machines."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import run_cli

from envdoctor.findings import Finding
from envdoctor.policy import PolicyError, parse_policy

ROOT = Path(__file__).resolve().parent.parent
MACHINES = ROOT / "tests" / "fixtures" / "machines"
ENV = {"ENVDOCTOR_NVML": "0", "NO_COLOR": "1"}


def facts_of(name: str) -> dict:
    return json.loads((MACHINES / name).read_text())


def violations(policy: str, facts: dict, findings=()) -> list[tuple[str, str]]:
    return [(f.severity, f.title) for f in parse_policy(policy).check(facts, findings)]


A100 = "a100-current.json"  # 2 x A100-SXM4-80GB, driver 580.95.05 (CUDA 13.0), toolkit 12.8, Python 3.12.12


def test_a_policy_the_machine_meets_has_no_violation():
    policy = '''driver = ">=570"\ngpus = 2\ngpu_model = "NVIDIA A100*"\ncuda_toolkit = "12.8"\npython = "3.12"
driver_cuda = ">=12.8"\nforbid = ["cpu-only-build"]\n'''
    assert violations(policy, facts_of(A100)) == []


def test_every_deviation_names_the_rule_and_the_value_seen():
    policy = '''driver = ">=590"\ngpus = 8\ngpu_model = "NVIDIA H100*"\ncuda_toolkit = "12.9"\npython = ">=3.13"\n'''
    assert violations(policy, facts_of(A100)) == [
        ("error", "policy driver >=590: 580.95.05 seen"),
        ("error", "policy gpus 8: 2 seen"),
        ("error", "policy gpu_model NVIDIA H100*: NVIDIA A100-SXM4-80GB seen"),
        ("error", "policy cuda_toolkit ==12.9.*: 12.8 seen"),
        ("error", "policy python >=3.13: 3.12.12 seen"),
    ]


def test_framework_version_and_build():
    facts = facts_of("diag-driver-old.json")  # torch 2.6.0+cu124
    assert violations('torch = "==2.6.*"\ntorch_build = "cu124"\n', facts) == []
    assert violations('torch = "==2.8.*"\ntorch_build = "cu128"\n', facts) == [
        ("error", "policy torch ==2.8.*: 2.6.0+cu124 seen"), ("error", "policy torch_build cu128: cu124 seen")]
    # a hand-written package list names what it saw, not everything installed: tensorflow is unknown
    hand_written = {k: v for k, v in facts.items() if k != "collected_at"}
    assert violations('tensorflow = ">=2.18"\n', hand_written) == [("warning", "policy tensorflow: tensorflow unknown, cannot judge")]
    # a probe listed every package (this file predates `recorded`, whose probe wrote every block): absent is "none"
    assert violations('tensorflow = ">=2.18"\n', facts) == [("error", "policy tensorflow >=2.18: none seen")]
    recorded = dict(hand_written, recorded=["host", "python"])
    assert violations('tensorflow = ">=2.18"\n', recorded) == [("error", "policy tensorflow >=2.18: none seen")]


def test_forbid_matches_the_findings():
    found = [Finding(code="cpu-only-build", severity="error", title="t", detail="d")]
    assert violations('forbid = ["cpu-only-build", "driver-too-old"]\n', facts_of(A100), found) == [
        ("error", "policy forbid: cpu-only-build found")]


def test_unknown_facts_are_a_warning_not_a_pass():
    facts = {"schema": "envdoctor.facts/1", "host": {"os": "linux"}}
    got = violations('driver = ">=570"\ngpus = 8\ntorch_build = "cu128"\n', facts)
    assert [s for s, _ in got] == ["warning"] * 3
    assert got[0][1] == "policy driver: driver version unknown, cannot judge"


@pytest.mark.parametrize("text,message", [
    ('driver = ">=570"\ngpus = [8\n', "not valid TOML"),
    ('driver = ">=570"\n\ndrivr = ">=570"\n', "line 3: unknown rule 'drivr'"),
    ('driver = ">=570"\ntorch = "~~2.8"\n', "line 2: torch = '~~2.8' is not a version specifier"),
    ('gpus = true\n', "line 1: gpus must be a count"),
    ('forbid = "cpu-only-build"\n', "line 1: forbid must be a list"),
])
def test_malformed_policy_names_the_line(text, message):
    with pytest.raises(PolicyError, match="line"):
        parse_policy(text)
    with pytest.raises(PolicyError) as info:
        parse_policy(text)
    assert message in str(info.value)


def test_check_expect_cli(tmp_path):
    policy = tmp_path / "policy.toml"
    policy.write_text('driver = ">=590"\n')
    result = run_cli("check", "--facts", str(MACHINES / A100), "--expect", str(policy), "--json", env=ENV)
    assert result.returncode == 1
    [finding] = [f for f in json.loads(result.stdout)["findings"] if f["code"] == "policy-violation"]
    assert finding["severity"] == "error" and "580.95.05" in finding["title"]
    line = run_cli("check", "--facts", str(MACHINES / A100), "--expect", str(policy), "--format", "oneline", env=ENV)
    assert line.stdout == "policy-violation: policy driver >=590: 580.95.05 seen\n"
    policy.write_text('driver = ">=570"\n')
    assert run_cli("check", "--facts", str(MACHINES / A100), "--expect", str(policy), env=ENV).returncode == 0


def test_check_expect_malformed_is_exit_2_one_line(tmp_path):
    policy = tmp_path / "policy.toml"
    policy.write_text('driver = ">=570"\ngpu = 8\n')
    result = run_cli("check", "--facts", str(MACHINES / A100), "--expect", str(policy), env=ENV)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.count("\n") == 1 and "line 2: unknown rule 'gpu'" in result.stderr
    missing = run_cli("check", "--facts", str(MACHINES / A100), "--expect", str(tmp_path / "none.toml"), env=ENV)
    assert missing.returncode == 2 and "cannot read policy file" in missing.stderr


HOST_ONLY = {"schema": "envdoctor.facts/1", "host": {"os": "linux", "hostname": "n1"}, "recorded": ["host"]}


def test_unrecorded_python_and_cudnn_are_unknown_not_none():
    got = violations('torch = "==2.8.*"\ncudnn = ">=9"\n', HOST_ONLY)
    assert got == [("warning", "policy torch: torch unknown, cannot judge"),
                   ("warning", "policy cudnn: cuDNN unknown, cannot judge")]
    unrecorded_list = {"schema": "envdoctor.facts/1", "host": {"os": "linux"}, "cudnn": []}
    assert [s for s, _ in violations('cudnn = ">=9"\n', unrecorded_list)] == ["warning"]
    recorded = dict(unrecorded_list, recorded=["host", "cudnn"])
    assert violations('cudnn = ">=9"\n', recorded) == [("error", "policy cudnn >=9: none seen")]


def test_check_expect_on_host_only_facts_cannot_judge_exit_2(tmp_path):
    facts = tmp_path / "host-only.json"
    facts.write_text(json.dumps(HOST_ONLY))
    policy = tmp_path / "policy.toml"
    policy.write_text('torch = "==2.8.*"\n')
    line = run_cli("check", "--facts", str(facts), "--expect", str(policy), "--profile", "node", "--format", "oneline",
                   env=ENV)
    assert "none seen" not in line.stdout and line.stdout.startswith("unknown")
    assert line.returncode == 2
    prom = run_cli("check", "--facts", str(facts), "--expect", str(policy), "--format", "prometheus", env=ENV)
    assert 'torch=""' in prom.stdout and 'torch="none"' not in prom.stdout
    assert "envdoctor_healthy" not in prom.stdout.replace("# HELP envdoctor_healthy", "").replace("# TYPE envdoctor_healthy", "")


def test_a_failed_driver_probe_and_an_unnamed_gpu_cannot_be_judged():
    facts = {"schema": "envdoctor.facts/1", "host": {"os": "linux"}, "recorded": ["host", "nvidia"],
             "nvidia": {"driver_version": None, "failure": "NVML timed out", "gpus": [{"index": 0, "name": None}]}}
    got = violations('driver = ">=570"\ngpu_model = "NVIDIA H100*"\n', facts)
    assert [s for s, _ in got] == ["warning", "warning"]
    assert "failed (NVML timed out)" in parse_policy('driver = ">=570"\n').check(facts)[0].detail
    assert all("--deep" not in f.detail for f in parse_policy('driver = ">=570"\ncudnn = ">=9"\n').check(facts))
    named = dict(facts, nvidia={"driver_version": "580.95.05", "gpus": [{"index": 0, "name": "NVIDIA A100-SXM4-80GB"},
                                                                         {"index": 1, "name": None}]})
    assert violations('gpu_model = "NVIDIA H100*"\n', named) == [
        ("error", "policy gpu_model NVIDIA H100*: NVIDIA A100-SXM4-80GB seen")]
