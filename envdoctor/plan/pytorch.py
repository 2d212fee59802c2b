"""Plan a PyTorch install for a machine: which release, which build, from where, and how.

`choose(facts, request)` walks the releases newest first (the newest patch of each series that the
version request allows) and, within a release, the registry's default wheel first (no extra index),
then the builds on PyTorch's index (newest CUDA first, then ROCm, then CPU). It picks the first
option whose wheel exists for the target Python and platform, whose CUDA the driver can run and whose
kernels cover every GPU — and says why, and why the options before it were rejected.

Jetson is its own path: only the JetPack-matched source from matrices/jetson.toml, never a generic
aarch64 wheel. conda uses conda-forge (`pytorch` + `cuda-version`), never the `pytorch` channel.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Optional

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from envdoctor.errors import UsageError
from envdoctor.matrix import gpus as gpu_matrix
from envdoctor.matrix import jetson as jetson_matrix
from envdoctor.matrix import pytorch as matrix
from envdoctor.plan import Candidate, InstallPlan, PlanRequest
from envdoctor.plan import common
from envdoctor.plan.recipes import render

FRAMEWORK = "pytorch"
PACKAGES = ("torch", "torchvision", "torchaudio")
CONDA_SUBDIRS = {"linux_x86_64": "linux-64", "linux_aarch64": "linux-aarch64",
                 "windows_amd64": "win-64", "macos_arm64": "osx-arm64"}


# --- the request ----------------------------------------------------------------------------------

def version_spec(text: Optional[str]) -> Optional[SpecifierSet]:
    """'2.6' -> ==2.6.* ; '2.6.0' -> ==2.6.0 ; '>=2.5,<2.8' as written (UsageError if neither)."""
    return common.version_spec(text)


def wanted_tag(cuda: str) -> Optional[str]:
    """--cuda value -> a build tag ('cu128', 'rocm6.4', 'cpu'; mps is the CPU/MPS wheel) or None for auto."""
    kind, version = common.cuda_request(cuda)
    if kind == "auto":
        return None
    if kind in ("cpu", "metal"):
        return "cpu"
    if kind == "rocm":
        return f"rocm{version}"
    if "." not in version:
        raise UsageError(f"--cuda {cuda!r}: PyTorch builds name a CUDA minor too: 12.8 or cu128")
    return matrix.tag_of_cuda(version)


# --- one option: a release and a build, judged for this machine -----------------------------------

@dataclass
class Option(common.Judged):
    release: matrix.Release
    tag: str  # cu128 | rocm6.4 | cpu | mps
    build: Optional[matrix.Build]  # the index build (kernels) when known
    from_registry: bool  # the registry's default wheel: no --index-url
    problems: list[tuple[str, str]] = field(default_factory=list)  # (verdict key, why)
    notes: list[str] = field(default_factory=list)  # why it fits, one line each

    @property
    def name(self) -> str:
        return f"torch {self.release.version} {self.tag}"


@dataclass
class Machine:
    """What the planner needs to know about the target, computed once."""

    platform: Optional[str]
    python: Optional[str]
    ccs: list[str]  # NVIDIA compute capabilities
    gpu_names: dict[str, str]  # cc -> a GPU name with it
    gfx: list[str]  # AMD targets
    nvidia_present: bool  # GPUs or NVIDIA PCI devices seen (with or without a driver)

    @property
    def gpu_kind(self) -> str:
        """The accelerator the hardware has: cuda | rocm | cpu."""
        if self.nvidia_present:
            return "cuda"
        if self.gfx:
            return "rocm"
        return "cpu"

    @property
    def accelerator(self) -> str:
        """The accelerator PyTorch builds can use here: the hardware's, if any build is for this platform."""
        kind = self.gpu_kind
        if kind != "cpu" and self.platform not in matrix.platforms_with(kind):
            return "cpu"
        return kind


