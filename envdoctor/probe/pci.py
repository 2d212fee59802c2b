"""Display devices on the PCI bus (/sys/bus/pci/devices/*), seen whether or not a driver is bound."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

from envdoctor import proc

DISPLAY_CLASSES = ("0x0300", "0x0302", "0x0380")  # VGA, 3D controller, other display


def display_devices(ctx, vendor: str) -> list[Path]:
    """The sysfs folders of `vendor`'s ("0x10de") display devices, in address order."""
    try:
        entries = sorted(ctx.path("/sys/bus/pci/devices").iterdir())
    except OSError:
        return []
    return [dev for dev in entries
            if attribute(dev / "vendor") == vendor and (attribute(dev / "class") or "")[:6] in DISPLAY_CLASSES]


def attribute(path: Path) -> Optional[str]:
    """A sysfs attribute, stripped and lower-cased ("0x10de", "0x030000"); None when absent."""
    text = proc.read_text(path, 256)
    return text.strip().lower() if text else None
