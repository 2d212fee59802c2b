"""Facts: what the probes saw on a machine, as a plain, versioned, JSON-serialisable value.

Schema `envdoctor.facts/1` (see docs/architecture.md). Unknown values are ``None``. Keys may be
added; existing keys keep their meaning. ``Facts.from_dict(facts.to_dict())`` round-trips, which is
how a recorded machine is replayed with ``--facts FILE``.
"""

from __future__ import annotations

import dataclasses
import json
import re
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

SCHEMA = "envdoctor.facts/1"


class FactsError(ValueError):
    """A facts document that cannot be read: malformed JSON, wrong schema, wrong types."""


@dataclass(frozen=True)
class Host:
    os: Optional[str] = None  # linux | windows | macos
    distro: Optional[str] = None  # "Ubuntu 24.04"
    kernel: Optional[str] = None
    arch: Optional[str] = None  # x86_64 | aarch64 | arm64 (Apple)
    glibc: Optional[str] = None
    wsl: bool = False
    container: Optional[str] = None  # docker | podman | kubernetes | lxc | None
    os_version: Optional[str] = None  # macOS "15.1", Windows "10.0.26100"
    machine_arch: Optional[str] = None  # the hardware's arch when the Python runs translated
    rosetta: bool = False  # an x86_64 Python on Apple silicon


@dataclass(frozen=True)
class PythonEnv:
    executable: Optional[str] = None
    version: Optional[str] = None
    implementation: Optional[str] = None
    env_kind: Optional[str] = None  # venv | uv | conda-base | conda | system
    env_path: Optional[str] = None
    packages: dict[str, str] = field(default_factory=dict)
    # Installation dirs of NVIDIA wheels ("nvidia.cudnn" -> path), for reading their headers.
    nvidia_wheel_dirs: dict[str, str] = field(default_factory=dict)
    conda_packages: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Gpu:
    index: int
    name: Optional[str] = None
    compute_capability: Optional[str] = None  # "12.0"
    memory_total_mib: Optional[int] = None
    uuid: Optional[str] = None
    pci_bus_id: Optional[str] = None


@dataclass(frozen=True)
class PciDevice:
    """An NVIDIA device seen on the PCI bus, whether or not a driver is bound to it."""

    address: str
    device_id: Optional[str] = None  # "0x2684"
    driver: Optional[str] = None  # kernel driver bound: nvidia | nouveau | vfio-pci | None


@dataclass(frozen=True)
class Nvidia:
    driver_version: Optional[str] = None
    driver_cuda: Optional[str] = None  # highest CUDA the driver supports, "12.8"
    source: Optional[str] = None  # nvml | nvidia-smi | proc | sysfs
    # What the driver number means: "desktop" (Linux/Windows driver), "wsl" (the Windows host's
    # driver seen from WSL2), "jetson" (an L4T-integrated driver; not comparable to desktop tables).
    driver_kind: Optional[str] = None
    gpus: list[Gpu] = field(default_factory=list)
    pci_devices: list[PciDevice] = field(default_factory=list)
    kernel_module: Optional[str] = None  # version of the loaded nvidia.ko, if any
    nouveau_loaded: bool = False
    # A recognised failure: no-driver-communication | driver-library-mismatch | nvml-unknown-error
    failure: Optional[str] = None
    failure_text: Optional[str] = None


@dataclass(frozen=True)
class CudaToolkit:
    version: Optional[str] = None  # "12.4"
    nvcc: Optional[str] = None
    root: Optional[str] = None
    found_by: Optional[str] = None  # PATH | CUDA_HOME | CUDA_PATH | /usr/local


@dataclass(frozen=True)
class Cudnn:
    version: Optional[str] = None  # "9.1.0"
    source: Optional[str] = None  # "pip:nvidia-cudnn-cu12" | "header:/usr/include/..." | "ldconfig" | "conda:cudnn"
    path: Optional[str] = None


@dataclass(frozen=True)
class Jetson:
    l4t: Optional[str] = None
    jetpack: Optional[str] = None
    model: Optional[str] = None
    soc: Optional[str] = None
    cuda: Optional[str] = None
    compatible: Optional[str] = None


@dataclass(frozen=True)
class AmdGpu:
    name: Optional[str] = None
    gfx: Optional[str] = None


@dataclass(frozen=True)
class Amd:
    rocm_version: Optional[str] = None
    gpus: list[AmdGpu] = field(default_factory=list)


@dataclass(frozen=True)
class Framework:
    """A framework's build, learned by importing it in the target interpreter (``--deep``)."""

    version: Optional[str] = None
    cuda: Optional[str] = None
    cudnn: Optional[str] = None
    arch_list: Optional[list[str]] = None
    device_available: Optional[bool] = None
    device_count: Optional[int] = None
    import_error: Optional[str] = None
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ProbeError:
    probe: str
    message: str