def machine_of(facts) -> Machine:
    ccs = common.gpu_capabilities(facts)
    names = {}
    for gpu in facts.gpus:
        cc = gpu.compute_capability or gpu_matrix.compute_capability_for_name(gpu.name or "")
        if cc:
            names.setdefault(cc, gpu.name or "GPU")
    gfx = common.unique(g.gfx for g in (facts.amd.gpus if facts.amd else []) if g.gfx)
    nvidia_present = bool(facts.gpus or (facts.nvidia and facts.nvidia.pci_devices))
    return Machine(common.target_platform(facts), common.target_python(facts), common.unique(ccs), names,
                   gfx, nvidia_present)


def options_for(release: matrix.Release, platform: str) -> list[Option]:
    """The registry's default wheel first, then the index builds not already covered by it."""
    found = []
    default = release.default_build.get(platform)
    if default:
        found.append(Option(release, default, matrix.build(release.version, default, platform), True))
    for b in matrix.builds_for(release.version, platform):
        if b.tag != default:
            found.append(Option(release, b.tag, b, False))
    return found


def judge(option: Option, facts, machine: Machine) -> Option:
    release, platform = option.release, machine.platform
    if machine.python and machine.python not in release.pythons(platform):
        have = ", ".join(release.pythons(platform)) or "none"
        option.problems.append(("python", f"no wheel for Python {machine.python} on {platform} (has {have})"))
    _judge_os(option, facts, platform)
    if option.build and option.build.kind == "cuda":
        _judge_cuda(option, facts, machine)
    elif option.build and option.build.kind == "rocm":
        _judge_rocm(option, machine)
    return option


def _older(have: Optional[str], need: Optional[str]) -> bool:
    if not have or not need:
        return False
    try:
        return Version(have) < Version(need)
    except Exception:
        return False


def _judge_os(option: Option, facts, platform: str) -> None:
    """The wheel's OS floor for this platform and architecture (torch 2.6's aarch64 wheels need
    glibc 2.28 while its x86_64 ones need 2.17; Intel Mac wheels need macOS 10.9, arm64 ones 11.0)."""
    glibc, macos = option.release.glibc_for(platform), option.release.macos_for(platform)
    if facts.host.os == "linux" and _older(facts.host.glibc, glibc):
        option.problems.append(("platform", f"needs glibc ≥ {glibc}, you have {facts.host.glibc}"))
    if facts.host.os == "macos" and _older(facts.host.os_version, macos):
        option.problems.append(("platform", f"needs macOS ≥ {macos}, you have {facts.host.os_version}"))


def _judge_cuda(option: Option, facts, machine: Machine) -> None:
    build = option.build
    check = common.driver_check(facts, build.cuda)
    if not check:
        option.problems.append(("driver", check.why))
    else:
        option.notes.append(f"{option.tag}: {check.why}")
    for cc in machine.ccs:
        problem, why = common.kernels_check(facts, build.archs, build.cuda, cc)
        if problem:
            option.problems.append((problem, why))
        else:
            option.notes.append(f"{machine.gpu_names.get(cc, 'GPU')} (sm_{cc.replace('.', '')}): {why}")
    if not build.confirmed:
        option.notes.append(f"{option.tag} kernel list rests on build scripts, not a scanned wheel")


def _judge_rocm(option: Option, machine: Machine) -> None:
    if not machine.gfx:
        option.problems.append(("gpu", "no AMD GPU found"))
        return
    missing = [g for g in machine.gfx if g not in option.build.gfx]
    if missing:
        option.problems.append(("gpu", f"no kernels for {', '.join(missing)} (build has {', '.join(option.build.gfx)})"))
    else:
        option.notes.append(f"{option.tag}: has kernels for {', '.join(machine.gfx)}")


# --- which options to consider --------------------------------------------------------------------

def candidate_releases(spec: Optional[SpecifierSet]) -> list[matrix.Release]:
    """Newest first; the newest allowed patch of each series."""
    return common.series_heads(common.allowed_releases(matrix.releases(), spec))


