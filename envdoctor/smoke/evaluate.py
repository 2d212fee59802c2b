"""Judge check results against the machine's Facts, and name the finding code behind a failure.

- `pre_skip`: a check that cannot apply here is skipped with its reason without starting a process.
- `compare_devices`: the devices a framework sees against what NVML / nvidia-smi sees.
- `explain_failure`: symptoms and error texts → a finding code, through the rows of
  matrices/smoke.toml; otherwise the diagnosis of this machine, when the failure involves the GPU.
"""

from __future__ import annotations

from typing import Callable, Mapping, Optional

from envdoctor.facts import Facts
from envdoctor.findings import render_fix
from envdoctor.smoke.catalog import Catalog, FrameworkSpec
from envdoctor.smoke.results import SmokeResult
from envdoctor.smoke.runner import TAIL_CHARS

NO_GPU_OOM = "no GPU: an out-of-memory round trip on the CPU would exhaust host memory"


def has_gpu_platform(facts: Facts) -> bool:
    """Could any framework see a GPU here? (NVIDIA GPUs, an AMD GPU, or a Jetson's integrated one.)"""
    return bool(facts.gpus or (facts.nvidia and facts.nvidia.pci_devices) or facts.amd or facts.jetson)


def pre_skip(check: str, device: str, facts: Facts) -> Optional[str]:
    """Why `check` cannot run here at all (so no subprocess is started), or None."""
    if check != "oom":
        return None
    if device == "cpu":
        return "--device cpu: an out-of-memory round trip on the CPU would exhaust host memory"
    if facts.jetson is not None:
        return "Jetson: the integrated GPU shares host memory, filling it would exhaust the host"
    if not has_gpu_platform(facts):
        return NO_GPU_OOM
    return None


def oom_env(environ: Mapping[str, str]) -> dict[str, str]:
    """The OOM check touches one device only: the first visible one."""
    env = dict(environ)
    visible = env.get("CUDA_VISIBLE_DEVICES")
    if visible is None:
        env["CUDA_VISIBLE_DEVICES"] = "0"
    else:
        env["CUDA_VISIBLE_DEVICES"] = visible.split(",")[0].strip()
    return env


def compare_devices(result: SmokeResult, facts: Facts, device: str,
                    environ: Optional[Mapping[str, str]] = None) -> SmokeResult:
    """A GPU that NVML lists but the framework does not see turns a passing devices check into a failure.

    Not when CUDA_VISIBLE_DEVICES deliberately selects some GPUs and the framework sees exactly those.
    """
    if result.check != "devices" or result.status != "pass":
        return result
    nvml = facts.gpus
    seen = int(result.details.get("gpu_count") or 0)
    details = dict(result.details, nvml_gpus=[g.name for g in nvml])
    if device == "cpu" or len(nvml) <= seen:
        return result.with_(details=details)
    visible = (environ or {}).get("CUDA_VISIBLE_DEVICES")
    selected = [v for v in (visible or "").split(",") if v.strip()]
    if seen and seen == len(selected):
        details["note"] = f"CUDA_VISIBLE_DEVICES={visible} selects {seen} of the {len(nvml)} GPU(s)"
        return result.with_(details=details)
    names = ", ".join(sorted({g.name or "?" for g in nvml}))
    reason = f"{result.framework} sees {seen} of the {len(nvml)} GPU(s) NVML lists ({names})"
    if result.output:  # what the framework said while looking for them (TF: "Cannot dlopen some GPU libraries")
        details["output_tail"] = result.output[-TAIL_CHARS:]
    return result.with_(status="fail", reason=reason, details=details)


def symptoms(result: SmokeResult, facts: Facts, environ: Mapping[str, str]) -> set[str]:
    found: set[str] = set()
    details = result.details
    gpu_expected = bool(facts.gpus)
    if result.check == "devices" and result.status == "fail" and "gpu_count" in details:
        found.add("gpu-not-seen")
    if (result.reason or "").startswith("--device cuda") and gpu_expected:
        found.add("gpu-not-seen")
    if "cuda_build" in details and not details["cuda_build"]:
        found.add("cpu-build")
    if environ.get("CUDA_VISIBLE_DEVICES") is not None:
        found.add("cuda-visible-devices")
    return found


def explain_failure(result: SmokeResult, spec: FrameworkSpec, catalog: Catalog, facts: Facts,
                    environ: Mapping[str, str], diagnosis: Callable[[], list]) -> SmokeResult:
    """Attach the finding code (and its explanation) to a failed or errored result."""
    if result.ok:
        return result
    seen = symptoms(result, facts, environ)
    text = "\n".join(filter(None, [result.reason, result.output, str(result.details.get("output_tail") or "")]))
    for rule in catalog.failures:
        if rule.matches(seen, text):
            return _with_code(result, rule.code, rule.explanation, rule.fix.replace("{install}", f"`{spec.install}`"))
    missing = _missing_optional(result, spec, catalog, facts, text)
    if missing:  # an optional dependency of the framework itself: said as what it is, with its install
        python = facts.python.executable or "python"
        reason = result.reason or ""
        if "optional module" not in reason:
            reason = f"{spec.name} needs the optional module '{missing}' here, which is not installed ({reason})"
        return result.with_(reason=reason, fix=render_fix((python, "-m", "pip", "install", missing)))
    if not (seen or _on_gpu(result)):
        return result
    for finding in diagnosis():
        if finding.severity != "error":
            continue
        if finding.code in catalog.machine_codes or (finding.code in catalog.framework_codes and _mentions(finding, spec)):
            return _with_code(result, finding.code, finding.title, render_fix(finding.fix[0]) if finding.fix else "")
    return result


def _missing_optional(result: SmokeResult, spec: FrameworkSpec, catalog: Catalog, facts: Facts, text: str) -> str:
    """The distribution to install when the failure is a missing optional dependency of the framework."""
    module = result.details.get("missing_module")
    if module:
        return str(module)
    for row in catalog.optional:
        if row.framework == spec.name and row.pattern.search(text) and not facts.python.packages.get(row.distribution):
            return row.distribution
    return ""


def _on_gpu(result: SmokeResult) -> bool:
    device = (result.device or "").lower()
    return bool(device) and not device.startswith("cpu")


def _mentions(finding, spec: FrameworkSpec) -> bool:
    text = " ".join([finding.title, *finding.evidence]).lower()
    return any(name in text for name in (spec.name, *spec.aliases, *spec.distributions))


def _with_code(result: SmokeResult, code: str, explanation: str, fix: str = "") -> SmokeResult:
    reason = result.reason or ""
    if explanation and explanation.lower() not in reason.lower():
        reason = f"{reason}: {explanation}" if reason else explanation
    return result.with_(code=code, reason=reason, fix=fix or result.fix)
