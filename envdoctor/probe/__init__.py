"""probe: read the machine into Facts. Decides nothing; never raises.

Every source runs concurrently and is bounded by a timeout; a failure becomes a ProbeError inside
Facts. Probes that need the target environment's package list (cuDNN wheels, --deep imports) run
after the Python probe, still in parallel with the rest.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import platform
import os
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Optional

from envdoctor.facts import Facts, Nvidia, ProbeError, PythonEnv

# Which probe records each block of Facts: a block whose probe ran is "recorded" (its null means none).
_BLOCK_PROBES = {"host": "host", "python": "python", "nvidia": "nvidia", "cuda_toolkit": "toolkit",
                 "cuda_toolkits": "toolkit", "cudnn": "cudnn", "jetson": "jetson", "amd": "amd", "frameworks": "deep",
                 "env": "env", "errors": "errors", "container": "container"}
DEFAULT_TIMEOUT = 5.0  # seconds per probe subprocess
DEFAULT_DEEP_TIMEOUT = 120.0  # seconds per framework import (--deep)


@dataclass
class ProbeContext:
    python: str  # the target interpreter
    root: Path = Path("/")  # filesystem root; tests (and ENVDOCTOR_ROOT) point it at a recorded tree
    environ: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))
    timeout: float = DEFAULT_TIMEOUT  # ENVDOCTOR_PROBE_TIMEOUT overrides it in collect()
    deep_timeout: float = DEFAULT_DEEP_TIMEOUT  # ENVDOCTOR_DEEP_TIMEOUT
    errors: list[ProbeError] = field(default_factory=list)
    target_machine: Optional[str] = None  # platform.machine() of the target interpreter (set by pyenv)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def error(self, probe: str, message: str) -> None:
        with self._lock:
            self.errors.append(ProbeError(probe, message))

    def path(self, absolute: str) -> Path:
        """A path on the probed machine (under `root`)."""
        return self.root / absolute.lstrip("/")


def timeout_from(environ: Mapping[str, str], name: str = "ENVDOCTOR_PROBE_TIMEOUT", default: float = DEFAULT_TIMEOUT) -> float:
    """A timeout in seconds from the environment (ENVDOCTOR_PROBE_TIMEOUT: per subprocess;
    ENVDOCTOR_DEEP_TIMEOUT: per framework import), else the default."""
    try:
        value = float(environ.get(name, ""))
    except ValueError:
        return default
    return value if 0 < value <= 3600 else default


def collect(python: Optional[str] = None, deep: bool = False, ctx: Optional[ProbeContext] = None) -> tuple[Facts, dict[str, float]]:
    """Probe this machine. Returns the Facts and the seconds each probe took."""
    from envdoctor.probe import amd, container, cudnn, envvars, host, jetson, nvidia, pyenv, toolkit

    if ctx is None:
        ctx = ProbeContext(python=pyenv.resolve_target(python, os.environ), root=Path(os.environ.get("ENVDOCTOR_ROOT") or "/"),
                           timeout=timeout_from(os.environ),
                           deep_timeout=timeout_from(os.environ, "ENVDOCTOR_DEEP_TIMEOUT", DEFAULT_DEEP_TIMEOUT))
    timings: dict[str, float] = {}

    def timed(name: str, fn: Callable[..., Any], *args: Any) -> Any:
        start = time.perf_counter()
        try:
            return fn(ctx, *args)
        except Exception as exc:  # a probe bug must not take the report down
            ctx.error(name, f"internal error: {type(exc).__name__}: {exc}")
            return None
        finally:
            timings[name] = round(time.perf_counter() - start, 4)

    def python_and_dependents(toolkit_future: Future) -> tuple[PythonEnv, Any, Any]:
        env = timed("python", pyenv.probe) or PythonEnv(executable=ctx.python)
        with ThreadPoolExecutor(max_workers=2) as inner:
            deep_future = None
            if deep:
                from envdoctor.probe import deep as deep_probe

                deep_future = inner.submit(timed, "deep", deep_probe.probe, env)
            toolkits = (toolkit_future.result() or (None, []))[1]
            cudnn_future = inner.submit(timed, "cudnn", cudnn.probe, env, toolkits)
            return env, cudnn_future.result(), deep_future.result() if deep_future else None

    with ThreadPoolExecutor(max_workers=8) as pool:
        toolkit_future = pool.submit(timed, "toolkit", toolkit.probe)
        futures = {
            "python": pool.submit(python_and_dependents, toolkit_future),
            "host": pool.submit(timed, "host", host.probe),
            "nvidia": pool.submit(timed, "nvidia", nvidia.probe),
            "toolkit": toolkit_future,
            "jetson": pool.submit(timed, "jetson", jetson.probe),
            "amd": pool.submit(timed, "amd", amd.probe),
            "env": pool.submit(timed, "env", envvars.probe),
            "container": pool.submit(timed, "container", container.probe),
        }
        results = {name: future.result() for name, future in futures.items()}

    python_env, cudnn_found, frameworks = results["python"]
    active, toolkits = results["toolkit"] or (None, [])
    failed = {e.probe for e in ctx.errors if e.message.startswith("internal error")}
    recorded = [b for b, probe in _BLOCK_PROBES.items() if probe not in failed and (deep or b != "frameworks")]
    facts = Facts(
        collected_at=dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        host=dataclasses.replace(host.for_target(results["host"] or Facts().host, ctx.target_machine),
                                 hostname=platform.node() or None),
        python=python_env,
        nvidia=results["nvidia"] or (Nvidia() if "nvidia" not in failed else None),
        cuda_toolkit=active,
        cuda_toolkits=toolkits,
        cudnn=cudnn_found or [],
        jetson=results["jetson"],
        amd=results["amd"],
        frameworks=frameworks or {},
        env=results["env"] or {},
        errors=sorted(ctx.errors, key=lambda e: e.probe),
        container=container.unread_lists(results["container"])[0],
        recorded=tuple(recorded),
        unrecorded=(frozenset() if deep else frozenset({"frameworks"})) | container.unread_lists(results["container"])[1],
    )
    return facts, timings
