"""How well does `envdoctor check` diagnose the recorded machines?

For every machine in tests/fixtures/machines/ with an entry in benchmarks/diagnosis_expected.toml,
run the diagnosis and compare its warnings and errors with the expected ones:

- right diagnosis: exactly the expected codes and severities, nothing missing, nothing extra;
- false alarms: warnings/errors that are not expected (on clean machines, expect = [], this must be 0);
- coverage: every finding code has a machine that triggers it and a clean machine without it.

    python benchmarks/diagnosis_accuracy.py            # summary
    python benchmarks/diagnosis_accuracy.py -v         # one line per machine
    python benchmarks/diagnosis_accuracy.py --json     # machine-readable
    python benchmarks/diagnosis_accuracy.py --partial [--seed N] [-v]

Exit 0 when every machine gets the right diagnosis, 1 otherwise.

--partial: what a diagnosis from half the facts is worth (a pasted report, a hand-written file).
Each machine loses its `frameworks` block (the --deep import records) and half of its other leaf
facts, chosen at random (seeded; a leaf is a value, a map entry such as one package, a list of
names, or an empty list), and reads as hand-written (no probe timestamp: missing means unknown).
Both the full machine and the partial one are completed (envdoctor/complete.py) and diagnosed as
`check` does. Scored against the full machine's diagnosis:

- share of the full machine's error codes the partial one still finds (as a warning or an error);
  also given for the codes the full machine still gets without its frameworks block, since the
  import records are gone by design;
- share of the errors still *decidable* from what remains: an error counts when every fact its
  finding names as evidence survived (observed or inferred; a whole list named as evidence only
  where a probe recorded all of it), or when the partial diagnosis finds it. An error whose deciding
  fact was removed is undecidable and must not be found (that would be a guess);
- new false alarms: warnings and errors whose code the full diagnosis does not have at all.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

from envdoctor.diagnose import diagnose  # noqa: E402
from envdoctor.facts import load_facts  # noqa: E402

MACHINES = ROOT / "tests" / "fixtures" / "machines"
EXPECTED = ROOT / "benchmarks" / "diagnosis_expected.toml"
CODES = tuple(tomllib.loads(EXPECTED.read_text())["codes"])


def expectations() -> list[dict]:
    with open(EXPECTED, "rb") as fh:
        return tomllib.load(fh)["machine"]


def judge(entry: dict) -> dict:
    facts = load_facts(MACHINES / entry["file"])
    start = time.perf_counter()
    findings = diagnose(facts)
    elapsed = time.perf_counter() - start
    got = {f"{f.code}:{f.severity}" for f in findings if f.severity != "info"}
    want = set(entry["expect"])
    return {
        "file": entry["file"],
        "clean": not want,
        "right": got == want,
        "missing": sorted(want - got),
        "false_alarms": sorted(got - want),
        "codes": sorted({f.code for f in findings}),
        "ms": round(elapsed * 1000, 2),
    }


def coverage(results: list[dict]) -> dict[str, dict[str, list[str]]]:
    table = {}
    for code in CODES:
        triggers = [r["file"] for r in results if code in r["codes"]]
        clean = [r["file"] for r in results if r["clean"] and code not in r["codes"]]
        table[code] = {"triggered_by": triggers, "clean_without": clean[:3]}
    return table


# --- --partial ---------------------------------------------------------------------------------------


def _codes(doc: dict, severities: tuple[str, ...] = ("error", "warning", "info")) -> set[str]:
    from envdoctor.complete import complete
    from envdoctor.facts import Facts, check_framework_versions

    facts = Facts.from_dict(doc)
    check_framework_versions(facts)
    return {f.code for f in diagnose(complete(facts)) if f.severity in severities}


def _leaves(node, path: tuple = ()) -> list[tuple]:
    """The paths of a document's leaf facts: values, map entries, lists of names, empty lists/maps."""
    if isinstance(node, dict) and node:
        return [p for k, v in node.items() for p in _leaves(v, path + (k,))]
    if isinstance(node, list) and node and all(isinstance(v, dict) for v in node):
        return [p for i, v in enumerate(node) for p in _leaves(v, path + (i,))]
    return [] if node is None else [path]


def _remove(doc: dict, path: tuple) -> None:
    node = doc
    for part in path[:-1]:
        node = node[part]
    if isinstance(node, dict):
        node.pop(path[-1], None)
    else:
        node[path[-1]] = {}  # a list item's field set: keep the item (and the others' positions)


