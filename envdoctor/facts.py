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

from envdoctor.values import FRAMEWORK_DISTRIBUTIONS

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
    wsl: Optional[bool] = None
    container: Optional[str] = None  # docker | podman | kubernetes | lxc | None
    os_version: Optional[str] = None  # macOS "15.1", Windows "10.0.26100"
    machine_arch: Optional[str] = None  # the hardware's arch when the Python runs translated
    rosetta: Optional[bool] = None  # an x86_64 Python on Apple silicon
    hostname: Optional[str] = None


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
    target_source: Optional[str] = None  # how it was chosen: --python | VIRTUAL_ENV | CONDA_PREFIX | .venv | PATH | self


@dataclass(frozen=True)
class Gpu:
    index: Optional[int] = None
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
    nouveau_loaded: Optional[bool] = None
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
class Container:
    """GPU access from inside a container, and (on a host) the container runtime's GPU set-up.
    Lists are what was found; an empty list in a probe-recorded block means none."""

    in_container: Optional[bool] = None
    runtime: Optional[str] = None  # docker | podman | containerd | kubernetes | lxc
    detected_by: Optional[str] = None  # the marker that said so: "/.dockerenv", "/proc/1/cgroup", ...
    device_nodes: list[str] = field(default_factory=list)  # "/dev/nvidia0", "/dev/nvidiactl", "/dev/nvidia-uvm"
    driver_libs: list[str] = field(default_factory=list)  # "libcuda.so.1", "libnvidia-ml.so.1" (ld cache, known dirs)
    nvidia_visible_devices: Optional[str] = None  # unset and unknown are both null
    nvidia_require_cuda: Optional[str] = None  # "cuda>=12.4 brand=tesla,driver>=470,driver<471"
    nvidia_driver_capabilities: Optional[str] = None
    nvidia_disable_require: Optional[str] = None
    shm_bytes: Optional[int] = None  # size of /dev/shm
    podman: Optional[bool] = None  # podman installed here (a host that starts containers)
    cdi_specs: list[str] = field(default_factory=list)  # CDI spec files naming nvidia.com/gpu


@dataclass(frozen=True)
class Compiler:
    """A host compiler a CUDA extension build uses: `cxx` (torch's C++ compiler, $CXX or c++) or
    `nvcc-host` (what nvcc runs: $CC, which torch passes as -ccbin, else gcc on PATH)."""

    role: Optional[str] = None
    command: Optional[str] = None
    path: Optional[str] = None
    kind: Optional[str] = None  # gcc | clang | msvc
    version: Optional[str] = None  # "12.2.0"


@dataclass(frozen=True)
class Build:
    """What building a CUDA extension (torch.utils.cpp_extension, flash-attn, apex) will use (`check --build`)."""

    nvcc: Optional[str] = None  # nvcc on PATH
    nvcc_version: Optional[str] = None  # "13.0", from `nvcc --version`
    nvcc_root: Optional[str] = None  # the toolkit that nvcc belongs to
    cuda_home: Optional[str] = None  # the toolkit torch builds with (CUDA_HOME, CUDA_PATH, nvcc's, /usr/local/cuda)
    cuda_home_from: Optional[str] = None  # CUDA_HOME | CUDA_PATH | PATH | /usr/local/cuda
    cuda_home_version: Optional[str] = None  # `CUDA_HOME/bin/nvcc --version`, what torch compares
    cuda_home_headers: Optional[bool] = None  # CUDA_HOME/include/cuda_runtime.h exists (a toolkit, not a wrapper's folder)
    gcc_max: Optional[int] = None  # the newest GCC major the toolkit's crt/host_config.h accepts
    compilers: list[Compiler] = field(default_factory=list)
    ninja: Optional[str] = None
    ninja_version: Optional[str] = None
    python_include: Optional[str] = None  # the target interpreter's sysconfig "include" dir
    python_h: Optional[bool] = None  # Python.h present there
    torch_cuda_arch_list: Optional[str] = None
    max_jobs: Optional[str] = None
    cpu_count: Optional[int] = None
    mem_available_mib: Optional[int] = None


@dataclass(frozen=True)
class ProbeError:
    probe: str
    message: str


