#!/usr/bin/env python3
"""Verify the matrices' kernel lists against the wheels themselves (maintainers' tool).

    python scripts/verify_kernels.py --recorded tests/fixtures/kernel_scan      # offline: replay saved scans
    python scripts/verify_kernels.py tensorflow paddle jax --record tests/fixtures/kernel_scan
    python scripts/verify_kernels.py pytorch --limit 3 --record tests/fixtures/kernel_scan

Live, each row's wheel is streamed to a temporary folder (--max-gb bound), every shared library's
CUDA fat binaries are read (envdoctor/maintainers/kernels.py: pure Python, no CUDA toolkit), the wheel
is deleted, and the SASS/PTX targets are compared with the row. Exit 0: every compared row matches;
1: a row differs; 2: bad usage or an unreadable answer.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from envdoctor.maintainers import verify  # noqa: E402

SUBJECTS = ("tensorflow", "paddle", "jax", "pytorch")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("subjects", nargs="*", metavar="SUBJECT", help=f"{', '.join(SUBJECTS)} (default: all)")
    p.add_argument("--recorded", metavar="DIR", help="compare saved scans in DIR instead of downloading")
    p.add_argument("--record", metavar="DIR", help="save each scan into DIR")
    p.add_argument("--limit", type=int, default=0, metavar="N", help="scan at most N rows per subject (newest first)")
    p.add_argument("--max-gb", type=float, default=4.0, help="largest wheel to download (default 4 GB)")
    args = p.parse_args(argv)
    unknown = [s for s in args.subjects if s not in SUBJECTS]
    if unknown:
        p.error(f"unknown subject {unknown[0]!r} (choose from {', '.join(SUBJECTS)})")
    subjects = args.subjects or list(SUBJECTS)
    if args.recorded:
        compared, unscanned = verify.verify_recorded(Path(args.recorded), subjects)
    else:
        compared, unscanned = _live(subjects, args)
    for result in compared:
        label = "SKIP  " if getattr(result, "error", None) else ("ok    " if result.ok else "DRIFT ")
        print(label + result.line())
    print(f"{len(compared)} row(s) compared, {sum(not r.ok for r in compared)} differ; "
          f"{len(unscanned)} row(s) without a scan")
    return 0 if all(r.ok for r in compared) else 1


def _live(subjects, args):
    compared, unscanned, docs = [], [], {}
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="envdoctor-kernels-") as tmp:
        for subject in subjects:
            rows = verify.targets([subject])
            for n, target in enumerate(rows):
                if args.limit and n >= args.limit:
                    unscanned.append(target)
                    continue
                try:
                    result = verify.scan(target, Path(tmp), docs, int(args.max_gb * (1 << 30)))
                except Exception as exc:  # network, size bound, unreadable wheel: that row is not compared
                    sys.stderr.write(f"verify_kernels: {target.key}: {type(exc).__name__}: {exc}\n")
                    result = None
                if result is None:
                    unscanned.append(target)
                    continue
                if args.record:
                    verify.save_scan(Path(args.record), result)
                compared.append(verify.compare_scan(target, result))
                print(f"  scanned {result.wheel} ({result.size >> 20} MiB): download {result.download_s} s, "
                      f"scan {result.scan_s} s", file=sys.stderr)
    print(f"total {time.monotonic() - started:.0f} s", file=sys.stderr)
    return compared, unscanned


if __name__ == "__main__":
    sys.exit(main())
