"""Speed-ups must not change a diagnosis: every recorded machine under tests/fixtures/machines/ gets
exactly the findings (code, severity, title, in order) that the code gave before the matrix
accessors, version parsing and facts reading were memoised; recorded in
tests/fixtures/diagnoses_before_memoisation.json.

Each machine is diagnosed as `check --facts` does it (read, completed from the matrices, judged) and
as the rules see a bare document (not completed), twice each: the second run answers from the
caches the first one filled, so a cache that keeps a stale or shared answer shows here.

When a rule is changed on purpose, record the new diagnoses again, from the changed code:

    .venv/bin/python tests/test_diagnosis_unchanged.py --record
"""

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
MACHINES = ROOT / "tests" / "fixtures" / "machines"
RECORDED = ROOT / "tests" / "fixtures" / "diagnoses_before_memoisation.json"


def diagnoses(name: str) -> dict:
    from envdoctor.complete import complete
    from envdoctor.diagnose import diagnose
    from envdoctor.facts import load_facts

    facts = load_facts(MACHINES / name)
    return {"completed": [[f.code, f.severity, f.title] for f in diagnose(complete(facts))],
            "bare": [[f.code, f.severity, f.title] for f in diagnose(facts)]}


def machines() -> list[str]:
    return sorted(p.name for p in MACHINES.glob("*.json"))


def recorded() -> dict:
    return json.loads(RECORDED.read_text())


def test_every_machine_was_recorded():
    assert machines() == sorted(recorded())


@pytest.mark.parametrize("name", machines())
def test_diagnosis_is_what_it_was(name):
    before = recorded().get(name)
    assert before is not None, f"{name} has no recorded diagnosis (run this file with --record)"
    assert diagnoses(name) == before
    assert diagnoses(name) == before  # again, from warm caches


def test_machines_diagnosed_in_another_order_agree():
    """Caches filled by other machines first (reverse order) give the same answers."""
    before = recorded()
    for name in reversed(machines()):
        assert diagnoses(name) == before[name], name


def test_fleet_judges_each_machine_by_its_recorded_diagnosis():
    """`envdoctor fleet` over the recorded machines, each read twice (the second from the fleet's
    cache of diagnoses): a node's problems are the errors of its recorded diagnosis."""
    from envdoctor.fleet.inputs import read_paths
    from envdoctor.fleet.nodes import Judge

    before = recorded()
    judge = Judge()
    assert sorted(before) == machines()
    for _ in range(2):
        for item in read_paths([str(MACHINES)]):
            name = Path(item.source).name
            if not name.endswith(".json"):
                continue  # the folder's README
            node = judge.node(item)
            errors = [(code, title) for code, severity, title in before[name]["completed"] if severity == "error"]
            assert list(node.problems) == errors, name


def test_a_memoised_answer_is_the_functions_own():
    from envdoctor.matrix import drivers

    assert drivers.version_tuple("570.124.04") == drivers.version_tuple("570.124.04") == (570, 124, 4)
    assert drivers.cuda_tuple(12.8) == (12, 8)  # not a string: asked of the function itself
    assert drivers.version_tuple(12) == (12,) and drivers.version_tuple(12.0) == (12, 0)  # 12 == 12.0, yet not the same version
    for _ in range(2):  # an exception is never cached: the second call raises the same way
        with pytest.raises(ValueError, match="not a dotted version"):
            drivers.version_tuple("2.8.0rc1")
    with pytest.raises(ValueError):
        drivers.version_tuple(["570"])  # unhashable: the function's own ValueError, not the cache's TypeError


def test_a_cached_list_cannot_be_changed_by_its_caller():
    from envdoctor.matrix import gpus

    kernels = gpus.parse_kernels("8.6+PTX")
    kernels.clear()
    assert [k.name for k in gpus.parse_kernels("8.6+PTX")] == ["sm_86", "compute_86"]


def test_an_arch_list_of_any_sequence_gets_the_same_verdict():
    from envdoctor.matrix import gpus

    listed = ["sm_80", "sm_90", "compute_90"]
    verdicts = {gpus.build_runs_on(listed, "12.0"), gpus.build_runs_on(tuple(listed), "12.0"),
                gpus.build_runs_on(iter(listed), "12.0"), gpus.build_runs_on(listed, "12.0")}
    assert len(verdicts) == 1 and next(iter(verdicts)).via == "ptx"


def _record() -> None:
    sys.path.insert(0, str(ROOT))
    RECORDED.write_text(json.dumps({name: diagnoses(name) for name in machines()}, indent=1, sort_keys=True) + "\n")
    print(f"recorded {len(machines())} machines in {RECORDED.relative_to(ROOT)}")


if __name__ == "__main__":
    if sys.argv[1:] != ["--record"]:
        sys.exit("usage: test_diagnosis_unchanged.py --record")
    _record()