# Top-level blocks a probe records. In a document that lists them under "recorded", a block that is
# null there was looked at and found absent ("not a Jetson"); anywhere else null means unknown.
BLOCKS = ("host", "python", "nvidia", "cuda_toolkit", "cuda_toolkits", "cudnn", "jetson", "amd", "frameworks",
          "env", "errors", "container", "build")
# Lists and objects whose null (or absence) means "not recorded": in Python they read as empty, and
# `Facts.known(path)` tells an empty one that was recorded from one nobody recorded.
CONTAINERS = ("python.packages", "python.conda_packages", "python.nvidia_wheel_dirs", "nvidia.gpus",
              "nvidia.pci_devices", "cuda_toolkits", "cudnn", "amd.gpus", "frameworks", "env", "errors",
              "container.device_nodes", "container.driver_libs", "container.cdi_specs", "build.compilers")


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
    container: Optional[Container] = None  # GPU access in/for containers (null on a non-Linux host)
    build: Optional[Build] = None  # CUDA extension build tools; recorded only by `check --build`
    # The blocks a probe recorded (their null means "none"); None for a hand-written document.
    recorded: Optional[tuple[str, ...]] = None
    # Container paths (CONTAINERS) given as null or left out: unknown, although they read as empty.
    unrecorded: frozenset = frozenset()
    # Values the completion stage derived from the matrices: path -> the matrix row it came from.
    inferred: dict[str, str] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data.pop("unrecorded")
        for path in self.unrecorded:
            _set_path(data, path, None)
        if self.recorded is None:
            data.pop("recorded")
        else:
            data["recorded"] = list(self.recorded)
        if not self.inferred:
            data.pop("inferred")
        return data

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
        partial: set[str] = set()
        facts = _build(cls, {k: v for k, v in data.items() if k not in ("recorded", "unrecorded", "inferred")}, "facts",
                       partial)
        unrecorded = frozenset(p for p in CONTAINERS if _parent_given(data, p) and _get_path(data, p) is None)
        # A map with a null entry ("torch": null) is incomplete: the entry is unknown, so is the map.
        unrecorded |= frozenset(p for p in partial if p in CONTAINERS)
        return dataclasses.replace(facts, recorded=_recorded(data), unrecorded=unrecorded,
                                   inferred=_inferred(data.get("inferred")))

    def known(self, path: str) -> bool:
        """Whether a fact was recorded: a value, or a block a probe looked at and found absent.
        `known("nvidia.gpus")` is False for a document that says nothing of GPUs, True for `"gpus": []`."""
        if path in self.unrecorded:
            return False
        if _get_path(self, path) is not None:
            return True
        return self.recorded is not None and path.split(".")[0] in self.recorded

    def lists_everything(self, path: str) -> bool:
        """Whether a list or map (CONTAINERS) names all there is, so that an entry missing from it is absent:
        a probe recorded it. In a hand-written document a missing entry is unknown like any missing key
        (`"packages": {"torch": "2.6.0"}` does not say that nothing else is installed)."""
        return path not in self.unrecorded and self.recorded is not None and path.split(".")[0] in self.recorded

    def is_inferred(self, path: str) -> bool:
        return path in self.inferred

    @property
    def gpus(self) -> list[Gpu]:
        return self.nvidia.gpus if self.nvidia else []

    @property
    def driver_present(self) -> Optional[bool]:
        """True: a working NVIDIA driver was seen; False: recorded as absent or failing; None: unknown."""
        nv = self.nvidia
        if nv is not None and nv.failure:
            return False
        if nv is not None and nv.driver_version:
            return True
        if nv is not None and nv.pci_devices and all(d.driver in ("nouveau", "vfio-pci") for d in nv.pci_devices):
            return False  # the GPUs are bound to another kernel driver
        return False if self.known("nvidia.driver_version") else None

    @property
    def has_usable_driver(self) -> bool:
        return self.driver_present is True


def recorded_blocks(data: dict) -> tuple[str, ...]:
    """The blocks a facts document says a probe recorded (its `recorded` list, or every block of a file
    written before that list existed); () where it cannot say. The one reading, for raw documents too."""
    try:
        return _recorded(data) or ()
    except FactsError:
        return ()