@dataclass(frozen=True)
class Facts:
    schema: str = SCHEMA
    collected_at: Optional[str] = None
    host: Host = field(default_factory=Host)
    python: PythonEnv = field(default_factory=PythonEnv)
    nvidia: Optional[Nvidia] = None
    cuda_toolkit: Optional[CudaToolkit] = None  # the active toolkit
    cuda_toolkits: list[CudaToolkit] = field(default_factory=list)  # every toolkit found
    cudnn: list[Cudnn] = field(default_factory=list)
    jetson: Optional[Jetson] = None
    amd: Optional[Amd] = None
    frameworks: dict[str, Framework] = field(default_factory=dict)
    env: dict[str, Optional[str]] = field(default_factory=dict)
    errors: list[ProbeError] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, sort_keys=False)

    @classmethod
    def from_dict(cls, data: Any) -> "Facts":
        if not isinstance(data, dict):
            raise FactsError("facts must be a JSON object")
        schema = data.get("schema")
        if schema != SCHEMA:
            what = "no facts schema" if schema is None else f"unknown facts schema {schema!r}"
            raise FactsError(f"{what} (expected {SCHEMA!r})")
        return _build(cls, data, "facts")

    @property
    def gpus(self) -> list[Gpu]:
        return self.nvidia.gpus if self.nvidia else []

    @property
    def has_usable_driver(self) -> bool:
        return bool(self.nvidia and self.nvidia.driver_version and not self.nvidia.failure)


def load_facts(path: str | Path) -> Facts:
    """Read a recorded machine. Raises FactsError with a one-line reason."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise FactsError(f"cannot read facts file {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise FactsError(f"facts file {path} is not UTF-8 text") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise FactsError(f"facts file {path} is not valid JSON: {exc.msg} at line {exc.lineno}") from None
    # A whole report (`check --json`) carries its facts inside.
    if isinstance(data, dict) and str(data.get("schema")).startswith("envdoctor.report/"):
        if "facts" not in data:
            raise FactsError(f"report file {path} has no \"facts\"")
        data = data["facts"]
    return Facts.from_dict(data)


# --- generic dict -> dataclass conversion with type checking -------------------------------------

_HINTS: dict[type, dict[str, Any]] = {}


def _hints(cls: type) -> dict[str, Any]:
    if cls not in _HINTS:
        _HINTS[cls] = typing.get_type_hints(cls)
    return _HINTS[cls]


def _build(cls: type, data: Any, where: str) -> Any:
    if not isinstance(data, dict):
        raise FactsError(f"{where}: expected an object, got {type(data).__name__}")
    hints = _hints(cls)
    kwargs = {}
    for f in dataclasses.fields(cls):
        if f.name in data:
            kwargs[f.name] = _convert(hints[f.name], data[f.name], f"{where}.{f.name}")
            _check_format(f.name, kwargs[f.name], f"{where}.{f.name}")
        elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            raise FactsError(f"{where}: missing {f.name!r}")
    return cls(**kwargs)


# Values later stages compare as versions: a recorded machine must spell them as the probes do.
_FORMATS = {  # field name -> (pattern, an example)
    "compute_capability": (re.compile(r"^\d+\.\d+$"), "12.0"),
    "driver_version": (re.compile(r"^\d+(\.\d+)*$"), "570.124.04"),
    "driver_cuda": (re.compile(r"^\d+\.\d+$"), "12.8"),
}


def _check_format(name: str, value: Any, where: str) -> None:
    pattern, example = _FORMATS.get(name, (None, None))
    if pattern is not None and isinstance(value, str) and not pattern.match(value):
        raise FactsError(f"{where}: {value!r} is not a version like {example!r}")


def _convert(tp: Any, value: Any, where: str) -> Any:
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        if value is None:
            return None
        return _convert(args[0], value, where)
    if tp is Any:
        return value
    if dataclasses.is_dataclass(tp):
        return _build(tp, value, where)
    if origin is list:
        if not isinstance(value, list):
            raise FactsError(f"{where}: expected a list")
        (item,) = typing.get_args(tp)
        return [_convert(item, v, f"{where}[{i}]") for i, v in enumerate(value)]
    if origin is dict:
        if not isinstance(value, dict):
            raise FactsError(f"{where}: expected an object")
        _, item = typing.get_args(tp)
        return {str(k): _convert(item, v, f"{where}.{k}") for k, v in value.items()}
    if tp is bool:
        if not isinstance(value, bool):
            raise FactsError(f"{where}: expected true/false")
        return value
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise FactsError(f"{where}: expected an integer")
        return value
    if tp is str:
        if not isinstance(value, (str, int, float)) or isinstance(value, bool):
            raise FactsError(f"{where}: expected a string")
        return str(value)
    return value
