"""Rules for GPU access in containers: no NVIDIA devices, devices without the driver libraries the
NVIDIA container toolkit injects, NVIDIA_VISIBLE_DEVICES that hides the GPUs, a /dev/shm too small
for DataLoader workers, a host driver older than the image's NVIDIA_REQUIRE_CUDA, and a podman host
without CDI specs.

What the variables mean is the NVIDIA container toolkit's documentation
(https://docs.nvidia.com/datacenter/cloud-native/container-toolkit/latest/docker-specialized.html):
NVIDIA_VISIBLE_DEVICES `void`, empty or unset behaves as plain runc (no GPU, no libraries), `none`
gives the libraries but no GPU; NVIDIA_DRIVER_CAPABILITIES empty or unset means `utility` only (NVML,
nvidia-smi: no libcuda); NVIDIA_REQUIRE_* constraints separated by spaces are alternatives, those
joined by commas must all hold; NVIDIA_DISABLE_REQUIRE turns the check off.
"""

from __future__ import annotations

import re
from typing import Iterable, Optional

from envdoctor.diagnose import rule
from envdoctor.diagnose._common import has_usable_gpu, nvidia_wheels, package
from envdoctor.facts import Facts
from envdoctor.findings import Finding

# Below this a container's /dev/shm is too small for PyTorch DataLoader workers or NCCL over shared
# memory: Docker's default is 64 MiB; a few workers with a prefetch of image batches need hundreds of MB.
SHM_MINIMUM = 1 << 30
NO_GPU_VALUES = ("void", "none", "")
_GPU_NODE = re.compile(r"^/dev/(nvidia\d+|nvidiactl|dxg)$")


def _box(facts: Facts):
    """The container block when envdoctor ran inside a container, else None."""
    c = facts.container
    return c if c is not None and c.in_container else None


def _has_gpu_nodes(c) -> bool:
    return any(_GPU_NODE.match(n) for n in c.device_nodes)


def gpu_wanted(facts: Facts) -> Optional[str]:
    """Why this environment expects a GPU (a CUDA build installed, a CUDA image), or None."""
    c = facts.container
    torch = package(facts, "torch") or ""
    if re.search(r"\+cu\d+", torch):
        return f"torch {torch} is a CUDA build"
    cuda_wheels = [n for n in nvidia_wheels(facts) if n.startswith(("nvidia-cuda", "nvidia-cudnn", "nvidia-cublas"))]
    if cuda_wheels:
        return f"CUDA wheels are installed ({', '.join(sorted(cuda_wheels)[:3])})"
    for name in ("paddlepaddle-gpu", "jax-cuda12-plugin", "jax-cuda13-plugin", "cupy-cuda12x", "cupy-cuda13x"):
        if package(facts, name):
            return f"{name} is installed"
    if c is not None and c.nvidia_require_cuda:
        return f"the image requires CUDA (NVIDIA_REQUIRE_CUDA={c.nvidia_require_cuda.split(' ')[0]})"
    if c is not None and (c.nvidia_visible_devices or "").strip().lower() not in NO_GPU_VALUES:
        return f"the image asks for GPUs (NVIDIA_VISIBLE_DEVICES={c.nvidia_visible_devices})"
    return None


def _run_fixes(runtime: Optional[str]) -> tuple:
    if runtime == "podman":
        return ("On the host: `sudo nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml` (once per driver "
                "update), then start the container with the GPU:",
                ("podman", "run", "--device", "nvidia.com/gpu=all", "…"))
    if runtime == "kubernetes":
        return ("Request the GPU in the pod spec (resources.limits: nvidia.com/gpu: 1) on a node running the NVIDIA "
                "device plugin or GPU operator; the pod gets the devices and libraries from the container toolkit",)
    return (("docker", "run", "--gpus", "all", "…"),
            "If docker says `could not select device driver \"\" with capabilities: [[gpu]]`, install the NVIDIA "
            "container toolkit on the host and run `sudo nvidia-ctk runtime configure --runtime=docker && "
            "sudo systemctl restart docker`; in compose, reserve the GPU under deploy.resources.reservations.devices")


@rule
def container_without_gpu(facts: Facts) -> Iterable[Finding]:
    c = _box(facts)
    if c is None or not facts.known("container.device_nodes") or _has_gpu_nodes(c):
        return
    why = gpu_wanted(facts)
    if why is None:
        return  # a CPU container: nothing is missing
    visible = c.nvidia_visible_devices
    runtime = c.runtime or "container"
    ev = (f"container.runtime={runtime}", "container.device_nodes=[]", f"NVIDIA_VISIBLE_DEVICES={visible!r}", why)
    if visible is not None and visible.strip().lower() in NO_GPU_VALUES:
        yield Finding(
            code="container-gpu-missing", severity="error", section="nvidia",
            title=f"NVIDIA_VISIBLE_DEVICES={visible!r} gives this {runtime} container no GPU",
            detail=(f"{why}, but NVIDIA_VISIBLE_DEVICES={visible!r} tells the NVIDIA container runtime to hand over "
                    "no GPU (`void` or empty: nothing at all; `none`: the driver libraries without a device). "
                    "No /dev/nvidia* device exists here, so every framework runs on the CPU."),
            fix=("Start the container with NVIDIA_VISIBLE_DEVICES=all (or the GPU indexes/UUIDs to use), e.g.:",
                 ("docker", "run", "--gpus", "all", "-e", "NVIDIA_VISIBLE_DEVICES=all", "…")),
            evidence=ev,
        )
        return
    yield Finding(
        code="container-gpu-missing", severity="error", section="nvidia",
        title=f"this {runtime} container was started without GPU access (no /dev/nvidia* devices)",
        detail=(f"{why}, but the container has no NVIDIA device nodes: it was started without `--gpus` (docker), "
                "without a CDI device (podman) or without the NVIDIA runtime, or the host has no working driver. "
                "A driver is never installed inside a container; the host's is passed in at start."),
        fix=_run_fixes(c.runtime),
        evidence=ev,
    )


