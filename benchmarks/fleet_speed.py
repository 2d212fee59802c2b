"""How fast `envdoctor fleet` aggregates a large fleet, and how much memory it takes.

Generates N nodes' JSON (default 2,000) in a temporary folder, in the forms nodes send: bare facts
(`envdoctor facts`), reports (`envdoctor check --json`) and Ansible facts (`facts --ansible-fact`),
8 x H100 each, with drift (a few nodes on another driver or torch), unhealthy nodes (a driver too old
for the torch build), truncated files and silent hosts. Then runs the real CLI on it several times
and prints the median wall time and the peak resident memory of the child.

With --distinct every node is a bare facts file that differs from all the others, so that fleet
must diagnose each one: its own kernel patch level and environment path, a driver among a few,
1-8 GPUs of a few models, a torch version and build among a few (some of them unhealthy).

    .venv/bin/python benchmarks/fleet_speed.py [--nodes 2000] [--runs 5] [--keep DIR] [--distinct]

Budget (docs/architecture.md): under 2 s for 2,000 nodes on a 2-core machine, bounded memory.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BASE = ROOT / "tests" / "fixtures" / "machines" / "a100-current.json"
GOOD_DRIVER, OTHER_DRIVER, OLD_DRIVER = "570.172.08", "560.35.03", "470.182.03"


def node_facts(host: str, driver: str = GOOD_DRIVER, torch: str = "2.8.0+cu128") -> dict:
    facts = json.loads(BASE.read_text())
    facts["host"]["hostname"] = host
    nvidia = facts["nvidia"]
    nvidia["driver_version"], nvidia["driver_cuda"] = driver, {GOOD_DRIVER: "12.9", OTHER_DRIVER: "12.6"}.get(driver, "11.4")
    template = nvidia["gpus"][0]
    nvidia["gpus"] = [dict(template, index=i, name="NVIDIA H100 80GB HBM3", compute_capability="9.0",
                           memory_total_mib=81559, uuid=f"GPU-{host}-{i:02d}", pci_bus_id=f"00000000:{0x18 + i:02X}:00.0")
                      for i in range(8)]
    packages = facts["python"].setdefault("packages", {}) or {}
    packages.update({"torch": torch, "numpy": "2.2.6", "nvidia-cudnn-cu12": "9.10.2.21"})
    packages.update({f"dependency-{k:03d}": f"1.{k}.0" for k in range(80)})  # a realistic environment's size
    facts["python"]["packages"] = packages
    facts["cudnn"] = [{"version": "9.10.2", "source": "pip:nvidia-cudnn-cu12", "path": None}]
    return facts


def generate(folder: Path, nodes: int) -> str:
    """Write the fleet; return the --expect-hosts range (a few more hosts than answer)."""
    from envdoctor.complete import complete
    from envdoctor.diagnose import diagnose
    from envdoctor.facts import Facts

    width = max(4, len(str(nodes + 4)))
    diagnosed: dict[tuple, list] = {}
    for i in range(1, nodes + 1):
        host = f"gpu{i:0{width}d}"
        driver = OLD_DRIVER if i % 500 == 3 else OTHER_DRIVER if i % 50 == 7 else GOOD_DRIVER
        torch = "2.7.1+cu126" if i % 400 == 13 else "2.8.0+cu128"
        facts = node_facts(host, driver, torch)
        form = i % 10
        if form <= 6:
            document = facts
        else:
            key = (driver, torch)
            if key not in diagnosed:
                diagnosed[key] = [f.to_dict() for f in diagnose(complete(Facts.from_dict(copy.deepcopy(facts))))]
            findings = diagnosed[key]
            if form <= 8:
                document = {"schema": "envdoctor.report/1", "facts": facts, "findings": findings, "summary": {}, "timings": {}}
            else:
                errors = [f for f in findings if f["severity"] == "error"]
                document = {"schema": "envdoctor.ansible-fact/1", "ok": not errors, "exit": int(bool(errors)),
                            "summary": "ok" if not errors else f"{errors[0]['code']}: {errors[0]['title']}"[:80],
                            "facts": facts, "findings": findings}
        (folder / f"{host}.json").write_text(json.dumps(document, indent=2))
    for k in range(3):  # a node that died while writing
        text = json.dumps(node_facts(f"trunc{k}"), indent=2)
        (folder / f"trunc{k}.json").write_text(text[: len(text) // 2])
    return f"gpu[{1:0{width}d}-{nodes + 4:0{width}d}]"


# --distinct: what varies between the machines of a real, heterogeneous fleet.
DRIVERS = (("570.172.08", "12.8"), ("575.57.08", "12.9"), ("580.95.05", "13.0"), ("535.261.03", "12.2"),
           ("470.256.02", "11.4"))
GPU_MODELS = (("NVIDIA H100 80GB HBM3", "9.0", 81559), ("NVIDIA A100-SXM4-80GB", "8.0", 81920),
              ("NVIDIA L40S", "8.9", 46068), ("NVIDIA GeForce RTX 5090", "12.0", 32607), ("Tesla V100-SXM2-32GB", "7.0", 32768))
TORCH_BUILDS = ("2.8.0+cu128", "2.7.1+cu126", "2.9.1+cu130", "2.6.0+cu124", "2.8.0+cpu", "2.5.1+cu118")
SYSTEMS = (("Ubuntu 22.04", "2.35", "5.15.0-{n}-generic"), ("Ubuntu 24.04", "2.39", "6.8.0-{n}-generic"),
           ("Rocky Linux 9.4", "2.34", "5.14.0-{n}.el9_4.x86_64"))  # distribution, glibc, kernel (its patch level varies)


def distinct_facts(i: int, host: str) -> dict:
    """Node i of a heterogeneous fleet: no two nodes have the same diagnosis-relevant facts."""
    facts = json.loads(BASE.read_text())
    facts["host"]["hostname"] = host
    distro, glibc, kernel = SYSTEMS[i % len(SYSTEMS)]
    facts["host"].update(distro=distro, glibc=glibc, kernel=kernel.format(n=60 + (i * 7) % 97))
    driver, driver_cuda = DRIVERS[(i // 3) % len(DRIVERS)]
    nvidia = facts["nvidia"]
    nvidia["driver_version"] = nvidia["kernel_module"] = driver
    nvidia["driver_cuda"] = driver_cuda
    name, cc, memory = GPU_MODELS[(i // 5) % len(GPU_MODELS)]
    count = (1, 2, 4, 8)[(i // 2) % 4]
    template = nvidia["gpus"][0]
    nvidia["gpus"] = [dict(template, index=k, name=name, compute_capability=cc, memory_total_mib=memory,
                           uuid=f"GPU-{host}-{k:02d}", pci_bus_id=f"00000000:{0x18 + k:02X}:00.0") for k in range(count)]
    nvidia["pci_devices"] = nvidia["pci_devices"][:1] * count
    env_path = f"/srv/jobs/{host}/.venv"
    facts["python"].update(executable=f"{env_path}/bin/python", env_path=env_path)
    torch = TORCH_BUILDS[(i // 7) % len(TORCH_BUILDS)]
    packages = {"torch": torch, "numpy": ("2.2.6", "1.26.4")[i % 2], "nvidia-cudnn-cu12": "9.10.2.21"}
    packages.update({f"dependency-{k:03d}": f"1.{k}.0" for k in range(80)})
    facts["python"]["packages"] = packages
    facts["cudnn"] = [{"version": "9.10.2", "source": "pip:nvidia-cudnn-cu12", "path": None}]
    return facts


def generate_distinct(folder: Path, nodes: int) -> str:
    width = max(4, len(str(nodes + 4)))
    machines = set()
    for i in range(1, nodes + 1):
        host = f"gpu{i:0{width}d}"
        facts = distinct_facts(i, host)
        (folder / f"{host}.json").write_text(json.dumps(facts, indent=2))
        machines.add(_without_names(facts))
    if len(machines) != nodes:
        raise SystemExit(f"--distinct made {len(machines)} different machines for {nodes} nodes")
    return f"gpu[{1:0{width}d}-{nodes:0{width}d}]"


def _without_names(facts: dict) -> str:
    """The facts less what tells two identical machines apart (host name, GPU serials and bus ids)."""
    trimmed = copy.deepcopy(facts)
    trimmed["host"].pop("hostname", None)
    for gpu in trimmed["nvidia"]["gpus"]:
        gpu.pop("uuid", None), gpu.pop("pci_bus_id", None)
    return json.dumps(trimmed, sort_keys=True)


def measure(folder: Path, expected: str, runs: int) -> tuple[list[float], int, dict]:
    times = []
    report = {}
    for _ in range(runs):
        start = time.perf_counter()
        result = subprocess.run([sys.executable, "-m", "envdoctor", "fleet", str(folder), "--expect-hosts", expected, "--json"],
                                capture_output=True, text=True, timeout=120, cwd=ROOT)
        times.append(time.perf_counter() - start)
        if result.returncode not in (0, 1):
            raise SystemExit(f"fleet failed ({result.returncode}): {result.stderr.strip()}")
        report = json.loads(result.stdout)
    peak_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return times, peak_kib, report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--keep", metavar="DIR", help="write the fleet here and keep it")
    parser.add_argument("--distinct", action="store_true", help="every node a bare facts file unlike the others")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(args.keep or tmp)
        folder.mkdir(parents=True, exist_ok=True)
        expected = (generate_distinct if args.distinct else generate)(folder, args.nodes)
        size = sum(p.stat().st_size for p in folder.iterdir())
        times, peak_kib, report = measure(folder, expected, args.runs)
    median = statistics.median(times)
    print(f"fleet of {args.nodes} {'distinct ' if args.distinct else ''}nodes ({size / 1e6:.1f} MB of JSON, {os.cpu_count()} CPUs): "
          f"median {median:.2f} s over {args.runs} runs (min {min(times):.2f}, max {max(times):.2f}); "
          f"peak RSS {peak_kib / 1024:.0f} MiB")
    drift = [k["key"] for k in report["keys"] if k["drift"]]
    print(f"read {report['nodes']} nodes; drift in {', '.join(drift)}; unhealthy {sum(u['count'] for u in report['unhealthy'])}; "
          f"silent {report['silent']['count']}; unreadable {len(report['unreadable'])}; exit {report['exit']}")
    print("budget 2 s:", "met" if median < 2.0 else "MISSED")


if __name__ == "__main__":
    main()
