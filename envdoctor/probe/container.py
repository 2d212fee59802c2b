"""Containers: whether envdoctor runs inside one, and what the NVIDIA container toolkit gave it.

Inside a container: the runtime (markers /.dockerenv, /run/.containerenv, KUBERNETES_SERVICE_HOST,
/proc/1/cgroup, /proc/self/mountinfo), the NVIDIA device nodes (/dev/nvidia*, /dev/dxg on WSL2), the
driver libraries the toolkit injects (libcuda.so*, libnvidia-ml.so*: the ld cache, then the usual
library folders), the NVIDIA_* variables the image or `docker run -e` set, and the size of /dev/shm.
On a host: whether podman is installed and which CDI specs name NVIDIA GPUs (/etc/cdi, /var/run/cdi),
without which `podman run --device nvidia.com/gpu=all` has no GPU to give.

`in_container` is True where a marker names a runtime, False only where the evidence says "host"
(see `looks_like_host`), and None (unknown) otherwise: no marker is not proof of a host (Apptainer,
LXD and systemd-nspawn leave none of docker's). A list that could not be read (/dev unlistable,
/etc/ld.so.cache unreadable) is None plus an error, never an empty list ("none found"); collect()
records it as unrecorded (see `unread_lists`).

Only file reads and directory listings, each bounded; no subprocess. Linux only (None elsewhere).
"""

from __future__ import annotations

import dataclasses
import os
import platform
import re
import shutil
from typing import Optional

from envdoctor import proc
from envdoctor.facts import Container

DRIVER_LIBS = ("libcuda.so", "libnvidia-ml.so")
SONAMES = ("libcuda.so.1", "libcuda.so", "libnvidia-ml.so.1", "libnvidia-ml.so")
LIB_DIRS = ("/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/usr/lib", "/lib64",
            "/usr/local/nvidia/lib64", "/usr/local/nvidia/lib", "/usr/lib/wsl/lib")
CDI_DIRS = ("/etc/cdi", "/var/run/cdi")
LD_CACHE_LIMIT = 8 << 20  # /etc/ld.so.cache is tens of kB; never read more than this
MOUNTINFO_LIMIT = 1 << 20
CGROUP_MARKERS = (("kubepods", "kubernetes"), ("libpod", "podman"), ("docker", "docker"),
                  ("containerd", "containerd"), ("cri-containerd", "containerd"), ("lxc", "lxc"))
MAX_LISTED = 64


def probe(ctx) -> Optional[Container]:
    if platform.system() != "Linux":
        return None
    runtime, marker = detect_runtime(ctx)
    return Container(
        in_container=True if runtime is not None else (False if looks_like_host(ctx) else None),
        runtime=runtime,
        detected_by=marker,
        device_nodes=device_nodes(ctx),
        driver_libs=driver_libs(ctx),
        nvidia_visible_devices=ctx.environ.get("NVIDIA_VISIBLE_DEVICES"),
        nvidia_require_cuda=ctx.environ.get("NVIDIA_REQUIRE_CUDA"),
        nvidia_driver_capabilities=ctx.environ.get("NVIDIA_DRIVER_CAPABILITIES"),
        nvidia_disable_require=ctx.environ.get("NVIDIA_DISABLE_REQUIRE"),
        shm_bytes=shm_bytes(ctx),
        podman=shutil.which("podman", path=ctx.environ.get("PATH", os.defpath)) is not None,
        cdi_specs=nvidia_cdi_specs(ctx),
    )


# --- which runtime ----------------------------------------------------------------------------------

def detect_runtime(ctx) -> tuple[Optional[str], Optional[str]]:
    """(runtime, the marker that told) or (None, None) outside a container."""
    if ctx.environ.get("KUBERNETES_SERVICE_HOST"):
        return "kubernetes", "KUBERNETES_SERVICE_HOST"
    if ctx.path("/run/.containerenv").exists():
        return "podman", "/run/.containerenv"
    if ctx.path("/.dockerenv").exists():
        return "docker", "/.dockerenv"
    for name in ("APPTAINER_CONTAINER", "SINGULARITY_CONTAINER"):  # set in every Apptainer/Singularity container
        if ctx.environ.get(name):
            return "apptainer", name
    if ctx.path("/.singularity.d").is_dir():  # in every Apptainer/Singularity image
        return "apptainer", "/.singularity.d"
    found = runtime_in_cgroup(proc.read_text(ctx.path("/proc/1/cgroup"), 1 << 16) or "")
    if found:
        return found, "/proc/1/cgroup"
    found = runtime_in_mountinfo(proc.read_text(ctx.path("/proc/self/mountinfo"), MOUNTINFO_LIMIT) or "")
    if found:
        return found, "/proc/self/mountinfo"
    value = ctx.environ.get("container")  # systemd's convention: podman, lxc, docker set it
    if value:
        return value.lower(), "$container"
    value = (proc.read_text(ctx.path(SYSTEMD_CONTAINER), 256) or "").strip()
    if value:  # systemd (PID 1) writes its $container here: systemd-nspawn, lxc, …
        return value.lower()[:40], SYSTEMD_CONTAINER
    return None, None


SYSTEMD_CONTAINER = "/run/systemd/container"


