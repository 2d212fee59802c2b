"""Plan a TensorFlow install: which release, CPU / CUDA (`tensorflow[and-cuda]`) / Metal, and how.

`choose(facts, request)` walks the releases newest first (the newest patch of each series that
`--version` allows) and takes the first whose wheel exists for the target Python and platform and,
for a GPU plan, whose CUDA the driver runs and whose kernels cover every GPU. It says why, and why
the newer ones were rejected.

Where TensorFlow has no GPU build the plan is the CPU build with a warning and the way to a GPU:
native Windows (no CUDA build since 2.11: WSL2, or 2.10 with its Python limit), Linux aarch64
servers (CPU-only wheels), AMD GPUs (no ROCm build here). macOS on Apple silicon gets
tensorflow + tensorflow-metal for the releases Apple documents. A Jetson gets NVIDIA's
JetPack-matched wheel (matrices/jetson.toml) or a plain statement that none exists.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Optional

from envdoctor.errors import UsageError
from envdoctor.matrix import jetson as jetson_matrix
from envdoctor.matrix import tensorflow as matrix
from envdoctor.plan import Candidate, InstallPlan, PlanRequest
from envdoctor.plan import common
from envdoctor.plan.recipes import render

FRAMEWORK = "tensorflow"
# Distributions that provide the `tensorflow` module besides `tensorflow` itself.
PROVIDERS = ("tensorflow-cpu", "tensorflow-gpu", "tensorflow-intel", "tensorflow-macos", "tensorflow-cpu-aws")


@dataclass
class Option(common.Judged):
    release: matrix.Release
    build: str  # cu125 | cpu | metal
    problems: list[tuple[str, str]] = field(default_factory=list)  # (verdict, why)
    notes: list[str] = field(default_factory=list)
    metal: Optional[matrix.Metal] = None

    @property
    def name(self) -> str:
        return f"tensorflow {self.release.version} {self.build}"

    @property
    def gpu(self) -> bool:
        return self.build.startswith("cu")


def gpu_build(release: matrix.Release) -> str:
    return "cu" + release.cuda.replace(".", "")


def wanted(cuda: str) -> str:
    """--cuda -> 'auto' | 'cpu' | 'gpu' | 'metal' (a CUDA version picks the releases tested with that major)."""
    kind, _ = common.cuda_request(cuda)
    if kind == "rocm":
        raise UsageError("--cuda rocm: envdoctor plans no ROCm build of TensorFlow (AMD publishes tensorflow-rocm)")
    return "gpu" if kind == "cuda" else kind


def cuda_major(cuda: str) -> Optional[str]:
    kind, version = common.cuda_request(cuda)
    return version.split(".")[0] if kind == "cuda" else None


def releases(spec) -> list[matrix.Release]:
    return common.allowed_releases(matrix.releases(), spec)


def series_heads(spec) -> list[matrix.Release]:
    return common.series_heads(releases(spec))


# --- judging one option ---------------------------------------------------------------------------

def judge(option: Option, facts, platform: str, python: Optional[str], ccs: list[str]) -> Option:
    option.problems.extend(common.wheel_problems(option.release, facts, platform, python))
    if option.gpu:
        _judge_gpu(option, facts, platform, ccs)
    if option.build == "metal":
        _judge_metal(option, python)
    return option


def _judge_gpu(option: Option, facts, platform: str, ccs: list[str]) -> None:
    release = option.release
    if not release.has_gpu(platform):
        option.problems.append(("platform", f"no CUDA build for {platform}"))
        return
    if platform == "linux_x86_64" and not release.and_cuda:
        option.problems.append(("other", f"no [and-cuda] extra before 2.14: CUDA {release.cuda} and cuDNN "
                                         f"{release.cudnn} would have to be installed by hand"))
    check = common.driver_check(facts, release.cuda)
    if check:
        option.notes.append(f"CUDA {release.cuda} build: {check.why}")
    else:
        option.problems.append(("driver", check.why))
    for cc in ccs:
        problem, why = common.kernels_check(facts, release.gpu_archs, release.cuda, cc)
        if problem:
            option.problems.append((problem, why))
        else:
            option.notes.append(f"sm_{cc.replace('.', '')}: {why}")


def _judge_metal(option: Option, python: Optional[str]) -> None:
    metal = matrix.metal_for(option.release.version)
    if metal is None:
        option.problems.append(("other", f"no tensorflow-metal release is documented for TensorFlow "
                                         f"{option.release.series}"))
        return
    option.metal = metal
    if python and python not in metal.pythons:
        option.problems.append(("python", f"tensorflow-metal {metal.version} has no wheel for Python {python} "
                                          f"(has {metal.pythons[0]}–{metal.pythons[-1]})"))


# --- the machine ----------------------------------------------------------------------------------

def _kinds(facts, platform: str, want: str) -> list[str]:
    """Builds to try, best first: 'gpu', 'metal', 'cpu'."""
    if want == "cpu":
        return ["cpu"]
    if want == "metal" or (want == "auto" and platform == "macos_arm64"):
        return ["metal"]
    if want == "gpu" or common.has_nvidia_gpu(facts):
        return ["gpu"]
    return ["cpu"]


# --- choose ---------------------------------------------------------------------------------------

def choose(facts, request: PlanRequest) -> InstallPlan:
    if request.manager == "conda":
        return _no_conda(facts, request)
    spec = common.version_spec(request.version)
    want = wanted(request.cuda)
    platform, python = common.target_platform(facts), common.target_python(facts)
    if common.is_jetson(facts) and want != "cpu":
        return _choose_jetson(facts, request, python, spec)
    if platform is None:
        return _nothing(request, python, [], [f"TensorFlow publishes no wheels for {facts.host.os or '?'} "
                                              f"{facts.host.arch or '?'}"])
    kinds = _kinds(facts, platform, want)
    notes = common.Notes()
    gpu_releases = [r for r in releases(spec) if r.has_gpu(platform)]
    # Native Windows: only 2.10 had a CUDA build; it is planned only when asked for by --version.
    if kinds == ["gpu"] and (not gpu_releases or (platform == "windows_amd64" and spec is None)):
        notes = _no_gpu_build_notes(facts, platform, python)
        kinds = ["cpu"]
    if kinds == ["gpu"] and want == "gpu":
        major = cuda_major(request.cuda)
        spec_releases = [r for r in releases(spec) if major is None or r.cuda.split(".")[0] == major]
        if not spec_releases:
            built = sorted({r.cuda.split(".")[0] for r in matrix.releases()}, key=int)
            return _nothing(request, python, [], [f"no TensorFlow release is built with CUDA {major}"
                                                  f"{' in the requested versions' if spec else ''}; TensorFlow's "
                                                  f"CUDA builds use CUDA {' and '.join(built)}"], notes)
    else:
        spec_releases = releases(spec)
    ccs = common.unique(common.gpu_capabilities(facts))
    judged: list[Option] = []
    for release in spec_releases:
        option = judge(Option(release, _build_label(kinds[0], release)), facts, platform, python, ccs)
        judged.append(option)
        if option.fits:
            return _plan(facts, request, platform, python, option, judged[:-1], notes)
    if kinds == ["metal"] and want == "auto":
        # No Metal build for this Python: the CPU build, and how to get the GPU.
        fallback = _choose_cpu(facts, request, platform, python, spec)
        if fallback.ok:
            problems = [(k, w) for o in judged for k, w in o.problems]
            why = next((w for k, w in problems if k == "python"), problems[0][1] if problems else "none fits")
            return dataclasses.replace(fallback, warnings=(f"no Metal (GPU) build fits: {why}; this is the CPU build",) + fallback.warnings,
                         rejected=common.rejections(judged) + fallback.rejected)
    forced = _forced_old_gpu(judged, want, spec)
    if forced is not None:
        return _plan(facts, request, platform, python, forced, [], notes)
    return _nothing(request, python, judged, _fixes(judged, facts, platform, python, kinds[0]), notes)


def _build_label(kind: str, release: matrix.Release) -> str:
    return gpu_build(release) if kind == "gpu" else kind


def _forced_old_gpu(judged: list[Option], want: str, spec) -> Optional[Option]:
    """A release the user asked for by version whose only problem is the missing [and-cuda] extra."""
    if spec is None:
        return None
    for option in judged:
        if option.kinds == {"other"} and option.gpu:
            return option
    return None


def _choose_cpu(facts, request, platform, python, spec) -> InstallPlan:
    judged = []
    for release in releases(spec):
        option = judge(Option(release, "cpu"), facts, platform, python, [])
        judged.append(option)
        if option.fits:
            return _plan(facts, request, platform, python, option, judged[:-1], common.Notes())
    return _nothing(request, python, judged, _fixes(judged, facts, platform, python, "cpu"))


def _no_gpu_build_notes(facts, platform: str, python: Optional[str]) -> common.Notes:
    """Warnings and steps for a machine with an NVIDIA GPU where TensorFlow has no CUDA build."""
    if platform == "windows_amd64":
        legacy = matrix.last_native_windows_gpu()
        wsl_min = common.drivers.wheel_min_driver(matrix.releases()[0].cuda, "windows")
        notes = common.Notes(["TensorFlow has no CUDA build for native Windows since 2.11: this plan is the CPU build"],
                      list(render(FRAMEWORK, "windows-gpu-wsl2", driver=wsl_min or "the newest")[1]))
        if legacy is not None:
            pythons = legacy.pythons("windows_amd64")
            span = f"{pythons[0]}–{pythons[-1]}"
            notes.steps += render(FRAMEWORK, "windows-gpu-legacy", version=legacy.version, pythons=span)[1]
            if python and python not in pythons:
                notes.warnings.append(f"TensorFlow {legacy.version} (the last native-Windows GPU release) needs "
                                      f"Python {span}; this interpreter is {python}")
        return notes
    if platform == "linux_aarch64":
        return common.Notes(["TensorFlow's Linux aarch64 wheels are CPU-only (no CUDA build on the registry): this plan "
                      "is the CPU build; for the GPU use a container with a TensorFlow built for this machine"])
    return common.Notes([f"TensorFlow has no CUDA build for {platform}: this plan is the CPU build"])


# --- the plan -------------------------------------------------------------------------------------

def _packages(option: Option, platform: str) -> list[str]:
    release = option.release
    if option.gpu and platform == "linux_x86_64" and release.and_cuda:
        packages = [f"tensorflow[and-cuda]=={release.version}"]
    else:
        packages = [f"tensorflow=={release.version}"]
    if option.metal is not None:
        packages.append(f"tensorflow-metal=={option.metal.version}")
    return packages


def _conflicting(facts, option: Option, platform: str) -> list[str]:
    """Installed distributions that provide the tensorflow module but are not this plan's provider."""
    installed = facts.python.packages or {}
    keep = option.release.stub_for.get(platform)
    found = [name for name in PROVIDERS if name in installed and name != keep]
    if found and installed.get("tensorflow") == option.release.version:
        # Removing them deletes files of the shared module, and pip would keep this very version.
        found.append("tensorflow")
    return found


