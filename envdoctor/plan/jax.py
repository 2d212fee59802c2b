"""Plan a JAX install: which release, which CUDA plugin extra (`jax[cuda13]`, `jax[cuda12]`) or CPU.

`choose(facts, request)` walks the releases newest first (those `--version` allows) and, with an
NVIDIA GPU, the CUDA extras newest CUDA first (JAX recommends CUDA 13). It takes the first whose
jaxlib and plugin wheels exist for the target Python and platform, whose CUDA the driver runs
(CUDA 13 needs ≥ 580) and whose GPU minimum every GPU meets (CUDA 12: SM 5.2, CUDA 13: SM 7.5).
`jax[cudaNN]==V` keeps jax, jaxlib, the plugin and its PJRT package in step (plugin == jaxlib).

No CUDA plugin exists for native Windows (CPU plan + WSL2), macOS (CPU), or a Jetson (the aarch64
wheels are SBSA builds without Jetson kernels: a plain statement, CPU with --cuda cpu).
conda uses the community conda-forge packages (`jaxlib=*=*cuda*` for the GPU).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from envdoctor.errors import UsageError
from envdoctor.matrix import gpus as gpu_matrix
from envdoctor.matrix import jax as matrix
from envdoctor.matrix import jetson as jetson_matrix
from envdoctor.plan import Candidate, InstallPlan, PlanRequest
from envdoctor.plan import common
from envdoctor.plan.recipes import render

FRAMEWORK = "jax"
PLUGIN_PACKAGES = {"cuda12": ("jax-cuda12-plugin", "jax-cuda12-pjrt"),
                   "cuda13": ("jax-cuda13-plugin", "jax-cuda13-pjrt")}


@dataclass
class Option(common.Judged):
    release: matrix.Release
    build: str  # cuda13 | cuda12 | cpu
    plugin: Optional[matrix.Plugin] = None
    problems: list[tuple[str, str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def name(self) -> str:
        return f"jax {self.release.version} {self.build}"

    @property
    def gpu(self) -> bool:
        return self.build != "cpu"


def wanted(cuda: str) -> Optional[list[str]]:
    """--cuda -> the builds to try in order (None: auto)."""
    kind, version = common.cuda_request(cuda)
    if kind == "auto":
        return None
    if kind == "cpu":
        return ["cpu"]
    if kind == "rocm":
        raise UsageError("--cuda rocm: envdoctor plans no ROCm build of JAX (AMD's jax[rocm7-local] needs ROCm 7 "
                         "installed first)")
    major = version.split(".")[0] if kind == "cuda" else None
    if major in ("12", "13"):
        return [f"cuda{major}"]
    raise UsageError(f"--cuda {cuda!r}: JAX has CUDA 12 and CUDA 13 plugins; use auto, cpu, 12 or 13")


def releases(spec) -> list[matrix.Release]:
    return common.allowed_releases(matrix.releases(), spec)


def series_heads(spec) -> list[matrix.Release]:
    return common.series_heads(releases(spec))


# --- judging --------------------------------------------------------------------------------------

def judge(option: Option, facts, platform: str, python: Optional[str], ccs: list[str]) -> Option:
    option.problems.extend(common.wheel_problems(option.release, facts, platform, python, "jaxlib wheel"))
    if option.gpu:
        _judge_plugin(option, facts, platform, python, ccs)
    return option


def _judge_plugin(option: Option, facts, platform: str, python: Optional[str], ccs: list[str]) -> None:
    release, extra = option.release, option.build
    plugin = matrix.plugin_for(extra, release.version)
    wheels = release.plugin_pythons(extra, platform)
    if plugin is None or not release.plugin_wheels.get(extra):
        option.problems.append(("other", f"no jax-{extra}-plugin {release.jaxlib} on the registry"))
        return
    option.plugin = plugin
    if platform not in plugin.platforms or not wheels:
        option.problems.append(("platform", f"no {extra} plugin wheels for {platform}"))
        return
    if python and python not in wheels and python in release.pythons(platform):
        option.problems.append(("python", f"no jax-{extra}-plugin wheel for Python {python}"))
    check = _jetson_cuda_check(facts, plugin) if common.is_jetson(facts) else common.driver_check(facts, plugin.cuda_build)
    if check:
        option.notes.append(f"{extra}: {check.why} (the JAX docs ask ≥ {plugin.driver_linux} on Linux)")
    else:
        option.problems.append(("driver", check.why))
    minimum = gpu_matrix.cc_tuple(plugin.min_compute_capability)
    for cc in ccs:
        if gpu_matrix.cc_tuple(cc) < minimum:
            option.problems.append(("gpu", f"CUDA {plugin.cuda_major} JAX needs SM {plugin.min_compute_capability} "
                                           f"or newer, this GPU is sm_{cc.replace('.', '')}"))
            continue
        verdict = gpu_matrix.build_runs_on(plugin.archs, cc)
        how = verdict.reason if verdict else ("XLA compiles its kernels for this GPU at run time with the "
                                              "pip-installed ptxas")
        option.notes.append(f"sm_{cc.replace('.', '')}: {how}")


# --- choose ---------------------------------------------------------------------------------------

def choose(facts, request: PlanRequest) -> InstallPlan:
    spec = common.version_spec(request.version)
    builds = wanted(request.cuda)
    platform, python = common.target_platform(facts), common.target_python(facts)
    if common.is_jetson(facts) and builds != ["cpu"] and not _jetson_runs_registry_wheels(facts):
        return _jetson_statement(facts, request, python)
    if platform is None:
        return _nothing(request, python, [], [f"JAX publishes no wheels for {facts.host.os or '?'} {facts.host.arch or '?'}"])
    notes = common.Notes()
    note = matrix.platform_note(platform)
    if builds is None:
        builds = list(matrix.CUDA_EXTRAS) if common.has_nvidia_gpu(facts) else ["cpu"]
        if platform.startswith("macos") and note is not None:
            notes.warnings.append(note.note)
    if builds != ["cpu"]:
        if note is not None and not note.cuda:
            notes.warnings.append(f"no JAX CUDA plugin for {platform}: {note.note.rstrip('.')}; "
                                  f"this plan is the CPU build")
            if platform == "windows_amd64":
                notes.steps += render(FRAMEWORK, "windows-gpu-wsl2")[1]
            builds = ["cpu"]
    ccs = common.unique(common.gpu_capabilities(facts))
    judged: list[Option] = []
    for release in releases(spec):
        for build in builds:
            option = judge(Option(release, build), facts, platform, python, ccs)
            judged.append(option)
            if option.fits:
                if request.manager == "conda":
                    return _conda_plan(facts, request, platform, python, option, judged[:-1], notes)
                return _plan(facts, request, platform, python, option, judged[:-1], notes)
    return _nothing(request, python, judged, _fixes(judged, facts, platform, builds), notes)


def _packages(option: Option) -> list[str]:
    version = option.release.version
    return [f"jax[{option.build}]=={version}"] if option.gpu else [f"jax=={version}"]


def _stale(facts, option: Option) -> list[str]:
    """Installed CUDA plugin packages the plan does not use: a leftover plugin of another version
    makes JAX warn and ignore it, or (cuda13 over cuda12) shadows the chosen one."""
    installed = facts.python.packages or {}
    return [name for extra, names in PLUGIN_PACKAGES.items() if extra != option.build
            for name in names if name in installed]


def _replaces(facts) -> tuple[str, ...]:
    return common.installed_of(facts, ("jax", "jaxlib") + tuple(n for names in PLUGIN_PACKAGES.values() for n in names))


def _common_reasons(option: Option, request, platform, python) -> list[str]:
    release = option.release
    newest = common.newest_phrase(request)
    what = (f"with a {option.build} plugin the driver and every GPU can use" if option.gpu else "for the CPU")
    reasons = [f"jax {release.version} is {newest} with jaxlib wheels for Python {python or '?'} on {platform} {what}"]
    if option.gpu:
        plugin = option.plugin
        reasons.append(f"jax[{option.build}]=={release.version} installs jaxlib, jax-{option.build}-plugin and "
                       f"jax-{option.build}-pjrt all at {release.jaxlib} (the plugin must equal jaxlib) and "
                       f"CUDA {plugin.cuda_major} with cuDNN {plugin.cudnn} as pip wheels")
    return reasons


def _plan(facts, request, platform, python, option: Option, rejected_before, notes) -> InstallPlan:
    python_exe = facts.python.executable or "python"
    stale = _stale(facts, option)
    commands: tuple = ()
    if stale:
        commands, _ = render(FRAMEWORK, f"{request.manager}-uninstall", python=python_exe, packages=stale)
    install, steps = render(FRAMEWORK, f"{request.manager}-registry", python=python_exe, packages=_packages(option))
    reasons = _common_reasons(option, request, platform, python)
    if stale:
        reasons.append(f"first removing {', '.join(stale)}: a plugin that does not match jaxlib is ignored "
                       f"(or shadows the chosen one)")
    reasons += option.notes + _driver_hint(rejected_before, facts)
    return _finish(facts, request, python, option, tuple(commands) + tuple(install), steps, reasons,
                   rejected_before, notes)


def _conda_plan(facts, request, platform, python, option: Option, rejected_before, notes) -> InstallPlan:
    release = option.release
    packages = [f"jax={release.version}"]
    if option.gpu:
        packages.insert(0, f"jaxlib={release.jaxlib}=*cuda*")
        packages.append(f"cuda-version={option.plugin.cuda_major}")
    if facts.python.env_kind in ("conda", "conda-base") and facts.python.env_path:
        commands, steps = render(FRAMEWORK, "conda-forge-install", env_path=facts.python.env_path, packages=packages)
        where = f"into the conda environment {facts.python.env_path}"
    else:
        commands, steps = render(FRAMEWORK, "conda-forge-create", env_name="jax", python_version=python or "3.12",
                                 packages=packages)
        where = "into a new conda environment 'jax' (the target Python is not a conda environment)"
    reasons = _common_reasons(option, request, platform, python)[:1]
    reasons.append(f"conda-forge's community build of JAX {where}"
                   + ("; jaxlib=*=*cuda* selects its CUDA build" if option.gpu else ""))
    notes = common.Notes(notes.warnings + ["conda-forge's JAX is community-maintained and can lag the registry: "
                                           f"if the solver finds no jax {release.version}, drop the version pins"],
                         notes.steps)
    return _finish(facts, request, python, option, commands, steps, reasons + option.notes, rejected_before, notes)


def _finish(facts, request, python, option, commands, steps, reasons, rejected_before, notes) -> InstallPlan:
    warnings = list(notes.warnings)
    steps = tuple(steps) + tuple(notes.steps)
    if option.gpu and not common.gpu_capabilities(facts):
        warnings.append("could not tell the GPU's compute capability; the GPU minimum is not checked")
    if facts.host.wsl and option.gpu:
        warnings.append("NVIDIA GPUs under WSL2 are 'experimental' in the JAX docs")
    if facts.amd is not None and facts.amd.gpus and not option.gpu:
        warnings.append("AMD GPUs: envdoctor plans no ROCm build of JAX (jax[rocm7-local] needs ROCm 7 installed "
                        "first); this is the CPU build")
    installed = (facts.python.packages or {}).get("jax")
    warnings += common.target_env_warnings(facts)
    warnings += common.hazard_warnings(matrix.hazards(), option.release.version, installed, facts, option.gpu)
    return InstallPlan(
        framework=FRAMEWORK, version=option.release.version, build=option.build, python=python,
        manager=request.manager, commands=tuple(commands), reasons=tuple(reasons),
        rejected=common.rejections(rejected_before), warnings=tuple(warnings), replaces=_replaces(facts), steps=steps)


def _driver_hint(rejected_before: list[Option], facts) -> list[str]:
    for option in rejected_before:
        if option.plugin and option.kinds == {"driver"}:
            minimum = common.drivers.wheel_min_driver(option.plugin.cuda_build, common.driver_os(facts))
            return [common.driver_hint(minimum, option.name)]
    return []


def _nothing(request, python, judged, steps, notes=None) -> InstallPlan:
    notes = notes or common.Notes()
    return common.nothing(FRAMEWORK, "JAX", request, python, common.rejections(judged),
                          list(steps) + notes.steps, notes.warnings)


def _fixes(judged: list[Option], facts, platform: str, builds: list[str]) -> list[str]:
    if not judged:
        return ["no JAX release matches the requested version; see envdoctor matrix jax"]
    steps = []
    newest = judged[0]
    kinds = set().union(*(o.kinds for o in judged[: len(builds)]))
    if "python" in kinds:
        pythons = newest.release.pythons(platform)
        steps.append(f"use Python {common.python_span(pythons)} for jax {newest.release.version}")
    if "driver" in kinds:
        option = next(o for o in judged[: len(builds)] if o.plugin and "driver" in o.kinds)
        minimum = common.drivers.wheel_min_driver(option.plugin.cuda_build, common.driver_os(facts))
        steps.append(common.driver_step(facts, minimum, option.name))
    if all(o.kinds <= {"gpu"} for o in judged):
        steps.append("no JAX CUDA plugin supports this GPU")
    if builds != ["cpu"]:
        steps.append("or install the CPU build: --cuda cpu")
    return steps


def _jetson_runs_registry_wheels(facts) -> bool:
    """A Jetson whose JetPack row says the registry's aarch64 CUDA plugins carry its kernels (Thor)."""
    jetpack, soc = common.jetpack_of(facts)
    row = jetson_matrix.framework_source(jetpack, FRAMEWORK, soc)
    return row is not None and row.kind == "registry"