def wanted_options(release: matrix.Release, machine: Machine, tag: Optional[str]) -> list[Option]:
    """The options of a release this request and this machine's accelerator allow."""
    options = options_for(release, machine.platform)
    if tag == "cpu":
        return [o for o in options if o.tag in ("cpu", "mps")]
    if tag is not None:
        return [o for o in options if o.tag == tag]
    if machine.platform.startswith("macos"):
        return options
    kind = machine.accelerator
    if kind == "cpu":
        return [o for o in options if o.tag in ("cpu", "mps")]
    return [o for o in options if o.build is not None and o.build.kind == kind]


# --- choose ---------------------------------------------------------------------------------------

def choose(facts, request: PlanRequest) -> InstallPlan:
    spec = version_spec(request.version)
    tag = wanted_tag(request.cuda)
    machine = machine_of(facts)
    if common.is_jetson(facts) and tag != "cpu":
        return _choose_jetson(facts, request, machine, spec)
    if machine.platform is None:
        return _nothing(request, machine, [], [f"no PyTorch wheels for {facts.host.os or '?'} "
                                                f"{facts.host.arch or '?'}"], [])
    if request.manager == "conda":
        return _choose_conda(facts, request, machine, spec, tag)
    judged: list[Option] = []
    for release in candidate_releases(spec):
        for option in wanted_options(release, machine, tag):
            judge(option, facts, machine)
            judged.append(option)
            if option.fits:
                return _plan(facts, request, machine, option, judged[:-1])
    if tag is not None and tag != "cpu":
        forced = next((o for o in judged if all(k in ("driver", "gpu") for k, _ in o.problems)), None)
        if forced is not None:  # the user asked for this build: give it, with the problems as warnings
            return _plan(facts, request, machine, forced, [], extra_warnings=[f"{forced.tag}, as asked: {w}" for _, w in forced.problems])
    return _nothing(request, machine, judged, _fixes(judged, machine, tag, spec, facts), _driver_warnings(facts, machine))


def _packages(release: matrix.Release, facts) -> list[str]:
    """torch and its companions from the same build, pinned (torchaudio only where it still exists)."""
    installed = facts.python.packages or {}
    packages = [f"torch=={release.version}"]
    if release.torchvision:
        packages.append(_requirement("torchvision", release.torchvision))
    same_series_audio = release.torchaudio and matrix.series_of(release.torchaudio) == release.series
    if release.torchaudio and (same_series_audio or "torchaudio" in installed):
        packages.append(_requirement("torchaudio", release.torchaudio))
    return packages


def _requirement(name: str, version: str) -> str:
    """'0.23.0' -> 'torchvision==0.23.0'; a specifier ('>=0.29.1,<0.30') is kept as written."""
    return f"{name}=={version}" if version[:1].isdigit() else f"{name}{version}"


def _replaces(facts) -> tuple[str, ...]:
    return common.installed_of(facts, PACKAGES)


def _other_build(facts, planned: Optional[str]) -> list[str]:
    """The installed torch packages to remove first: pip would keep an installed torch of another
    build that satisfies the requirement (`planned`: the version installed, "2.6.0+cu126"; None when
    unpinned, as on a Jetson index)."""
    installed = facts.python.packages or {}
    have = installed.get("torch")
    if have is None or have == planned:
        return []
    if planned is not None:
        try:
            if Version(have).public != Version(planned).public:
                return []  # another version: the pin replaces it
        except Exception:
            return []
    return [name for name in PACKAGES if name in installed]


def _removal_reason(facts, remove: list[str]) -> str:
    return (f"first removing {', '.join(remove)}: pip would keep the installed torch {facts.python.packages['torch']} "
            f"(another build that satisfies the requirement)")


