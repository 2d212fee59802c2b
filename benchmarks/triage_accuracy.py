"""How well does `envdoctor explain` triage real bug reports?

Every file in tests/fixtures/reports/ is one public GitHub issue thread: a header naming the cause
that the thread established (`# cause:`, with other acceptable codes in `# also:`, or "none" for a
thread without an environment problem), then the text the reporter pasted. Each report's text is
fed to `python -m envdoctor explain --json --file` and the codes it claims are compared. The texts come
from other people's machines, so by default they are judged against an empty facts document (the
machine the text describes, or no machine at all), never against the machine running the benchmark:
a GPU-less CI box would otherwise "confirm" no-gpu-platform on every thread. `--host` judges texts
that describe no machine on this one, as `envdoctor explain` does for a user.

- found: share of threads with a cause where the cause (or an `also` code) is claimed at all;
- first: share where it is the first code claimed;
- codes/thread: mean number of codes claimed per thread;
- false alarms: healthy threads (cause "none") on which any code is claimed;
- crashes: exit status not 0/1, a Traceback on stderr, or stdout that is not JSON.

    python benchmarks/triage_accuracy.py [--split dev|held|all] [--host] [-v] [--jobs N]

Always exits 0: this is a measurement, not a test.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
REPORTS = ROOT / "tests" / "fixtures" / "reports"


def _number(path: Path) -> int:
    """A report's number: the digits before its first hyphen (001 … 999, 1000 …)."""
    return int(path.name.split("-", 1)[0])


def parse(path: Path) -> dict:
    """Header fields (`# key: value` lines up to `# ---`) and the body after them."""
    header, body, lines = {}, "", path.read_text(encoding="utf-8").splitlines(keepends=True)
    for i, line in enumerate(lines):
        if line.rstrip("\r\n") == "# ---":
            body = "".join(lines[i + 1:])
            break
        if line.startswith("# ") and ":" in line:
            key, _, value = line[2:].partition(":")
            header[key.strip()] = value.strip()
    also = [c.strip() for c in header.get("also", "").split(",") if c.strip()]
    return {"file": path.name, "cause": header.get("cause", ""), "also": also,
            "split": header.get("split", ""), "body": body}


def claimed_codes(doc: dict) -> list[str]:
    """The ranked codes claimed: `diagnosis` if present, else the distinct codes of `matches`."""
    if "diagnosis" in doc:
        items = doc["diagnosis"] or []
    else:
        items = doc.get("matches") or []
    codes: list[str] = []
    for item in items:
        code = item.get("code") if isinstance(item, dict) else item
        if isinstance(code, str) and code != "noise" and code not in codes:
            codes.append(code)
    return codes


NO_MACHINE = '{"schema": "envdoctor.facts/1"}\n'  # a machine nothing is known about


def run(report: dict, host: bool = False) -> tuple[list[str], str]:
    """Claimed codes and a crash reason ('' when the run was clean)."""
    env = {k: v for k, v in os.environ.items() if k != "ENVDOCTOR_NO_CACHE"}
    with tempfile.TemporaryDirectory() as tmp:
        log, facts = Path(tmp) / "report.log", Path(tmp) / "no-machine.json"
        log.write_text(report["body"], encoding="utf-8")
        facts.write_text(NO_MACHINE, encoding="utf-8")
        command = [sys.executable, "-m", "envdoctor", "explain", "--json", "--file", str(log)]
        try:
            proc = subprocess.run(command + ([] if host else ["--facts", str(facts)]),
                                  cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
        except subprocess.TimeoutExpired:
            return [], "timeout"
    if proc.returncode not in (0, 1):
        return [], f"exit {proc.returncode}"
    if "Traceback" in proc.stderr:
        return [], "traceback"
    try:
        doc = json.loads(proc.stdout)
    except ValueError:
        return [], "not json"
    return claimed_codes(doc if isinstance(doc, dict) else {}), ""


def summary(name: str, rows: list[dict]) -> str:
    sick = [r for r in rows if r["cause"] != "none"]
    healthy = [r for r in rows if r["cause"] == "none"]
    found = sum(r["ok"] for r in sick)
    first = sum(r["first"] for r in sick)
    alarms = sum(bool(r["claimed"]) for r in healthy)
    mean = sum(len(r["claimed"]) for r in rows) / len(rows) if rows else 0.0
    pct = (lambda n: f"{100 * n / len(sick):.0f}%") if sick else (lambda n: "-")
    return (f"{name:<5} threads={len(rows)} found={found}/{len(sick)} ({pct(found)}) "
            f"first={first}/{len(sick)} ({pct(first)}) codes/thread={mean:.2f} "
            f"false_alarms={alarms}/{len(healthy)} crashes={sum(bool(r['crash']) for r in rows)}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--split", choices=("dev", "held", "all"), default="all")
    ap.add_argument("--host", action="store_true", help="judge texts that describe no machine on this one")
    ap.add_argument("-v", "--verbose", action="store_true", help="one line per thread")
    ap.add_argument("--since", type=int, default=0, metavar="N",
                    help="only reports numbered N or higher (a fresh round, scored before any rule is written from it)")
    ap.add_argument("--only", default="", metavar="N,N", help="only these report numbers (checking a change on its threads)")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1, metavar="N", help="reports run at once (default: one per CPU)")
    args = ap.parse_args(argv)
    only = {int(n) for n in args.only.split(",") if n.strip().isdigit()}
    reports = [parse(p) for p in sorted(REPORTS.glob("*.txt"), key=_number)
               if _number(p) >= args.since and (not only or _number(p) in only)]
    if args.split != "all":
        reports = [r for r in reports if r["split"] == args.split]
    rows = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:  # each run is its own process
        results = list(pool.map(lambda r: run(r, args.host), reports))
    for r, (claimed, crash) in zip(reports, results):
        want = {r["cause"], *r["also"]} - {"none"}
        ok = bool(want & set(claimed)) if r["cause"] != "none" else not claimed
        first = bool(claimed) and claimed[0] in want
        rows.append({**r, "claimed": claimed, "crash": crash, "ok": ok, "first": first})
        if args.verbose:
            mark = "CRASH " + crash if crash else ("first" if first else "ok" if ok else "-")
            expected = r["cause"] + ("+" + ",".join(r["also"]) if r["also"] else "")
            print(f"{r['file'][:44]:<44} {expected[:40]:<40} {','.join(claimed)[:40] or '(none)':<40} {mark}")
    splits = ("dev", "held", "all") if args.split == "all" else (args.split,)
    for name in splits:
        print(summary(name, rows if name == "all" else [r for r in rows if r["split"] == name]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