def _jetson_cuda_check(facts, plugin) -> common.DriverCheck:
    """On a Jetson whose JetPack runs the registry's plugins (Thor), the CUDA major its JetPack brings
    must be the plugin's; a Jetson's driver is its JetPack's, not a desktop driver number."""
    jetpack, soc = common.jetpack_of(facts)
    row = jetson_matrix.framework_source(jetpack, FRAMEWORK, soc)
    cuda = row.cuda if row is not None else None
    if cuda and cuda.split(".")[0] == plugin.cuda_build.split(".")[0]:
        return common.DriverCheck(True, None, f"JetPack {jetpack} brings CUDA {cuda}")
    return common.DriverCheck(False, None, f"JetPack {jetpack or '?'} brings CUDA {cuda or '?'}, "
                                           f"not the CUDA {plugin.cuda_build.split('.')[0]} this plugin is built for")


def _jetson_statement(facts, request, python) -> InstallPlan:
    jetpack, soc = common.jetpack_of(facts)
    row = jetson_matrix.framework_source(jetpack, FRAMEWORK, soc)
    note = f": {row.note}" if row is not None and row.note else ""
    return _nothing(request, python, [], [
        f"there is no JAX GPU build for Jetson (JetPack {jetpack or 'unknown'}){note}",
        "the registry's aarch64 CUDA plugins are built for SBSA servers, not for Jetson GPUs; use --cuda cpu "
        "for the CPU build, or a container that builds JAX for this JetPack"])


# --- the matrix view ------------------------------------------------------------------------------

def candidates(facts, request: PlanRequest) -> list[Candidate]:
    spec = common.version_spec(request.version)
    builds = wanted(request.cuda) or ["cuda13", "cuda12", "cpu"]
    platform, python = common.target_platform(facts), common.target_python(facts)
    if platform is None:
        return []
    ccs = common.unique(common.gpu_capabilities(facts))
    out = []
    for release in series_heads(spec):
        for build in builds:
            if build != "cpu" and not release.plugin_wheels.get(build):
                continue
            option = judge(Option(release, build), facts, platform, python, ccs)
            if build != "cpu" and common.is_jetson(facts) and not _jetson_runs_registry_wheels(facts):
                option.problems.insert(0, ("platform", "no JAX CUDA build for Jetson"))
            elif build != "cpu" and not common.has_nvidia_gpu(facts):
                option.problems.insert(0, ("platform", "no NVIDIA GPU on this machine"))
            verdict, why = option.verdict()
            pythons = release.plugin_pythons(build, platform) if build != "cpu" else release.pythons(platform)
            out.append(Candidate(release.version, build, verdict, why, tuple(pythons)))
    return out