def _has_lib(c, name: str) -> bool:
    return any(lib.startswith(name) for lib in c.driver_libs)


@rule
def container_libraries_missing(facts: Facts) -> Iterable[Finding]:
    c = _box(facts)
    if c is None or not _has_gpu_nodes(c) or not facts.known("container.driver_libs"):
        return
    if facts.has_usable_driver and facts.nvidia is not None and facts.nvidia.source == "nvml":
        return  # NVML answered: the libraries are there even where the probe did not look
    caps = (c.nvidia_driver_capabilities or "").replace(" ", "").lower().split(",")
    ev = ("container.in_container=true", f"container.device_nodes={','.join(c.device_nodes)}",
          f"container.driver_libs={c.driver_libs}", f"container.nvidia_driver_capabilities={c.nvidia_driver_capabilities}")
    if not _has_lib(c, "libcuda.so"):
        no_compute = "all" not in caps and "compute" not in caps
        reason = ("NVIDIA_DRIVER_CAPABILITIES does not include `compute` (empty or unset means `utility` only), so "
                  "the toolkit mounts NVML but not libcuda" if no_compute and c.nvidia_driver_capabilities is not None
                  else "the devices were passed in (e.g. `--device /dev/nvidia0`) but the NVIDIA container toolkit did "
                       "not inject the host driver's libraries")
        fix = ((("docker", "run", "--gpus", "all", "-e", "NVIDIA_DRIVER_CAPABILITIES=compute,utility", "…"),)
               if no_compute and c.nvidia_driver_capabilities is not None else
               ("On the host: `sudo nvidia-ctk runtime configure --runtime=docker && sudo systemctl restart docker` "
                "(podman: `sudo nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml`)",
                ("docker", "run", "--gpus", "all", "…")))
        yield Finding(
            code="container-gpu-missing", severity="error", section="nvidia",
            title="NVIDIA devices are present but libcuda.so is not: the container toolkit did not inject the driver",
            detail=(f"{reason}. Without the host driver's libcuda.so no CUDA program can start (\"CUDA driver "
                    "version is insufficient\" or \"no CUDA-capable device\"). Never install a driver inside the "
                    "image: it must match the host's kernel module."),
            fix=fix, evidence=ev,
        )
    elif not _has_lib(c, "libnvidia-ml.so"):
        yield Finding(
            code="container-gpu-missing", severity="warning", section="nvidia",
            title="libnvidia-ml.so (NVML) is missing in this container: nvidia-smi and GPU monitoring fail",
            detail=("CUDA works (libcuda.so is there), but NVML was not injected: NVIDIA_DRIVER_CAPABILITIES lacks "
                    "`utility`. nvidia-smi, GPU memory queries and some framework checks fail."),
            fix=(("docker", "run", "--gpus", "all", "-e", "NVIDIA_DRIVER_CAPABILITIES=compute,utility", "…"),),
            evidence=ev,
        )


@rule
def container_shm_too_small(facts: Facts) -> Iterable[Finding]:
    c = _box(facts)
    if c is None or c.shm_bytes is None or c.shm_bytes >= SHM_MINIMUM:
        return
    users = [n for n in ("torch", "paddlepaddle", "paddlepaddle-gpu") if package(facts, n)]
    if not users:
        return
    size = f"{c.shm_bytes / (1 << 20):.0f} MiB"
    yield Finding(
        code="shm-too-small", severity="warning", section="platform",
        title=f"/dev/shm is only {size} in this {c.runtime or 'container'}: multi-worker data loading will crash",
        detail=(f"{', '.join(users)} pass batches between DataLoader worker processes (and NCCL between GPUs) "
                f"through /dev/shm. Docker gives a container 64 MiB by default; with num_workers > 0 that ends in "
                "\"Bus error\" or \"unable to write to file </torch_…>\"."),
        fix=(("docker", "run", "--shm-size=8g", "…"),
             "or share the host's IPC namespace: `docker run --ipc=host …`; compose: `shm_size: 8gb` or `ipc: host`; "
             "Kubernetes: mount an emptyDir with medium: Memory at /dev/shm"),
        evidence=(f"container.shm_bytes={c.shm_bytes}",),
    )


