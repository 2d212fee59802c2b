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
from envdoctor.matrix.host_compilers import version_numbers

# Below this a container's /dev/shm is too small for PyTorch DataLoader workers or NCCL over shared
# memory: Docker's default is 64 MiB; a few workers with a prefetch of image batches need hundreds of MB.
SHM_MINIMUM = 1 << 30
NO_GPU_VALUES = ("void", "none", "")
TOOLKIT_RUNTIMES = ("docker", "containerd", "kubernetes")  # GPUs and libraries from the NVIDIA runtime hook
_GPU_NODE = re.compile(r"^/dev/(nvidia\d+|nvidiactl|dxg)$")


def inside(facts: Facts) -> Optional[str]:
    """The fact that says envdoctor ran inside a container, as `path=value` evidence, or None.

    `container.in_container` itself; where it is unknown (a hand-written file), the probe's own
    markers of the same thing: the marker it found (`container.detected_by`), the runtime it named
    (`container.runtime`, `host.container`), each recorded only inside a container. A recorded
    `in_container: false` is never overruled."""
    c = facts.container
    if c is None or c.in_container is False:
        return None
    if c.in_container:
        return "container.in_container=true"
    if c.detected_by:
        return f"container.detected_by={c.detected_by}"
    if c.runtime:
        return f"container.runtime={c.runtime}"
    if facts.host.container:
        return f"host.container={facts.host.container}"
    return None


def _box(facts: Facts):
    """The container block when envdoctor ran inside a container (known, see inside()), else None."""
    return facts.container if inside(facts) else None


def _gpu_node(c) -> Optional[str]:
    """`container.device_nodes[i]=/dev/nvidia0` for the first GPU device node listed, or None."""
    return next((f"container.device_nodes[{i}]={n}" for i, n in enumerate(c.device_nodes) if _GPU_NODE.match(n)), None)


def _has_gpu_nodes(c) -> bool:
    return _gpu_node(c) is not None


def gpu_reachable(facts: Facts, c) -> tuple[str, ...]:
    """The facts that say this container was handed a GPU, as `path=value`, or (): a GPU device node listed,
    or, where the nodes were not recorded, NVML or nvidia-smi answering in here with a GPU and a driver
    version (neither answers without /dev/nvidiactl and a /dev/nvidiaN)."""
    node = _gpu_node(c)
    if node is not None:
        return (node,)
    nv = facts.nvidia
    if facts.known("container.device_nodes") or nv is None or nv.source not in ("nvml", "nvidia-smi"):
        return ()
    if not nv.driver_version or not nv.gpus or nv.failure:
        return ()
    return (f"nvidia.source={nv.source}", f"nvidia.driver_version={nv.driver_version}")


def lists_all(facts: Facts, path: str, items: list) -> bool:
    """Whether a list (CONTAINERS) names all there is, so that what it lacks is absent: recorded as
    empty, or recorded by a probe. A hand-written list names what someone saw, not all there is."""
    return facts.known(path) and (not items or facts.lists_everything(path))


_CUDA_TAG = re.compile(r"\+cu\d+")
_GPU_PACKAGES = ("paddlepaddle-gpu", "jax-cuda12-plugin", "jax-cuda13-plugin", "cupy-cuda12x", "cupy-cuda13x",
                 "tensorflow-gpu")


def gpu_wanted(facts: Facts) -> Optional[tuple[str, str]]:
    """(why this environment expects a GPU, the fact that says so as `path=value`), or None.
    Every reason is a fact that is there (a CUDA build installed, a CUDA image): none is read from
    what a list lacks, so a partial package list can only make this None, never wrong."""
    c = facts.container
    for name in ("torch", "torchvision", "torchaudio"):
        version = package(facts, name) or ""
        if _CUDA_TAG.search(version):
            return f"{name} {version} is a CUDA build", f"python.packages.{name}={version}"
    cuda_wheels = sorted(n for n in nvidia_wheels(facts) if n.startswith(("nvidia-cuda", "nvidia-cudnn", "nvidia-cublas")))
    if cuda_wheels:
        return (f"CUDA wheels are installed ({', '.join(cuda_wheels[:3])})",
                f"python.packages.{cuda_wheels[0]}={package(facts, cuda_wheels[0])}")
    for name in _GPU_PACKAGES:
        if package(facts, name):
            return f"{name} is installed", f"python.packages.{name}={package(facts, name)}"
    if c is not None and c.nvidia_require_cuda:
        return (f"the image requires CUDA (NVIDIA_REQUIRE_CUDA={c.nvidia_require_cuda.split(' ')[0]})",
                f"container.nvidia_require_cuda={c.nvidia_require_cuda}")
    if c is not None and c.nvidia_visible_devices and c.nvidia_visible_devices.strip().lower() not in NO_GPU_VALUES:
        return (f"the image asks for GPUs (NVIDIA_VISIBLE_DEVICES={c.nvidia_visible_devices})",
                f"container.nvidia_visible_devices={c.nvidia_visible_devices}")
    return None


