"""Compose files: read with PyYAML's safe loader and validated against the Compose specification's JSON
schema (data/compose-spec.json, vendored verbatim from compose-spec/compose-spec: provenance in
data/compose-spec.source.toml) when the `jsonschema` package is installed; without it only the structure
this module relies on is checked (the top-level keys, and the types of the service keys judged here), and
the document says so (`spec_check`). Then each service's GPU access, device selection, shared memory, and
its build judged as a Dockerfile (judge.py)."""

from __future__ import annotations

import functools
import itertools
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Optional

from envdoctor.container.findings import Located
from envdoctor.container.parse import BuildFileError, read_build_file, substitute
from envdoctor.findings import Finding

MAX_COMPOSE_BYTES = 1_000_000
MAX_EXPANDED_NODES = 1_000_000  # YAML values once aliases are expanded (a 1000-service file has ~30 000)
MAX_LINE_PATHS = 50_000  # key paths whose line is remembered (a 1000-service file has ~20 000)
# Top-level elements of the Compose specification (compose-spec/compose-spec schema/compose-spec.json).
TOP_LEVEL = {"version", "name", "include", "services", "networks", "volumes", "secrets", "configs", "models"}
_GPU_FRAMEWORK_IMAGES = ("pytorch", "ngc")
DEFAULT_SHM_BYTES = 64 * 1024 * 1024
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)i?b?\s*$", re.I)


@dataclass
class Service:
    name: str
    data: dict
    line: int
    lines: dict[str, int] = field(default_factory=dict)  # key path inside the service -> line


@dataclass
class ComposeJudgement:
    path: str
    services: list[Service]
    findings: list[Located]
    builds: dict[str, Any]  # service -> Judgement of its Dockerfile
    not_read: list[dict]
    spec_check: str = ""  # what the file was validated against

    def to_dict(self) -> dict:
        return {
            "file": self.path,
            "services": [{"name": s.name, "line": s.line, "image": s.data.get("image"),
                          "build": self.builds[s.name].dockerfile.path if s.name in self.builds else None,
                          "gpu": _gpu_access(s.data)[0]} for s in self.services],
            "not_read": self.not_read,
            "spec_check": self.spec_check,
            "findings": [f.to_dict() for f in self.findings],
            "builds": {name: j.to_dict() for name, j in self.builds.items()},
        }


def read_compose(path: str) -> tuple[dict, dict[str, int]]:
    import yaml

    text = read_build_file(path, "compose file", MAX_COMPOSE_BYTES)
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except RecursionError:  # flow collections nested thousands deep: the YAML composer recurses
        raise BuildFileError(f"{path}: not a compose file: nested too deeply") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        raise BuildFileError(f"{path}: not valid YAML{where}: {getattr(exc, 'problem', None) or 'syntax error'}") from None
    if not isinstance(data, dict):
        raise BuildFileError(f"{path}: not a compose file (expected a mapping with `services`)")
    if _expands_past(node, MAX_EXPANDED_NODES):  # a billion-laughs alias chain: refused before any walk
        raise BuildFileError(f"{path}: not a compose file: its aliases expand to over {MAX_EXPANDED_NODES:,} values "
                             "(excessive aliasing)")
    duplicate = _duplicate_key(node)
    if duplicate:  # YAML 1.2 and docker compose refuse them; safe_load would keep the last one silently
        raise BuildFileError(f"{path}: not a compose file: duplicate key {duplicate[0][:80]!r} at line {duplicate[1]}")
    lines = _lines(node)
    unknown = [k for k in data if not (isinstance(k, str) and (k in TOP_LEVEL or k.startswith("x-")))]
    if unknown:
        raise BuildFileError(f"{path}: not a compose file: unknown top-level key {unknown[0]!r}")
    services = data.get("services")
    if not isinstance(services, dict) or not services:
        raise BuildFileError(f"{path}: not a compose file: `services` must be a mapping of services")
    return data, lines


