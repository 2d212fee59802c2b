"""Containers: whether envdoctor runs inside one, and what the NVIDIA container toolkit gave it.

Inside a container: the runtime (markers /.dockerenv, /run/.containerenv, KUBERNETES_SERVICE_HOST,
/proc/1/cgroup, /proc/self/mountinfo), the NVIDIA device nodes (/dev/nvidia*, /dev/dxg on WSL2), the
driver libraries the toolkit injects (libcuda.so*, libnvidia-ml.so*: the ld cache, then the usual
library folders), the NVIDIA_* variables the image or `docker run -e` set, and the size of /dev/shm.
On a host: whether podman is installed and which CDI specs name NVIDIA GPUs (/etc/cdi, /var/run/cdi),
without which `podman run --device nvidia.com/gpu=all` has no GPU to give.

Only file reads and directory listings, each bounded; no subprocess. Linux only (None elsewhere).
"""

from __future__ import annotations

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
        in_container=runtime is not None,
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
    found = runtime_in_cgroup(proc.read_text(ctx.path("/proc/1/cgroup"), 1 << 16) or "")
    if found:
        return found, "/proc/1/cgroup"
    found = runtime_in_mountinfo(proc.read_text(ctx.path("/proc/self/mountinfo"), MOUNTINFO_LIMIT) or "")
    if found:
        return found, "/proc/self/mountinfo"
    value = ctx.environ.get("container")  # systemd's convention: podman, lxc, docker set it
    if value:
        return value.lower(), "$container"
    return None, None


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

def device_nodes(ctx) -> list[str]:
    dev = ctx.path("/dev")
    try:
        names = sorted(n for n in os.listdir(dev) if n.startswith("nvidia") or n == "dxg")
    except OSError:
        return []
    return [f"/dev/{n}" for n in names[:MAX_LISTED]]


def driver_libs(ctx) -> list[str]:
    """Names of the driver libraries the dynamic loader can find (libcuda.so.1, libnvidia-ml.so.1)."""
    found = set(libs_in_ld_cache(_read_bytes(ctx.path("/etc/ld.so.cache"), LD_CACHE_LIMIT)))
    for folder in LIB_DIRS:  # the names the loader asks for; a stat each, no listing of big folders
        for name in SONAMES:
            if name not in found and ctx.path(f"{folder}/{name}").exists():
                found.add(name)
    return sorted(found)[:MAX_LISTED]


_CACHED_LIB = re.compile(rb"(?<![\w.-])(lib(?:cuda|nvidia-ml)\.so(?:\.[0-9]+)*)\0")


def libs_in_ld_cache(data: bytes) -> list[str]:
    """The driver library names in /etc/ld.so.cache (a string table of NUL-terminated names and paths)."""
    return sorted({m.decode("ascii") for m in _CACHED_LIB.findall(data)})


def _read_bytes(path, limit: int) -> bytes:
    try:
        with open(path, "rb") as fh:
            return fh.read(limit)
    except OSError:
        return b""


def shm_bytes(ctx) -> Optional[int]:
    try:
        st = os.statvfs(ctx.path("/dev/shm"))
    except OSError:
        return None
    return st.f_blocks * st.f_frsize


def nvidia_cdi_specs(ctx) -> list[str]:
    """CDI spec files (YAML or JSON) that define NVIDIA devices ("kind: nvidia.com/gpu")."""
    found = []
    for folder in CDI_DIRS:
        try:
            names = sorted(os.listdir(ctx.path(folder)))
        except OSError:
            continue
        for name in names[:MAX_LISTED]:
            if not name.endswith((".yaml", ".yml", ".json")):
                continue
            text = proc.read_text(ctx.path(f"{folder}/{name}"), 1 << 16) or ""
            if "nvidia.com/gpu" in text:
                found.append(f"{folder}/{name}")
    return found
