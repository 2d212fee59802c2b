"""Rules about the NVIDIA driver itself: present, loaded, consistent."""

from __future__ import annotations

from typing import Iterable

from envdoctor.diagnose import rule
from envdoctor.diagnose.container import inside
from envdoctor.facts import Facts
from envdoctor.findings import Finding


# Failures that mean "the NVIDIA tools are installed but the driver does not answer".
NOT_ANSWERING = ("no-driver-communication", "nvml-unknown-error")
NVIDIA_PROBES = ("nvidia-smi", "nvml", "nvidia")


@rule
def no_nvidia_driver(facts: Facts) -> Iterable[Finding]:
    nv = facts.nvidia
    if nv is None or facts.has_usable_driver or nv.failure == "driver-library-mismatch":
        return
    if nv.failure in NOT_ANSWERING:
        yield _driver_not_answering(nv)
        return
    if not nv.pci_devices or nv.driver_version or facts.driver_present is not False:
        return  # a driver that was simply not recorded is unknown, not missing
    if inside(facts):
        return  # the driver lives on the host: the container rules say what the container lacks
    evidence = [f"nvidia.pci_devices[{i}]={d.address}" for i, d in enumerate(nv.pci_devices)]
    evidence += _why_no_driver(facts)
    fix = "Install the NVIDIA driver from your distribution (Ubuntu: `sudo ubuntu-drivers install`), then reboot"
    if all(d.driver == "vfio-pci" for d in nv.pci_devices):
        detail = ("An NVIDIA GPU is on the PCI bus, bound to vfio-pci: it is reserved for passing through to a "
                  "virtual machine, so nothing on this host can use it (installing the driver here does not change that).")
        fix = ("If the GPU is meant for a VM, run envdoctor inside that VM; otherwise remove the GPU's vfio-pci "
               "binding (the vfio-pci.ids kernel parameter or /etc/modprobe.d), install the NVIDIA driver and reboot")
        evidence.append("nvidia.pci_devices[*].driver=vfio-pci")
    elif nv.nouveau_loaded:
        detail = ("An NVIDIA GPU is on the PCI bus, but the open-source nouveau driver is bound to it. "
                  "CUDA needs NVIDIA's proprietary (or open-kernel) driver; no framework can use the GPU.")
        evidence.append("nvidia.nouveau_loaded=true")
    else:
        detail = ("An NVIDIA GPU is on the PCI bus, but no NVIDIA kernel driver is loaded, so no framework can "
                  "use it. Often the driver is not installed, or its module was not built for the running kernel.")
    yield Finding(
        code="no-nvidia-driver", severity="error", section="nvidia",
        title=f"{len(nv.pci_devices)} NVIDIA GPU(s) present, but no usable driver",
        detail=detail,
        fix=(fix,),
        evidence=tuple(evidence),
    )


def _why_no_driver(facts: Facts) -> list[str]:
    """The facts that say the driver is absent (Facts.driver_present is False): the kernel driver bound to
    each GPU on the bus, or a probe that recorded no driver version."""
    bound = [f"nvidia.pci_devices[{i}].driver={d.driver}" for i, d in enumerate(facts.nvidia.pci_devices) if d.driver]
    if bound and all(d.driver in ("nouveau", "vfio-pci") for d in facts.nvidia.pci_devices):
        return bound
    return ["nvidia.driver_version=null (recorded by a probe: no driver answered)"]