def _duplicate_key(root) -> Optional[tuple[str, int]]:
    """The first key that a mapping of the composed YAML repeats, with its line (each node visited once,
    iteratively: aliases and deep nesting cost nothing extra). Merge keys (`<<`) may repeat keys by design."""
    import yaml

    stack, visited = [root], set()
    while stack:
        node = stack.pop()
        if node is None or id(node) in visited:
            continue
        visited.add(id(node))
        if isinstance(node, yaml.MappingNode):
            keys: set = set()
            for key, _ in node.value:
                if isinstance(key, yaml.ScalarNode) and key.tag != "tag:yaml.org,2002:merge":
                    if (key.tag, key.value) in keys:
                        return key.value, key.start_mark.line + 1
                    keys.add((key.tag, key.value))
            stack.extend(reversed([child for pair in node.value for child in pair]))  # document order
        elif isinstance(node, yaml.SequenceNode):
            stack.extend(reversed(node.value))
    return None


SPEC_SCHEMA = Path(__file__).parent / "data" / "compose-spec.json"
SPEC_CHECKED = "the Compose specification's JSON schema (compose-spec/compose-spec schema/compose-spec.json)"
SPEC_NOT_CHECKED = ("the top-level keys and the service keys envdoctor judges only: the `jsonschema` package is not "
                    "installed, so the full Compose specification schema was not applied")
SPEC_TOO_LARGE = ("the top-level keys and the service keys envdoctor judges only: with its YAML aliases expanded the "
                  "file holds over {n} values, too many to validate against the Compose specification schema")
MAX_SPEC_VALUES = 100_000  # values (after alias expansion) validated against the schema


class _TooLarge(Exception):
    pass


@functools.lru_cache(maxsize=1)
def _spec_validator():
    """A validator of the vendored compose-spec schema, or None without the `jsonschema` package."""
    try:
        from jsonschema import Draft7Validator
    except ImportError:
        return None
    return Draft7Validator(json.loads(SPEC_SCHEMA.read_text(encoding="utf-8")))


def validate_spec(path: str, data: dict, lines: dict[str, int]) -> str:
    """Validate against the Compose specification's schema: BuildFileError (one line) on a violation; else
    what the file was checked against (the schema, or only the structural checks, and why)."""
    validator = _spec_validator()
    if validator is None:
        return SPEC_NOT_CHECKED
    try:
        instance = _as_json(data, [MAX_SPEC_VALUES])
    except _TooLarge:
        return SPEC_TOO_LARGE.format(n=f"{MAX_SPEC_VALUES:,}")
    problem = _spec_problem(validator, instance, lines)
    if problem:
        raise BuildFileError(f"{path}: not a valid compose file (Compose specification): {problem}")
    return SPEC_CHECKED


def _spec_problem(validator, instance: dict, lines: dict[str, int]) -> Optional[str]:
    """The most relevant way the file breaks the schema, in one line with its key path and line."""
    from jsonschema.exceptions import best_match

    error = best_match(itertools.islice(validator.iter_errors(instance), 50))
    if error is None:
        return None
    where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path).lstrip(".")
    line = lines.get(where) or next((lines[k] for k in _parents(where) if k in lines), None)
    message = error.message if len(error.message) <= 160 else error.message[:157] + "..."
    return f"{where or 'top level'}{f' (line {line})' if line else ''}: {message}"


def _parents(where: str) -> list[str]:
    parts = re.split(r"(?=[.\[])", where)
    return ["".join(parts[:i]).lstrip(".") for i in range(len(parts) - 1, 0, -1)]


def _as_json(value, budget: list, depth: int = 0):
    """YAML data as JSON data for the schema: keys as strings, dates and other scalars of YAML types beyond
    JSON's as their text. A copy with YAML aliases expanded, so bounded: _TooLarge past `budget[0]` values."""
    budget[0] -= 1
    if budget[0] < 0:
        raise _TooLarge
    if depth > 64:  # deeper than any Compose element: left as it is (the schema stops descending long before)
        return value
    if isinstance(value, dict):
        return {str(k): _as_json(v, budget, depth + 1) for k, v in value.items()}
    if isinstance(value, list):
        return [_as_json(v, budget, depth + 1) for v in value]
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)