def _recorded(data: dict) -> Optional[tuple[str, ...]]:
    recorded = data.get("recorded")
    if recorded is not None:
        if not isinstance(recorded, list):
            raise FactsError(f"facts.recorded: expected a list of block names, got {_json_type(recorded)}")
        for i, block in enumerate(recorded):
            if block is not None and not isinstance(block, str):
                raise FactsError(f"facts.recorded[{i}]: expected a block name like \"nvidia\", got {_json_type(block)}")
        return tuple(b for b in recorded if b in BLOCKS)
    # Written by a probe before "recorded" existed: every key was written, a null block meant "none".
    legacy = data.get("collected_at") and all(k in data for k in ("nvidia", "cuda_toolkit", "cudnn", "jetson", "errors"))
    if not legacy:
        return None
    blocks = [b for b in BLOCKS if b in data]
    if not data.get("frameworks"):
        blocks = [b for b in blocks if b != "frameworks"]  # `{}` there meant "--deep did not run"
    return tuple(blocks)


def _inferred(value: Any) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise FactsError("facts.inferred: expected an object of fact paths and the matrix rows they came from, "
                         f"got {_json_type(value)}")
    for key, row in value.items():
        if row is not None and not isinstance(row, str):
            raise FactsError(f"facts.inferred.{key}: expected the matrix row it came from (a string), got {_json_type(row)}")
    return {_CONTROL.sub("", str(k)): _CONTROL.sub("", v) for k, v in value.items() if v is not None}


def _get_path(obj: Any, path: str) -> Any:
    for part in path.split("."):
        if obj is None:
            return None
        obj = obj.get(part) if isinstance(obj, dict) else getattr(obj, part, None)
    return obj


def _parent_given(data: dict, path: str) -> bool:
    parent = path.rpartition(".")[0]
    return not parent or isinstance(_get_path(data, parent), dict)


def _set_path(data: dict, path: str, value: Any) -> None:
    *parents, last = path.split(".")
    for part in parents:
        data = data.get(part) if isinstance(data, dict) else None
        if not isinstance(data, dict):
            return
    data[last] = value


MAX_FACTS_BYTES = 8_000_000
MAX_DEPTH = 32


def load_facts(path: str | Path) -> Facts:
    """Read a recorded machine. Raises FactsError with a one-line reason."""
    data = parse_json(read_bounded(path, "facts file"), f"facts file {path}")
    # A whole report (`check --json`) carries its facts inside.
    if isinstance(data, dict) and str(data.get("schema")).startswith("envdoctor.report/"):
        if "facts" not in data:
            raise FactsError(f"report file {path} has no \"facts\"")
        data = data["facts"]
    facts = Facts.from_dict(data)
    check_framework_versions(facts)
    return facts


def read_bounded(path: str | Path, what: str, limit: int = MAX_FACTS_BYTES) -> str:
    """A regular file's text, refusing FIFOs, devices and files over `limit` bytes."""
    import os
    import stat

    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        raise FactsError(f"cannot read {what} {path}: {exc.strerror or exc}") from None
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise FactsError(f"{what} {path} is {'a directory' if stat.S_ISDIR(mode) else 'not a regular file'}")
    with os.fdopen(fd, "rb") as fh:
        raw = fh.read(limit + 1)
    if len(raw) > limit:
        raise FactsError(f"{what} {path} is over {limit // 1_000_000} MB; a machine's facts are a few kB")
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise FactsError(f"{what} {path} is not UTF-8 text") from None


def parse_json(text: str, what: str) -> Any:
    def no_constant(name: str) -> Any:
        raise FactsError(f"{what}: {name} is not a JSON value")

    try:
        data = json.loads(text, parse_constant=no_constant)
    except json.JSONDecodeError as exc:
        raise FactsError(f"{what} is not valid JSON: {exc.msg.removesuffix(' at')} at line {exc.lineno}") from None
    except RecursionError:
        raise FactsError(f"{what} is nested too deeply") from None
    except FactsError:
        raise  # a NaN or Infinity named by no_constant
    except ValueError:  # the one other ValueError json raises: a number past Python's integer digit limit
        raise FactsError(f"{what} holds a number with too many digits") from None
    if _depth(data) > MAX_DEPTH:
        raise FactsError(f"{what} is nested more than {MAX_DEPTH} levels deep")
    return data


def _depth(value: Any, level: int = 0) -> int:
    if level > MAX_DEPTH:
        return level
    if isinstance(value, dict):
        return max((_depth(v, level + 1) for v in value.values()), default=level + 1)
    if isinstance(value, list):
        return max((_depth(v, level + 1) for v in value), default=level + 1)
    return level