def _driver_not_answering(nv) -> Finding:
    evidence = (f"nvidia.failure={nv.failure}",) + ((f"nvidia.failure_text={nv.failure_text}",) if nv.failure_text else ())
    if nv.failure == "nvml-unknown-error":
        return Finding(
            code="no-nvidia-driver", severity="error", section="nvidia",
            title="The NVIDIA driver does not answer (NVML: Unknown Error)",
            detail=("NVML, the library behind nvidia-smi and every framework's GPU discovery, failed with "
                    "'Unknown Error'. Seen in containers that lost access to the GPU devices (e.g. after the "
                    "host reloaded its cgroups) and on WSL2 after a Windows driver update."),
            fix=("Restart the container (or on WSL2 run `wsl --shutdown` from Windows); if it persists, reboot the machine",),
            evidence=evidence,
        )
    return Finding(
        code="no-nvidia-driver", severity="error", section="nvidia",
        title="nvidia-smi is installed, but the NVIDIA driver is not running",
        detail=("The NVIDIA user-space tools are present but cannot reach a kernel driver: the nvidia module is "
                "not loaded (not built for the running kernel, blocked by Secure Boot, or nouveau holds the GPU), "
                "or this machine has no NVIDIA GPU at all. No framework can use a GPU until the driver runs."),
        fix=(("sudo", "modprobe", "nvidia"),
             "If that fails, look at `sudo dmesg | grep -i nvidia`; reinstall the driver for this kernel "
             "(Ubuntu: `sudo ubuntu-drivers install`) and reboot"),
        evidence=evidence,
    )


@rule
def driver_library_mismatch(facts: Facts) -> Iterable[Finding]:
    nv = facts.nvidia
    if nv is None or nv.failure != "driver-library-mismatch":
        return
    yield Finding(
        code="driver-library-mismatch", severity="error", section="nvidia",
        title="NVIDIA driver and library versions do not match",
        detail=("The user-space NVIDIA libraries were upgraded but the old kernel module is still loaded "
                "(typical right after a driver update). Nothing can use the GPU until the new module is loaded."),
        fix=("Reboot the machine (or unload and reload the nvidia kernel modules)",),
        evidence=("nvidia.failure=driver-library-mismatch",) + ((f"nvidia.failure_text={nv.failure_text}",) if nv.failure_text else ()),
    )


@rule
def toolkit_without_driver(facts: Facts) -> Iterable[Finding]:
    if facts.cuda_toolkit is None or facts.driver_present is not False or facts.jetson is not None:
        return
    if facts.nvidia is not None and (facts.nvidia.pci_devices or facts.nvidia.failure):
        return  # no-nvidia-driver / driver-library-mismatch say it better
    if _nvidia_tools_failed(facts):
        return  # a hung or garbled nvidia-smi: whether a driver is there is unknown, the errors say so
    yield Finding(
        code="toolkit-without-driver", severity="warning", section="toolkit",
        title=f"CUDA toolkit {facts.cuda_toolkit.version or '?'} is installed, but there is no NVIDIA driver",
        detail=("A CUDA toolkit compiles CUDA code; running it needs an NVIDIA GPU with its driver. "
                "On this machine every framework will run on the CPU."),
        fix=("Nothing to do if this machine is meant to be CPU-only; otherwise install the NVIDIA driver",),
        evidence=(f"cuda_toolkit.version={facts.cuda_toolkit.version}", "nvidia.driver_version=null"),
    )


@rule
def no_gpu_platform(facts: Facts) -> Iterable[Finding]:
    nv = facts.nvidia
    if facts.jetson is not None or (nv is not None and (nv.gpus or nv.pci_devices or nv.driver_version or nv.failure)):
        return
    if not facts.known("nvidia.gpus"):
        return  # nobody recorded whether there is a GPU: unknown is not "none"
    if _nvidia_tools_failed(facts):
        return  # an NVIDIA tool failed (timed out, crashed): we do not know, the errors say so
    if facts.host.os == "macos":
        accel = "Apple silicon GPU through MPS (PyTorch) or Metal (tensorflow-metal)" if facts.host.machine_arch == "arm64" or facts.host.arch == "arm64" else "none (Intel Mac: CPU only)"
    elif facts.amd is not None:
        accel = "the AMD GPU through ROCm builds"
    else:
        accel = "the CPU only"
    yield Finding(
        code="no-gpu-platform", severity="info", section="nvidia",
        title="No NVIDIA GPU on this machine",
        detail=f"CUDA builds cannot be used here. Acceleration available: {accel}.",
        evidence=("nvidia=null" if nv is None else "nvidia.gpus=[]",),
    )


def _nvidia_tools_failed(facts: Facts) -> bool:
    return any(e.probe in NVIDIA_PROBES for e in facts.errors)