def _expands_past(root, budget: int) -> bool:
    """Whether the YAML node graph, with every alias expanded, has more than `budget` nodes (counted
    without expanding: a walk that stops at the budget)."""
    import yaml

    stack, seen = [root], 0
    while stack:
        node = stack.pop()
        seen += 1
        if seen > budget:
            return True
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                stack.extend((key, value))
        elif isinstance(node, yaml.SequenceNode):
            stack.extend(node.value)
    return False


def _lines(node, prefix: str = "", out: Optional[dict[str, int]] = None, depth: int = 0) -> dict[str, int]:
    """Dotted key path -> 1-based line, from the YAML node graph (anchors visited once per path)."""
    import yaml

    out = {} if out is None else out
    if depth > 8 or node is None or len(out) >= MAX_LINE_PATHS:  # aliases of aliases: bounded, not 9^9 paths
        return out
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            if isinstance(key, yaml.ScalarNode):
                if depth == 0 and str(key.value).startswith("x-"):  # extension fields: never reported
                    continue
                path = f"{prefix}.{key.value}" if prefix else str(key.value)
                out.setdefault(path, key.start_mark.line + 1)
                _lines(value, path, out, depth + 1)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value[:200]):
            path = f"{prefix}[{i}]"
            out.setdefault(path, item.start_mark.line + 1)
            _lines(item, path, out, depth + 1)
    return out


def judge_compose(path: str, platform: Optional[str] = None, host: Optional[dict] = None) -> ComposeJudgement:
    data, lines = read_compose(path)
    services = []
    for name, body in data["services"].items():
        where = f"services.{name}"
        if not isinstance(body, dict):
            raise BuildFileError(f"{path}: {where} must be a mapping")
        _check_types(path, where, body)
        services.append(Service(str(name), body, lines.get(where, 0),
                                {k[len(where) + 1:]: v for k, v in lines.items() if k.startswith(where + ".")}))
    judgement = ComposeJudgement(path, services, [], {}, [], validate_spec(path, data, lines))
    base_dir = Path(path).resolve().parent
    for service in services:
        build = _judge_build(service, base_dir, platform, host, judgement)
        judgement.findings.extend(service_findings(service, build, host))
        if build is not None:
            judgement.builds[service.name] = build
            for located in build.findings:
                judgement.findings.append(Located(located.finding, located.line, located.corrected, located.file,
                                                  service.name, located.corrected_at))
    for located in judgement.findings:
        if located.file is None:
            object.__setattr__(located, "file", path)
    return judgement


_TYPES = {"image": str, "runtime": str, "ipc": str, "build": (str, dict), "deploy": dict, "gpus": (str, list),
          "environment": (dict, list), "shm_size": (str, int), "devices": list}


def _check_types(path: str, where: str, body: dict) -> None:
    for key, kind in _TYPES.items():
        if key in body and body[key] is not None and not isinstance(body[key], kind):
            raise BuildFileError(f"{path}: {where}.{key}: expected {_kind_name(kind)}, got {type(body[key]).__name__}")
    if body.get("shm_size") is not None and shm_bytes(body["shm_size"]) is None:
        raise BuildFileError(f"{path}: {where}.shm_size: {str(body['shm_size'])[:40]!r} is not a size (e.g. \"8gb\")")
    devices = _reserved_devices(body)
    for i, device in enumerate(devices):
        if not isinstance(device, dict):
            raise BuildFileError(f"{path}: {where}.deploy.resources.reservations.devices[{i}]: expected a mapping")
        caps = device.get("capabilities")
        if caps is not None and not (isinstance(caps, list) and all(isinstance(c, str) for c in caps)):
            raise BuildFileError(f"{path}: {where}.deploy.resources.reservations.devices[{i}].capabilities: "
                                 "expected a list of strings")