def _replaces(facts) -> tuple[str, ...]:
    return common.installed_of(facts, ("tensorflow",) + PROVIDERS + ("tensorflow-metal",))


def _plan(facts, request, platform, python, option: Option, rejected_before: list[Option],
          notes: common.Notes) -> InstallPlan:
    release = option.release
    python_exe = facts.python.executable or "python"
    commands: tuple = ()
    conflicting = _conflicting(facts, option, platform)
    if conflicting:
        commands, _ = render(FRAMEWORK, f"{request.manager}-uninstall", python=python_exe, packages=conflicting)
    install, steps = render(FRAMEWORK, f"{request.manager}-registry", python=python_exe,
                            packages=_packages(option, platform))
    commands = tuple(commands) + tuple(install)
    newest = common.newest_phrase(request)
    what = {"cpu": "for the CPU", "metal": "with a tensorflow-metal build (Apple GPU)"}.get(
        option.build, f"whose CUDA {release.cuda} build the driver runs and whose kernels cover every GPU")
    reasons = [f"tensorflow {release.version} is {newest} with a wheel for Python {python or '?'} on {platform} {what}"]
    if option.gpu and release.and_cuda:
        cudnn = next((f"{name}{pin}" for name, pin in release.and_cuda.items() if name.startswith("nvidia-cudnn")), "")
        reasons.append(f"tensorflow[and-cuda] brings CUDA and cuDNN as pip wheels ({cudnn}); no system "
                       f"CUDA toolkit is needed")
    if option.metal is not None:
        reasons.append(f"tensorflow-metal {option.metal.version} is the Apple GPU plug-in documented for "
                       f"TensorFlow {release.series} (macOS ≥ {option.metal.macos})")
    if conflicting:
        reasons.append(f"first removing {', '.join(conflicting)}: another distribution of the same "
                       f"tensorflow module would shadow the new one")
    reasons += option.notes + _driver_hint(rejected_before, facts)
    warnings = list(notes.warnings)
    steps = tuple(steps) + tuple(notes.steps)
    if option.gpu and platform == "linux_x86_64" and not release.and_cuda:
        _, extra = render(FRAMEWORK, "linux-system-cuda", version=release.version, cuda=release.cuda,
                          cudnn=release.cudnn)
        steps += extra
        warnings.append(f"tensorflow {release.version}, as asked: no [and-cuda] extra before 2.14")
    if option.gpu and platform == "windows_amd64":
        warnings.append(f"native-Windows GPU builds need CUDA {release.cuda} and cuDNN {release.cudnn} installed "
                        f"by hand (conda install -c conda-forge cudatoolkit=11.2 cudnn=8.1.0)")
    if option.gpu and not common.gpu_capabilities(facts):
        warnings.append("could not tell the GPU's compute capability; kernels for it are not checked")
    if facts.amd is not None and facts.amd.gpus and not option.gpu:
        warnings.append("AMD GPUs: envdoctor plans no ROCm build of TensorFlow (AMD publishes tensorflow-rocm); "
                        "this is the CPU build")
    if facts.host.rosetta:
        warnings.append("this Python runs under Rosetta (x86_64): TensorFlow stopped Intel-Mac wheels after 2.16; "
                        "an arm64 Python gets current releases and tensorflow-metal")
    installed = (facts.python.packages or {}).get("tensorflow")
    warnings += common.target_env_warnings(facts)
    warnings += common.hazard_warnings(matrix.hazards(), release.version, installed, facts, option.gpu)
    return InstallPlan(
        framework=FRAMEWORK, version=release.version, build=option.build, python=python,
        manager=request.manager, index_url=None, commands=commands, reasons=tuple(reasons),
        rejected=common.rejections(rejected_before), warnings=tuple(warnings), replaces=_replaces(facts),
        steps=steps)


