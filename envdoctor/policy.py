"""`--expect FILE`: a small TOML policy a team commits, applied to one node's facts.

    driver = ">=570"              # packaging specifiers; a bare version "570" means "==570.*"
    gpus = 8                      # exact count, or a specifier string ">=4"
    gpu_model = "NVIDIA H100*"    # shell-style glob every GPU's name must match
    torch = "==2.8.*"             # any framework key: torch, tensorflow, jax, jaxlib, paddle
    torch_build = "cu128"         # "<framework>_build": cu128 | cpu | rocm6.4
    cuda_toolkit = "12.8"
    cudnn = ">=9"
    python = "3.12"
    driver_cuda = ">=12.8"
    forbid = ["cpu-only-build"]   # finding codes that must not appear

Every deviation is a `policy-violation` finding (error) naming the rule and the value seen; a rule
whose fact the node did not record is a `policy-violation` warning ("cannot judge"), never a pass.
A malformed policy raises PolicyError naming the line (exit 2).
"""

from __future__ import annotations

import fnmatch
import re
import sys
from dataclasses import dataclass
from typing import Any, Iterable

from envdoctor.errors import UsageError
from envdoctor.findings import Finding
from envdoctor.values import FRAMEWORK_DISTRIBUTIONS, NONE, gpu_list, node_values

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

CODE = "policy-violation"
MAX_POLICY_BYTES = 256_000
VERSION_RULES = {"driver": ("driver_version", "nvidia", "driver version"),
                 "driver_cuda": ("driver_cuda", "nvidia", "driver's CUDA"),
                 "cuda_toolkit": ("cuda_toolkit", "toolkit", "CUDA toolkit"),
                 "cudnn": ("cudnn", "cudnn", "cuDNN"),
                 "python": ("python", "python", "Python")}
for _fw in FRAMEWORK_DISTRIBUTIONS:
    VERSION_RULES[_fw] = (_fw, "frameworks", _fw)
BUILD_RULES = {f"{fw}_build": fw for fw in FRAMEWORK_DISTRIBUTIONS if fw != "jaxlib"}
OTHER_RULES = ("gpus", "gpu_model", "forbid")
KNOWN_RULES = tuple(VERSION_RULES) + tuple(BUILD_RULES) + OTHER_RULES
_BARE_VERSION = re.compile(r"^v?\d+(\.\d+)*$")


class PolicyError(UsageError):
    """A policy file that cannot be read or understood (exit 2, naming the line)."""


@dataclass(frozen=True)
class Policy:
    path: str
    rules: tuple[tuple[str, Any], ...]  # (rule, value) in file order; values validated

    def check(self, facts: dict, findings: Iterable[Finding] = ()) -> list[Finding]:
        """The policy-violation findings for one node (facts in their JSON form)."""
        values = node_values(facts)
        out: list[Finding] = []
        for rule, wanted in self.rules:
            out.extend(_judge(rule, wanted, facts, values, list(findings)))
        return out


def load_policy(path: str) -> Policy:
    from envdoctor.facts import FactsError, read_bounded

    import os
    import stat

    try:
        info = os.stat(path)
    except OSError as exc:
        raise PolicyError(f"cannot read policy file {path}: {exc.strerror or exc}") from None
    if stat.S_ISDIR(info.st_mode):
        raise PolicyError(f"policy file {path} is a directory, not a TOML file")
    if stat.S_ISREG(info.st_mode) and info.st_size > MAX_POLICY_BYTES:
        raise PolicyError(f"policy file {path} is over {MAX_POLICY_BYTES // 1000} kB; a policy is a few lines")
    try:
        text = read_bounded(path, "policy file", MAX_POLICY_BYTES)
    except FactsError as exc:
        raise PolicyError(str(exc)) from None
    except OSError as exc:
        raise PolicyError(f"cannot read policy file {path}: {exc.strerror or exc}") from None
    return parse_policy(text, path)


def parse_policy(text: str, path: str = "(text)") -> Policy:
    try:
        data = tomllib.loads(text)
    except RecursionError:  # arrays or inline tables nested thousands deep: tomllib recurses
        raise PolicyError(f"policy {path}: not valid TOML: nested too deeply") from None
    except tomllib.TOMLDecodeError as exc:
        message = str(exc).replace("(at end of document)", f"(at line {max(1, len(text.splitlines()))}, the end)")
        raise PolicyError(f"policy {path}: not valid TOML: {message}") from None
    rules = []
    for rule, value in data.items():
        where = f"policy {path}, line {_line_of(text, rule)}"
        if rule not in KNOWN_RULES:
            raise PolicyError(f"{where}: unknown rule {_show(rule)!r} (known: {', '.join(KNOWN_RULES)})")
        rules.append((rule, _validate(rule, value, where)))
    return Policy(path, tuple(rules))


def _line_of(text: str, key: str) -> int:
    pattern = re.compile(rf"^\s*[\"']?{re.escape(key)}[\"']?\s*=")
    for number, line in enumerate(text.splitlines(), 1):
        if pattern.match(line):
            return number
    return 1


def _validate(rule: str, value: Any, where: str) -> Any:
    if rule == "forbid":
        if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
            raise PolicyError(f"{where}: forbid must be a list of finding codes, e.g. [\"cpu-only-build\"]")
        return tuple(value)
    if rule == "gpus":
        if isinstance(value, bool) or not isinstance(value, (int, str)) or (isinstance(value, int) and value < 0):
            raise PolicyError(f"{where}: gpus must be a count (8) or a specifier (\">=4\")")
        return value if isinstance(value, int) else _specifier(value, where, rule)
    if not isinstance(value, str) or not value.strip():
        example = _EXAMPLES.get(rule, '">=1.0"')
        raise PolicyError(f"{where}: {rule} must be a string, e.g. {example}")
    if rule == "gpu_model" or rule in BUILD_RULES:
        return value.strip()
    return _specifier(value, where, rule)