def _kind_name(kind) -> str:
    names = {str: "a string", dict: "a mapping", list: "a list", int: "a number"}
    kinds = kind if isinstance(kind, tuple) else (kind,)
    return " or ".join(names[k] for k in kinds)


def _reserved_devices(body: dict) -> list:
    deploy = body.get("deploy") or {}
    resources = deploy.get("resources") if isinstance(deploy, dict) else None
    reservations = resources.get("reservations") if isinstance(resources, dict) else None
    devices = reservations.get("devices") if isinstance(reservations, dict) else None
    return devices if isinstance(devices, list) else []


def environment(body: dict) -> dict[str, Optional[str]]:
    env = body.get("environment")
    if isinstance(env, dict):
        return {str(k): (None if v is None else str(v)) for k, v in env.items() if _is_scalar(v) or v is None}
    found: dict[str, Optional[str]] = {}
    for item in env if isinstance(env, list) else []:
        if not _is_scalar(item):  # a list in a list (an alias of an alias...): not a variable; never str() it
            continue
        name, sep, value = str(item).partition("=")
        found[name] = value if sep else None
    return found


def _is_scalar(value) -> bool:
    return isinstance(value, (str, int, float, bool))


def _gpu_access(body: dict) -> tuple[Optional[str], list[dict]]:
    """How the service gets GPUs: "deploy", "gpus", "runtime" or None; and the device requests."""
    gpu_devices = [d for d in _reserved_devices(body) if isinstance(d, dict) and
                   ("gpu" in (d.get("capabilities") or []) or d.get("driver") == "nvidia")]
    if gpu_devices:
        return "deploy", gpu_devices
    gpus = body.get("gpus")
    if gpus == "all":
        return "gpus", [{"count": "all"}]
    if isinstance(gpus, list) and gpus:
        return "gpus", [g for g in gpus if isinstance(g, dict)]
    if body.get("runtime") == "nvidia":
        return "runtime", []
    return None, []


def _judge_build(service: Service, base_dir: Path, platform: Optional[str], host: Optional[dict],
                 judgement: ComposeJudgement):
    from envdoctor.container.judge import judge_dockerfile

    build = service.data.get("build")
    if build is None:
        return None
    spec = {"context": build} if isinstance(build, str) else build
    context = substitute(str(spec.get("context") or "."), {})
    if "://" in context or context.startswith("git@"):
        judgement.not_read.append({"service": service.name, "what": f"build context {context} (remote)"})
        return None
    context_dir = (base_dir / context).resolve()
    if isinstance(spec.get("dockerfile_inline"), str):
        from envdoctor.container.judge import judge_parsed
        from envdoctor.container.parse import parse_dockerfile

        try:
            parsed = parse_dockerfile(spec["dockerfile_inline"], f"{service.name}: dockerfile_inline")
            return judge_parsed(parsed, str(context_dir), spec.get("target"), platform, host)
        except BuildFileError as exc:
            judgement.not_read.append({"service": service.name, "what": str(exc)})
            return None
    dockerfile = context_dir / substitute(str(spec.get("dockerfile") or "Dockerfile"), {})
    args = spec.get("args") or {}
    if isinstance(args, list):
        args = dict(str(a).partition("=")[::2] for a in args)
    try:
        return judge_dockerfile(str(dockerfile), str(context_dir), spec.get("target"), spec.get("platforms", [None])[0]
                                if isinstance(spec.get("platforms"), list) else platform, host,
                                {str(k): str(v) for k, v in args.items() if v is not None})
    except BuildFileError as exc:
        judgement.not_read.append({"service": service.name, "what": str(exc)})
        return None


# --- findings of one service ----------------------------------------------------------------------

