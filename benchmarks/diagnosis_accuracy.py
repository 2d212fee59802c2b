"""How well does `envdoctor check` diagnose the recorded machines?

For every machine in tests/fixtures/machines/ with an entry in benchmarks/diagnosis_expected.toml,
run the diagnosis and compare its warnings and errors with the expected ones:

- right diagnosis: exactly the expected codes and severities, nothing missing, nothing extra;
- false alarms: warnings/errors that are not expected (on clean machines, expect = [], this must be 0);
- coverage: every finding code has a machine that triggers it and a clean machine without it.

    python benchmarks/diagnosis_accuracy.py            # summary
    python benchmarks/diagnosis_accuracy.py -v         # one line per machine
    python benchmarks/diagnosis_accuracy.py --json     # machine-readable

Exit 0 when every machine gets the right diagnosis, 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
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
CODES = ("no-nvidia-driver", "driver-library-mismatch", "driver-too-old", "gpu-arch-unsupported", "cpu-only-build",
         "companion-mismatch", "jax-version-skew", "cudnn-mismatch", "cuda-libs-missing", "python-unsupported",
         "tf-windows-native-gpu", "jetson-wrong-wheel", "wsl-gpu-setup", "library-path-shadowing",
         "cuda-visible-devices", "duplicate-install", "numpy-abi-mismatch", "glibc-too-old", "rosetta-python",
         "no-gpu-platform")


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


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-v", "--verbose", action="store_true")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)

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