def partial_document(doc: dict, rng) -> dict:
    import copy

    partial = copy.deepcopy(doc)
    for key in ("frameworks", "recorded", "collected_at"):
        partial.pop(key, None)
    leaves = [p for p in _leaves(partial) if p != ("schema",)]
    for path in sorted(rng.sample(leaves, len(leaves) // 2), key=len, reverse=True):
        _remove(partial, path)
    return partial


_EVIDENCE_PATH = re.compile(
    r"^((?:host|python|nvidia|cuda_toolkits?|cudnn|jetson|amd|env|frameworks|container|build)(?:\.[\w\-]+|\[\d+\])*)=")


def _value_at(facts, path: str):
    node = facts
    for key, index in re.findall(r"([\w\-]+)|\[(\d+)\]", path):
        if node is None:
            return None
        if index:
            node = node[int(index)] if isinstance(node, list) and len(node) > int(index) else None
        else:
            node = node.get(key) if isinstance(node, dict) else getattr(node, key, None)
    return node


def _evidence_kept(finding, facts) -> bool:
    """Whether every fact a finding names as evidence (`nvidia.driver_version=…`) is still known.

    Evidence that names a whole list or map (`nvidia.gpus=1`, `python.packages=…`) means the rule relied
    on it being complete (an index beyond it, a package missing from it): that is known only where a
    probe recorded the list, never in a hand-written document.
    """
    paths = [m.group(1) for m in map(_EVIDENCE_PATH.match, finding.evidence) if m]
    for path in paths:
        value = _value_at(facts, path)
        if value in (None, [], {}):
            return False
        if isinstance(value, (list, dict)) and not facts.lists_everything(path):
            return False
    return True


def judge_partial(entry: dict, seed: int) -> dict:
    """One machine, half its facts removed. An error of the full machine is *decidable* from what remains
    when the facts its finding names as evidence (in the diagnosis without the --deep records, which the
    partial document loses by design) all remain, observed or inferred; or when the partial diagnosis
    finds it (the rules do not guess: every code found is checked against the full diagnosis)."""
    import random

    from envdoctor.complete import complete
    from envdoctor.facts import Facts, check_framework_versions

    doc = json.loads((MACHINES / entry["file"]).read_text())
    full = [f for f in diagnose(complete(Facts.from_dict(doc)))]
    full_errors = {f.code for f in full if f.severity == "error"}
    full_all = {f.code for f in full}
    shallow = Facts.from_dict({k: v for k, v in doc.items() if k != "frameworks"})  # as recorded, without --deep
    check_framework_versions(shallow)
    shallow_errors = [f for f in diagnose(complete(shallow)) if f.severity == "error"]
    without_deep = {f.code for f in shallow_errors}
    rng = random.Random(f"{seed}:{entry['file']}")
    partial = partial_document(doc, rng)
    facts = complete(Facts.from_dict(partial))
    got = {f.code for f in diagnose(facts) if f.severity in ("error", "warning")}
    kept = {f.code for f in shallow_errors if _evidence_kept(f, facts)} & full_errors
    found = full_errors & got
    return {"file": entry["file"], "full_errors": sorted(full_errors), "reachable": sorted(full_errors & without_deep),
            "evidence_kept": sorted(kept), "decidable": sorted(kept | found), "found": sorted(found),
            "lost": sorted(full_errors - got), "false_alarms": sorted(got - full_all), "partial": partial}


def main_partial(seed: int, verbose: bool, as_json: bool) -> int:
    results = [judge_partial(e, seed) for e in expectations()]
    wanted = sum(len(r["full_errors"]) for r in results)
    found = sum(len(r["found"]) for r in results)
    reachable = sum(len(r["reachable"]) for r in results)
    found_reachable = sum(len(set(r["found"]) & set(r["reachable"])) for r in results)
    alarms = sum(len(r["false_alarms"]) for r in results)
    kept = sum(len(r["evidence_kept"]) for r in results)
    found_kept = sum(len(set(r["found"]) & set(r["evidence_kept"])) for r in results)
    decidable = sum(len(r["decidable"]) for r in results)
    share = found / wanted if wanted else 1.0
    share_reachable = found_reachable / reachable if reachable else 1.0
    share_kept = found_kept / kept if kept else 1.0
    # share_kept is the measure: of the errors whose evidence facts all survived, the share found.
    # share_decidable (found / (kept | found)) counts every found code as decidable, so codes found
    # from other facts raise it: an upper bound, printed as such.
    share_decidable = found / decidable if decidable else 1.0
    if as_json:
        print(json.dumps({"seed": seed, "error_codes": wanted, "found": found, "share": round(share, 4),
                          "share_without_frameworks": round(share_reachable, 4),
                          "evidence_kept": kept, "found_with_evidence_kept": found_kept,
                          "found_without_evidence_kept": found - found_kept,
                          "share_with_evidence_kept": round(share_kept, 4),
                          "decidable": decidable, "share_of_decidable": round(share_decidable, 4),
                          "new_false_alarms": alarms,
                          "machines": [{k: v for k, v in r.items() if k != "partial"} for r in results]}, indent=2))
        return 0
    if verbose:
        for r in results:
            if r["lost"] or r["false_alarms"]:
                lost = [c + ("" if c in r["reachable"] else " (needs frameworks)") +
                        (" (evidence kept)" if c in r["evidence_kept"] else "") for c in r["lost"]]
                print(f"{r['file']:<40} lost {lost or '-'}  false alarms {r['false_alarms'] or '-'}")
        print()
    print(f"partial facts (seed {seed}): {found}/{wanted} error codes of the full machines still found "
          f"({share:.1%}); of those found without the frameworks block: {found_reachable}/{reachable} ({share_reachable:.1%})")
    print(f"  found where the evidence survived (found and evidence kept / evidence kept; the measure): "
          f"{found_kept}/{kept} ({share_kept:.1%})")
    print(f"  found among the decidable (found / (evidence kept or found); counts every found code as decidable, "
          f"{found - found_kept} of them found from other facts; an upper bound): {found}/{decidable} "
          f"({share_decidable:.1%})")
    print(f"new false alarms: {alarms}")
    return 0


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-v", "--verbose", action="store_true")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--partial", action="store_true", help="diagnose every machine from half its facts (see above)")
    parser.add_argument("--seed", type=int, default=1, help="the random choice of facts --partial removes")
    args = parser.parse_args(argv)
    if args.partial:
        return main_partial(args.seed, args.verbose, args.json)

    entries = expectations()
    missing_entries = sorted({p.name for p in MACHINES.glob("*.json")} - {e["file"] for e in entries})
    results = [judge(e) for e in entries]
    right = sum(r["right"] for r in results)
    clean = [r for r in results if r["clean"]]
    clean_alarms = sum(len(r["false_alarms"]) for r in clean)
    all_alarms = sum(len(r["false_alarms"]) for r in results)
    table = coverage(results)
    uncovered = [c for c, v in table.items() if not v["triggered_by"] or not v["clean_without"]]
    summary = {
        "machines": len(results), "right_diagnosis": right, "clean_machines": len(clean),
        "false_alarms_on_clean_machines": clean_alarms, "false_alarms_total": all_alarms,
        "missed": sum(len(r["missing"]) for r in results), "codes_without_trigger_or_clean_machine": uncovered,
        "machines_without_expectation": missing_entries,
        "median_diagnose_ms": sorted(r["ms"] for r in results)[len(results) // 2] if results else None,
    }
    if args.json:
        print(json.dumps({"summary": summary, "machines": results, "coverage": table}, indent=2))
    else:
        if args.verbose:
            for r in results:
                mark = "ok " if r["right"] else "BAD"
                extra = "".join([f"  missing {r['missing']}" if r["missing"] else "",
                                 f"  false alarms {r['false_alarms']}" if r["false_alarms"] else ""])
                print(f"{mark} {r['file']:<40} {', '.join(r['codes']) or '-'}{extra}")
            print()
        print(f"right diagnosis: {right}/{len(results)} recorded machines")
        print(f"false alarms on the {len(clean)} clean machines: {clean_alarms} (all machines: {all_alarms})")
        print(f"expected findings missed: {summary['missed']}")
        print(f"codes with a triggering and a clean machine: {len(CODES) - len(uncovered)}/{len(CODES)}"
              + (f" (missing: {', '.join(uncovered)})" if uncovered else ""))
        if missing_entries:
            print(f"machines with no expectation yet: {', '.join(missing_entries)}")
        print(f"median diagnosis time per machine: {summary['median_diagnose_ms']} ms (in-process, after start-up)")
    return 0 if right == len(results) and not uncovered else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
