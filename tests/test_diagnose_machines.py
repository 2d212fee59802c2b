"""Every recorded machine gets exactly its expected diagnosis (benchmarks/diagnosis_expected.toml):
the codes that must fire, with their severity, and no other warning or error (false alarms are bugs)."""

import sys
from pathlib import Path

import pytest

from envdoctor.diagnose import diagnose
from envdoctor.facts import load_facts

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent
MACHINES = ROOT / "tests" / "fixtures" / "machines"
with open(ROOT / "benchmarks" / "diagnosis_expected.toml", "rb") as _fh:
    _EXPECTED_DATA = tomllib.load(_fh)
EXPECTED = {m["file"]: m for m in _EXPECTED_DATA["machine"]}
CODES = tuple(_EXPECTED_DATA["codes"])



def findings_of(name):
    return diagnose(load_facts(MACHINES / name))


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_machine_gets_its_expected_diagnosis(name):
    found = findings_of(name)
    got = sorted(f"{f.code}:{f.severity}" for f in found if f.severity != "info")
    assert got == sorted(EXPECTED[name]["expect"]), EXPECTED[name]["note"]
    assert not [f for f in found if f.code == "internal-error"]


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_every_problem_says_how_to_fix_it(name):
    for finding in findings_of(name):
        if finding.severity != "info":
            assert finding.fix, finding.code
            assert finding.evidence, finding.code
            assert finding.detail.strip() and finding.title.strip()


def test_every_machine_file_has_an_expectation():
    assert {p.name for p in MACHINES.glob("*.json")} <= set(EXPECTED)


@pytest.mark.parametrize("code", CODES)
def test_every_code_has_a_triggering_machine_and_a_close_one_without_it(code):
    triggering = [n for n, m in EXPECTED.items() if any(e.startswith(code + ":") for e in m["expect"])]
    if code == "no-gpu-platform":  # information only: never in `expect`
        triggering = [n for n in EXPECTED if any(f.code == code for f in findings_of(n))]
    assert triggering, f"no recorded machine triggers {code}"
    clean = [n for n, m in EXPECTED.items() if not m["expect"] and n.startswith("diag-")]
    assert any(code not in {f.code for f in findings_of(n)} for n in clean)