def _with_removal(request, facts, python: str, remove: list[str], commands: tuple) -> tuple:
    if not remove:
        return commands
    uninstall, _ = render(FRAMEWORK, f"{request.manager}-uninstall", python=python, packages=remove)
    return tuple(uninstall) + tuple(commands)


def _hazard_warnings(version: str, facts, gpu_plan: bool) -> list[str]:
    """Upgrade hazards crossed from the installed torch; on a fresh install those of this series."""
    installed = (facts.python.packages or {}).get("torch")
    found = matrix.hazards_for(version, installed)
    if installed is None:
        found = tuple(h for h in found if h.since == matrix.series_of(version))
    return [h.text for h in found if (h.os is None or h.os == facts.host.os)
            and (h.build is None or (h.build == "gpu") == gpu_plan)]


def _unusable_gpu(machine: Machine) -> list[str]:
    if machine.gpu_kind != machine.accelerator:
        name = {"cuda": "CUDA", "rocm": "ROCm"}[machine.gpu_kind]
        return [f"PyTorch publishes no {name} build for {machine.platform}: this is the CPU build"]
    return []


def _driver_warnings(facts, machine: Machine) -> list[str]:
    nvidia = facts.nvidia
    if nvidia and nvidia.failure:
        return [f"the NVIDIA driver is not working ({nvidia.failure}): fix it before installing a CUDA build"]
    if machine.nvidia_present and not common.driver_version(facts) and not common.is_jetson(facts):
        return ["an NVIDIA GPU is present but no NVIDIA driver is loaded"]
    return []


def _env_warnings(facts) -> list[str]:
    warnings = common.target_env_warnings(facts)
    if facts.host.rosetta:
        warnings.append("this Python runs under Rosetta (x86_64): an arm64 Python gets current releases with MPS")
    return warnings


def _plan(facts, request, machine, option: Option, rejected_before: list[Option],
          extra_warnings: Optional[list[str]] = None) -> InstallPlan:
    release = option.release
    index_url = None if option.from_registry else matrix.index_url(option.tag)
    recipe = f"{request.manager}-{'registry' if option.from_registry else 'index'}"
    python = facts.python.executable or "python"
    commands, steps = render(FRAMEWORK, recipe, python=python, packages=_packages(release, facts), index_url=index_url)
    planned = release.version if option.from_registry or not index_url else f"{release.version}+{option.tag}"
    remove = _other_build(facts, planned)
    commands = _with_removal(request, facts, python, remove, commands)
    build = "mps" if option.tag == "mps" else option.tag
    reasons = [_headline(option, machine, request, forced=bool(extra_warnings))]
    if option.from_registry:
        reasons.append(f"the registry's default torch {release.version} wheel for {machine.platform} is "
                       f"{'the CPU/MPS build' if build == 'mps' else build}: no extra index needed")
    else:
        default = release.default_build.get(machine.platform)
        if default and default != option.tag:
            reasons.append(f"the registry's default {release.version} wheel is {default}, which does not fit; "
                           f"installing {option.tag} from {index_url}")
        else:
            reasons.append(f"installing {option.tag} from {index_url}")
    if remove:
        reasons.append(_removal_reason(facts, remove))
    reasons.extend(option.notes)
    hint = _driver_hint(rejected_before + [option], option, facts)
    if hint:
        reasons.append(hint)
    warnings = list(extra_warnings or []) + _driver_warnings(facts, machine) + _unusable_gpu(machine)
    if machine.accelerator == "cuda" and not machine.ccs:
        warnings.append("could not tell the GPU's compute capability; kernels for it are not checked")
    if machine.platform == "macos_x86_64":
        warnings.append(f"Intel Macs get no PyTorch wheels after {matrix.index().intel_mac_last}")
    gpu_plan = bool(option.build and option.build.kind != "cpu")
    warnings += _env_warnings(facts) + _hazard_warnings(release.version, facts, gpu_plan)
    return InstallPlan(
        framework=FRAMEWORK, version=release.version, build=build, python=machine.python,
        manager=request.manager, index_url=index_url, commands=commands, reasons=tuple(reasons),
        rejected=common.dedupe_rejections((common.rejected(o.name, o.why)
                                           for o in rejected_before), limit=15),
        warnings=tuple(warnings), replaces=_replaces(facts), steps=steps)