def _driver_hint(rejected_before: list[Option], facts) -> list[str]:
    """'with an NVIDIA driver ≥ X you could install …' when only the driver held a newer release back."""
    for option in rejected_before:
        if option.gpu and option.kinds == {"driver"}:
            minimum = common.driver_needed(facts, option.release.cuda, option.release.gpu_archs)
            return [common.driver_hint(minimum, option.name)]
    return []


def _nothing(request, python, judged: list[Option], steps: list[str], notes: Optional[common.Notes] = None) -> InstallPlan:
    notes = notes or common.Notes()
    return common.nothing(FRAMEWORK, "TensorFlow", request, python, common.rejections(judged),
                          list(steps) + notes.steps, notes.warnings)


def _fixes(judged: list[Option], facts, platform: str, python: Optional[str], kind: str) -> list[str]:
    if not judged:
        return ["no TensorFlow release matches the requested version; see envdoctor matrix tensorflow"]
    newest = judged[0]
    kinds = newest.kinds
    steps = []
    if "python" in kinds:
        pythons = newest.metal.pythons if newest.metal else newest.release.pythons(platform)
        if pythons:
            steps.append(f"use Python {pythons[0]}–{pythons[-1]} for {newest.name}")
    if "driver" in kinds:
        minimum = common.driver_needed(facts, newest.release.cuda, newest.release.gpu_archs)
        steps.append(common.driver_step(facts, minimum, newest.name))
    if all(o.kinds <= {"gpu"} for o in judged):
        steps.append("no TensorFlow CUDA build has kernels for this GPU")
    if kind in ("gpu", "metal"):
        steps.append("or install the CPU build: --cuda cpu")
    return steps


