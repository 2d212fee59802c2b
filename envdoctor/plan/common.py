"""Small helpers every framework planner shares: what the target is, what the driver can run.

- `target_python(facts)` → "3.12" (major.minor of the target interpreter) or None.
- `target_platform(facts)` → a platform key used by the framework matrices (`matrix.PLATFORMS`):
  `linux_x86_64`, `linux_aarch64`, `windows_amd64`, `macos_arm64`, `macos_x86_64` (None if unknown).
  WSL2 is `linux_x86_64`. A Jetson is `linux_aarch64` too; ask `is_jetson(facts)` before trusting it.
- `driver_os(facts)` → "linux" | "windows": which numbering the driver version uses (WSL2 sees the
  Windows host's driver).
- `driver_check(facts, cuda)` → a `DriverCheck` (truthy when the driver can run a prebuilt wheel of
  that CUDA) with the minimum and a sentence for the user.
- `kernels_check(facts, archs, cuda, cc)` → does a build's kernel list run on a GPU (PTX also needs
  the driver of the toolkit that wrote it); `driver_needed(...)` the driver a build needs here;
  `driver_step` / `driver_hint` the sentences that name it.
- `cuda_request(text)` → the --cuda option parsed once: ("cuda", "12.8"), ("rocm", "6.4"), ("cpu", None)...
- `gpu_capabilities(facts)` → every NVIDIA GPU's compute capability (from the probe, else from the
  product name table).
- `Judged`: what every planner's Option shares (`problems`, `fits`, `why`, `verdict()`).
- `rejected(candidate, why)`, `dedupe_rejections(...)` and `rejections(options)` for the `rejected`
  list of a plan; `nothing(...)` for a plan where nothing fits.
- `jetpack_of(facts)`, `pip_inside_conda(...)`.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from typing import Iterable, Optional

from envdoctor.errors import UsageError
from envdoctor.matrix import drivers, gpus
from envdoctor.matrix import jetson as jetson_matrix
from envdoctor.plan import InstallPlan, Rejected


def target_python(facts) -> Optional[str]:
    version = facts.python.version if facts.python else None
    if not version:
        return None
    parts = version.split(".")
    return ".".join(parts[:2]) if len(parts) >= 2 else None


def target_platform(facts) -> Optional[str]:
    os_name, arch = facts.host.os, facts.host.arch
    if os_name == "linux":
        return {"x86_64": "linux_x86_64", "amd64": "linux_x86_64",
                "aarch64": "linux_aarch64", "arm64": "linux_aarch64"}.get(arch or "")
    if os_name == "windows":
        return "windows_amd64" if arch in ("x86_64", "amd64", "AMD64") else None
    if os_name == "macos":
        # An x86_64 Python under Rosetta installs x86_64 wheels: the interpreter decides.
        return {"arm64": "macos_arm64", "aarch64": "macos_arm64", "x86_64": "macos_x86_64"}.get(arch or "")
    return None


def is_jetson(facts) -> bool:
    return facts.jetson is not None or bool(facts.nvidia and facts.nvidia.driver_kind == "jetson")


def driver_os(facts) -> str:
    if facts.host.os == "windows" or facts.host.wsl or (facts.nvidia and facts.nvidia.driver_kind == "wsl"):
        return "windows"
    return "linux"


def driver_version(facts) -> Optional[str]:
    """The desktop driver number, or None (no driver, a failed driver, or a Jetson's L4T number)."""
    if not facts.has_usable_driver or is_jetson(facts):
        return None
    return facts.nvidia.driver_version


@dataclass(frozen=True)
class DriverCheck:
    ok: bool
    minimum: Optional[str]  # the driver a wheel of this CUDA needs
    why: str  # "needs driver ≥ 580, you have 570.124.04"

    def __bool__(self) -> bool:
        return self.ok


def driver_check(facts, cuda: str) -> DriverCheck:
    """Can this machine's driver run a prebuilt wheel built with CUDA `cuda` ("12.8")?"""
    os_name = driver_os(facts)
    minimum = drivers.wheel_min_driver(cuda, os_name)
    have = driver_version(facts)
    if have is None:
        if is_jetson(facts):
            return DriverCheck(False, minimum, "a Jetson's driver comes with its JetPack; desktop CUDA wheels do not apply")
        if facts.nvidia and facts.nvidia.failure:
            return DriverCheck(False, minimum, f"the NVIDIA driver is not working ({facts.nvidia.failure})")
        return DriverCheck(False, minimum, "no NVIDIA driver found")
    if minimum is None:
        # Not in the table: fall back to the CUDA version the driver reports (same or newer major).
        reported = facts.nvidia.driver_cuda or drivers.branch_cuda(have)
        ok = bool(reported) and drivers.cuda_tuple(reported)[0] >= drivers.cuda_tuple(cuda)[0]
        return DriverCheck(ok, None, f"driver {have} supports CUDA {reported or 'unknown'}")
    try:
        ok = drivers.version_tuple(have) >= drivers.version_tuple(minimum)
    except ValueError:
        return DriverCheck(False, minimum, f"cannot read the driver version {have!r}")
    if ok:
        return DriverCheck(True, minimum, f"driver {have} ≥ {minimum}")
    return DriverCheck(False, minimum, f"needs driver ≥ {minimum}, you have {have}")


def kernels_check(facts, archs: Iterable[str], cuda: str, cc: str) -> tuple[Optional[str], str]:
    """(problem, why) for a GPU of compute capability `cc` and a CUDA `cuda` build with kernels
    `archs`: problem is None when it runs, "gpu" when no kernel fits, "driver" when only PTX fits and
    the driver is older than the toolkit that wrote it (the driver JIT-compiles PTX, and
    minor-version compatibility covers cubins, not PTX)."""
    verdict = gpus.build_runs_on(archs, cc)
    if not verdict:
        return "gpu", verdict.reason
    have = driver_version(facts)
    minimum = _ptx_driver(facts, cuda) if verdict.via == "ptx" and have else None
    if minimum and _older(have, minimum):
        return "driver", (f"sm_{cc.replace('.', '')} runs only {verdict.kernel} PTX, which the driver compiles: "
                          f"needs driver ≥ {minimum} (CUDA {cuda}'s), you have {have}")
    return None, verdict.reason


def driver_needed(facts, cuda: str, archs: Iterable[str]) -> Optional[str]:
    """The oldest driver that runs a CUDA `cuda` build with kernels `archs` on every GPU here: the
    wheel minimum, or the toolkit's own driver where a GPU runs only PTX."""
    archs = tuple(archs)
    needed = [drivers.wheel_min_driver(cuda, driver_os(facts))]
    if any(gpus.build_runs_on(archs, cc).via == "ptx" for cc in gpu_capabilities(facts)):
        needed.append(_ptx_driver(facts, cuda))
    needed = [n for n in needed if n]
    return max(needed, key=drivers.version_tuple) if needed else None


def _ptx_driver(facts, cuda: str) -> Optional[str]:
    toolkit = drivers.toolkit_driver(cuda)
    if toolkit is None:
        return None
    return toolkit.windows if driver_os(facts) == "windows" else toolkit.linux


def _older(have: str, need: str) -> bool:
    try:
        return drivers.version_tuple(have) < drivers.version_tuple(need)
    except ValueError:
        return False


def driver_step(facts, minimum: Optional[str], candidate: str) -> str:
    """What to do by hand so that `candidate` ("torch 2.15.0 cu132") runs: update or install the driver."""
    if driver_version(facts) is None:
        return f"install a working NVIDIA driver (≥ {minimum} for {candidate})"
    return f"update the NVIDIA driver to ≥ {minimum} for {candidate}"


def driver_hint(minimum: Optional[str], candidate: str) -> str:
    """A reason line when only the driver held a newer candidate back."""
    return f"with an NVIDIA driver ≥ {minimum} you could install {candidate}"


def has_nvidia_gpu(facts) -> bool:
    """An NVIDIA GPU is on this machine (seen by the driver, on the PCI bus, or as a Jetson)."""
    return bool(facts.gpus or (facts.nvidia and facts.nvidia.pci_devices) or is_jetson(facts))


def gpu_capabilities(facts) -> list[str]:
    """Compute capability of every NVIDIA GPU (probe first, then the product table); unknowns left out."""
    found = []
    for gpu in facts.gpus:
        cc = gpu.compute_capability or (gpus.compute_capability_for_name(gpu.name) if gpu.name else None)
        if cc:
            found.append(cc)
    if not found and facts.jetson is not None and facts.jetson.model:
        cc = gpus.compute_capability_for_name(facts.jetson.model)
        if cc:
            found.append(cc)
    return found


def unique(items: Iterable[str]) -> list[str]:
    seen: list[str] = []
    for item in items:
        if item not in seen:
            seen.append(item)
    return seen


class Judged:
    """Mixin for the planners' Option dataclasses, which declare `problems: list[(verdict, why)]`
    (verdict a key of plan.VERDICTS) and `notes: list[str]` (why it fits) themselves."""

    problems: list[tuple[str, str]]
    notes: list[str]

    @property
    def fits(self) -> bool:
        return not self.problems

    @property
    def why(self) -> str:
        return "; ".join(why for _, why in self.problems)

    @property
    def kinds(self) -> set[str]:
        return {kind for kind, _ in self.problems}

    def verdict(self) -> tuple[str, str]:
        """(verdict, why) for the matrix view: the first problem names the verdict."""
        return ("fits", "") if self.fits else (self.problems[0][0], self.why)


def rejected(candidate: str, why: str) -> Rejected:
    return Rejected(candidate=candidate, why=why)


def dedupe_rejections(items: Iterable[Rejected], limit: int = 40) -> tuple[Rejected, ...]:
    """Drop repeats (same candidate) and keep the list readable (at most `limit` rows)."""
    seen, out = set(), []
    for item in items:
        if item.candidate in seen:
            continue
        seen.add(item.candidate)
        out.append(item)
    return tuple(out[:limit])


def nothing(framework: str, title: str, request, python: Optional[str], rejected: Iterable[Rejected] = (),
            steps: Iterable[str] = (), warnings: Iterable[str] = ()) -> InstallPlan:
    """The plan when nothing fits: no version, no commands; the rejections and what to change."""
    return InstallPlan(framework=framework, version=None, build=None, python=python, manager=request.manager,
                       reasons=(f"no {title} release fits this machine and request",), rejected=tuple(rejected),
                       warnings=tuple(warnings), steps=tuple(steps))


def jetpack_of(facts) -> tuple[Optional[str], Optional[str]]:
    """(JetPack line, SoC) of a Jetson; the JetPack read off the L4T release when not probed."""
    jetson = facts.jetson
    if jetson is None:
        return None, None
    jetpack = jetson.jetpack or (jetson_matrix.jetpack_line(jetson.l4t) if jetson.l4t else None)
    return jetpack, jetson.soc


def cuda_request(text: Optional[str]) -> tuple[str, Optional[str]]:
    """--cuda -> (kind, version): ("auto" | "cpu" | "metal", None); ("cuda", "12.8") from 12.8 or cu128
    (("cuda", "12") from a bare major: 12, cu12, cuda12); ("rocm", "6.4") from rocm6.4. Each planner
    maps it to its own builds; anything else is a UsageError."""
    value = (text or "auto").strip().lower()
    if value in ("auto", "cpu"):
        return value, None
    if value in ("metal", "mps"):  # TensorFlow's and PyTorch's names for the Apple GPU
        return "metal", None
    rocm = re.fullmatch(r"rocm(\d{1,3}(?:\.\d{1,3}){0,2})", value)
    if rocm:
        return "rocm", rocm.group(1)
    tag = re.fullmatch(r"(?:cuda|cu)(\d{2})(\d{1,2})?", value)  # CUDA majors have two digits since 10
    if tag:
        return "cuda", tag.group(1) + (f".{tag.group(2)}" if tag.group(2) else "")
    if re.fullmatch(r"\d{1,3}(\.\d{1,3}){0,2}", value):  # 12, 12.8, 12.8.1: a version NVIDIA could ship
        return "cuda", ".".join(value.split(".")[:2])
    raise UsageError(f"--cuda {text!r}: use auto, cpu, a CUDA version (12.8), a tag (cu128) or rocmX.Y")


# --- used by the TensorFlow, JAX and Paddle planners ------------------------------------------------

def version_spec(text: Optional[str]):
    """--version text -> a SpecifierSet: '2.16' -> ==2.16.* ; '2.16.1' -> ==2.16.1 ; '>=2.15,<2.18' as is."""
    from packaging.specifiers import InvalidSpecifier, SpecifierSet

    if not text:
        return None
    text = text.strip()
    if text[:1].isdigit():
        text = f"=={text}.*" if text.count(".") == 1 else f"=={text}"
    try:
        return SpecifierSet(text)
    except InvalidSpecifier:
        raise UsageError(f"--version {text!r} is not a version or a version specifier (e.g. 2.16, '>=2.15,<2.18')") from None


def hazard_warnings(hazards, version: str, installed: Optional[str], facts, gpu_plan: bool) -> list[str]:
    """The texts of the matrix hazard rows (envdoctor.matrix.tensorflow.Hazard) that apply to this plan."""
    packages = facts.python.packages or {}
    return [h.text for h in hazards if h.applies(version, installed, packages, facts.env or {}, gpu_plan)]


def installed_of(facts, names: Iterable[str]) -> tuple[str, ...]:
    """'torch 2.5.1+cpu' for each of `names` installed in the target (a plan's `replaces`)."""
    installed = facts.python.packages or {}
    return tuple(f"{name} {installed[name]}" for name in names if name in installed)


def newest_phrase(request) -> str:
    """How a plan's headline names its release: the newest, or the newest matching --version."""
    return f"the newest release matching {request.version}" if request.version else "the newest release"


def target_env_warnings(facts) -> list[str]:
    """A warning when the target interpreter is the system Python or a conda base environment."""
    kind = facts.python.env_kind
    if kind == "system":
        return [f"the target is the system Python ({facts.python.executable}); a virtual environment is safer "
                f"(python3 -m venv ~/venv)"]
    if kind == "conda-base":
        return ["the target is the conda base environment; create an environment first (conda create -n NAME python)"]
    return []


def glibc_too_old(facts, needed: Optional[str]) -> Optional[str]:
    """'needs glibc ≥ 2.27, you have 2.17' when a Linux wheel's manylinux tag is newer than the host's glibc."""
    have = facts.host.glibc if facts.host.os == "linux" else None
    if not have or not needed:
        return None
    try:
        if drivers.version_tuple(have)[:2] < drivers.version_tuple(needed)[:2]:
            return f"needs glibc ≥ {needed}, you have {have}"
    except ValueError:
        return None
    return None


@dataclass
class Notes:
    """What a plan adds when the machine's GPU cannot be used as asked: warnings, and steps by hand."""

    warnings: list[str] = field(default_factory=list)
    steps: list[str] = field(default_factory=list)


def rejections(options: Iterable[Judged], limit: int = 15) -> tuple[Rejected, ...]:
    """One line per rejected option (each has `name`, `release.version`, `build`); an older patch
    rejected for the same reason as the newer one of its series is left out."""
    seen, kept = set(), []
    for o in options:
        if not o.problems:
            continue
        key = (".".join(o.release.version.split(".")[:2]), o.build, o.why)
        if key not in seen:
            seen.add(key)
            kept.append(rejected(o.name, o.why))
    return dedupe_rejections(kept, limit=limit)


def pip_inside_conda(facts, request, choose, statement: str) -> InstallPlan:
    """For a framework that publishes no conda packages: a plan without commands that says so (the
    `statement`) and gives the pip command to run inside the conda environment instead."""
    pip = choose(facts, dataclasses.replace(request, manager="pip"))
    if not pip.ok:
        return dataclasses.replace(pip, manager="conda", reasons=(statement,) + pip.reasons)
    from envdoctor.render.plan import shell_command  # the same quoting the console shows

    windows = facts.host.os == "windows"
    commands = " && ".join(shell_command(argv, windows) for argv in pip.commands)
    return InstallPlan(framework=pip.framework, version=None, build=None, python=pip.python, manager="conda",
                       reasons=(statement,) + pip.reasons, rejected=pip.rejected, warnings=pip.warnings,
                       steps=(f"inside the conda environment, use pip (--manager pip): {commands}",) + pip.steps)


def allowed_releases(releases: Iterable, spec) -> list:
    """The releases (newest first) a --version request allows. An older patch may fit where the
    newest of its series does not (e.g. a manylinux tag that needs a newer glibc)."""
    return [r for r in releases if spec is None or spec.contains(r.version, prereleases=True)]


def series_heads(releases: Iterable) -> list:
    """Newest first, the newest patch of each major.minor series (the matrix view)."""
    chosen, seen = [], set()
    for r in releases:
        series = ".".join(r.version.split(".")[:2])
        if series not in seen:
            seen.add(series)
            chosen.append(r)
    return chosen


def wheel_problems(release, facts, platform: str, python: Optional[str], wheel: str = "wheel") -> list[tuple[str, str]]:
    """What keeps a release's wheels off this machine: none for the platform, none for the target
    Python, or a manylinux tag newer than the system glibc. `release` offers pythons() and glibc_for()."""
    have = release.pythons(platform)
    if not have:
        return [("platform", f"no {wheel} for {platform}")]
    problems = []
    if python and python not in have:
        problems.append(("python", f"no {wheel} for Python {python} on {platform} (has {python_span(have)})"))
    glibc = glibc_too_old(facts, release.glibc_for(platform))
    if glibc:
        problems.append(("platform", glibc))
    return problems


def python_span(pythons) -> str:
    """('3.11', '3.12', '3.13', '3.13t') -> '3.11–3.13' (free-threaded builds left out of the range)."""
    plain = [p for p in pythons if not p.endswith("t")]
    return f"{plain[0]}–{plain[-1]}" if plain else ", ".join(pythons)



# --- the default registry as this machine's pip / uv are configured ---------------------------------

PIP_INDEX_KEYS = (("install", "index-url"), ("global", "index-url"))


def configured_index(manager: str, environ, env_path: Optional[str] = None) -> Optional[tuple[str, str]]:
    """(URL, where it is set) of the default registry pip or uv uses here when it is not the built-in
    one (a mirror: PIP_INDEX_URL, pip.conf, UV_DEFAULT_INDEX/UV_INDEX_URL, uv.toml), else None.
    uv reads no pip.conf: for a uv plan pip's setting is returned too, so its commands can name it."""
    if manager == "uv":
        for var in ("UV_DEFAULT_INDEX", "UV_INDEX_URL"):
            if (environ.get(var) or "").strip():
                return environ[var].strip(), var
        found = _uv_toml_index(environ)
        if found:
            return found
    if (environ.get("PIP_INDEX_URL") or "").strip():
        return environ["PIP_INDEX_URL"].strip(), "PIP_INDEX_URL"
    return _pip_conf_index(environ, env_path)


def pip_config_files(environ, env_path: Optional[str] = None) -> list[str]:
    """pip's configuration files, lowest precedence first (pip's docs, "Configuration")."""
    import os

    explicit = environ.get("PIP_CONFIG_FILE")
    if explicit == os.devnull:
        return []
    home = environ.get("HOME") or os.path.expanduser("~")
    xdg_dirs = (environ.get("XDG_CONFIG_DIRS") or "/etc/xdg").split(os.pathsep)
    files = [os.path.join(d, "pip", "pip.conf") for d in reversed(xdg_dirs) if d] + ["/etc/pip.conf"]
    if environ.get("PROGRAMDATA"):
        files.insert(0, os.path.join(environ["PROGRAMDATA"], "pip", "pip.ini"))
    files += [os.path.join(home, ".pip", "pip.conf"),
              os.path.join(environ.get("XDG_CONFIG_HOME") or os.path.join(home, ".config"), "pip", "pip.conf")]
    if environ.get("APPDATA"):
        files.append(os.path.join(environ["APPDATA"], "pip", "pip.ini"))
    if env_path:
        files += [os.path.join(env_path, "pip.conf"), os.path.join(env_path, "pip.ini")]
    if explicit:
        files.append(explicit)
    return files


def _pip_conf_index(environ, env_path: Optional[str]) -> Optional[tuple[str, str]]:
    import configparser

    from envdoctor import proc

    found = None
    for path in pip_config_files(environ, env_path):
        text = proc.read_text(path, limit=1 << 16)
        if not text:
            continue
        parser = configparser.ConfigParser(interpolation=None)
        try:
            parser.read_string(text)
        except configparser.Error:
            continue
        for section, key in PIP_INDEX_KEYS:
            value = parser.get(section, key, fallback="").strip()
            if value:
                found = (value.split()[0], path)
                break
    return found


def _uv_toml_index(environ) -> Optional[tuple[str, str]]:
    import os

    from envdoctor import proc
    from envdoctor.matrix.loader import tomllib

    home = environ.get("HOME") or os.path.expanduser("~")
    config_home = environ.get("XDG_CONFIG_HOME") or os.path.join(home, ".config")
    for path in (environ.get("UV_CONFIG_FILE"), os.path.join(config_home, "uv", "uv.toml"), "/etc/uv/uv.toml"):
        text = proc.read_text(path, limit=1 << 16) if path else None
        if not text:
            continue
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError:
            continue
        for index in data.get("index", []) if isinstance(data.get("index"), list) else []:
            if isinstance(index, dict) and index.get("default") and isinstance(index.get("url"), str):
                return index["url"], path
        for table in (data, data.get("pip") if isinstance(data.get("pip"), dict) else {}):
            if isinstance(table.get("index-url"), str):
                return table["index-url"], path
    return None