def _headline(option: Option, machine: Machine, request: PlanRequest, forced: bool = False) -> str:
    what = {"cuda": "whose CUDA the driver runs and whose kernels cover every GPU",
            "rocm": "with kernels for every AMD GPU", "cpu": "for the CPU"}
    kind = option.build.kind if option.build else "cpu"
    if forced:  # it does not fit this machine: the warnings say why
        what = {kind: f"as asked (--cuda {option.tag}), though it does not fit this machine"}
    newest = common.newest_phrase(request)
    return (f"torch {option.release.version} is {newest} with a build for Python {machine.python or '?'} "
            f"on {machine.platform} {what.get(kind, '')}".rstrip())


def _nothing(request, machine, judged: list[Option], steps: list[str], warnings: list[str]) -> InstallPlan:
    rejected = common.dedupe_rejections((common.rejected(o.name, o.why) for o in judged), limit=12)
    return common.nothing(FRAMEWORK, "PyTorch", request, machine.python, rejected, steps, warnings)


def _fixes(judged: list[Option], machine: Machine, tag: Optional[str], spec, facts) -> list[str]:
    """What to change so that something fits, read off the newest option not blocked by the GPU."""
    if not judged:
        what = f"a {tag} build" if tag else "a build"
        return [f"no PyTorch release has {what} for {machine.platform}"
                + (" in the requested versions" if spec else "") + "; try another --cuda or --version"]
    steps: list[str] = []
    fixable = [o for o in judged if not any(k == "gpu" for k, _ in o.problems)]
    if not fixable:
        archs = ", ".join(f"sm_{cc.replace('.', '')}" for cc in machine.ccs) or ", ".join(machine.gfx)
        steps.append(f"no PyTorch build{' in the requested versions' if spec else ''} has kernels for "
                     f"{'every GPU here' if len(machine.ccs) > 1 else 'this GPU'} ({archs})")
        if len(machine.ccs) > 1:
            steps.append("choose GPUs of one generation with CUDA_VISIBLE_DEVICES and plan again")
    else:
        newest = fixable[0]
        kinds = newest.kinds
        if "python" in kinds:
            pythons = newest.release.pythons(machine.platform)
            steps.append(f"use Python {pythons[0]}–{pythons[-1]} for torch {newest.release.version}")
        if "driver" in kinds and newest.build and newest.build.cuda:
            minimum = common.driver_needed(facts, newest.build.cuda, newest.build.archs)
            steps.append(common.driver_step(facts, minimum, newest.name))
        steps.extend(f"{why} for torch {newest.release.version}" for k, why in newest.problems if k == "platform")
    if machine.accelerator != "cpu" and tag is None:
        steps.append("or install the CPU build: --cuda cpu")
    return steps


def _driver_hint(judged: list[Option], chosen: Option, facts) -> Optional[str]:
    """'a driver ≥ 580 would allow torch 2.15.0 cu132' when only the driver held a newer option back."""
    for option in judged:
        if option is chosen:
            return None
        if option.kinds == {"driver"} and option.build and option.build.cuda:
            minimum = common.driver_needed(facts, option.build.cuda, option.build.archs)
            return common.driver_hint(minimum, option.name)
    return None


# --- Jetson ---------------------------------------------------------------------------------------