def service_findings(service: Service, build, host: Optional[dict]) -> Iterable[Located]:
    body = service.data
    how, devices = _gpu_access(body)
    wants_gpu = _wants_gpu(body, build)
    if how == "deploy":
        yield from _device_requests(service, devices)
    if how == "runtime":
        yield _located(service, "runtime", Finding(
            code="container-gpu-missing", severity="warning", section="nvidia",
            title=f"service {service.name}: `runtime: nvidia` is the deprecated way to ask for GPUs",
            detail=("`runtime: nvidia` needs the nvidia-docker2 runtime registered in the Docker daemon; current Docker "
                    "Compose requests GPUs with a device reservation (or `gpus:`), which works with the NVIDIA "
                    "container toolkit alone."),
            fix=("Replace it with: deploy: {resources: {reservations: {devices: [{driver: nvidia, count: all, "
                 "capabilities: [gpu]}]}}}",)),
            "deploy: {resources: {reservations: {devices: [{driver: nvidia, count: all, capabilities: [gpu]}]}}}")
    if how is None and wants_gpu:
        yield _located(service, "", Finding(
            code="container-gpu-missing", severity="error", section="nvidia",
            title=f"service {service.name} runs GPU code but asks for no GPU",
            detail=("Without a device reservation (`deploy.resources.reservations.devices` with `capabilities: [gpu]`) "
                    "or `gpus:`, the container starts with no /dev/nvidia* devices and no driver libraries: the "
                    "frameworks find no GPU and run on the CPU (or fail: \"Found no NVIDIA driver on your system\")."),
            fix=("Add to the service: deploy: {resources: {reservations: {devices: [{driver: nvidia, count: all, "
                 "capabilities: [gpu]}]}}}",)),
            "deploy: {resources: {reservations: {devices: [{driver: nvidia, count: all, capabilities: [gpu]}]}}}")
    yield from _visible_devices(service, how, devices)
    if wants_gpu or how:
        yield from _shared_memory(service, build)


def _wants_gpu(body: dict, build) -> bool:
    from envdoctor.container import base_images
    from envdoctor.container.to_facts import gpu_intended

    if build is not None and gpu_intended(build.described):
        return True
    image = body.get("image")
    if isinstance(image, str) and build is None:
        described = base_images.describe(substitute(image, {}))
        return bool(described.cuda or described.framework_cuda or described.l4t)
    return False


def _device_requests(service: Service, devices: list[dict]) -> Iterable[Located]:
    for i, device in enumerate(devices):
        caps = device.get("capabilities")
        if caps is None or "gpu" not in caps:
            yield _located(service, f"deploy.resources.reservations.devices[{i}]", Finding(
                code="container-gpu-missing", severity="error", section="nvidia",
                title=f"service {service.name}: the GPU device request has no `capabilities: [gpu]`",
                detail=("The Compose specification requires `capabilities` on a device request, and Docker matches a "
                        "GPU only for the `gpu` capability: without it the deployment fails (\"could not select device "
                        "driver \\\"nvidia\\\" with capabilities: []\") or no GPU is attached."),
                fix=("Add `capabilities: [gpu]` to the device request",)), "capabilities: [gpu]")
        if "count" in device and "device_ids" in device:
            yield _located(service, f"deploy.resources.reservations.devices[{i}]", Finding(
                code="cuda-visible-devices", severity="error", section="nvidia",
                title=f"service {service.name}: a device request has both `count` and `device_ids`",
                detail="The Compose specification makes them exclusive; Docker refuses the service.",
                fix=("Keep one: `device_ids` to choose GPUs, or `count`",)), None)


