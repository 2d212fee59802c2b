"""Jetson / L4T: /etc/nv_tegra_release (dpkg nvidia-l4t-core as fallback), device-tree model and
compatible string; L4T -> JetPack -> CUDA from matrices/jetson.toml.

aarch64 alone is not Jetson: GH200/GB200/DGX Spark are aarch64 servers without nv_tegra_release and
without an "nvidia,tegra..." compatible string, and get None here.
"""

from __future__ import annotations

import re
from typing import Optional

from envdoctor import proc
from envdoctor.facts import Jetson

_RELEASE = re.compile(r"^#\s*R(\d+)\s*\(release\),\s*REVISION:\s*(\d+)(?:\.(\d+))?", re.M)


def parse_nv_tegra_release(text: str) -> Optional[str]:
    """`# R36 (release), REVISION: 4.3, GCID: ...` → "36.4.3"."""
    m = _RELEASE.search(text)
    if not m:
        return None
    return f"{m.group(1)}.{m.group(2)}.{m.group(3) or 0}"


def parse_dpkg_l4t_version(text: str) -> Optional[str]:
    """`dpkg-query -W -f '${Version}' nvidia-l4t-core` → "36.4.3-20250107174145" → "36.4.3"."""
    m = re.match(r"\s*(\d+\.\d+(?:\.\d+)?)", text.split("-")[0])
    return m.group(1) if m else None


def parse_device_tree_strings(raw: str) -> list[str]:
    """Device-tree string properties are NUL-separated and NUL-terminated."""
    return [part.strip() for part in raw.split("\0") if part.strip()]


def soc_from_compatible(entries: list[str]) -> Optional[str]:
    """["nvidia,p3737-0000+p3701-0005", "nvidia,p3701-0005", "nvidia,tegra234"] → "tegra234"."""
    for entry in reversed(entries):
        vendor, _, name = entry.partition(",")
        if vendor == "nvidia" and name.startswith("tegra"):
            return name
    return None


def read_compatible(ctx) -> list[str]:
    return parse_device_tree_strings(proc.read_text(ctx.path("/proc/device-tree/compatible"), 4096) or "")


def read_soc(ctx) -> Optional[str]:
    return soc_from_compatible(read_compatible(ctx))


def probe(ctx) -> Optional[Jetson]:
    release_text = proc.read_text(ctx.path("/etc/nv_tegra_release"), 8192)
    compatible = read_compatible(ctx)
    soc = soc_from_compatible(compatible)
    if release_text is None and soc is None:
        return None
    l4t = parse_nv_tegra_release(release_text) if release_text is not None else None
    if release_text is not None and l4t is None:
        ctx.error("jetson", f"unrecognised /etc/nv_tegra_release: {release_text.strip()[:120]!r}")
    if l4t is None:
        l4t = _l4t_from_dpkg(ctx)
    model = parse_device_tree_strings(proc.read_text(ctx.path("/proc/device-tree/model"), 1024) or "")
    release = _release(ctx, l4t)
    return Jetson(
        l4t=l4t,
        jetpack=release.jetpack if release else None,
        model=model[0] if model else None,
        soc=soc,
        cuda=release.cuda if release else None,
        compatible=" ".join(compatible) or None,
    )


def _l4t_from_dpkg(ctx) -> Optional[str]:
    result = proc.run(["dpkg-query", "-W", "-f=${Version}", "nvidia-l4t-core"], timeout=ctx.timeout, env=dict(ctx.environ))
    if not result.ok:
        if result.returncode not in (1, None) or (result.error and "not found" not in result.error):
            ctx.error("jetson", f"dpkg-query nvidia-l4t-core: {result.describe_failure()}")
        return None
    return parse_dpkg_l4t_version(result.stdout)


def _release(ctx, l4t: Optional[str]):
    from envdoctor.matrix.jetson import release_for_l4t

    try:
        return release_for_l4t(l4t)
    except Exception as exc:  # a broken data file: report it, keep what the machine says
        ctx.error("jetson", f"cannot read the Jetson matrix: {exc}")
        return None