def _choose_jetson(facts, request, machine: Machine, spec) -> InstallPlan:
    jetpack, soc, sources = _jetson_sources(facts)
    if not sources or not any(s.available for s in sources):
        note = next((s.note for s in sources if s.note), None)
        return _nothing(request, machine, [], [
            f"there is no PyTorch build for JetPack {jetpack or 'unknown'}"
            + (f" on {soc}" if soc else "") + (f": {note}" if note else ""),
            "a generic aarch64 wheel would not run on this GPU; use NVIDIA's L4T PyTorch container "
            "or --cuda cpu for the CPU build"], [])
    problems: list[tuple[str, str]] = []
    for source in (s for s in sources if s.available):
        if machine.python and source.python and machine.python != source.python:
            problems.append((f"JetPack {jetpack} {source.kind}", f"built for Python {source.python}, "
                                                                  f"the target is {machine.python}"))
            continue
        if request.manager == "conda":
            problems.append((f"JetPack {jetpack} {source.kind}", "not packaged for conda; use --manager pip or uv"))
            continue
        if source.kind == "official":
            plan = _jetson_official(facts, request, machine, spec, source, jetpack)
            if plan.ok:
                return plan
            problems.extend((r.candidate, r.why) for r in plan.rejected)
            continue
        version = _jetson_version(source)
        if spec is not None and version and not spec.contains(version.split("+")[0], prereleases=True):
            problems.append((f"JetPack {jetpack} {source.kind}", f"has torch {version}, not {request.version}"))
            continue
        return _jetson_plan(facts, request, machine, source, jetpack, version, problems, spec)
    python_fix = next((s.python for s in sources if s.available and s.python), None)
    steps = [f"use Python {python_fix} (the JetPack {jetpack} system python3) in a venv: "
             f"python3 -m venv --system-site-packages ~/venv"] if python_fix else []
    plan = _nothing(request, machine, [], steps, [])
    return dataclasses.replace(plan, rejected=tuple(common.rejected(c, w) for c, w in problems))


def _jetson_version(source) -> Optional[str]:
    return source.versions[0] if source.versions else None


def _jetson_build(source, jetpack: Optional[str], facts) -> str:
    cuda = source.cuda or (facts.jetson.cuda if facts.jetson else None)
    line = (jetpack or "?").split(".")[0]
    return f"jp{line}-cu{cuda.replace('.', '')}" if cuda else f"jp{line}"


def _jetson_plan(facts, request, machine, source, jetpack, version, rejected, spec=None) -> InstallPlan:
    python = facts.python.executable or "python3"
    if source.wheel_url:
        commands, steps = render(FRAMEWORK, f"jetson-{request.manager}-wheel", python=python,
                                 wheel_url=source.wheel_url)
        index_url = None
    else:
        torch = f"torch=={version}" if version else f"torch{spec}" if spec else "torch"
        packages = [torch, "torchvision"]
        commands, steps = render(FRAMEWORK, f"jetson-{request.manager}-index", python=python,
                                 packages=packages, index_url=source.index_url)
        index_url = source.index_url
    remove = _other_build(facts, version)
    commands = _with_removal(request, facts, python, remove, commands)
    model = facts.jetson.model if facts.jetson and facts.jetson.model else "Jetson"
    reasons = [f"{model} on JetPack {jetpack}: "
               f"PyTorch comes from the JetPack-matched source ({source.kind}), never a generic aarch64 wheel",
               f"source: {source.wheel_url or source.index_url}"]
    if remove:
        reasons.append(_removal_reason(facts, remove))
    if source.note:
        reasons.append(source.note)
    warnings = []
    if version is None:
        warnings.append(f"the versions on {source.index_url} change over time; pip takes the newest there")
    if source.wheel_url:
        warnings.append("NVIDIA publishes no torchvision wheel for this JetPack: build torchvision from source "
                        "at the release matching this torch")
    warnings += _env_warnings(facts)
    return InstallPlan(
        framework=FRAMEWORK, version=version or request.version or "latest", build=_jetson_build(source, jetpack, facts),
        python=machine.python, manager=request.manager, index_url=index_url, commands=commands,
        reasons=tuple(r for r in reasons if r), rejected=tuple(common.rejected(c, w) for c, w in rejected),
        warnings=tuple(warnings), replaces=_replaces(facts), steps=steps)


