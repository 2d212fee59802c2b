"""What `envdoctor smoke` costs on top of the work itself.

Compares, as medians of several runs (wall time, each in a fresh process, the two alternating):

  cnn   `envdoctor smoke FW --checks cnn`  vs  a plain script: import FW + the same CNN workload
  full  `envdoctor smoke FW`               vs  a plain script: import FW once + every check's work

The plain scripts call the very functions of envdoctor/smoke/checks/FW_checks.py, so the work is
identical; the difference is envdoctor's start-up, its probe of the machine, and what isolating the
checks costs (the checks of one framework share one process; oom, skipped without a GPU, has its own).
`ratio` is envdoctor's median over the plain script's (the goal for `full`: at most 1.5).

    python benchmarks/smoke_overhead.py [--framework torch] [--python PATH] [--runs 5] [--json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CHECKS_DIR = ROOT / "envdoctor" / "smoke" / "checks"

SCRIPTS = {"torch": "torch_checks", "tensorflow": "tensorflow_checks", "jax": "jax_checks", "paddle": "paddle_checks"}

PLAIN = """
import sys
sys.path.insert(0, {checks_dir!r})
import _harness as h
import {script} as t
checks = {checks!r}
if hasattr(t, "prepare"):
    t.prepare(checks, "auto")
for name in checks:
    ctx = h.Context({framework!r}, "auto", 10)
    ctx.planned = tuple(checks)
    try:
        t.CHECKS[name](ctx)
    except h.Skip:
        pass
import os
os._exit(0)  # as the check harness does: the frameworks' own teardown (about 1 s for torch) is not counted
"""


def timed(argv: list[str]) -> float:
    start = time.perf_counter()
    proc = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=900, cwd=ROOT)
    elapsed = time.perf_counter() - start
    if proc.returncode not in (0,):
        raise SystemExit(f"{argv[:4]}... exited with {proc.returncode}")
    return elapsed


def interleaved(a: list[str], b: list[str], runs: int) -> tuple[list[float], list[float]]:
    """Alternate the two commands, so that a change of load on the machine hits both alike."""
    times_a, times_b = [], []
    for _ in range(runs):
        times_a.append(timed(a))
        times_b.append(timed(b))
    return times_a, times_b


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--framework", default="torch", choices=sorted(SCRIPTS))
    parser.add_argument("--python", default=sys.executable, help="target interpreter with the framework installed")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    fw = args.framework
    envdoctor = [sys.executable, "-m", "envdoctor", "smoke", fw, "--python", args.python, "--json"]
    cases = {
        "cnn": (envdoctor + ["--checks", "cnn"], ["cnn"]),
        "full": (envdoctor, ["devices", "cnn", "oom", "repro", "amp", "multi"]),
    }
    report = {}
    module = "paddle" if fw == "paddle" else fw
    timed([args.python, "-c", f"import {module}"])  # warm the page cache once, for both sides alike
    for name, (smoke_argv, checks) in cases.items():
        runs = args.runs if name == "cnn" else max(1, (args.runs + 1) // 2)
        plain_argv = [args.python, "-c", PLAIN.format(checks_dir=str(CHECKS_DIR), script=SCRIPTS[fw], framework=fw,
                                                      checks=checks)]
        smoke_times, plain_times = interleaved(smoke_argv, plain_argv, runs)
        smoke_median, plain_median = statistics.median(smoke_times), statistics.median(plain_times)
        report[name] = {"envdoctor_s": round(smoke_median, 3), "plain_s": round(plain_median, 3),
                        "overhead_s": round(smoke_median - plain_median, 3),
                        "ratio": round(smoke_median / plain_median, 2), "runs": runs,
                        "envdoctor_runs": [round(t, 3) for t in smoke_times], "plain_runs": [round(t, 3) for t in plain_times]}
    if args.json:
        print(json.dumps(report, indent=2))
        return
    for name, r in report.items():
        print(f"{fw} {name:5} envdoctor {r['envdoctor_s']:7.2f} s   plain script {r['plain_s']:7.2f} s   "
              f"overhead {r['overhead_s']:+.2f} s   ratio {r['ratio']:.2f}   (median of {r['runs']})")


if __name__ == "__main__":
    main()
