"""plan: Facts + a request → an InstallPlan. Offline and instant; prints nothing.

Each framework has a module here (`pytorch`, `tensorflow`, `jax`, `paddle`) with
`choose(facts, request) -> InstallPlan`; it reads what is supported from matrices/ and how to
install it from recipes/. `make_plan` is the single entry point the CLI and the diagnosis use.
A module may also offer `candidates(facts, request) -> list[Candidate]` for `envdoctor matrix`
(see the contract above `evaluate_all` below).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Optional

from envdoctor.errors import UsageError

FRAMEWORK_ALIASES = {
    "pytorch": "pytorch", "torch": "pytorch",
    "tensorflow": "tensorflow", "tf": "tensorflow",
    "jax": "jax",
    "paddle": "paddle", "paddlepaddle": "paddle",
}
MANAGERS = ("pip", "uv", "conda")


@dataclass(frozen=True)
class PlanRequest:
    framework: str  # canonical: pytorch | tensorflow | jax | paddle
    version: Optional[str] = None  # a PEP 440 specifier or exact version, e.g. "2.6", ">=2.5,<2.8"
    cuda: str = "auto"  # auto | cpu | "12.8" | "cu128" | "rocm6.4"
    manager: str = "pip"  # pip | uv | conda
    index_url: Optional[str] = None  # --index-url / ENVDOCTOR_INDEX: instead of the vendor's index
    mirror: Optional[str] = None  # --mirror NAME: a known mirror of the vendor's index (recipes/mirrors.toml)
    registry: Optional[tuple[str, str]] = None  # (URL, where set): this machine's configured default registry


@dataclass(frozen=True)
class Rejected:
    candidate: str  # "torch 2.15 cu132"
    why: str  # "needs driver ≥ 580, you have 570.124.04"


@dataclass(frozen=True)
class InstallPlan:
    framework: str
    version: Optional[str]  # None when nothing fits
    build: Optional[str]  # cpu | cu128 | rocm6.4 | jp6-cu126 | metal | ...
    python: Optional[str]  # the target Python version the plan is for
    manager: str
    index_url: Optional[str] = None
    commands: tuple[tuple[str, ...], ...] = ()  # argv lists, run in order
    reasons: tuple[str, ...] = ()
    rejected: tuple[Rejected, ...] = ()
    warnings: tuple[str, ...] = ()
    replaces: tuple[str, ...] = ()  # installed distributions this plan replaces ("torch 2.5.1+cpu")
    steps: tuple[str, ...] = ()  # things to do by hand (system packages, driver update)

    @property
    def ok(self) -> bool:
        return self.version is not None and bool(self.commands)

    def to_dict(self) -> dict:
        return {
            "framework": self.framework,
            "version": self.version,
            "build": self.build,
            "python": self.python,
            "manager": self.manager,
            "index_url": self.index_url,
            "commands": [list(c) for c in self.commands],
            "reasons": list(self.reasons),
            "rejected": [{"candidate": r.candidate, "why": r.why} for r in self.rejected],
            "warnings": list(self.warnings),
            "replaces": list(self.replaces),
            "steps": list(self.steps),
        }


def canonical_framework(name: str) -> str:
    key = FRAMEWORK_ALIASES.get(name.strip().lower())
    if key is None:
        import difflib

        close = difflib.get_close_matches(name.lower(), list(FRAMEWORK_ALIASES), n=1)
        hint = f"; did you mean '{close[0]}'?" if close else ""
        raise UsageError(f"unknown framework '{name}' (choose pytorch, tensorflow, jax or paddle){hint}")
    return key


def make_plan(facts, request: PlanRequest) -> InstallPlan:
    from envdoctor.plan.recipes import apply_indexes

    from envdoctor.matrix.freshness import unknown_releases

    module = importlib.import_module(f"envdoctor.plan.{request.framework}")
    plan = apply_indexes(module.choose(facts, request), request)
    stale = unknown_releases(request.framework)
    if not stale:
        return plan
    from dataclasses import replace

    return replace(plan, warnings=tuple(plan.warnings) + (stale,))


# --- the matrix view: every candidate judged for this machine ---------------------------------------
#
# CONTRACT FOR FRAMEWORK MODULES (envdoctor/plan/<framework>.py), used by `envdoctor matrix`:
#
#     def candidates(facts, request) -> list[Candidate]
#
# One `Candidate` per (release, build) the framework publishes for this platform (newest release
# first; within a release the builds in the order the planner prefers them), each judged for this
# machine with the SAME checks `choose()` uses, so the table and the plan never disagree.
# `request.version` narrows the releases when set; `request.cuda` ("cpu", "12.8", "cu128",
# "rocm6.4") narrows the builds when not "auto". `verdict` is one of VERDICTS; a build for an
# accelerator the machine does not have (ROCm on an NVIDIA box, CUDA on a Mac or an AMD box) is
# "platform", and `envdoctor matrix` hides a build whose every cell is "platform" unless --all.
# A CPU build on a GPU machine "fits" (with why = "CPU only"). It is optional: when a
# module has no `candidates`, `evaluate_all` returns None and the matrix says "not available yet".

VERDICTS = {
    "fits": "fits this machine",
    "driver": "driver too old",
    "gpu": "no kernels for your GPU",
    "python": "no wheel for your Python",
    "platform": "not for this machine",  # another platform or accelerator: ROCm without an AMD GPU, CUDA without an NVIDIA GPU
    "other": "does not fit",
}


@dataclass(frozen=True)
class Candidate:
    version: str  # "2.9.1"
    build: str  # cpu | cu128 | rocm6.4 | jp6-cu126 | metal | ...
    verdict: str = "fits"  # a key of VERDICTS
    why: str = ""  # one line for a person: "cu130 needs driver ≥ 580, you have 570.124.04"
    pythons: tuple[str, ...] = ()  # Python versions with a wheel of this build here ("3.10", "3.11")

    @property
    def fits(self) -> bool:
        return self.verdict == "fits"

    def to_dict(self) -> dict:
        return {"version": self.version, "build": self.build, "verdict": self.verdict,
                "why": self.why, "pythons": list(self.pythons)}


def evaluate_all(facts, request: PlanRequest) -> Optional[list[Candidate]]:
    """Every (release, build) judged for this machine, or None when the framework module does not
    offer `candidates()` yet."""
    module = importlib.import_module(f"envdoctor.plan.{request.framework}")
    candidates = getattr(module, "candidates", None)
    if candidates is None:
        return None
    return list(candidates(facts, request))