def _jetson_official_options(machine: Machine, spec, source):
    """Judged options of a Jetson whose GPU the official SBSA wheels support (Thor), newest first.

    The driver comes with the JetPack, so only Python and kernels are judged here."""
    tag = source.index_url.rstrip("/").rsplit("/", 1)[-1]
    machine = Machine("linux_aarch64", machine.python, machine.ccs or [], machine.gpu_names, [], True)
    for release in candidate_releases(spec):
        b = matrix.build(release.version, tag, "linux_aarch64")
        if b is None:
            continue
        option = Option(release, tag, b, False)
        if machine.python and machine.python not in release.pythons("linux_aarch64"):
            option.problems.append(("python", f"no wheel for Python {machine.python}"))
        for cc in machine.ccs:
            verdict = gpu_matrix.build_runs_on(b.archs, cc)
            (option.notes.append(verdict.reason) if verdict
             else option.problems.append(("gpu", verdict.reason)))
        yield machine, option


def _jetson_official(facts, request, machine, spec, source, jetpack) -> InstallPlan:
    """A Jetson whose GPU the official SBSA wheels support (Thor): the index named by the source."""
    judged = []
    for sbsa, option in _jetson_official_options(machine, spec, source):
        judged.append(option)
        if option.fits:
            plan = _plan(facts, request, sbsa, option, judged[:-1])
            reasons = (f"Jetson on JetPack {jetpack}: the official SBSA {option.tag} wheels carry kernels for this GPU",
                       ) + plan.reasons
            return dataclasses.replace(plan, reasons=reasons, index_url=source.index_url)
    return _nothing(request, machine, judged, [], [])


def _jetson_sources(facts):
    jetpack, soc = common.jetpack_of(facts)
    return jetpack, soc, list(jetson_matrix.framework_sources(jetpack, FRAMEWORK, soc))


def _jetson_candidates(facts, machine: Machine, spec) -> list[Candidate]:
    """The matrix view of a Jetson: what `_choose_jetson` considers, judged the same way."""
    jetpack, _, sources = _jetson_sources(facts)
    out = []
    for source in (s for s in sources if s.available):
        if source.kind == "official":
            for _, option in _jetson_official_options(machine, spec, source):
                verdict, why = option.verdict()
                out.append(Candidate(option.release.version, option.tag, verdict, why,
                                     option.release.pythons("linux_aarch64")))
            continue
        version = _jetson_version(source) or "latest"
        python_ok = not (machine.python and source.python and machine.python != source.python)
        why = "" if python_ok else f"built for Python {source.python}, the target is {machine.python}"
        out.append(Candidate(version, _jetson_build(source, jetpack, facts), "fits" if python_ok else "python", why,
                             (source.python,) if source.python else ()))
    return out


# --- conda ----------------------------------------------------------------------------------------