# --- NVIDIA_REQUIRE_CUDA against the host driver ----------------------------------------------------

_CONSTRAINT = re.compile(r"^(cuda|driver|arch|brand)(>=|<=|==|=|>|<)(.+)$")


def parse_requirement(text: str) -> list[list[tuple[str, str, str]]]:
    """`cuda>=12.4 brand=tesla,driver>=470,driver<471` → alternatives (space-separated), each a list of
    (name, operator, value) constraints that must all hold (comma-separated). Unreadable terms are dropped."""
    alternatives = []
    for term in text.split():
        group = [m.groups() for m in (_CONSTRAINT.match(part.strip().lower()) for part in term.split(",")) if m]
        if group:
            alternatives.append(group)
    return alternatives


def _compare(have: tuple, op: str, want: tuple) -> bool:
    width = max(len(have), len(want))
    have, want = have + (0,) * (width - len(have)), want + (0,) * (width - len(want))
    return {">=": have >= want, ">": have > want, "<=": have <= want, "<": have < want,
            "=": have == want, "==": have == want}[op]


def _holds(facts: Facts, name: str, op: str, value: str) -> Optional[bool]:
    """Whether one constraint holds on this host; None when it cannot be told (brand, unknown versions)."""
    nv = facts.nvidia
    have = {"cuda": nv.driver_cuda if nv else None, "driver": nv.driver_version if nv else None}.get(name)
    if name == "arch":
        ccs = [g.compute_capability for g in facts.gpus if g.compute_capability]
        return all(_compare(_nums(cc), op, _nums(value)) for cc in ccs) if ccs else None
    if have is None:
        return None
    return _compare(_nums(have), op, _nums(value))


def _nums(text: str) -> tuple:
    return tuple(int(x) for x in re.findall(r"\d+", text)[:3])


def requirement_met(facts: Facts, text: str) -> Optional[bool]:
    """True if some alternative holds, False if every one fails, None when it cannot be told."""
    verdicts = []
    for group in parse_requirement(text):
        results = [_holds(facts, *c) for c in group]
        verdicts.append(False if False in results else (True if all(r is True for r in results) else None))
    if True in verdicts:
        return True
    return False if verdicts and all(v is False for v in verdicts) else None


@rule
def container_requires_newer_driver(facts: Facts) -> Iterable[Finding]:
    c = _box(facts)
    if c is None or not c.nvidia_require_cuda or not facts.has_usable_driver:
        return
    if (c.nvidia_disable_require or "").strip().lower() in ("1", "true", "yes"):
        return
    verdict = requirement_met(facts, c.nvidia_require_cuda)
    cuda = next((v for n, op, v in (parse_requirement(c.nvidia_require_cuda) or [[]])[0] if n == "cuda"), None)
    if verdict is not False or cuda is None:
        return
    nv = facts.nvidia
    driver = nv.driver_version if nv else None
    yield Finding(
        code="driver-too-old", severity="error", section="nvidia",
        title=f"the image needs CUDA {cuda}, the host driver {driver} supports CUDA {nv.driver_cuda if nv else '?'}",
        detail=(f"NVIDIA_REQUIRE_CUDA={c.nvidia_require_cuda!r}: the image was built for CUDA {cuda}, newer than the "
                "host driver runs. The container toolkit refuses to start such a container (\"requirement error: "
                "unsatisfied condition\") unless the check is disabled, and then CUDA fails at the first call "
                "(\"CUDA driver version is insufficient\"); the forward-compatibility package only helps on "
                "data-centre GPUs."),
        fix=(f"Update the host's NVIDIA driver to a branch that supports CUDA {cuda}, or use an image built for "
             f"CUDA {nv.driver_cuda if nv and nv.driver_cuda else 'the driver supports'} or older",),
        evidence=("container.in_container=true", f"container.nvidia_require_cuda={c.nvidia_require_cuda}", f"nvidia.driver_version={driver}",
                  f"nvidia.driver_cuda={nv.driver_cuda if nv else None}"),
    )


# --- a podman host ---------------------------------------------------------------------------------

@rule
def podman_without_cdi(facts: Facts) -> Iterable[Finding]:
    c = facts.container
    if c is None or c.in_container or not c.podman or not facts.known("container.cdi_specs") or c.cdi_specs:
        return
    if not has_usable_gpu(facts):
        return
    yield Finding(
        code="container-gpu-missing", severity="warning", section="nvidia",
        title="podman is installed but no CDI spec describes this machine's NVIDIA GPUs",
        detail=("podman gives containers GPUs through the Container Device Interface: `--device nvidia.com/gpu=all` "
                "needs a spec in /etc/cdi or /var/run/cdi that the NVIDIA container toolkit generates (and that must "
                "be regenerated after a driver update). Without one, podman containers start without a GPU."),
        fix=(("sudo", "nvidia-ctk", "cdi", "generate", "--output=/etc/cdi/nvidia.yaml"),
             ("podman", "run", "--rm", "--device", "nvidia.com/gpu=all", "ubuntu", "nvidia-smi", "-L")),
        evidence=("container.podman=true", "container.cdi_specs=[]"),
    )
