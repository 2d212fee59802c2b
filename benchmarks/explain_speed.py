"""How long `envdoctor explain` takes on a 5 MB training log with one error in the middle, with the
full signature catalogue: normalising, matching and reading the machine, in-process (median of 5),
and the whole command (`--here`, start-up and probe included).

    python benchmarks/explain_speed.py
"""

import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from envdoctor.explain import find, signatures  # noqa: E402
from envdoctor.read import read_machine  # noqa: E402
from envdoctor.textnorm import normalise  # noqa: E402


def training_log(size: int = 5_000_000) -> bytes:
    rng = random.Random(1)
    lines = [f"step {i} loss={rng.random():.4f} lr=1e-4 throughput=123.4 it/s" for i in range(size // 40)]
    lines.insert(len(lines) // 2, "RuntimeError: CUDA error: no kernel image is available for execution on the device")
    return "\n".join(lines).encode()[:size]


def main() -> None:
    raw = training_log()
    print(f"{len(signatures())} signatures, log of {len(raw) / 1e6:.1f} MB")
    runs = []
    for _ in range(5):
        start = time.perf_counter()
        doc = normalise(raw)
        matches = find(doc)
        read_machine(doc.text)
        runs.append(time.perf_counter() - start)
    print(f"in-process: median {statistics.median(runs):.3f} s ({len(matches)} match)")
    with tempfile.NamedTemporaryFile(suffix=".log") as fh:
        fh.write(raw)
        fh.flush()
        whole = []
        for _ in range(3):
            start = time.perf_counter()
            subprocess.run([sys.executable, "-m", "envdoctor", "explain", "--here", "--file", fh.name],
                           capture_output=True, check=False)
            whole.append(time.perf_counter() - start)
    print(f"whole command: median {statistics.median(whole):.3f} s")


if __name__ == "__main__":
    main()