# --- generic dict -> dataclass conversion with type checking -------------------------------------

_HINTS: dict[type, dict[str, Any]] = {}


def _hints(cls: type) -> dict[str, Any]:
    if cls not in _HINTS:
        _HINTS[cls] = typing.get_type_hints(cls)
    return _HINTS[cls]


def _build(cls: type, data: Any, where: str, partial: Optional[set] = None) -> Any:
    if not isinstance(data, dict):
        raise FactsError(f"{where}: expected {_WORDS.get(where.rsplit('.', 1)[-1], 'an object')}, got {_json_type(data)}")
    kwargs = {}
    for name, tp, required, pattern in _fields(cls):
        value = data.get(name)
        if value is None:
            if required:
                kwargs[name] = None  # a required field (a GPU's index) may be unknown too
            continue  # null or missing: unknown, the field's default
        if tp is str and type(value) is str:  # the common case, as _convert would do it
            converted = _clean(value)
        else:
            converted = _convert(tp, value, f"{where}.{name}", partial)
        kwargs[name] = converted
        if pattern is not None and isinstance(converted, str) and not pattern.match(converted):
            _check_format(name, converted, f"{where}.{name}")
    return cls(**kwargs)


_FIELDS: dict[type, tuple] = {}


def _fields(cls: type) -> tuple:
    """(name, type hint, required, format pattern) of each field of a dataclass, worked out once."""
    plan = _FIELDS.get(cls)
    if plan is None:
        hints = _hints(cls)
        plan = tuple((f.name, _plain_optional(hints[f.name]),
                      f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING,
                      _FORMATS.get(f.name, (None, None))[0]) for f in dataclasses.fields(cls))
        _FIELDS[cls] = plan
    return plan


def _plain_optional(tp: Any) -> Any:
    """Optional[str] -> str (a field's null never reaches _convert), so the common case is recognised;
    any other hint is kept as it is."""
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        if args == [str]:
            return str
    return tp


def _clean(text: str) -> str:
    """`text` without terminal control characters (_CONTROL); a printable string has none."""
    return text if text.isprintable() else _CONTROL.sub("", text)


# Values later stages compare as versions: a recorded machine must spell them as the probes do.
_FORMATS = {  # field name -> (pattern, an example)
    "compute_capability": (re.compile(r"^\d+\.\d+$"), "12.0"),
    "driver_version": (re.compile(r"^\d+(\.\d+)*$"), "570.124.04"),
    "driver_cuda": (re.compile(r"^\d+\.\d+$"), "12.8"),
}
_VERSION = re.compile(r"^v?\d+(\.\d+)+([-_.+!]?[A-Za-z0-9][A-Za-z0-9._+-]*)?$|^v?\d+$")
_FRAMEWORK_DISTS = tuple(dist for dists in FRAMEWORK_DISTRIBUTIONS.values() for dist in dists)  # versions validated
# What a user calls each container, for the one-line error.
_WORDS = {"gpus": "a list of GPUs", "pci_devices": "a list of PCI devices", "cudnn": "a list of cuDNN installations",
          "nvidia_wheel_dirs": "an object of NVIDIA wheel modules and their folders",
          "cuda_toolkits": "a list of CUDA toolkits", "errors": "a list of probe errors",
          "packages": "an object of package names and versions", "conda_packages": "an object of package names and versions",
          "frameworks": "an object of frameworks", "env": "an object of environment variables",
          "arch_list": "a list of architectures like \"sm_90\"",
          "device_nodes": "a list of device paths", "driver_libs": "a list of library names",
          "cdi_specs": "a list of CDI spec files", "compilers": "a list of compilers"}


def _check_format(name: str, value: Any, where: str) -> None:
    pattern, example = _FORMATS.get(name, (None, None))
    if pattern is not None and isinstance(value, str) and not pattern.match(value):
        raise FactsError(f"{where}: {value!r} is not a version like {example!r}")


