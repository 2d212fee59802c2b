"""contrib/slurm/envdoctor-healthcheck in a real single-node Slurm cluster (Debian's slurm-wlm and
munge) started on 127.0.0.1 by the test, as root: HealthCheckProgram drains a bad machine with an
`envdoctor:` reason, resumes it when it is good again, and never clears an operator's reason."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
MACHINES = ROOT / "tests" / "fixtures" / "machines"
WRAPPER = ROOT / "contrib" / "slurm" / "envdoctor-healthcheck"
NEEDED = ("slurmctld", "slurmd", "munged", "sinfo", "scontrol")
MISSING = [tool for tool in NEEDED if not (shutil.which(tool) or shutil.which(tool, path="/usr/sbin:/sbin"))]

pytestmark = [
    pytest.mark.skipif(bool(MISSING), reason=f"Slurm not installed (Debian packages slurm-wlm munge): no {', '.join(MISSING)}"),
    pytest.mark.skipif(os.geteuid() != 0, reason="a Slurm cluster is started as root (as CI runs)"),
]
SBIN = "/usr/sbin:/sbin:/usr/bin:/bin"
BAD, GOOD = MACHINES / "diag-driver-old.json", MACHINES / "a100-current.json"


def free_ports(n: int) -> list[int]:
    sockets = [socket.socket() for _ in range(n)]
    try:
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


class Cluster:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.node = socket.gethostname().split(".")[0]
        self.conf = root / "slurm.conf"
        self.env = dict(os.environ, SLURM_CONF=str(self.conf), PATH=f"{SBIN}:{os.environ.get('PATH', '')}")

    def machine(self, facts: Path) -> None:
        """What envdoctor sees on the next health check (the wrapper's settings file)."""
        (self.root / "hc.conf").write_text(f'ENVDOCTOR_ARGS="--facts {facts}"\n')

    def write(self) -> None:
        r = self.root
        for d in ("state", "spool"):
            (r / d).mkdir()
        (r / "munge.key").write_bytes(os.urandom(1024))
        os.chmod(r / "munge.key", 0o600)
        shim = r / "healthcheck"
        shim.write_text("#!/bin/bash\n"
                        f"export SLURM_CONF={self.conf} PATH={SBIN}\n"
                        f"export ENVDOCTOR='{sys.executable} -m envdoctor' PYTHONPATH={ROOT} ENVDOCTOR_NVML=0\n"
                        f"export ENVDOCTOR_HEALTHCHECK_CONF={r / 'hc.conf'} ENVDOCTOR_NODE={self.node}\n"
                        f"exec {WRAPPER} >> {r / 'healthcheck.log'} 2>&1\n")
        shim.chmod(0o755)
        ctld, slurmd = free_ports(2)
        self.conf.write_text("\n".join([
            "ClusterName=envdoctortest", f"SlurmctldHost={self.node}(127.0.0.1)",
            f"SlurmctldPort={ctld}", f"SlurmdPort={slurmd}",
            "AuthType=auth/munge", f"AuthInfo=socket={r / 'munge.sock'}",
            "SlurmUser=root", "SlurmdUser=root",
            f"StateSaveLocation={r / 'state'}", f"SlurmdSpoolDir={r / 'spool'}",
            f"SlurmctldPidFile={r / 'slurmctld.pid'}", f"SlurmdPidFile={r / 'slurmd.pid'}",
            f"SlurmctldLogFile={r / 'slurmctld.log'}", f"SlurmdLogFile={r / 'slurmd.log'}",
            "ProctrackType=proctrack/linuxproc", "TaskPlugin=task/none", "SchedulerType=sched/builtin",
            "SelectType=select/linear", "MpiDefault=none", "JobCompType=jobcomp/none",
            "AccountingStorageType=accounting_storage/none", "JobAcctGatherType=jobacct_gather/none",
            "ReturnToService=2",
            f"HealthCheckProgram={shim}", "HealthCheckInterval=2", "HealthCheckNodeState=ANY",
            f"NodeName={self.node} NodeAddr=127.0.0.1 CPUs={os.cpu_count() or 1} State=UNKNOWN",
            f"PartitionName=debug Nodes={self.node} Default=YES State=UP", ""]))

    def start(self) -> None:
        r = self.root
        self.run("munged", f"--key-file={r / 'munge.key'}", f"--socket={r / 'munge.sock'}", f"--pid-file={r / 'munged.pid'}",
                 f"--log-file={r / 'munged.log'}", f"--seed-file={r / 'munge.seed'}", "--force")
        self.run("slurmctld", "-f", str(self.conf), "-i")
        self.run("slurmd", "-f", str(self.conf))

    def stop(self) -> None:
        for name in ("slurmd", "slurmctld", "munged"):
            pid_file = self.root / f"{name}.pid"
            if not pid_file.exists():
                continue
            pid = int(pid_file.read_text().split()[0])
            try:
                os.kill(pid, 15)
            except ProcessLookupError:
                continue
            for _ in range(100):
                try:
                    os.kill(pid, 0)
                except ProcessLookupError:
                    break
                time.sleep(0.1)
            else:
                os.kill(pid, 9)

    def run(self, *argv: str) -> str:
        result = subprocess.run(list(argv), capture_output=True, text=True, timeout=30, env=self.env)
        assert result.returncode == 0, f"{argv[0]}: {result.stderr.strip()}"
        return result.stdout

    def state(self) -> tuple[str, str]:
        out = self.run("sinfo", "-h", "-N", "-n", self.node, "-o", "%t|%E").strip()
        state, _, reason = out.partition("|")
        return state, reason

    def wait_for(self, wanted, what: str, timeout: float = 60) -> tuple[str, str]:
        deadline = time.monotonic() + timeout
        while True:
            seen = self.state()
            if wanted(*seen):
                return seen
            if time.monotonic() > deadline:
                log = (self.root / "healthcheck.log").read_text()[-1500:] if (self.root / "healthcheck.log").exists() else ""
                raise AssertionError(f"{what}: still {seen} after {timeout} s; health check log:\n{log}")
            time.sleep(0.5)


    def wait_for_log(self, line: str, timeout: float = 60) -> None:
        log = self.root / "healthcheck.log"
        deadline = time.monotonic() + timeout
        while not (log.exists() and line in log.read_text()):
            if time.monotonic() > deadline:
                raise AssertionError(f"no {line!r} in the health check log after {timeout} s")
            time.sleep(0.5)


@pytest.fixture
def cluster(tmp_path):
    c = Cluster(tmp_path)
    c.write()
    c.machine(BAD)
    try:
        c.start()
        yield c
    finally:
        c.stop()


def test_drain_resume_and_operator_reason(cluster):
    state, reason = cluster.wait_for(lambda s, r: s.startswith("drain") and r.startswith("envdoctor:"), "drain on a bad machine")
    assert reason.startswith("envdoctor: driver-too-old: ") and len(reason) <= len("envdoctor: ") + 80

    cluster.machine(GOOD)
    cluster.wait_for(lambda s, r: s.startswith(("idle", "mix", "alloc")), "resume when the machine is good")

    cluster.run("scontrol", "update", f"NodeName={cluster.node}", "State=DRAIN", "Reason=operator: bad fan")
    cluster.machine(BAD)  # envdoctor finds the problem and leaves the operator's reason
    cluster.wait_for_log("already drained by someone else (operator: bad fan); reason kept")
    cluster.machine(GOOD)  # and a healthy run does not resume a node an operator drained
    cluster.wait_for_log("healthy, but drained by someone else (operator: bad fan); not resumed")
    assert cluster.state() == ("drain", "operator: bad fan")
