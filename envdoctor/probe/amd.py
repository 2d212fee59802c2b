"""AMD GPUs and ROCm: /opt/rocm/.info/version, `rocm_agent_enumerator` (gfx targets), sysfs.

Returns None unless an AMD GPU is seen (a display/3D device of vendor 0x1002 on the PCI bus, or a
gfx agent other than the CPU's gfx000).
"""

from __future__ import annotations

import os
import re
import shutil
from typing import Optional

from envdoctor import proc
from envdoctor.facts import Amd, AmdGpu
from envdoctor.probe.pci import display_devices

AMD_VENDOR = "0x1002"


def parse_rocm_version(text: str) -> Optional[str]:
    """`/opt/rocm/.info/version` ("6.4.1-120") → "6.4.1"."""
    m = re.match(r"\s*(\d+\.\d+(?:\.\d+)?)", text)
    return m.group(1) if m else None


def parse_agents(text: str) -> list[str]:
    """`rocm_agent_enumerator`: one gfx target per line; gfx000 is the CPU."""
    return [line.strip() for line in text.splitlines() if re.fullmatch(r"gfx[0-9a-f]+", line.strip()) and line.strip() != "gfx000"]


def probe(ctx) -> Optional[Amd]:
    pci_names = pci_gpus(ctx)
    rocm_text = proc.read_text(ctx.path("/opt/rocm/.info/version"), 256)
    rocm = parse_rocm_version(rocm_text) if rocm_text else None
    agents = enumerate_agents(ctx) if (rocm or pci_names) else []
    if not pci_names and not agents:
        return None
    count = max(len(pci_names), len(agents))
    gpus = [AmdGpu(name=pci_names[i] if i < len(pci_names) else None, gfx=agents[i] if i < len(agents) else None)
            for i in range(count)]
    return Amd(rocm_version=rocm, gpus=gpus)


def pci_gpus(ctx) -> list[Optional[str]]:
    """One entry per AMD display device: its product name when the driver exposes one."""
    return [(proc.read_text(dev / "product_name", 256) or "").strip() or None for dev in display_devices(ctx, AMD_VENDOR)]


def enumerate_agents(ctx) -> list[str]:
    tool = shutil.which("rocm_agent_enumerator", path=ctx.environ.get("PATH", os.defpath))
    if tool is None and os.access(ctx.path("/opt/rocm/bin/rocm_agent_enumerator"), os.X_OK):
        tool = str(ctx.path("/opt/rocm/bin/rocm_agent_enumerator"))
    if tool is None:
        return []
    result = proc.run([tool], timeout=ctx.timeout, env=dict(ctx.environ))
    if not result.ok:
        ctx.error("amd", f"rocm_agent_enumerator: {result.describe_failure()}")
        return []
    return parse_agents(result.stdout)
