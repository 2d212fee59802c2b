#!/usr/bin/env python3
"""`envdoctor check` against `python -m torch.utils.collect_env`, side by side, same environment.

Runs each command several times (after one warm-up run) and prints the medians and the ratio.
Needs torch installed in the interpreter that runs this script (for collect_env).

    python benchmarks/check_vs_collect_env.py [--runs 7]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time


def wall_times(argv: list[str], runs: int) -> list[float]:
    subprocess.run(argv, capture_output=True, check=False)  # warm the page cache
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(argv, capture_output=True, check=False)
        times.append(time.perf_counter() - start)
    return times


def envdoctor_package() -> str:
    found = subprocess.run([sys.executable, "-c", "import envdoctor; print(envdoctor.__file__)"],
                           capture_output=True, text=True, check=False)
    return found.stdout.strip()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()

    envdoctor = shutil.which("envdoctor", path=os.path.dirname(sys.executable)) or shutil.which("envdoctor")
    commands = {
        "envdoctor check": [envdoctor, "check"] if envdoctor else [sys.executable, "-m", "envdoctor", "check"],
        "envdoctor check --deep": ([envdoctor] if envdoctor else [sys.executable, "-m", "envdoctor"]) + ["check", "--deep"],
        "python -m torch.utils.collect_env": [sys.executable, "-m", "torch.utils.collect_env"],
    }
    if subprocess.run([sys.executable, "-c", "import torch"], capture_output=True).returncode != 0:
        print("torch is not importable here: install it (e.g. pip install torch==2.13.0) to compare", file=sys.stderr)
        return 2

    # pip compiles an installed package's bytecode; an editable checkout under PYTHONDONTWRITEBYTECODE
    # would otherwise recompile envdoctor on every run and measure the compiler, not envdoctor.
    subprocess.run([sys.executable, "-m", "compileall", "-q", os.path.dirname(envdoctor_package())],
                   capture_output=True, check=False)
    print(f"{os.cpu_count()} CPUs, Python {sys.version.split()[0]}, {args.runs} runs each (medians)")
    medians = {}
    for label, argv in commands.items():
        times = wall_times(argv, args.runs)
        medians[label] = statistics.median(times)
        print(f"  {label:<36} median {medians[label] * 1000:7.0f} ms   (min {min(times) * 1000:.0f}, max {max(times) * 1000:.0f})")
    ratio = medians["python -m torch.utils.collect_env"] / medians["envdoctor check"]
    print(f"envdoctor check is {ratio:.1f}x faster than collect_env")
    return 0


if __name__ == "__main__":
    sys.exit(main())