def _choose_conda(facts, request, machine: Machine, spec, tag) -> InstallPlan:
    subdir = CONDA_SUBDIRS.get(machine.platform)
    rows = matrix.conda_forge_for(subdir) if subdir else ()
    if not rows:
        return _nothing(request, machine, [], [f"conda-forge has no PyTorch for {machine.platform}; use --manager pip"], [])
    row = rows[0]
    version = f"{row.series}.0"
    if spec is not None and not any(spec.contains(r.version, prereleases=True) for r in matrix.releases()
                                    if r.series == row.series):
        return _nothing(request, machine, [], [f"conda-forge's newest PyTorch here is {row.series}; for "
                                               f"{request.version} use --manager pip or uv"], [])
    if machine.accelerator == "rocm" and tag != "cpu":
        return _nothing(request, machine, [], ["conda-forge has no ROCm build of PyTorch; use --manager pip "
                                               "(ROCm wheels) or --cuda cpu"], [])
    rejected, chosen_cuda, notes = [], None, []
    if machine.accelerator == "cuda" and tag != "cpu" and not machine.platform.startswith("macos"):
        for cuda in sorted(row.cuda, key=lambda c: tuple(int(p) for p in c.split(".")), reverse=True):
            if tag is not None and tag != matrix.tag_of_cuda(cuda):
                continue
            check = common.driver_check(facts, cuda)
            checks = [common.kernels_check(facts, row.archs[cuda], cuda, cc) for cc in machine.ccs]
            bad = [why for problem, why in checks if problem]
            if check and not bad:
                chosen_cuda, notes = cuda, [f"cuda-version {cuda}: {check.why}"]
                break
            rejected.append(common.rejected(f"conda-forge pytorch {row.series} cuda {cuda}",
                                            "; ".join(([] if check else [check.why]) + bad)))
        if chosen_cuda is None:
            return dataclasses.replace(_nothing(request, machine, [], ["use --manager pip, or --cuda cpu"], []),
                                       rejected=tuple(rejected))
    series = row.series
    if chosen_cuda:
        packages = [f"pytorch={series}=cuda*", "torchvision", f"cuda-version={chosen_cuda}"]
        build = matrix.tag_of_cuda(chosen_cuda)
    else:
        packages = [f"pytorch={series}" + ("" if machine.platform.startswith("macos") else "=cpu*"), "torchvision"]
        build = "mps" if machine.platform == "macos_arm64" else "cpu"
    kind = facts.python.env_kind
    if kind in ("conda", "conda-base") and facts.python.env_path:
        commands, steps = render(FRAMEWORK, "conda-forge-install", env_path=facts.python.env_path, packages=packages)
        target = f"into the conda environment {facts.python.env_path}"
    else:
        commands, steps = render(FRAMEWORK, "conda-forge-create", env_name="torch",
                                 python_version=machine.python or "3.12", packages=packages)
        target = "into a new conda environment 'torch' (the target Python is not a conda environment)"
    reasons = [f"conda-forge's newest PyTorch for {subdir} is {series} (the pytorch channel stopped at "
               f"{matrix.index().pytorch_conda_channel_last}); installing {target}"] + notes
    warnings = _hazard_warnings(version, facts, bool(chosen_cuda)) + (_env_warnings(facts) if kind == "conda-base" else [])
    return InstallPlan(framework=FRAMEWORK, version=series, build=build, python=machine.python,
                       manager="conda", commands=commands, reasons=tuple(reasons), rejected=tuple(rejected),
                       warnings=tuple(warnings), replaces=_replaces(facts), steps=steps)


# --- the matrix view ------------------------------------------------------------------------------

def candidates(facts, request: PlanRequest) -> list[Candidate]:
    """Every (release, build) for this platform judged with the same checks `choose` uses.

    Builds for an accelerator the machine lacks are "platform"; a CPU build on a GPU machine
    "fits" with why = "CPU only" (`choose` takes it only with --cuda cpu)."""
    spec = version_spec(request.version)
    tag = wanted_tag(request.cuda)
    machine = machine_of(facts)
    if common.is_jetson(facts) and tag != "cpu":
        return _jetson_candidates(facts, machine, spec)
    if machine.platform is None:
        return []
    out = []
    for release in candidate_releases(spec):
        considered = {o.tag for o in wanted_options(release, machine, tag)}
        for option in options_for(release, machine.platform):
            if tag is not None and option.tag not in considered:
                continue
            judge(option, facts, machine)
            kind = option.build.kind if option.build else "cpu"
            if option.tag not in considered and kind != "cpu":
                verdict, why = "platform", f"{option.tag} is for another accelerator than this machine's"
            elif option.fits:
                verdict, why = "fits", "CPU only" if option.tag not in considered else ""
            else:
                verdict, why = option.verdict()
            out.append(Candidate(release.version, option.tag, verdict, why, release.pythons(machine.platform)))
    return out
