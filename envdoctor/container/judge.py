"""A Dockerfile judged end to end: parse -> the described machine -> `complete` -> `diagnose` (the
same rules as `check --facts`) + the build-file findings, each located on its Dockerfile line."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from envdoctor.container.findings import Located, all_findings
from envdoctor.container.parse import Dockerfile, read_dockerfile
from envdoctor.container.to_facts import Described, describe_stage
from envdoctor.findings import Finding
from envdoctor.matrix.host_compilers import version_numbers

SEVERITY_ORDER = {"error": 0, "warning": 1, "info": 2}
# Codes about the machine that runs the checks, which a build file does not describe.
_HOST_ONLY = {"no-nvidia-driver", "driver-library-mismatch", "toolkit-without-driver", "no-gpu-platform", "wsl-gpu-setup",
              "internal-error"}


@dataclass
class Judgement:
    dockerfile: Dockerfile
    described: Described
    facts: object  # the completed Facts
    findings: list[Located]

    def to_dict(self) -> dict:
        base = self.described.base
        return {
            "file": self.dockerfile.path,
            "base_image": {"reference": base.reference, "family": base.family, "line": self.described.from_line,
                           "distro": base.distro.label if base.distro else None, "cuda": base.cuda,
                           "flavour": base.flavour, "cudnn": base.cudnn, "nvcc": base.nvcc,
                           "require_cuda": base.require_cuda},
            "stages": [{"index": s.index, "name": s.name, "from": s.base, "line": s.line} for s in self.dockerfile.stages],
            "assumptions": list(self.described.assumptions),
            "not_read": [{"line": line, "what": what} for line, what in self.described.unresolved],
            "findings": [f.to_dict() for f in self.findings],
            "facts": self.facts.to_dict(),
        }


def load_host(path: Optional[str]) -> Optional[dict]:
    if not path:
        return None
    from envdoctor.facts import load_facts

    return load_facts(path).to_dict()  # validated: a bad file is a FactsError (exit 2)


def judge_dockerfile(path: str, context: Optional[str] = None, target: Optional[str] = None,
                     platform: Optional[str] = None, host: Optional[dict] = None,
                     build_args: Optional[dict[str, str]] = None) -> Judgement:
    dockerfile = read_dockerfile(path, build_args)
    return judge_parsed(dockerfile, context if context is not None else str(Path(path).resolve().parent),
                        target, platform, host)


def judge_parsed(dockerfile: Dockerfile, context: Optional[str], target: Optional[str] = None,
                 platform: Optional[str] = None, host: Optional[dict] = None) -> Judgement:
    from envdoctor.complete import complete
    from envdoctor.diagnose import diagnose
    from envdoctor.facts import Facts

    stage = dockerfile.stage(target)
    described = describe_stage(dockerfile, stage, context, platform, host)
    facts = complete(Facts.from_dict(described.facts))
    own = all_findings(described, dockerfile, (host or {}).get("nvidia", {}) and (host["nvidia"] or {}).get("driver_version"))
    ruled = [_locate(f, described, dockerfile, facts) for f in diagnose(facts) if f.code not in _HOST_ONLY]
    own_keys = {(f.finding.code, f.line) for f in own}
    merged = own + [f for f in ruled if (f.finding.code, f.line) not in own_keys and
                    not (f.finding.code == "cuda-libs-missing" and any(o.finding.code == "cuda-libs-missing" for o in own))]
    for located in merged:
        object.__setattr__(located, "file", dockerfile.path)
    merged.sort(key=lambda f: (SEVERITY_ORDER[f.finding.severity], f.line or 0))
    return Judgement(dockerfile, described, facts, merged)


def add_policy(judgement: Judgement, policy, service: Optional[str] = None) -> list[Located]:
    """`--expect POLICY` applied to the machine the build file describes (with the host's driver and GPUs
    from --facts), as `check --expect` applies it to a node: each deviation a policy-violation, located
    on the FROM line, added to the judgement (sorted in) and returned."""
    seen = [located.finding for located in judgement.findings]
    added = [Located(f, judgement.described.from_line, None, judgement.dockerfile.path, service)
             for f in policy.check(judgement.facts.to_dict(), seen)]
    judgement.findings.extend(added)
    judgement.findings.sort(key=lambda f: (SEVERITY_ORDER[f.finding.severity], f.line or 0))
    return added


_EVIDENCE_PATH = re.compile(r"^(python\.packages\.[a-z0-9._-]+|env\.[A-Za-z_0-9]+|python\.version|host\.glibc)=")


def _locate(finding: Finding, described: Described, dockerfile: Dockerfile, facts) -> Located:
    line = None
    for item in finding.evidence:
        match = _EVIDENCE_PATH.match(item)
        if match and match.group(1) in described.origins:
            line = described.origins[match.group(1)]
            break
    if line is None:
        line = described.from_line
    return Located(finding, line, _corrected(finding, described, dockerfile, facts, line))


def _corrected(finding: Finding, described: Described, dockerfile: Dockerfile, facts, line: int) -> Optional[str]:
    if finding.code == "library-path-shadowing":
        return _without_cuda_entries(described, facts)
    if finding.code == "cpu-only-build":
        return _gpu_install(finding, described)
    return None


def _without_cuda_entries(described: Described, facts) -> Optional[str]:
    from envdoctor.diagnose.environment import _cuda_entries

    ld = described.env.get("LD_LIBRARY_PATH") or ""
    flagged = set(_cuda_entries(ld, facts))
    kept = [e for e in ld.split(":") if e and e.rstrip("/") not in flagged]
    return f"ENV LD_LIBRARY_PATH={':'.join(kept)}" if kept else "# (remove the ENV LD_LIBRARY_PATH line)"


def _gpu_install(finding: Finding, described: Described) -> Optional[str]:
    """The install line for a CUDA build of the same release, from the framework matrices."""
    from envdoctor.diagnose import knowledge
    from envdoctor.diagnose._common import public

    packages = described.facts["python"]["packages"]
    platform_key = f"linux_{described.arch}"
    if "torch" in finding.title.split()[0]:
        version = str(public(packages.get("torch")))
        builds = knowledge.call("pytorch", "builds_for", version, platform_key) or ()
        cuda = [b for b in builds if b.cuda]
        if not cuda:
            return None
        newest = max(cuda, key=lambda b: version_numbers(b.cuda))
        companions = " ".join(f"{n}" for n in ("torchvision", "torchaudio") if n in packages)
        url = knowledge.call("pytorch", "index_url", newest.tag)
        return f"RUN pip install torch=={version} {companions} --index-url {url}".replace("  ", " ")
    if finding.title.startswith("tensorflow"):
        return f"RUN pip install \"tensorflow[and-cuda]=={public(packages.get('tensorflow') or packages.get('tensorflow-cpu'))}\""
    if finding.title.startswith("jaxlib"):
        return f"RUN pip install \"jax[cuda12]=={public(packages.get('jax') or packages.get('jaxlib'))}\""
    if finding.title.startswith("paddlepaddle"):
        return f"RUN pip install paddlepaddle-gpu=={public(packages.get('paddlepaddle'))} (from Paddle's index for your CUDA: envdoctor install paddle)"
    return None
