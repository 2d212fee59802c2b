"""GPU access inside containers: the container probe (on this machine, which is itself a docker
container, and on recorded trees), the rules on recorded machines (each finding triggered and a near
miss), and the CLI. A real container started by the test runs where a docker daemon and a local
python image are available (not on the machine this was written on: it has the docker CLI but no
daemon, no runc and no podman, so containers cannot run there)."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from envdoctor.complete import complete
from envdoctor.diagnose import diagnose
from envdoctor.diagnose.container import parse_requirement, requirement_met
from envdoctor.facts import Facts, load_facts
from envdoctor.probe import ProbeContext
from envdoctor.probe import container as probe_container

ROOT = Path(__file__).resolve().parent.parent
MACHINES = ROOT / "tests" / "fixtures" / "machines"

# The value the nvidia/cuda 12.2.2 base image sets (gitlab.com/nvidia/container-images/cuda,
# dist/12.2.2/ubuntu2204/base/Dockerfile), as copied verbatim into a public project's Dockerfile.
CUDA_122_REQUIRE = ("cuda>=12.2 brand=tesla,driver>=470,driver<471 brand=unknown,driver>=470,driver<471 "
                    "brand=nvidia,driver>=470,driver<471 brand=nvidiartx,driver>=470,driver<471 "
                    "brand=geforce,driver>=470,driver<471 brand=geforcertx,driver>=470,driver<471 "
                    "brand=quadro,driver>=470,driver<471 brand=quadrortx,driver>=470,driver<471 "
                    "brand=titan,driver>=470,driver<471 brand=titanrtx,driver>=470,driver<471 "
                    "brand=tesla,driver>=525,driver<526 brand=unknown,driver>=525,driver<526 "
                    "brand=nvidia,driver>=525,driver<526 brand=nvidiartx,driver>=525,driver<526 "
                    "brand=geforce,driver>=525,driver<526 brand=geforcertx,driver>=525,driver<526 "
                    "brand=quadro,driver>=525,driver<526 brand=quadrortx,driver>=525,driver<526 "
                    "brand=titan,driver>=525,driver<526 brand=titanrtx,driver>=525,driver<526")


def machine(name: str) -> Facts:
    return complete(load_facts(MACHINES / f"{name}.json"))


def findings(name_or_facts, code: str):
    facts = machine(name_or_facts) if isinstance(name_or_facts, str) else name_or_facts
    return [f for f in diagnose(facts) if f.code == code]


# --- rules on recorded machines: a trigger and a near miss for each --------------------------------

@pytest.mark.parametrize("name, code, severity, words", [
    ("container-docker-no-gpus", "container-gpu-missing", "error", "started without GPU access"),
    ("container-visible-void", "container-gpu-missing", "error", "NVIDIA_VISIBLE_DEVICES='void'"),
    ("container-libs-missing", "container-gpu-missing", "error", "libcuda.so is not"),
    ("container-caps-utility", "container-gpu-missing", "error", "libcuda.so is not"),
    ("container-shm-64m", "shm-too-small", "warning", "64 MiB"),
    ("container-cpu-only", "shm-too-small", "warning", "64 MiB"),
    ("container-require-newer", "driver-too-old", "error", "needs CUDA 12.8"),
    ("container-podman-host-no-cdi", "container-gpu-missing", "warning", "no CDI spec"),
])
def test_each_container_finding_fires_on_its_machine(name, code, severity, words):
    found = findings(name, code)
    assert found, name
    assert found[0].severity == severity
    assert words in found[0].title
    assert found[0].fix, "every finding says how to fix it"


def test_a_container_with_gpu_access_has_no_container_finding():
    codes = {f.code for f in diagnose(machine("container-docker-gpu-ok"))}
    assert not codes & {"container-gpu-missing", "shm-too-small", "driver-too-old"}


def test_a_cpu_container_is_not_told_it_lacks_a_gpu():
    assert not findings("container-cpu-only", "container-gpu-missing")


def test_the_fixes_name_the_commands_that_fix_them():
    no_gpus = findings("container-docker-no-gpus", "container-gpu-missing")[0]
    assert ("docker", "run", "--gpus", "all", "…") in no_gpus.fix
    libs = findings("container-libs-missing", "container-gpu-missing")[0]
    assert any("nvidia-ctk runtime configure" in f for f in libs.fix if isinstance(f, str))
    caps = findings("container-caps-utility", "container-gpu-missing")[0]
    assert any("NVIDIA_DRIVER_CAPABILITIES=compute,utility" in f for f in caps.fix if isinstance(f, tuple))
    shm = findings("container-shm-64m", "shm-too-small")[0]
    assert ("docker", "run", "--shm-size=8g", "…") in shm.fix
    cdi = findings("container-podman-host-no-cdi", "container-gpu-missing")[0]
    assert ("sudo", "nvidia-ctk", "cdi", "generate", "--output=/etc/cdi/nvidia.yaml") in cdi.fix


def test_podman_inside_a_container_is_told_about_cdi():
    facts = machine("container-docker-no-gpus")
    podman = dataclasses.replace(facts, container=dataclasses.replace(facts.container, runtime="podman"))
    fix = findings(podman, "container-gpu-missing")[0].fix
    assert ("podman", "run", "--device", "nvidia.com/gpu=all", "…") in fix


def test_near_misses_of_each_rule():
    facts = machine("container-podman-host-no-cdi")
    with_spec = dataclasses.replace(facts, container=dataclasses.replace(facts.container, cdi_specs=["/etc/cdi/nvidia.yaml"]))
    assert not findings(with_spec, "container-gpu-missing")
    shm = machine("container-shm-64m")
    big = dataclasses.replace(shm, container=dataclasses.replace(shm.container, shm_bytes=2 << 30))
    assert not findings(big, "shm-too-small")
    newer = machine("container-require-newer")
    disabled = dataclasses.replace(newer, container=dataclasses.replace(newer.container, nvidia_disable_require="true"))
    assert not findings(disabled, "driver-too-old")
    void = machine("container-visible-void")
    all_gpus = dataclasses.replace(void, container=dataclasses.replace(void.container, nvidia_visible_devices="all"))
    assert "started without GPU access" in findings(all_gpus, "container-gpu-missing")[0].title


def test_unknown_container_facts_raise_no_alarm():
    facts = machine("container-docker-no-gpus")
    unknown = Facts.from_dict({**{k: v for k, v in facts.to_dict().items() if k != "recorded"},
                               "container": {"in_container": True, "runtime": "docker"}})
    assert not findings(unknown, "container-gpu-missing")


# --- NVIDIA_REQUIRE_CUDA ---------------------------------------------------------------------------

def test_requirement_is_read_as_alternatives_of_constraints():
    groups = parse_requirement(CUDA_122_REQUIRE)
    assert groups[0] == [("cuda", ">=", "12.2")]
    assert groups[1] == [("brand", "=", "tesla"), ("driver", ">=", "470"), ("driver", "<", "471")]
    assert len(groups) == 21


@pytest.mark.parametrize("driver, cuda, expected", [
    ("550.54.15", "12.4", True),  # cuda>=12.2 holds
    ("535.183.01", "12.2", True),
    ("525.147.05", "12.0", None),  # only the brand=…,driver 525 alternatives could hold: brand unknown here
    ("515.105.01", "11.7", False),  # nothing holds
])
def test_requirement_against_a_host_driver(driver, cuda, expected):
    facts = machine("container-docker-gpu-ok")
    facts = dataclasses.replace(facts, nvidia=dataclasses.replace(facts.nvidia, driver_version=driver, driver_cuda=cuda))
    assert requirement_met(facts, CUDA_122_REQUIRE) is expected


# --- the probe ---------------------------------------------------------------------------------------

def _ctx(root: Path, **environ) -> ProbeContext:
    return ProbeContext(python=sys.executable, root=root, environ={"PATH": os.defpath, **environ})


@pytest.mark.skipif(sys.platform != "linux", reason="the container probe reads Linux files")
def test_probe_on_a_recorded_tree(tmp_path):
    (tmp_path / ".dockerenv").write_text("")
    dev = tmp_path / "dev"
    (dev / "shm").mkdir(parents=True)
    for name in ("nvidia0", "nvidiactl", "nvidia-uvm", "null"):
        (dev / name).write_text("")
    etc = tmp_path / "etc"
    (etc / "cdi").mkdir(parents=True)
    # ld.so.cache keeps names and paths as NUL-terminated strings after its header
    (etc / "ld.so.cache").write_bytes(b"glibc-ld.so.cache1.1\0libcuda.so.1\0/usr/lib/x86_64-linux-gnu/libcuda.so.1\0"
                                      b"libz.so.1\0/usr/lib/x86_64-linux-gnu/libz.so.1\0")
    (etc / "cdi" / "nvidia.yaml").write_text("cdiVersion: 0.5.0\nkind: nvidia.com/gpu\ndevices:\n- name: all\n")
    (etc / "cdi" / "other.yaml").write_text("kind: vendor.com/fpga\n")
    lib = tmp_path / "usr" / "lib64"
    lib.mkdir(parents=True)
    (lib / "libnvidia-ml.so.1").write_text("")
    found = probe_container.probe(_ctx(tmp_path, NVIDIA_VISIBLE_DEVICES="all", NVIDIA_REQUIRE_CUDA="cuda>=12.4"))
    assert (found.in_container, found.runtime, found.detected_by) == (True, "docker", "/.dockerenv")
    assert found.device_nodes == ["/dev/nvidia-uvm", "/dev/nvidia0", "/dev/nvidiactl"]
    assert found.driver_libs == ["libcuda.so.1", "libnvidia-ml.so.1"]
    assert found.cdi_specs == ["/etc/cdi/nvidia.yaml"]
    assert found.nvidia_visible_devices == "all" and found.nvidia_require_cuda == "cuda>=12.4"
    assert found.shm_bytes and found.shm_bytes > 0


def _host_tree(root: Path) -> None:
    """A systemd host as its files show it: PID 1 is systemd in /init.scope (cgroup v2), booted by
    systemd (/run/systemd/system), no /run/systemd/container, an empty /dev of NVIDIA nodes."""
    (root / "proc" / "1").mkdir(parents=True)
    (root / "proc" / "1" / "cgroup").write_text("0::/init.scope\n")
    (root / "proc" / "1" / "comm").write_text("systemd\n")
    (root / "run" / "systemd" / "system").mkdir(parents=True)
    (root / "dev").mkdir()


@pytest.mark.skipif(sys.platform != "linux", reason="the container probe reads Linux files")
def test_probe_outside_a_container(tmp_path):
    _host_tree(tmp_path)
    ctx = _ctx(tmp_path)
    found = probe_container.probe(ctx)
    assert found.in_container is False and found.runtime is None
    assert found.device_nodes == [] and found.driver_libs == [] and not ctx.errors


@pytest.mark.skipif(sys.platform != "linux", reason="the container probe reads Linux files")
def test_no_marker_is_unknown_not_a_host(tmp_path):
    # cgroup v2 in a namespace ("0::/"), a shell as PID 1: what an unmarked container shows, and no host proof
    (tmp_path / "proc" / "1").mkdir(parents=True)
    (tmp_path / "proc" / "1" / "cgroup").write_text("0::/\n")
    (tmp_path / "proc" / "1" / "comm").write_text("bash\n")
    (tmp_path / "dev").mkdir()
    found = probe_container.probe(_ctx(tmp_path))
    assert found.in_container is None and found.runtime is None and found.detected_by is None


@pytest.mark.skipif(sys.platform != "linux", reason="the container probe reads Linux files")
def test_markers_that_docker_does_not_leave(tmp_path):
    # systemd-nspawn / LXD: systemd as PID 1 (as on a host) but told of the container
    nspawn = tmp_path / "nspawn"
    _host_tree(nspawn)
    (nspawn / "run" / "systemd" / "container").write_text("systemd-nspawn\n")
    found = probe_container.probe(_ctx(nspawn))
    assert (found.in_container, found.runtime, found.detected_by) == (True, "systemd-nspawn", "/run/systemd/container")
    # Apptainer shares the host's PID namespace (PID 1 is the host's systemd): its image marker wins
    apptainer = tmp_path / "apptainer"
    _host_tree(apptainer)
    (apptainer / ".singularity.d").mkdir()
    found = probe_container.probe(_ctx(apptainer))
    assert (found.in_container, found.runtime, found.detected_by) == (True, "apptainer", "/.singularity.d")
    found = probe_container.probe(_ctx(tmp_path / "nspawn", APPTAINER_CONTAINER="/scratch/pytorch.sif"))
    assert (found.runtime, found.detected_by) == ("apptainer", "APPTAINER_CONTAINER")


@pytest.mark.skipif(sys.platform != "linux", reason="the container probe reads Linux files")
def test_a_list_that_cannot_be_read_is_unknown_not_empty(tmp_path):
    _host_tree(tmp_path)
    (tmp_path / "dev").rmdir()  # /dev cannot be listed
    (tmp_path / "etc" / "ld.so.cache").mkdir(parents=True)  # exists but cannot be read as a file
    ctx = _ctx(tmp_path)
    found = probe_container.probe(ctx)
    assert found.device_nodes is None and found.driver_libs is None
    assert {e.probe for e in ctx.errors} == {"container"} and len(ctx.errors) == 2
    assert any("/dev" in e.message for e in ctx.errors) and any("ld.so.cache" in e.message for e in ctx.errors)
    block, unread = probe_container.unread_lists(found)
    assert unread == {"container.device_nodes", "container.driver_libs"}
    assert block.device_nodes == [] and block.driver_libs == [] and block.cdi_specs == []
    facts = Facts(container=block, recorded=("host", "container"), unrecorded=unread, errors=list(ctx.errors))
    assert not facts.known("container.device_nodes") and facts.known("container.cdi_specs")
    assert Facts.from_dict(facts.to_dict()).to_dict()["container"]["device_nodes"] is None
    # with the GPU wanted and no list of devices, no rule says the container lacks a GPU
    wanted = dataclasses.replace(facts, container=dataclasses.replace(block, in_container=True, runtime="docker",
                                                                      nvidia_require_cuda="cuda>=12.4"))
    assert not findings(wanted, "container-gpu-missing")
    assert findings(dataclasses.replace(wanted, unrecorded=frozenset()), "container-gpu-missing")


@pytest.mark.skipif(sys.platform != "linux", reason="the container probe reads Linux files")
def test_collect_records_an_unread_list_as_unrecorded(tmp_path):
    from envdoctor.probe import collect

    (tmp_path / "proc" / "1").mkdir(parents=True)
    (tmp_path / "etc" / "ld.so.cache").mkdir(parents=True)
    facts, _ = collect(ctx=_ctx(tmp_path))  # no /dev, an unreadable ld.so.cache
    assert facts.container.device_nodes == [] and not facts.known("container.device_nodes")
    assert not facts.known("container.driver_libs") and facts.known("container.cdi_specs")
    assert facts.to_dict()["container"]["device_nodes"] is None
    assert [e.probe for e in facts.errors].count("container") == 2


def test_rules_on_an_unknown_in_container():
    facts = machine("container-docker-no-gpus")
    unknown = dataclasses.replace(facts, container=dataclasses.replace(facts.container, in_container=None,
                                                                       runtime=None, detected_by=None),
                                  host=dataclasses.replace(facts.host, container=None))
    assert not findings(unknown, "container-gpu-missing")  # not known to be a container: no container advice
    host = machine("container-podman-host-no-cdi")
    assert findings(host, "container-gpu-missing")
    unsure = dataclasses.replace(host, container=dataclasses.replace(host.container, in_container=None))
    assert not findings(unsure, "container-gpu-missing")  # the CDI advice needs a host known to be one


def test_runtime_from_cgroup_v1_and_mountinfo():
    assert probe_container.runtime_in_cgroup(
        "12:pids:/docker/3f1c2a9e8b7d6c5b4a3f2e1d0c9b8a7f6e5d4c3b2a1f0e9d8c7b6a5f4e3d2c1b\n") == "docker"
    assert probe_container.runtime_in_cgroup("11:memory:/kubepods/burstable/pod5e0c/0a1b2c\n") == "kubernetes"
    assert probe_container.runtime_in_cgroup("0::/\n") is None  # cgroup v2 in a namespace says nothing
    line = ("612 598 254:1 /var/lib/docker/containers/3f1c2a9e8b7d/hostname /etc/hostname rw,relatime - ext4 "
            "/dev/vda1 rw")
    assert probe_container.runtime_in_mountinfo(line) == "docker"
    podman = ("700 690 0:52 /containers/storage/overlay-containers/9a8b/userdata/hostname /etc/hostname rw - "
              "tmpfs tmpfs rw")
    assert probe_container.runtime_in_mountinfo(podman) == "podman"
    assert probe_container.runtime_in_mountinfo("27 1 254:0 / / rw,relatime - ext4 /dev/vda rw") is None


@pytest.mark.skipif(not Path("/.dockerenv").exists(), reason="this machine is not a docker container")
def test_probe_on_this_machine_which_is_a_docker_container():
    found = probe_container.probe(ProbeContext(python=sys.executable))
    assert found.in_container and found.runtime in ("docker", "kubernetes")
    st = os.statvfs("/dev/shm")
    assert found.shm_bytes == st.f_blocks * st.f_frsize
    has_nvidia = any(n.startswith("nvidia") for n in os.listdir("/dev"))
    assert bool(found.device_nodes) == has_nvidia


# --- the CLI -------------------------------------------------------------------------------------------

def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "envdoctor", *args], capture_output=True, text=True, timeout=120,
                          cwd=ROOT)


def test_cli_reports_a_container_without_gpus():
    result = _cli("check", "--json", "--facts", str(MACHINES / "container-docker-no-gpus.json"))
    assert result.returncode == 1, result.stderr
    report = json.loads(result.stdout)
    assert "container-gpu-missing" in {f["code"] for f in report["findings"]}
    assert report["facts"]["container"]["device_nodes"] == []
    console = _cli("check", "--facts", str(MACHINES / "container-docker-no-gpus.json"))
    assert "Container" in console.stdout and "docker run --gpus all" in console.stdout


def test_cli_on_this_machine_records_the_container_block():
    result = _cli("facts")
    assert result.returncode == 0, result.stderr
    block = json.loads(result.stdout)["container"]
    if sys.platform == "linux":
        assert set(block) >= {"in_container", "device_nodes", "driver_libs", "shm_bytes", "cdi_specs"}


# --- a real container, where this machine can start one ----------------------------------------------
# Tried on the machine this was written on: Debian's podman 4.3.1 with crun, rootful, `--network none
# --rootfs /`: crun fails with "setrlimit `RLIMIT_NOFILE`: Operation not permitted" (even with the limits
# unchanged) inside that sandbox VM; the docker CLI is there but no daemon. Both tests skip there.

IMAGE = "python:3.12-slim"
PROBE_IN_CONTAINER = ("import json, sys; sys.path.insert(0, '/src'); "
                      "from envdoctor.probe import ProbeContext; from envdoctor.probe.container import probe; "
                      "import dataclasses; print(json.dumps(dataclasses.asdict(probe(ProbeContext(python=sys.executable)))))")


def _docker_ready() -> bool:
    if shutil.which("docker") is None:
        return False
    try:
        info = subprocess.run(["docker", "image", "inspect", IMAGE], capture_output=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return info.returncode == 0  # a daemon answers and the image is already here (no pulling)


@pytest.mark.skipif(not _docker_ready(), reason=f"no docker daemon with {IMAGE} present (cannot start a container here)")
def test_probe_inside_a_real_container_without_gpus():
    result = subprocess.run(["docker", "run", "--rm", "--network", "none", "--shm-size=256m", "-v", f"{ROOT}:/src:ro",
                             IMAGE, "python", "-c", PROBE_IN_CONTAINER], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    found = json.loads(result.stdout)
    assert found["in_container"] and found["runtime"] == "docker"
    assert found["device_nodes"] == [] and found["shm_bytes"] == 256 << 20


def _podman_ready() -> bool:
    if shutil.which("podman") is None:
        return False
    try:
        probe = subprocess.run(["podman", "run", "--rm", "--network", "none", "--rootfs", "/", "/bin/true"],
                               capture_output=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return probe.returncode == 0


@pytest.mark.skipif(not _podman_ready(), reason="podman cannot start a container here")
def test_probe_inside_a_real_podman_container_without_gpus():
    """The host's own root as the container's root filesystem: no image to pull, this Python inside."""
    result = subprocess.run(["podman", "run", "--rm", "--network", "none", "--shm-size=128m", "--rootfs", "/",
                             sys.executable, "-c", PROBE_IN_CONTAINER.replace("'/src'", repr(str(ROOT)))],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    found = json.loads(result.stdout)
    assert found["in_container"] and found["runtime"] == "podman"
    assert found["device_nodes"] == [] and found["shm_bytes"] == 128 << 20