_EXAMPLES = {"gpu_model": '"NVIDIA H100*"', "torch_build": '"cu128"', "driver": '">=570"'}


def _specifier(text: str, where: str, rule: str):
    from packaging.specifiers import InvalidSpecifier, SpecifierSet

    text = text.strip()
    if _BARE_VERSION.match(text):
        text = f"=={text.lstrip('v')}.*"
    try:
        return SpecifierSet(text)
    except InvalidSpecifier:
        raise PolicyError(f"{where}: {rule} = {_show(text)!r} is not a version specifier (e.g. \">=570\", \"==2.8.*\")") from None


def _finding(rule: str, section: str, title: str, detail: str, severity: str = "error",
             evidence: tuple[str, ...] = ()) -> Finding:
    return Finding(code=CODE, severity=severity, section=section, title=title, detail=detail,
                   fix=("Bring the node to the policy, or change the policy if the change was intended.",),
                   evidence=(f"policy.{rule}",) + evidence)


# Why a rule's fact can be missing, by the block it comes from (only frameworks need --deep).
_WHY_UNKNOWN = {
    "nvidia": "the NVIDIA driver probe failed or timed out, or the facts were recorded without it",
    "toolkit": "the CUDA toolkit probe did not run or failed",
    "cudnn": "the cuDNN probe did not run or failed",
    "python": "the Python probe did not run or failed",
    "frameworks": "the Python package list was not recorded, or `envdoctor facts --deep` was not run",
}


def _unknown(rule: str, section: str, what: str, why: str = "") -> Finding:
    reason = why or _WHY_UNKNOWN.get(section, "a probe failed or did not run")
    return _finding(rule, section, f"policy {rule}: {what} unknown, cannot judge",
                    f"The policy's rule {rule} needs the {what}, which this node's facts do not record "
                    f"({reason}); it is neither met nor broken.", severity="warning")


def _judge(rule: str, wanted: Any, facts: dict, values: dict, findings: list[Finding]) -> list[Finding]:
    if rule == "forbid":
        hit = sorted({f.code for f in findings if f.code in wanted})
        return [_finding(rule, "platform", f"policy forbid: {code} found",
                         f"The policy forbids finding {code}, and this node has it.", evidence=(f"finding={code}",))
                for code in hit]
    if rule == "gpus":
        gpus = gpu_list(facts)
        if gpus is None:
            return [_unknown(rule, "nvidia", "GPU count")]
        ok = len(gpus) == wanted if isinstance(wanted, int) else wanted.contains(str(len(gpus)), prereleases=True)
        return [] if ok else [_finding(rule, "nvidia", f"policy gpus {_show(wanted)}: {len(gpus)} seen",
                                       f"The policy wants {_show(wanted)} GPUs; this node shows {len(gpus)}.",
                                       evidence=(f"nvidia.gpus={len(gpus)}",))]
    if rule == "gpu_model":
        gpus = gpu_list(facts)
        if gpus is None:
            return [_unknown(rule, "nvidia", "GPU model")]
        names = [str(g.get("name") or "") for g in gpus]
        wrong = sorted({n for n in names if n and not fnmatch.fnmatchcase(n, wanted)})
        if not gpus:
            wrong = ["no GPU"]
        elif not wrong and not all(names):  # a GPU whose name was not read: cannot judge it
            return [_unknown(rule, "nvidia", "GPU model", "a GPU's name was not read")]
        return [_finding(rule, "nvidia", f"policy gpu_model {_show(wanted)}: {_show(name)} seen",
                         f"The policy wants every GPU to match {_show(wanted)!r}; this node has {_show(name)}.",
                         evidence=(f"nvidia.gpus[].name={_show(name)}",)) for name in wrong]
    if rule in BUILD_RULES:
        fw = BUILD_RULES[rule]
        seen = values.get(f"{fw}_build")
        if seen is None:
            return [_unknown(rule, "frameworks", f"{fw} build")]
        return [] if seen == wanted.lower() else [_finding(
            rule, "frameworks", f"policy {rule} {_show(wanted)}: {_show(seen)} seen",
            f"The policy wants the {_show(wanted)} build of {fw}; this node has {'no ' + fw if seen == NONE else _show(seen)}.",
            evidence=(f"{fw}.build={_show(seen)}",))]
    key, section, what = VERSION_RULES[rule]
    seen = values.get(key)
    if seen is None:
        return [_unknown(rule, section, what)]
    if seen.startswith("failed ("):  # the driver probe failed ("failed (NVML timed out)"): not a version
        return [_unknown(rule, section, what, f"the driver probe {_show(seen)}")]
    if _meets(seen, wanted):
        return []
    return [_finding(rule, section, f"policy {rule} {_show(wanted)}: {_show(seen)} seen",
                     f"The policy wants {what} {_show(wanted)}; this node has {_show(seen)}.", evidence=(f"{key}={_show(seen)}",))]


def _meets(seen: str, wanted) -> bool:
    """Every version seen (cuDNN may list several) satisfies the specifier; "none" or garbage does not."""
    from packaging.version import InvalidVersion, Version

    for part in seen.split(", "):
        try:
            if not wanted.contains(Version(part), prereleases=True):
                return False
        except InvalidVersion:
            return False
    return True


ECHO_LIMIT = 80  # a policy value or fact echoed in a finding or an error is cut to this many characters


def _show(value: Any) -> str:
    """A policy value (or a fact) as echoed in findings: at most ECHO_LIMIT characters, then "…"."""
    text = str(value)
    return text if len(text) <= ECHO_LIMIT else text[:ECHO_LIMIT] + "…"