def _visible_devices(service: Service, how: Optional[str], devices: list[dict]) -> Iterable[Located]:
    env = environment(service.data)
    nvd = env.get("NVIDIA_VISIBLE_DEVICES")
    if nvd is not None and nvd.strip().lower() in ("void", "none", ""):
        yield _located(service, "environment", Finding(
            code="container-gpu-missing", severity="error", section="nvidia",
            title=f"service {service.name}: NVIDIA_VISIBLE_DEVICES={nvd or '(empty)'} hides every GPU",
            detail="The NVIDIA container toolkit mounts no GPU when NVIDIA_VISIBLE_DEVICES is void, none or empty.",
            fix=("Remove NVIDIA_VISIBLE_DEVICES from the service's environment (let the device request choose)",)),
            None)
    given = _given_count(devices)
    cvd = env.get("CUDA_VISIBLE_DEVICES")
    if cvd is None or given is None:
        if nvd and how == "deploy" and any("device_ids" in d for d in devices) and nvd.lower() != "all":
            yield _located(service, "environment", Finding(
                code="cuda-visible-devices", severity="warning", section="nvidia",
                title=f"service {service.name}: NVIDIA_VISIBLE_DEVICES and device_ids both choose GPUs",
                detail="Two settings select the container's GPUs; when they disagree, which one wins depends on the runtime.",
                fix=("Keep only the device request's device_ids",)), None)
        return
    tokens = [t.strip() for t in cvd.split(",") if t.strip()]
    bad = [t for t in tokens if t.isdigit() and int(t) >= given]
    if not tokens or bad:
        yield _located(service, "environment", Finding(
            code="cuda-visible-devices", severity="error", section="nvidia",
            title=(f"service {service.name}: CUDA_VISIBLE_DEVICES={cvd or '(empty)'} names a GPU the container does not "
                   f"have (it gets {given})"),
            detail=("Inside the container the GPUs it was given are numbered from 0; CUDA_VISIBLE_DEVICES selects among "
                    "those, so a host index like this one hides them all: \"no CUDA-capable device is detected\"."),
            fix=(f"Choose the GPU with the device request (device_ids) and set CUDA_VISIBLE_DEVICES to "
                 f"{','.join(str(i) for i in range(given))} or remove it",)),
            f"CUDA_VISIBLE_DEVICES: \"{','.join(str(i) for i in range(given))}\"")


def _given_count(devices: list[dict]) -> Optional[int]:
    total = 0
    for device in devices:
        if isinstance(device.get("device_ids"), list):
            total += len(device["device_ids"])
        elif isinstance(device.get("count"), int):
            total += device["count"]
        else:
            return None  # all GPUs of the host: how many is the host's
    return total or None


def _shared_memory(service: Service, build) -> Iterable[Located]:
    body = service.data
    if str(body.get("ipc") or "") in ("host", "shareable") or not _runs_torch(body, build):
        return
    size = shm_bytes(body.get("shm_size"))
    if size is not None and size >= 1024 ** 3:
        return
    now = "not set (Docker's default 64 MB)" if size is None else f"{body.get('shm_size')}"
    yield _located(service, "shm_size" if "shm_size" in body else "", Finding(
        code="shm-too-small", severity="warning", section="platform",
        title=f"service {service.name}: /dev/shm is {now}, too small for PyTorch DataLoader workers and NCCL",
        detail=("DataLoader workers (num_workers > 0) pass batches through shared memory, and NCCL uses it between "
                "processes; with 64 MB a worker dies with \"Bus error\" / \"unable to write to file </torch_...>\" / "
                "\"DataLoader worker ... is killed by signal\"."),
        fix=("Give the service more shared memory: shm_size: \"8gb\" (or ipc: host)",)), "shm_size: \"8gb\"")


def _runs_torch(body: dict, build) -> bool:
    from envdoctor.container import base_images

    if build is not None:
        return "torch" in build.described.facts["python"]["packages"] or build.described.base.family in _GPU_FRAMEWORK_IMAGES
    image = body.get("image")
    if isinstance(image, str):
        described = base_images.describe(substitute(image, {}))
        return "torch" in described.packages or (described.family == "ngc" and "pytorch" in described.repository)
    return False


def shm_bytes(value) -> Optional[int]:
    """A compose size (an int of bytes, "64m", "8gb", "1.5g") in bytes; None when unset or not a size."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if value >= 0 else None
    text = str(value)
    match = _SIZE.match(text) if len(text) <= 40 else None  # 40 characters: no float overflows to inf
    if not match:
        return None
    return int(float(match.group(1)) * 1024 ** " kmgt".index(match.group(2).lower() or " "))


def _located(service: Service, key: str, finding: Finding, corrected: Optional[str]) -> Located:
    line = service.lines.get(key) if key else None
    return Located(finding, line or service.line, corrected, None, service.name)