def run_fixes(runtime: Optional[str]) -> tuple:
    """How to start a container of this runtime with the GPU (docker's when the runtime is unknown)."""
    if runtime == "apptainer":
        return ("Start it with the GPU: `apptainer exec --nv …` (singularity: `singularity exec --nv …`); --nv binds "
                "the host's driver libraries and devices into the container",)
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
    if c is None or _has_gpu_nodes(c) or not lists_all(facts, "container.device_nodes", c.device_nodes):
        return  # a GPU node is there, or the list may not say all there is (unknown is not absent)
    wanted = gpu_wanted(facts)
    if wanted is None:
        return  # a CPU container, or nothing known says a GPU is wanted: nothing is missing
    why, wanted_by = wanted
    visible = c.nvidia_visible_devices
    runtime = c.runtime or "container"
    ev = (inside(facts), "container.device_nodes=[]", wanted_by)
    if visible is not None and visible.strip().lower() in NO_GPU_VALUES:
        ev += (f"container.nvidia_visible_devices={visible}",)
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
        fix=run_fixes(c.runtime),
        evidence=ev,
    )


def _has_lib(c, name: str) -> bool:
    return any(lib.startswith(name) for lib in c.driver_libs)


@rule
def container_libraries_missing(facts: Facts) -> Iterable[Finding]:
    c = _box(facts)
    reached = gpu_reachable(facts, c) if c is not None else ()
    if not reached:
        return
    caps_text = c.nvidia_driver_capabilities
    caps = (caps_text or "").replace(" ", "").lower().split(",")
    libs_complete = lists_all(facts, "container.driver_libs", c.driver_libs)
    nvml_answered = facts.has_usable_driver and facts.nvidia is not None and facts.nvidia.source == "nvml"
    # Without a complete library list: the NVIDIA container runtime (docker --gpus, the Kubernetes device
    # plugin) injects libcuda only for the `compute` capability, so a recorded NVIDIA_DRIVER_CAPABILITIES
    # without `compute` or `all` says libcuda is not there. (CDI, podman's way, injects every library.)
    caps_say_no_libcuda = (bool(caps_text) and "all" not in caps and "compute" not in caps
                           and c.runtime in TOOLKIT_RUNTIMES and not _has_lib(c, "libcuda.so"))
    if caps_say_no_libcuda:
        libcuda_missing, libs_ev = True, (f"container.runtime={c.runtime}",)
    else:  # NVML answered: the libraries are there even where the probe did not look
        libcuda_missing = libs_complete and not nvml_answered and not _has_lib(c, "libcuda.so")
        libs_ev = (f"container.driver_libs={','.join(c.driver_libs) or '[]'}",)
    ev = tuple(dict.fromkeys((inside(facts), *reached) + libs_ev + (
        (f"container.nvidia_driver_capabilities={caps_text}",) if caps_text is not None else ())))
    if libcuda_missing:
        no_compute = caps_say_no_libcuda or caps_text == ""
        reason = ("NVIDIA_DRIVER_CAPABILITIES does not include `compute` (empty or unset means `utility` only), so "
                  "the toolkit mounts NVML but not libcuda" if no_compute
                  else "the devices were passed in (e.g. `--device /dev/nvidia0`) but the NVIDIA container toolkit did "
                       "not inject the host driver's libraries")
        fix = ((("docker", "run", "--gpus", "all", "-e", "NVIDIA_DRIVER_CAPABILITIES=compute,utility", "…"),)
               if no_compute else
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
    elif _has_lib(c, "libcuda.so") and not _has_lib(c, "libnvidia-ml.so") and libs_complete and not nvml_answered:
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
        evidence=(inside(facts), f"container.shm_bytes={c.shm_bytes}",
                  *(f"python.packages.{n}={package(facts, n)}" for n in users)),
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
    try:
        return version_numbers(text)[:3]
    except ValueError:  # no number in it (a malformed constraint): compares as 0, as before
        return ()


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
    if c is None or not c.nvidia_require_cuda or facts.driver_present is False:
        return  # (no driver at all is another finding; an unknown driver leaves the verdict undecided below)
    if (c.nvidia_disable_require or "").strip().lower() in ("1", "true", "yes"):
        return
    verdict = requirement_met(facts, c.nvidia_require_cuda)
    alternatives = parse_requirement(c.nvidia_require_cuda)
    cuda = next((v for n, op, v in (alternatives or [[]])[0] if n == "cuda"), None)
    if verdict is not False or cuda is None:
        return
    nv = facts.nvidia
    used = {n for group in alternatives for n, _, _ in group}  # every alternative failed: each fact it read decided
    driver = nv.driver_version if nv else None
    yield Finding(
        code="driver-too-old", severity="error", section="nvidia",
        title=(f"the image needs CUDA {cuda}, the host driver{f' {driver}' if driver else ''} supports "
               f"{f'CUDA {nv.driver_cuda}' if nv and nv.driver_cuda else 'an older CUDA'}"),
        detail=(f"NVIDIA_REQUIRE_CUDA={c.nvidia_require_cuda!r}: the image was built for CUDA {cuda}, newer than the "
                "host driver runs. The container toolkit refuses to start such a container (\"requirement error: "
                "unsatisfied condition\") unless the check is disabled, and then CUDA fails at the first call "
                "(\"CUDA driver version is insufficient\"); the forward-compatibility package only helps on "
                "data-centre GPUs."
                + ("" if facts.known("container.nvidia_disable_require") else
                   " (Not recorded here: NVIDIA_DISABLE_REQUIRE, which turns the check off where that package is installed.)")),
        fix=(f"Update the host's NVIDIA driver to a branch that supports CUDA {cuda}, or use an image built for "
             f"CUDA {nv.driver_cuda if nv and nv.driver_cuda else 'the driver supports'} or older",),
        evidence=(inside(facts), f"container.nvidia_require_cuda={c.nvidia_require_cuda}",
                  *((f"nvidia.driver_cuda={nv.driver_cuda}",) if "cuda" in used else ()),
                  *((f"nvidia.driver_version={driver}",) if "driver" in used else ()),
                  *(f"nvidia.gpus[{i}].compute_capability={g.compute_capability}" for i, g in enumerate(facts.gpus)
                    if "arch" in used and g.compute_capability)),
    )


# --- a podman host ---------------------------------------------------------------------------------

@rule
def podman_without_cdi(facts: Facts) -> Iterable[Finding]:
    c = facts.container
    if c is None or c.in_container is not False or not c.podman or c.cdi_specs:
        return  # inside a container, or not known to be a host (unknown is not absent)
    if not lists_all(facts, "container.cdi_specs", c.cdi_specs) or not has_usable_gpu(facts):
        return
    yield Finding(
        code="container-gpu-missing", severity="warning", section="nvidia",
        title="podman is installed but no CDI spec describes this machine's NVIDIA GPUs",
        detail=("podman gives containers GPUs through the Container Device Interface: `--device nvidia.com/gpu=all` "
                "needs a spec in /etc/cdi or /var/run/cdi that the NVIDIA container toolkit generates (and that must "
                "be regenerated after a driver update). Without one, podman containers start without a GPU."),
        fix=(("sudo", "nvidia-ctk", "cdi", "generate", "--output=/etc/cdi/nvidia.yaml"),
             ("podman", "run", "--rm", "--device", "nvidia.com/gpu=all", "ubuntu", "nvidia-smi", "-L")),
        evidence=("container.in_container=false", "container.podman=true", "container.cdi_specs=[]",
                  f"nvidia.driver_version={facts.nvidia.driver_version}"),
    )