def _no_conda(facts, request: PlanRequest) -> InstallPlan:
    return common.pip_inside_conda(facts, request, choose, (
        "TensorFlow publishes no conda packages (its docs: 'Do not install TensorFlow with conda'; "
        "conda-forge's community builds are not planned here)"))


# --- Jetson ---------------------------------------------------------------------------------------

def _jetson_options(facts, python: Optional[str], spec):
    """(source, version, problem) for each JetPack-matched wheel source of this Jetson, best first;
    problem is None or (verdict, why)."""
    jetpack, soc = common.jetpack_of(facts)
    out = []
    for source in jetson_matrix.framework_sources(jetpack, FRAMEWORK, soc):
        if not (source.index_url and source.versions):
            continue
        versions = [v for v in source.versions if spec is None or spec.contains(v.split("+")[0], prereleases=True)]
        if not versions:
            out.append((source, source.versions[0], ("other", f"has tensorflow {', '.join(source.versions)}, "
                                                              f"none matching {spec}")))
        elif python and source.python and python != source.python:
            out.append((source, versions[0], ("python", f"built for Python {source.python}, the target is {python}")))
        else:
            out.append((source, versions[0], None))
    return jetpack, soc, out


def _choose_jetson(facts, request, python: Optional[str], spec) -> InstallPlan:
    jetpack, soc, options = _jetson_options(facts, python, spec)
    if not options:
        row = jetson_matrix.framework_source(jetpack, FRAMEWORK, soc)
        note = f": {row.note}" if row is not None and row.note else ""
        return _nothing(request, python, [], [
            f"there is no TensorFlow GPU build for JetPack {jetpack or 'unknown'}{note}",
            "a generic aarch64 wheel has no CUDA kernels for this GPU; use --cuda cpu for the CPU build, "
            "or a container built for this JetPack"])
    rejected = []
    for source, version, problem in options:
        if problem is None:
            return _jetson_plan(facts, request, python, source, version, jetpack, tuple(rejected))
        rejected.append(common.rejected(f"JetPack {jetpack} tensorflow {version}", problem[1]))
    wanted_python = next((s.python for s, _, p in options if p and p[0] == "python" and s.python), None)
    steps = [f"use Python {wanted_python} (the JetPack {jetpack} system python3), e.g. in a venv: "
             f"python3 -m venv --system-site-packages ~/venv"] if wanted_python else []
    return dataclasses.replace(_nothing(request, python, [], steps), rejected=tuple(rejected))