def looks_like_host(ctx) -> bool:
    """Whether the evidence says "not in a container" (no runtime marker was found before this).

    systemd as PID 1 of this PID namespace (/proc/1/comm), booted (/run/systemd/system exists) and
    not told of a container: a container manager that starts systemd sets $container, which systemd
    writes to /run/systemd/container (systemd's Container Interface, systemd/systemd
    docs/CONTAINER_INTERFACE.md). Without systemd as PID 1 (a shell or tini as PID 1, no /proc) it
    stays unknown."""
    comm = (proc.read_text(ctx.path("/proc/1/comm"), 64) or "").strip()
    return (comm == "systemd" and ctx.path("/run/systemd/system").is_dir()
            and not ctx.path(SYSTEMD_CONTAINER).exists())


def runtime_in_cgroup(text: str) -> Optional[str]:
    """cgroup v1 paths name the runtime ("12:pids:/docker/3f1c…", "/kubepods/burstable/pod…");
    cgroup v2 inside a namespace shows only "0::/", which says nothing."""
    for line in text.splitlines():
        path = line.rpartition(":")[2]
        for marker, runtime in CGROUP_MARKERS:
            if marker in path:
                return runtime
    return None


def runtime_in_mountinfo(text: str) -> Optional[str]:
    """cgroup v2 containers: the root and /etc/hostname mounts name the runtime's storage
    (".../docker/containers/<id>/hostname", ".../containers/storage/overlay-containers/…",
    "/var/lib/kubelet/pods/…", "/run/containerd/io.containerd…")."""
    for line in text.splitlines()[:2000]:
        fields = line.split(" ")
        if len(fields) < 5 or fields[4] not in ("/", "/etc/hostname", "/etc/hosts", "/etc/resolv.conf"):
            continue
        source = fields[3]
        if "/kubelet/pods/" in source:
            return "kubernetes"
        if "/docker/containers/" in source or "/docker/overlay2/" in source:
            return "docker"
        if "overlay-containers" in source or "/libpod" in source:
            return "podman"
        if "containerd" in source:
            return "containerd"
    return None


# --- what the NVIDIA container toolkit injected -----------------------------------------------------

def device_nodes(ctx) -> Optional[list[str]]:
    """The NVIDIA device nodes in /dev; None (and an error) when /dev cannot be listed."""
    dev = ctx.path("/dev")
    try:
        names = sorted(n for n in os.listdir(dev) if n.startswith("nvidia") or n == "dxg")
    except OSError as exc:
        ctx.error("container", f"cannot list /dev: {exc.strerror or exc}")
        return None
    return [f"/dev/{n}" for n in names[:MAX_LISTED]]


def driver_libs(ctx) -> Optional[list[str]]:
    """Names of the driver libraries the dynamic loader can find (libcuda.so.1, libnvidia-ml.so.1);
    None (and an error) when /etc/ld.so.cache exists but cannot be read. No cache at all (musl,
    a minimal image) leaves the stat of the usual folders."""
    cache = _read_bytes(ctx.path("/etc/ld.so.cache"), LD_CACHE_LIMIT)
    if isinstance(cache, OSError):
        ctx.error("container", f"cannot read /etc/ld.so.cache: {cache.strerror or cache}")
        return None
    found = set(libs_in_ld_cache(cache))
    for folder in LIB_DIRS:  # the names the loader asks for; a stat each, no listing of big folders
        for name in SONAMES:
            if name not in found and ctx.path(f"{folder}/{name}").exists():
                found.add(name)
    return sorted(found)[:MAX_LISTED]


_CACHED_LIB = re.compile(rb"(?<![\w.-])(lib(?:cuda|nvidia-ml)\.so(?:\.[0-9]+)*)\0")


def libs_in_ld_cache(data: bytes) -> list[str]:
    """The driver library names in /etc/ld.so.cache (a string table of NUL-terminated names and paths)."""
    return sorted({m.decode("ascii") for m in _CACHED_LIB.findall(data)})


def _read_bytes(path, limit: int):
    """The file's first `limit` bytes; b"" when it does not exist; the OSError when it cannot be read."""
    try:
        with open(path, "rb") as fh:
            return fh.read(limit)
    except FileNotFoundError:
        return b""
    except OSError as exc:
        return exc


LISTS = ("device_nodes", "driver_libs", "cdi_specs")


def unread_lists(found: Optional[Container]) -> tuple[Optional[Container], frozenset]:
    """(the block with each list that could not be read as [], the Facts paths of those lists),
    for collect(): an unread list is unrecorded (unknown), not empty (none)."""
    if found is None:
        return None, frozenset()
    unread = [name for name in LISTS if getattr(found, name) is None]
    if not unread:
        return found, frozenset()
    return dataclasses.replace(found, **{n: [] for n in unread}), frozenset(f"container.{n}" for n in unread)


def shm_bytes(ctx) -> Optional[int]:
    try:
        st = os.statvfs(ctx.path("/dev/shm"))
    except OSError:
        return None
    return st.f_blocks * st.f_frsize


def nvidia_cdi_specs(ctx) -> Optional[list[str]]:
    """CDI spec files (YAML or JSON) that define NVIDIA devices ("kind: nvidia.com/gpu")."""
    found = []
    for folder in CDI_DIRS:
        try:
            names = sorted(os.listdir(ctx.path(folder)))
        except FileNotFoundError:
            continue
        except OSError as exc:  # the folder is there but unreadable: the list would not say all there is
            ctx.error("container", f"cannot list {folder}: {exc.strerror or exc}")
            return None
        for name in names[:MAX_LISTED]:
            if not name.endswith((".yaml", ".yml", ".json")):
                continue
            text = proc.read_text(ctx.path(f"{folder}/{name}"), 1 << 16) or ""
            if "nvidia.com/gpu" in text:
                found.append(f"{folder}/{name}")
    return found
