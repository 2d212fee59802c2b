"""envdoctor's own Markdown report read back by `explain`: the embedded facts are the machine, exactly.

The round trip uses the real renderer (envdoctor.render.markdown.report_markdown) on recorded
machines; the quoted sample (tests/fixtures/pasted/envdoctor_report_quoted.md) is a report pasted into
a reply with "> " quoting, whose prose contradicts its JSON on purpose.
"""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from envdoctor.complete import complete
from envdoctor.diagnose import diagnose
from envdoctor.facts import Facts
from envdoctor.read import read_machine
from envdoctor.read.envdoctor_report import MARKER, parse
from envdoctor.render.markdown import report_markdown
from envdoctor.textnorm import normalise

ROOT = Path(__file__).resolve().parent.parent
MACHINES = ROOT / "tests" / "fixtures" / "machines"
SAMPLE = ROOT / "tests" / "fixtures" / "pasted" / "envdoctor_report_quoted.md"
ROUND_TRIP = ("a100-current.json", "jetson-orin-jp62.json", "windows-tf.json", "wsl2.json", "apple-silicon.json")


def _facts(name: str) -> Facts:
    return complete(Facts.from_dict(json.loads((MACHINES / name).read_text(encoding="utf-8"))))


def _read(text: str) -> tuple[dict, list[str]]:
    return read_machine(normalise(text).text)


def _quoted(text: str) -> str:
    return "".join("> " + line if line.strip() else ">\n" for line in text.splitlines(keepends=True))


@pytest.mark.parametrize("name", ROUND_TRIP)
def test_report_markdown_round_trip(name):
    facts = _facts(name)
    report = report_markdown(facts, diagnose(facts), redact=False)
    assert report.startswith(MARKER)
    for text in (report, _quoted(report), "Any idea?\r\n\r\n" + report.replace("\n", "\r\n") + "\r\nthanks\r\n"):
        read, notes = _read(text)
        assert Facts.from_dict(read).to_dict() == facts.to_dict()
        assert notes[0].startswith("envdoctor ") and "as recorded" in notes[0]


def test_redacted_report_keeps_every_fact_but_home_paths():
    facts = _facts("a100-current.json")
    read, _ = _read(report_markdown(facts, diagnose(facts), redact=True))
    got, want = Facts.from_dict(read).to_dict(), facts.to_dict()
    assert got["nvidia"] == want["nvidia"] and got["host"]["distro"] == want["host"]["distro"]
    assert got["python"]["packages"] == want["python"]["packages"]
    assert "/home/res" not in json.dumps(got) and got["python"]["executable"].startswith("~")


def test_quoted_sample_uses_the_json_not_the_prose():
    read, notes = _read(SAMPLE.read_text(encoding="utf-8"))
    facts = Facts.from_dict(read)
    assert facts.nvidia.driver_version == "535.104.05"  # the prose says 999.1
    assert facts.python.version == "3.11.9"  # the prose says 2.7
    assert [g.name for g in facts.gpus] == ["NVIDIA GeForce RTX 4090"]
    assert "envdoctor_version" not in read and "matrices_checked" not in read
    assert notes[0] == "envdoctor 0.1.0 report: its facts, as recorded"


def test_explain_cli_judges_the_reported_machine(tmp_path):
    facts = _facts("windows-tf.json")
    log = tmp_path / "issue.md"
    log.write_text("TensorFlow sees no GPU.\n\n" + _quoted(report_markdown(facts, diagnose(facts), redact=False)),
                   encoding="utf-8")
    r = subprocess.run([sys.executable, "-m", "envdoctor", "explain", "--json", "--file", str(log)],
                       cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert r.returncode in (0, 1), r.stderr[-2000:]
    doc = json.loads(r.stdout)
    assert doc["machine"]["judged"] == "the machine described in the text"
    assert doc["machine"]["facts"] == complete(Facts.from_dict(facts.to_dict())).to_dict()
    errors = [f.code for f in diagnose(facts) if f.severity == "error"]
    assert errors and doc["diagnosis"][0] == errors[0]


def test_no_document_no_facts():
    assert parse("") == {}
    assert parse('{"schema": "envdoctor.facts/1", "python": ') == {}  # cut off: not a document
    assert parse('{"schema": "envdoctor.facts/1", "python": {"version": 12}}') == {}  # not loadable as Facts
    assert parse('text {"schema": "envdoctor.check/1"} text') == {}


def test_an_embedded_document_nested_past_any_facts_depth_is_not_a_crash():
    text = '{"schema": "envdoctor.facts/1", "x": ' + "[" * 100_000 + "]" * 100_000 + "}"
    result = subprocess.run([sys.executable, "-m", "envdoctor", "explain", "-"], input=text,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode in (0, 1), result.stderr
    assert "internal error" not in result.stderr and "Traceback" not in result.stderr