def check_framework_versions(facts: "Facts", where: str = "facts.python.packages") -> None:
    """A recorded machine's framework versions must be versions ("2.6.0+cu124", not "2" or "banana"):
    later stages look them up in the matrices. (The probe reports whatever a distribution says.)"""
    for dist in _FRAMEWORK_DISTS:
        version = facts.python.packages.get(dist)
        for copy in (version or "").split("|") if version else ():  # two installed copies: "a|b"
            if not _VERSION.match(copy) or re.fullmatch(r"v?\d+", copy):
                raise FactsError(f"{where}.{dist}: {copy!r} is not a package version like '2.6.0'")


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true/false"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return "a list" if isinstance(value, list) else "an object"


_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")  # terminal control; line breaks and tabs stay


def _convert(tp: Any, value: Any, where: str, partial: Optional[set] = None) -> Any:
    kind, arg, nullable = _kind(tp)
    if kind == "union":
        if value is None:
            return None
        return _convert(arg, value, where, partial)
    if kind == "any":
        return value
    if kind == "dataclass":
        return _build(tp, value, where, partial)
    if kind == "list":
        if not isinstance(value, list):
            raise FactsError(f"{where}: expected {_WORDS.get(_name(where), 'a list')}, got {_json_type(value)}")
        if arg is str:
            return [_clean(v) if type(v) is str else _convert(arg, v, f"{where}[{i}]", partial) for i, v in enumerate(value)]
        return [_convert(arg, v, f"{where}[{i}]", partial) for i, v in enumerate(value)]
    if kind == "dict":
        if not isinstance(value, dict):
            raise FactsError(f"{where}: expected {_WORDS.get(_name(where), 'an object')}, got {_json_type(value)}")
        if not nullable and None in value.values():  # (JSON values: `in` is `is None` here)
            # "torch": null in the packages: that entry is unknown. The map cannot hold it (its values
            # are compared as versions); it is left out, and the map marked incomplete.
            if partial is not None:
                partial.add(where.removeprefix("facts."))
            value = {k: v for k, v in value.items() if v is not None}
        if arg is str:
            plain = _plain_strings(value)
            if plain is not None:
                return plain
        converted = {}
        for k, v in value.items():
            key = _clean(k) if type(k) is str else _CONTROL.sub("", str(k))
            if v is None:
                converted[key] = None
            elif arg is str and type(v) is str:
                converted[key] = _clean(v)
            else:
                converted[key] = _convert(arg, v, f"{where}.{k}", partial)
        return converted
    if kind == "bool":
        if not isinstance(value, bool):
            raise FactsError(f"{where}: expected true or false, got {_json_type(value)}")
        return value
    if kind == "int":
        if isinstance(value, bool) or not isinstance(value, int):
            raise FactsError(f"{where}: expected a whole number, got {_json_type(value)}")
        return value
    if kind == "str":
        if not isinstance(value, str):
            raise FactsError(f"{where}: expected a string, got {_json_type(value)}")
        return _clean(value)
    return value


def _plain_strings(value: dict) -> Optional[dict]:
    """A map of strings to strings without control characters, as _convert would make it; None
    for any other map (then converted entry by entry)."""
    converted = {}
    for k, v in value.items():
        if type(k) is not str or type(v) is not str:
            return None
        converted[k if k.isprintable() else _CONTROL.sub("", k)] = v if v.isprintable() else _CONTROL.sub("", v)
    return converted


def _name(where: str) -> str:
    return where.rsplit(".", 1)[-1].split("[")[0]


_KINDS: dict[Any, tuple] = {}


def _kind(tp: Any) -> tuple:
    """How _convert reads a type hint: (kind, the type inside, whether a map's values may be null)."""
    try:
        return _KINDS[tp]
    except KeyError:
        pass
    except TypeError:  # an unhashable hint: work it out each time
        return _work_out_kind(tp)
    kind = _KINDS[tp] = _work_out_kind(tp)
    return kind


def _work_out_kind(tp: Any) -> tuple:
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        return ("union", [a for a in typing.get_args(tp) if a is not type(None)][0], False)
    if tp is Any:
        return ("any", None, False)
    if dataclasses.is_dataclass(tp):
        return ("dataclass", None, False)
    if origin is list:
        (item,) = typing.get_args(tp)
        return ("list", item, False)
    if origin is dict:
        _, item = typing.get_args(tp)
        return ("dict", item, item is Any or type(None) in typing.get_args(item))
    return ({bool: "bool", int: "int", str: "str"}.get(tp, "other"), None, False)
