"""`envdoctor fleet`: many nodes' JSON in every form the engines write, aggregated by the real CLI."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from conftest import run_cli

from envdoctor.fleet.hostlist import HostlistError, expand, fold

ROOT = Path(__file__).resolve().parent.parent
MACHINES = ROOT / "tests" / "fixtures" / "machines"
FLEET = ROOT / "tests" / "fixtures" / "fleet"
ENV = {"ENVDOCTOR_NVML": "0", "NO_COLOR": "1"}


def machine(name: str, host: str | None = None) -> dict:
    facts = json.loads((MACHINES / name).read_text())
    if host:
        facts.setdefault("host", {})["hostname"] = host
    return facts


def fleet(*args, input_text=None):
    return run_cli("fleet", *args, env=ENV, input_text=input_text)


def fleet_json(*args, input_text=None):
    result = fleet(*args, "--json", input_text=input_text)
    assert result.returncode in (0, 1), result.stderr
    return result.returncode, json.loads(result.stdout)


def key(report, name):
    return next(k for k in report["keys"] if k["key"] == name)


def write_nodes(folder: Path, names, machine_name="a100-current.json", **changes) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name in names:
        facts = machine(machine_name, name)
        for path, value in changes.items():
            block, field = path.split("__")
            facts[block][field] = value
        (folder / f"{name}.json").write_text(json.dumps(facts, indent=2))


# --- node ranges --------------------------------------------------------------------------------

def test_fold_and_expand():
    hosts = expand("gpu[001-117,119]")
    assert len(hosts) == 118 and hosts[0] == "gpu001" and hosts[-1] == "gpu119"
    assert fold(hosts) == "gpu[001-117,119]"
    assert fold(["node10", "node9", "node1", "login", "gpu100", "gpu099"]) == "gpu[099-100],login,node[1,9-10]"
    assert expand("rack[1-2]-n[01-02], x") == ["rack1-n01", "rack1-n02", "rack2-n01", "rack2-n02", "x"]
    assert fold([]) == "" and fold(["a.example.org"]) == "a.example.org"


@pytest.mark.parametrize("text", ["gpu[001-", "gpu[3-1]", "gpu[a-b]", "gpu]1[", "gpu[1-99999999]"])
def test_bad_ranges(text):
    with pytest.raises(HostlistError):
        expand(text)


# --- folders of facts ---------------------------------------------------------------------------

def test_homogeneous_healthy_fleet_exits_0(tmp_path):
    write_nodes(tmp_path, [f"gpu{i:03d}" for i in range(1, 6)])
    code, report = fleet_json(str(tmp_path), "--expect-hosts", "gpu[001-005]")
    assert code == 0 and report["schema"] == "envdoctor.fleet/1" and report["nodes"] == 5
    assert report["drift"] is False and report["silent"] == {"nodes": "", "count": 0}
    assert key(report, "driver_version")["groups"] == [
        {"value": "580.95.05", "nodes": "gpu[001-005]", "count": 5, "reference": True}]
    assert key(report, "gpus")["reference"] == "2 x NVIDIA A100-SXM4-80GB"
    assert {"envdoctor_version", "keys", "unhealthy", "unknown", "unreadable", "exit"} <= set(report)


def test_drift_unhealthy_silent_and_unreadable(tmp_path):
    write_nodes(tmp_path, [f"gpu{i:03d}" for i in range(1, 118)] + ["gpu119"])
    write_nodes(tmp_path, ["gpu120", "gpu121"], nvidia__driver_version="560.35.03")
    (tmp_path / "gpu200.json").write_text(json.dumps(machine("diag-driver-old.json", "gpu200")))
    (tmp_path / "gpu201.json").write_text(json.dumps(machine("a100-current.json", "gpu201"))[:700])  # truncated
    code, report = fleet_json(str(tmp_path), "--expect-hosts", "gpu[001-121,200-202]")
    assert code == 1 and report["nodes"] == 121
    driver = key(report, "driver_version")
    assert driver["drift"] and driver["reference"] == "580.95.05"
    assert [(g["value"], g["nodes"], g["reference"]) for g in driver["groups"]] == [
        ("580.95.05", "gpu[001-117,119]", True), ("560.35.03", "gpu[120-121]", False), ("470.182.03", "gpu200", False)]
    [unhealthy] = report["unhealthy"]
    assert unhealthy["nodes"] == "gpu200" and unhealthy["verdict"].startswith("driver-too-old: ")
    assert "driver-too-old" in unhealthy["codes"] and len(unhealthy["verdict"]) <= 80
    assert report["silent"] == {"nodes": "gpu[118,202]", "count": 2}  # gpu201 sent something broken
    [bad] = report["unreadable"]
    assert bad["source"].endswith("gpu201.json") and "not valid JSON" in bad["message"]
    text = fleet(str(tmp_path), "--expect-hosts", "gpu[001-121,200-202]")
    assert text.returncode == 1
    assert "gpu201.json: not valid JSON" in text.stdout and "silent (expected, sent nothing): gpu[118,202]" in text.stdout
    assert "  * 580.95.05  gpu[001-117,119]  (118, majority)" in text.stdout


def test_baseline_is_the_reference(tmp_path):
    write_nodes(tmp_path / "nodes", ["a1", "a2", "a3"], nvidia__driver_version="560.35.03")
    write_nodes(tmp_path / "nodes", ["a4"])
    baseline = tmp_path / "golden.json"
    baseline.write_text(json.dumps(machine("a100-current.json", "golden")))
    _, majority = fleet_json(str(tmp_path / "nodes"), "--majority")
    assert key(majority, "driver_version")["reference"] == "560.35.03"
    _, report = fleet_json(str(tmp_path / "nodes"), "--baseline", str(baseline))
    assert report["reference"] == "baseline"
    groups = key(report, "driver_version")["groups"]
    assert [(g["value"], g["nodes"], g["reference"]) for g in groups] == [
        ("580.95.05", "a4", True), ("560.35.03", "a[1-3]", False)]


def test_expect_policy_applies_to_every_node(tmp_path):
    write_nodes(tmp_path / "nodes", ["n1", "n2"])
    policy = tmp_path / "policy.toml"
    policy.write_text('gpus = 8\n')
    code, report = fleet_json(str(tmp_path / "nodes"), "--expect", str(policy))
    assert code == 1
    [unhealthy] = report["unhealthy"]
    assert unhealthy["nodes"] == "n[1-2]" and unhealthy["verdict"] == "policy-violation: policy gpus 8: 2 seen"
    policy.write_text('gpus = [8\n')
    bad = fleet(str(tmp_path / "nodes"), "--expect", str(policy))
    assert bad.returncode == 2 and "line 1" in bad.stderr and bad.stderr.count("\n") == 1


# --- the forms nodes send -----------------------------------------------------------------------

def test_pdsh_lines_on_stdin_indented_and_interleaved():
    a = json.dumps(machine("a100-current.json", "ignored-a"), indent=2).splitlines()
    b = json.dumps(machine("diag-driver-old.json", "ignored-b"), indent=2).splitlines()
    lines = []
    for i in range(max(len(a), len(b))):  # pdsh interleaves the hosts' lines
        if i < len(a):
            lines.append(f"node1: {a[i]}")
        if i < len(b):
            lines.append(f"node2: {b[i]}")
    one_line = json.dumps({"schema": "envdoctor.ansible-fact/1", "ok": True, "exit": 0, "summary": "ok",
                           "facts": machine("a100-current.json"), "findings": []})
    lines.append(f"node3: {one_line}")
    lines.append("node4: " + json.dumps(machine("a100-current.json"))[:300])  # cut short
    code, report = fleet_json("-", "--expect-hosts", "node[1-5]", input_text="\n".join(lines) + "\n")
    assert code == 1 and report["nodes"] == 3
    assert [(g["value"], g["nodes"]) for g in key(report, "driver_version")["groups"]] == [
        ("580.95.05", "node[1,3]"), ("470.182.03", "node2")]
    assert report["unhealthy"][0]["nodes"] == "node2"
    assert [u["host"] for u in report["unreadable"]] == ["node4"]
    assert report["silent"]["nodes"] == "node5"


def test_json_lines_file(tmp_path):
    path = tmp_path / "fleet.jsonl"
    path.write_text("\n".join(json.dumps(machine("a100-current.json", f"h{i}")) for i in range(3)) + "\n{broken\n")
    code, report = fleet_json(str(path))
    assert code == 1 and report["nodes"] == 3 and len(report["unreadable"]) == 1


def test_reports_and_ansible_facts(tmp_path):
    report_doc = json.loads(run_cli("check", "--json", "--facts", str(MACHINES / "diag-driver-old.json"), env=ENV).stdout)
    report_doc["facts"]["host"]["hostname"] = "r1"
    (tmp_path / "r1.json").write_text(json.dumps(report_doc))
    unknown = {"schema": "envdoctor.ansible-fact/1", "ok": False, "exit": 2,
               "summary": "unknown: probes did not finish within 20 s", "facts": None, "findings": []}
    (tmp_path / "u1.json").write_text(json.dumps(unknown))
    code, report = fleet_json(str(tmp_path))
    assert code == 1 and report["nodes"] == 2
    assert report["unhealthy"][0]["nodes"] == "r1"
    assert report["unknown"] == [{"nodes": "u1", "count": 1, "verdict": "unknown: probes did not finish within 20 s"}]


def test_ansible_tree_forms(tmp_path):
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "gpu01").write_text((FLEET / "ansible-tree" / "localhost").read_text())  # the recorded setup result
    (tree / "gpu02").write_text(json.dumps({"changed": True, "rc": 0, "stdout": json.dumps(machine("a100-current.json")),
                                            "stderr": "", "cmd": ["envdoctor", "facts"]}))
    (tree / "gpu03").write_text(json.dumps({"unreachable": True, "changed": False,
                                            "msg": "Failed to connect to the host via ssh: Connection timed out"}))
    (tree / "gpu04").write_text(json.dumps({"ansible_facts": {"ansible_local": {
        "envdoctor": "error loading facts as JSON or ini - please check content: /etc/ansible/facts.d/envdoctor.fact"}}}))
    code, report = fleet_json(str(tree), "--expect-hosts", "gpu[01-05]")
    assert code == 1 and report["nodes"] == 2
    assert sorted(g["nodes"] for g in key(report, "python")["groups"]) == sorted(["gpu01", "gpu02"])
    messages = {u["host"]: u["message"] for u in report["unreadable"]}
    assert messages["gpu03"].startswith("unreachable: Failed to connect")
    assert messages["gpu04"].startswith("facts.d envdoctor failed")
    assert report["silent"]["nodes"] == "gpu05"


def test_markdown_output(tmp_path):
    write_nodes(tmp_path, ["a1", "a2"])
    write_nodes(tmp_path, ["a3"], nvidia__driver_version="560.35.03")
    result = fleet(str(tmp_path), "--markdown")
    assert result.returncode == 1
    assert result.stdout.startswith("## envdoctor fleet")
    assert "| **driver** | 580.95.05 (majority) | `a[1-2]` | 2 |" in result.stdout


# --- bad input ----------------------------------------------------------------------------------

@pytest.mark.parametrize("args,message", [
    (["/no/such/folder"], "no such file or folder"),
    (["{tmp}", "--baseline", "{tmp}/a1.json", "--majority"], "give one of them"),
    (["{tmp}", "--expect-hosts", "gpu[1-"], "--expect-hosts: unclosed '['"),
    (["{tmp}", "--json", "--markdown"], "give one output format"),
])
def test_usage_errors_exit_2_with_one_line(tmp_path, args, message):
    write_nodes(tmp_path, ["a1"])
    result = fleet(*[a.replace("{tmp}", str(tmp_path)) for a in args])
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.count("\n") == 1 and message in result.stderr and "Traceback" not in result.stderr


def test_nothing_readable_is_exit_2(tmp_path):
    (tmp_path / "x.json").write_text("{not json")
    result = fleet(str(tmp_path))
    assert result.returncode == 2 and "x.json: not valid JSON" in result.stdout
    (tmp_path / "x.json").unlink()
    empty = fleet(str(tmp_path))
    assert empty.returncode == 2 and "no node's JSON found" in empty.stderr


def test_generated_fleet_of_the_benchmark(tmp_path):
    """The benchmark's fleet (forms, drift, unhealthy, truncated, silent) read right, at a smaller size."""
    spec = importlib.util.spec_from_file_location("fleet_speed", ROOT / "benchmarks" / "fleet_speed.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    expected = bench.generate(tmp_path, 520)
    code, report = fleet_json(str(tmp_path), "--expect-hosts", expected)
    assert code == 1 and report["nodes"] == 520
    assert key(report, "driver_version")["reference"] == bench.GOOD_DRIVER
    assert [u["count"] for u in report["unhealthy"]] == [2]  # nodes 3 and 503: driver too old
    assert report["silent"]["count"] == 4 and len(report["unreadable"]) == 3
    assert key(report, "gpus")["groups"][0] == {"value": "8 x NVIDIA H100 80GB HBM3", "nodes": "gpu[0001-0520]",
                                               "count": 520, "reference": True}


def test_expect_hosts_file_with_comments_and_short_names(tmp_path):
    write_nodes(tmp_path / "nodes", ["gpu01.cluster.example", "gpu02.cluster.example"])
    hosts = tmp_path / "hosts.txt"
    hosts.write_text("# the GPU partition\ngpu[01-03]  # rack 1\n\nlogin1\n")
    code, report = fleet_json(str(tmp_path / "nodes"), "--expect-hosts", str(hosts))
    assert code == 1 and report["silent"] == {"nodes": "gpu03,login1", "count": 2}


def test_one_host_sent_several_documents(tmp_path):
    for n, python in enumerate(["3.12.12", "3.12.12", "3.11.9"]):  # three files for one host, one differs
        facts = machine("a100-current.json", "gpu001")
        facts["python"]["version"] = python
        (tmp_path / f"copy{n}.json").write_text(json.dumps(facts))
    code, report = fleet_json(str(tmp_path))
    assert code == 1 and report["nodes"] == 1 and report["drift"] is True
    assert report["conflicting"] == [{"host": "gpu001", "documents": 3}]
    assert [(g["value"], g["count"]) for g in key(report, "python")["groups"]] == [("3.12.12", 2), ("3.11.9", 1)]
    assert [d["host"] for d in report["duplicates"]] == ["gpu001"]  # the identical copy is noted
    text = fleet(str(tmp_path))
    assert text.returncode == 1 and "1 sent differing documents" in text.stdout and "gpu001: 3 documents" in text.stdout
    (tmp_path / "copy2.json").unlink()  # identical copies only: one node, no drift, a note
    code, report = fleet_json(str(tmp_path))
    assert code == 0 and report["nodes"] == 1 and report["conflicting"] == [] and len(report["duplicates"]) == 1
    assert "sent identical copies (counted once): gpu001" in fleet(str(tmp_path)).stdout


def test_a_tie_has_no_majority(tmp_path):
    write_nodes(tmp_path, ["a1", "a2"])
    write_nodes(tmp_path, ["a3", "a4"], nvidia__driver_version="560.35.03")
    code, report = fleet_json(str(tmp_path))
    driver = key(report, "driver_version")
    assert code == 1 and driver["drift"] and driver["reference"] is None
    assert not any(g["reference"] for g in driver["groups"])
    assert "no majority: the most common values are tied" in fleet(str(tmp_path)).stdout


def test_majority_is_the_documented_default(tmp_path):
    write_nodes(tmp_path, ["a1", "a2", "a3"], nvidia__driver_version="560.35.03")
    write_nodes(tmp_path, ["a4"])
    with_flag, without = fleet(str(tmp_path), "--majority", "--json"), fleet(str(tmp_path), "--json")
    assert with_flag.returncode == without.returncode == 1
    assert key(json.loads(with_flag.stdout), "driver_version") == key(json.loads(without.stdout), "driver_version")
    assert "(the default" in run_cli("fleet", "--help", env={**ENV, "COLUMNS": "300"}).stdout
