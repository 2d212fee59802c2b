"""Plan a PaddlePaddle install: which release, CPU (`paddlepaddle`) or a CUDA build of
`paddlepaddle-gpu` from Paddle's own index (https://www.paddlepaddle.org.cn/packages/stable/cuXYZ/).

`choose(facts, request)` walks the releases newest first and, with an NVIDIA GPU, the CUDA builds
of each newest CUDA first. It takes the first build that exists for the target platform and Python,
whose driver minimum the driver meets (Paddle's documented minimum, else the toolkit's own driver),
whose CUDA can build kernels for every GPU, and whose GPU minimum every GPU meets. 2.6 builds need
CUDA and cuDNN on the system; they are chosen only when the system toolkit matches.

GPU builds exist for Linux x86_64 and Windows only: Linux aarch64 and macOS get the CPU build with a
warning; a Jetson gets a plain statement (no official Paddle GPU wheels). CPU and GPU Paddle must not
be installed together: the plan removes the other one first.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from envdoctor.errors import UsageError
from envdoctor.matrix import drivers
from envdoctor.matrix import gpus as gpu_matrix
from envdoctor.matrix import jetson as jetson_matrix
from envdoctor.matrix import paddle as matrix
from envdoctor.plan import Candidate, InstallPlan, PlanRequest
from envdoctor.plan import common
from envdoctor.plan.recipes import render

FRAMEWORK = "paddle"


@dataclass
class Option(common.Judged):
    release: matrix.Release
    build: str  # cu126 | cpu
    problems: list[tuple[str, str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def name(self) -> str:
        return f"paddle {self.release.version} {self.build}"

    @property
    def gpu(self) -> bool:
        return self.build != "cpu"

    @property
    def from_registry(self) -> bool:
        return not self.gpu or self.build == self.release.registry_gpu_build

    def pythons(self, platform: str) -> tuple[str, ...]:
        """The Python versions with a wheel of this build for `platform`."""
        return self.release.gpu_pythons(self.build, platform) if self.gpu else self.release.pythons(platform)


def wanted(cuda: str) -> Optional[str]:
    """--cuda -> None (auto), 'cpu', or a build id ('cu126')."""
    kind, version = common.cuda_request(cuda)
    if kind == "auto":
        return None
    if kind == "cpu":
        return "cpu"
    if kind == "rocm":
        raise UsageError("--cuda rocm: envdoctor plans no ROCm build of PaddlePaddle")
    if kind == "cuda" and "." in version:
        return "cu" + version.replace(".", "")
    raise UsageError(f"--cuda {cuda!r}: use auto, cpu, a CUDA version (12.6) or a build (cu126)")


def releases(spec) -> list[matrix.Release]:
    return common.allowed_releases(matrix.releases(), spec)


def series_heads(spec) -> list[matrix.Release]:
    return common.series_heads(releases(spec))


def builds_to_try(release: matrix.Release, build: Optional[str]) -> list[str]:
    ids = sorted(release.builds, key=lambda b: drivers.cuda_tuple(matrix.build(b).cuda), reverse=True)
    if build is None:
        return ids
    return [b for b in ids if b == build]


# --- judging --------------------------------------------------------------------------------------

def judge(option: Option, facts, platform: str, python: Optional[str], ccs: list[str]) -> Option:
    release = option.release
    if not option.gpu:
        have = release.pythons(platform)
        if not have:
            option.problems.append(("platform", f"no paddlepaddle wheel for {platform} on the registry"))
        elif python and python not in have:
            option.problems.append(("python", f"no wheel for Python {python} (has {have[0]}–{have[-1]})"))
        return option
    build = matrix.build(option.build)
    if platform not in build.platforms:
        option.problems.append(("platform", f"no {option.build} build for {platform}"))
        return option
    pythons = option.pythons(platform)
    if python and python not in pythons:
        option.problems.append(("python", f"no {option.build} wheel for Python {python} (has {pythons[0]}–{pythons[-1]})"))
    _judge_driver(option, build, facts)
    _judge_gpus(option, build, ccs, facts)
    if not release.bundles_cuda:
        toolkit = facts.cuda_toolkit.version if facts.cuda_toolkit else None
        if toolkit is None or drivers.cuda_tuple(toolkit) != drivers.cuda_tuple(build.cuda):
            option.problems.append(("other", f"needs CUDA {build.cuda} and cuDNN {build.cudnn} on the system "
                                             f"(found {('CUDA ' + toolkit) if toolkit else 'no CUDA toolkit'})"))
    return option


def _judge_driver(option: Option, build: matrix.Build, facts) -> None:
    os_name = common.driver_os(facts)
    minimum, documented = build.driver_minimum(os_name)
    have = common.driver_version(facts)
    source = "Paddle's minimum" if documented else f"CUDA {build.cuda}'s own driver; Paddle states none"
    if have is None:
        option.problems.append(("driver", common.driver_check(facts, build.cuda).why))
    elif minimum is None:
        option.problems.append(("driver", f"{option.build}: no known minimum for a {os_name} driver "
                                          f"(native Windows or a WSL2 host)"))
    elif drivers.version_tuple(have) < drivers.version_tuple(minimum):
        option.problems.append(("driver", f"{option.build} needs driver ≥ {minimum} ({source}), you have {have}"))
    else:
        option.notes.append(f"{option.build}: driver {have} ≥ {minimum} ({source})")


def _judge_gpus(option: Option, build: matrix.Build, ccs: list[str], facts=None) -> None:
    archs = option.release.archs_for(option.build)
    if archs:  # a scanned wheel: its kernels decide (paddlepaddle-gpu 2.6.2 has SASS from sm_61 only)
        for cc in ccs:
            problem, why = common.kernels_check(facts, archs, build.cuda, cc)
            if problem:
                option.problems.append((problem, f"paddle {option.release.version} {option.build}: {why}"))
            else:
                option.notes.append(f"sm_{cc.replace('.', '')}: {why}")
        return
    floor = max(gpu_matrix.cc_tuple(option.release.min_compute_capability), gpu_matrix.cc_tuple(build.min_compute_capability))
    for cc in ccs:
        sm = f"sm_{cc.replace('.', '')}"
        if gpu_matrix.cc_tuple(cc) < floor:
            option.problems.append(("gpu", f"paddle {option.release.version} {option.build} needs compute capability "
                                           f"≥ {gpu_matrix.cc_text(floor)}, this GPU is {sm}"))
        elif gpu_matrix.cuda_can_build(cc, build.cuda) is False:
            option.problems.append(("gpu", f"CUDA {build.cuda} cannot build kernels for {sm}"))
        else:
            option.notes.append(f"{sm}: CUDA {build.cuda} builds kernels for it")


# --- choose ---------------------------------------------------------------------------------------

def choose(facts, request: PlanRequest) -> InstallPlan:
    if request.manager == "conda":
        return _no_conda(facts, request)
    spec = common.version_spec(request.version)
    want = wanted(request.cuda)
    platform, python = common.target_platform(facts), common.target_python(facts)
    if common.is_jetson(facts) and want != "cpu":
        return _jetson_statement(facts, request, python)
    if platform is None:
        return _nothing(request, python, [], [f"PaddlePaddle publishes no wheels for {facts.host.os or '?'} "
                                              f"{facts.host.arch or '?'}"], [])
    gpu_wanted = want not in (None, "cpu") or (want is None and common.has_nvidia_gpu(facts))
    notes: list[str] = []
    if gpu_wanted and platform not in matrix.gpu_platforms():
        notes.append(f"PaddlePaddle has no GPU build for {platform}: this plan is the CPU build")
        gpu_wanted = False
    ccs = common.unique(common.gpu_capabilities(facts))
    judged: list[Option] = []
    for release in releases(spec):
        builds = builds_to_try(release, want if gpu_wanted else None) if gpu_wanted else ["cpu"]
        for build in builds:
            option = judge(Option(release, build), facts, platform, python, ccs)
            judged.append(option)
            if option.fits:
                return _plan(facts, request, platform, python, option, judged[:-1], notes)
    return _nothing(request, python, judged, _fixes(judged, facts, platform, gpu_wanted), notes)


def _plan(facts, request, platform, python, option: Option, rejected_before, notes) -> InstallPlan:
    release = option.release
    python_exe = facts.python.executable or "python"
    installed = facts.python.packages or {}
    dist, other = ("paddlepaddle-gpu", "paddlepaddle") if option.gpu else ("paddlepaddle", "paddlepaddle-gpu")
    package = matrix.gpu_requirement(release, option.build) if option.gpu else f"paddlepaddle=={release.version}"
    same_version = option.gpu and _ambiguous_reinstall(installed, release, package)
    # Removing the other one deletes files of the shared `paddle` module: this one is reinstalled too.
    reinstall = dist in installed and (other in installed or same_version)
    remove = [name for name in (other, dist if reinstall else None) if name and name in installed]
    commands: tuple = ()
    if remove:
        commands, _ = render(FRAMEWORK, f"{request.manager}-uninstall", python=python_exe, packages=remove)
    index_url = None if option.from_registry else matrix.index_url(option.build)
    recipe = f"{request.manager}-{'registry' if option.from_registry else 'index'}"
    install, steps = render(FRAMEWORK, recipe, python=python_exe, packages=[package], index_url=index_url)
    commands = tuple(commands) + tuple(install)
    newest = common.newest_phrase(request)
    what = (f"with a {option.build} build the driver and every GPU can use" if option.gpu else "for the CPU")
    reasons = [f"paddle {release.version} is {newest} with a wheel for Python {python or '?'} on {platform} {what}"]
    if option.gpu and index_url:
        reasons.append(f"paddlepaddle-gpu {option.build} comes from Paddle's own index {index_url} (--index-url: "
                       f"that index also serves the NVIDIA wheels it needs)")
    elif option.gpu:
        reasons.append(f"the registry's paddlepaddle-gpu {release.version} wheel is the {option.build} build")
    else:
        reasons.append("paddlepaddle (the CPU build) from the registry")
    if other in installed:
        reasons.append(f"first removing {', '.join(remove)}: CPU and GPU Paddle install the same module and must "
                       f"not be mixed" + (f" (and removing {other} deletes files of {dist})" if reinstall else ""))
    elif same_version:
        reasons.append(f"first removing paddlepaddle-gpu {installed['paddlepaddle-gpu']}: Paddle's CUDA builds of "
                       f"{release.version} share one version number, so pip would keep the installed one whichever "
                       f"build it is")
    reasons += option.notes
    warnings = list(notes)
    if option.gpu and not release.bundles_cuda:
        build = matrix.build(option.build)
        steps = tuple(steps) + render(FRAMEWORK, "system-cuda", version=release.version, build=option.build,
                                      cuda=build.cuda, cudnn=build.cudnn)[1]
    if option.gpu and not matrix.build(option.build).driver_linux:
        warnings.append(f"Paddle states no driver minimum for {option.build}: the CUDA toolkit's own driver was "
                        f"required (UNCONFIRMED)")
    if option.gpu and not common.gpu_capabilities(facts):
        warnings.append("could not tell the GPU's compute capability; kernels for it are not checked")
    if facts.amd is not None and facts.amd.gpus and not option.gpu:
        warnings.append("AMD GPUs: envdoctor plans no ROCm build of PaddlePaddle; this is the CPU build")
    version_installed = installed.get("paddlepaddle-gpu") or installed.get("paddlepaddle")
    warnings += common.target_env_warnings(facts)
    warnings += common.hazard_warnings(matrix.hazards(), release.version, version_installed, facts, option.gpu)
    replaces = common.installed_of(facts, ("paddlepaddle", "paddlepaddle-gpu"))
    return InstallPlan(
        framework=FRAMEWORK, version=release.version, build=option.build, python=python, manager=request.manager,
        index_url=index_url, commands=commands, reasons=tuple(reasons), rejected=common.rejections(rejected_before),
        warnings=tuple(warnings), replaces=replaces, steps=tuple(steps))


def _ambiguous_reinstall(installed, release: matrix.Release, requirement: str) -> bool:
    """The installed paddlepaddle-gpu has the version `requirement` pins, and several CUDA builds of
    the release carry that version: pip cannot tell them apart and would keep the installed one."""
    if f"paddlepaddle-gpu=={installed.get('paddlepaddle-gpu')}" != requirement:
        return False
    return sum(matrix.gpu_requirement(release, b) == requirement for b in release.builds) > 1


def _no_conda(facts, request: PlanRequest) -> InstallPlan:
    return common.pip_inside_conda(facts, request, choose, (
        "PaddlePaddle publishes no conda packages for 3.x (its install pages list pip, docker and source only)"))


def _nothing(request, python, judged, steps, notes) -> InstallPlan:
    return common.nothing(FRAMEWORK, "PaddlePaddle", request, python, common.rejections(judged), steps, notes)


def _fixes(judged: list[Option], facts, platform: str, gpu_wanted: bool) -> list[str]:
    if not judged:
        return ["no PaddlePaddle release matches the requested version; see envdoctor matrix paddle"]
    steps = []
    python_problem = next((o for o in judged if "python" in o.kinds), None)
    if python_problem is not None and python_problem.kinds == {"python"}:
        pythons = python_problem.pythons(platform)
        steps.append(f"use Python {pythons[0]}–{pythons[-1]} for {python_problem.name}")
    driver_fix = _smallest_driver_fix(judged, facts)
    if driver_fix is not None:
        minimum, option = driver_fix
        steps.append(common.driver_step(facts, minimum, option.name))
    system_cuda = next((w for o in judged[:1] for k, w in o.problems if k == "other"), None)
    if system_cuda is not None and judged[0].kinds == {"other"}:
        steps.append(f"{judged[0].name} {system_cuda}")
    if gpu_wanted:
        steps.append("or install the CPU build: --cuda cpu")
    return steps


def _smallest_driver_fix(judged: list[Option], facts):
    """(driver, option): among the newest release's options held back only by the driver, the one
    needing the smallest driver update."""
    os_name = common.driver_os(facts)
    found = []
    for option in judged:
        if option.kinds == {"driver"}:
            if found and option.release.version != found[0][1].release.version:
                break
            minimum, _ = matrix.build(option.build).driver_minimum(os_name)
            if minimum:
                found.append((minimum, option))
    return min(found, key=lambda f: drivers.version_tuple(f[0])) if found else None


def _jetson_statement(facts, request, python) -> InstallPlan:
    jetpack, soc = common.jetpack_of(facts)
    row = jetson_matrix.framework_source(jetpack, FRAMEWORK, soc)
    note = f": {row.note}" if row is not None and row.note else ""
    return _nothing(request, python, [], [
        f"there is no PaddlePaddle GPU build for Jetson (JetPack {jetpack or 'unknown'}){note}",
        "Paddle's GPU wheels are for Linux x86_64 and Windows; use --cuda cpu for the CPU build, or build "
        "Paddle from source for this JetPack"], [])


# --- the matrix view ------------------------------------------------------------------------------

def candidates(facts, request: PlanRequest) -> list[Candidate]:
    spec = common.version_spec(request.version)
    want = wanted(request.cuda)
    platform, python = common.target_platform(facts), common.target_python(facts)
    if platform is None:
        return []
    ccs = common.unique(common.gpu_capabilities(facts))
    out = []
    for release in series_heads(spec):
        builds = ([] if want == "cpu" else builds_to_try(release, want)) + ([] if want not in (None, "cpu") else ["cpu"])
        for build in builds:
            option = judge(Option(release, build), facts, platform, python, ccs)
            if option.gpu and common.is_jetson(facts):
                option.problems.insert(0, ("platform", "no PaddlePaddle GPU build for Jetson"))
            elif option.gpu and not common.has_nvidia_gpu(facts):
                # A CUDA build on a machine without an NVIDIA GPU is not for this machine at all.
                option.problems.insert(0, ("platform", "no NVIDIA GPU on this machine"))
            verdict, why = option.verdict()
            out.append(Candidate(release.version, build, verdict, why, tuple(option.pythons(platform))))
    return out