def _jetson_build(facts, source, jetpack: Optional[str]) -> str:
    cuda = (facts.jetson.cuda if facts.jetson else None) or source.cuda
    return f"jp{(jetpack or '?').split('.')[0]}" + (f"-cu{cuda.replace('.', '')}" if cuda else "")


def _jetson_plan(facts, request, python, source, version, jetpack, rejected) -> InstallPlan:
    commands, steps = render(FRAMEWORK, f"jetson-{request.manager}", python=facts.python.executable or "python3",
                             index_url=source.index_url, packages=[f"tensorflow=={version}"])
    build = _jetson_build(facts, source, jetpack)
    reasons = [f"Jetson on JetPack {jetpack}: TensorFlow comes from NVIDIA's JetPack-matched wheels "
               f"({source.index_url}), never a generic aarch64 wheel (those have no CUDA kernels)"]
    if source.note:
        reasons.append(source.note)
    warnings = common.target_env_warnings(facts)
    installed = (facts.python.packages or {}).get("tensorflow")
    # gpu_plan=False: the GPU hazards are about the registry's [and-cuda] builds, not NVIDIA's Jetson wheels
    warnings += common.hazard_warnings(matrix.hazards(), version.split("+")[0], installed, facts, False)
    return InstallPlan(framework=FRAMEWORK, version=version, build=build, python=python, manager=request.manager,
                       index_url=source.index_url, commands=commands, reasons=tuple(reasons), rejected=rejected,
                       warnings=tuple(warnings), replaces=_replaces(facts), steps=steps)


# --- the matrix view ------------------------------------------------------------------------------

def candidates(facts, request: PlanRequest) -> list[Candidate]:
    """Every release (newest patch per series) × build for this platform, judged as `choose` judges."""
    spec = common.version_spec(request.version)
    want = wanted(request.cuda)
    platform, python = common.target_platform(facts), common.target_python(facts)
    if platform is None:
        return []
    ccs = common.unique(common.gpu_capabilities(facts))
    kinds = {"cpu": ["cpu"], "metal": ["metal"], "gpu": ["gpu"]}.get(want, ["gpu", "metal", "cpu"])
    out = []
    if common.is_jetson(facts) and want != "cpu":  # what _choose_jetson considers, first
        jetpack, _, options = _jetson_options(facts, python, spec)
        for source, version, problem in options:
            verdict, why = problem or ("fits", "")
            out.append(Candidate(version, _jetson_build(facts, source, jetpack), verdict, why,
                                 (source.python,) if source.python else ()))
    for release in series_heads(spec):
        for kind in kinds:
            if kind == "gpu" and not release.has_gpu(platform):
                continue
            if kind == "metal" and platform != "macos_arm64":
                continue
            option = judge(Option(release, _build_label(kind, release)), facts, platform, python, ccs)
            if kind == "gpu" and not common.has_nvidia_gpu(facts):
                option.problems.insert(0, ("platform", "no NVIDIA GPU on this machine"))
            verdict, why = option.verdict()
            pythons = option.metal.pythons if option.metal else release.pythons(platform)
            out.append(Candidate(release.version, option.build, verdict, why, tuple(pythons)))
    return out
