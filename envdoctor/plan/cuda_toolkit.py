"""`envdoctor install cuda-toolkit [--cuda X.Y]`: a CUDA toolkit for building extensions.

Which release: `--cuda X.Y` when given, else the CUDA the installed torch was built with (PyTorch
refuses an nvcc of another major and warns on another minor), else the newest the driver runs. The
release must be one NVIDIA shipped (matrices/drivers.toml [[toolkit]]). How: recipes/cuda-toolkit.toml
- conda-forge `cuda-toolkit` pinned with `cuda-version` into the target conda env, NVIDIA's conda
label, NVIDIA's apt repository (`cuda-toolkit-X-Y`) on Debian/Ubuntu, or the CUDA 13 wheels (one
folder, nvidia/cu13, usable as CUDA_HOME) into a venv. NVIDIA's apt repository only where its
[[apt_repo]] row says it carries that release (else the conda env, else nothing, with the reason);
conda-forge from its `min_cuda`, NVIDIA's conda label below it; JetPack's apt on a Jetson. A warning
when the system gcc (the recorded nvcc host compiler, else the distribution's own) is outside what
that release's nvcc accepts (matrices/host_compilers.toml).

`--run` is refused: the frameworks' safety path (snapshot of the environment, rollback, verifying the
import) does not cover a toolkit, which goes into the system (apt) or a conda prefix.
"""

from __future__ import annotations

import re
from typing import Optional

from envdoctor.errors import UsageError
from envdoctor.plan import InstallPlan
from envdoctor.plan.recipes import recipe, render

FRAMEWORK = "cuda-toolkit"
ALIASES = ("cuda-toolkit", "cuda", "nvcc", "toolkit")
MANAGERS = ("pip", "uv", "conda", "apt")
RUN_REFUSED = ("--run is not available for cuda-toolkit: the safety path --run gives frameworks (snapshot of the "
               "environment, rollback on failure, verifying the result) does not cover a toolkit, which goes into "
               "the system (apt) or a conda prefix. Run the printed commands yourself.")


def releases() -> dict[str, str]:
    """CUDA "X.Y" → its newest "X.Y.Z", for every toolkit NVIDIA released (the drivers matrix)."""
    from envdoctor.matrix import drivers

    newest: dict[str, str] = {}
    for row in drivers.toolkits():
        key = ".".join(row.cuda.split(".")[:2])
        newest[key] = row.cuda  # rows are sorted by version: the last one wins
    return newest


def _tuple(cuda: str) -> tuple[int, ...]:
    from envdoctor.matrix.drivers import version_tuple  # the one version reading

    return version_tuple(cuda)


def choose_release(facts, cuda: Optional[str]) -> tuple[Optional[str], list[str], list[str]]:
    """(CUDA "X.Y", reasons, warnings); None when nothing says which."""
    from envdoctor.diagnose.build import torch_cuda

    known = releases()
    torch_version, how = torch_cuda(facts)
    nv = facts.nvidia
    driver_cuda = nv.driver_cuda if nv else None
    reasons: list[str] = []
    warnings: list[str] = []
    if cuda:
        if "." not in cuda:  # a bare major: the newest release of it
            matching = [c for c in known if c.split(".")[0] == cuda]
            if not matching:
                raise UsageError(f"--cuda {cuda}: no CUDA {cuda}.x toolkit is known")
            cuda = max(matching, key=_tuple)
        if cuda not in known:
            raise UsageError(f"--cuda {cuda}: NVIDIA released no CUDA {cuda} toolkit (known: {', '.join(sorted(known, key=_tuple))})")
        reasons.append(f"CUDA {cuda} as asked (--cuda)")
    elif torch_version:
        cuda = torch_version if torch_version in known else None
        if cuda is None:
            same_major = [c for c in known if c.split(".")[0] == torch_version.split(".")[0] and _tuple(c) <= _tuple(torch_version)]
            cuda = max(same_major, key=_tuple) if same_major else None
        if cuda:
            reasons.append(f"torch was built with CUDA {torch_version} ({how}); PyTorch refuses an nvcc of another "
                           "major and warns on another minor")
    elif driver_cuda:
        fits = [c for c in known if _tuple(c) <= _tuple(driver_cuda)]
        cuda = max(fits, key=_tuple) if fits else None
        if cuda:
            reasons.append(f"no CUDA build of torch to match; CUDA {cuda} is the newest the driver "
                           f"({nv.driver_version}, CUDA ≤ {driver_cuda}) runs")
    if cuda is None:
        return None, reasons, warnings
    if torch_version and cuda.split(".")[0] != torch_version.split(".")[0]:
        warnings.append(f"torch was built with CUDA {torch_version}: torch.utils.cpp_extension refuses an nvcc of "
                        f"CUDA {cuda} (another major)")
    elif torch_version and cuda != torch_version:
        warnings.append(f"torch was built with CUDA {torch_version}: PyTorch warns on the minor mismatch with {cuda}")
    if driver_cuda and _tuple(cuda)[:1] > _tuple(driver_cuda)[:1]:
        warnings.append(f"the driver runs CUDA ≤ {driver_cuda}: code compiled with CUDA {cuda} will not run here "
                        "until the driver is updated")
    return cuda, reasons, warnings


def _nvidia_repo(facts) -> Optional[tuple[str, str]]:
    """NVIDIA's apt repository for the distribution: ("ubuntu2404", "x86_64"), or None."""
    m = re.match(r"^(Ubuntu|Debian)\s+(\d+)(?:\.(\d+))?", facts.host.distro or "")
    arch = {"x86_64": "x86_64", "aarch64": "sbsa"}.get(facts.host.arch or "")
    if not m or arch is None or facts.jetson is not None:
        return None
    name = m.group(1).lower()
    return (f"{name}{m.group(2)}{m.group(3) or ''}" if name == "ubuntu" else f"{name}{m.group(2)}"), arch


def _fits(cuda: str, row: dict) -> bool:
    """Whether release `cuda` is within a recipe's or repository row's min_cuda … max_cuda (inclusive)."""
    low, high = row.get("min_cuda"), row.get("max_cuda")
    return (low is None or _tuple(cuda) >= _tuple(low)) and (high is None or _tuple(cuda) <= _tuple(high))


def apt_repo_row(repo: str) -> Optional[dict]:
    """recipes/cuda-toolkit.toml's [[apt_repo]] row for NVIDIA's repository `repo`, or None (range unknown)."""
    from envdoctor.matrix.loader import load

    return next((r for r in load(FRAMEWORK, kind="recipes").get("apt_repo", []) if r.get("repo") == repo), None)


def _repo_range(row: dict) -> str:
    low, high = row.get("min_cuda"), row.get("max_cuda")
    return f"CUDA {low} to {high}" if high else f"CUDA {low} and newer"


def _jetpack_reason(jetson) -> str:
    l4t = f" (L4T {jetson.l4t}" + (f", CUDA {jetson.cuda})" if jetson.cuda else ")") if jetson.l4t else ""
    return f"on a Jetson the CUDA toolkit is JetPack's, from the L4T repository{l4t}, not NVIDIA's desktop/server apt repository"


def _pick_recipe(facts, cuda: str, manager: str) -> tuple[Optional[str], list[str]]:
    """(recipe id, reasons); None when no recipe fits this target."""
    conda_env = facts.python.env_kind in ("conda", "conda-base") and facts.python.env_path
    why: list[str] = []
    if manager in ("pip", "uv"):
        if _fits(cuda, recipe(FRAMEWORK, f"{manager}-cu13-wheels")):
            return f"{manager}-cu13-wheels", [f"the CUDA {cuda} wheels install one folder (nvidia/cu13) that CUDA_HOME can name"]
        why.append(f"the CUDA {cuda.split('.')[0]}.x nvcc wheels install nvcc and the headers in separate folders, "
                   "which no CUDA_HOME can name: not a toolkit torch.utils.cpp_extension can build with")
        manager = "conda" if conda_env else "apt"
    if manager == "conda":
        if not conda_env:
            return None, why + ["--manager conda needs a conda environment as the target (--python <env>/bin/python)"]
        if _fits(cuda, recipe(FRAMEWORK, "conda-forge")):
            return "conda-forge", why + ["conda-forge cuda-toolkit pinned with cuda-version into the target conda env"]
        if _fits(cuda, recipe(FRAMEWORK, "conda-nvidia")):
            return "conda-nvidia", why + [f"conda-forge has no CUDA {cuda} nvcc (its cuda-toolkit starts at "
                                          f"{recipe(FRAMEWORK, 'conda-forge')['min_cuda']}): NVIDIA's conda label "
                                          f"cuda-{releases()[cuda]}"]
        return None, why + [f"no conda channel envdoctor knows has a CUDA {cuda} toolkit"]
    if manager == "apt":
        if facts.jetson is not None:
            return "jetson-jetpack", why + [_jetpack_reason(facts.jetson)]
        found = _nvidia_repo(facts)
        row = apt_repo_row(found[0]) if found else None
        if found and row is not None and not _fits(cuda, row):
            why.append(f"NVIDIA's {found[0]} repository has no cuda-toolkit-{cuda.replace('.', '-')}: it carries "
                       f"{_repo_range(row)} ({row['source'].split(';')[0]})")
            if conda_env:
                in_conda, conda_why = _pick_recipe(facts, cuda, "conda")
                return in_conda, why + conda_why
            return None, why + ["use a conda env (--manager conda), or NVIDIA's runfile installer"]
        if found:
            return "apt-nvidia", why + [f"NVIDIA's apt repository for {facts.host.distro} ({facts.host.arch})"]
        if facts.host.os == "windows":
            return "windows-installer", why + ["on Windows the toolkit comes from NVIDIA's installer"]
        return None, why + [f"NVIDIA's apt repository has no packages for {facts.host.distro or 'this system'}"
                            + ("; use a conda env (--manager conda)" if not conda_env else "")]
    raise UsageError(f"--manager {manager!r} is not one of: {', '.join(MANAGERS)}")


def _repo_warnings(facts, cuda: str, recipe_id: Optional[str]) -> list[str]:
    jetson = facts.jetson
    if recipe_id == "jetson-jetpack" and jetson is not None and jetson.cuda and jetson.cuda.split(".")[:2] != cuda.split(".")[:2]:
        return [f"JetPack's L4T {jetson.l4t or ''} repository carries CUDA {jetson.cuda}, not {cuda}: another CUDA "
                "on a Jetson means another JetPack release (reflash or upgrade), not a package"]
    found = _nvidia_repo(facts) if recipe_id == "apt-nvidia" else None
    row = apt_repo_row(found[0]) if found else None
    if row is not None and row.get("confirmed") is False:
        return [f"the range of CUDA releases in NVIDIA's {found[0]} repository is not confirmed: check that "
                f"https://developer.download.nvidia.com/compute/cuda/repos/{found[0]}/{found[1]}/ lists "
                f"cuda-toolkit-{cuda.replace('.', '-')}"]
    if found and row is None:
        return [f"envdoctor has no record of which CUDA releases NVIDIA's {found[0]} repository carries: check that "
                f"https://developer.download.nvidia.com/compute/cuda/repos/{found[0]}/{found[1]}/ lists "
                f"cuda-toolkit-{cuda.replace('.', '-')}"]
    return []


def _gcc_range(cuda: str):
    """matrices/host_compilers.toml's gcc bounds for `cuda`, else the nearest older release of the same major
    (the table skips releases whose bounds did not change): ((min, max_exclusive, source), the row's CUDA)."""
    from envdoctor.matrix.host_compilers import compiler_range

    older = sorted((c for c in releases() if c.split(".")[0] == cuda.split(".")[0] and _tuple(c) <= _tuple(cuda)),
                   key=_tuple, reverse=True)
    for release in older:
        bounds = compiler_range(release, "gcc")
        if bounds is not None:
            return bounds, release
    return None, None


def _system_gcc(facts, recipe_id: Optional[str]) -> tuple[Optional[str], str]:
    """(the gcc version nvcc will use here, where that was read), or (None, "")."""
    build = facts.build
    host = next((c for c in (build.compilers if build else []) if c.role == "nvcc-host"), None)
    if host is not None and host.kind == "gcc" and host.version:
        return host.version, f"the nvcc host compiler here (`{host.command}`)"
    found = _nvidia_repo(facts) if recipe_id == "apt-nvidia" else None
    row = apt_repo_row(found[0]) if found else None
    if row is not None and row.get("default_gcc"):
        return row["default_gcc"], f"{facts.host.distro}'s own gcc"
    return None, ""


def _compiler_warnings(facts, cuda: str, recipe_id: Optional[str]) -> list[str]:
    """A warning when the system gcc is outside what CUDA `cuda`'s nvcc accepts (matrices/host_compilers.toml)."""
    from envdoctor.matrix.host_compilers import version_numbers

    gcc, where = _system_gcc(facts, recipe_id)
    bounds, row_cuda = _gcc_range(cuda)
    if gcc is None or bounds is None:
        return []
    low, high, _source = bounds
    have = version_numbers(gcc)
    if low <= have < high:
        return []
    accepted = f"gcc ≥ {'.'.join(map(str, low))} and < {'.'.join(map(str, high))}"
    return [f"gcc {gcc}, {where}, is outside what CUDA {cuda}'s nvcc accepts ({accepted}: matrices/host_compilers.toml, "
            f"row CUDA {row_cuda}): nvcc stops with \"unsupported GNU version\"; install an accepted gcc and pass it "
            "with CC/CXX (torch hands $CC to nvcc as -ccbin)"]


def plan_toolkit(facts, cuda: Optional[str] = None, manager: str = "pip") -> InstallPlan:
    python = facts.python.version
    if facts.host.os == "macos":
        return InstallPlan(framework=FRAMEWORK, version=None, build=None, python=python, manager=manager,
                           steps=("NVIDIA ships no CUDA toolkit for macOS; build CUDA extensions on a Linux or Windows machine",))
    chosen, reasons, warnings = choose_release(facts, cuda)
    if chosen is None:
        return InstallPlan(framework=FRAMEWORK, version=None, build=None, python=python, manager=manager,
                           reasons=tuple(reasons),
                           steps=("Nothing says which CUDA to install (no CUDA build of torch, no driver known): "
                                  "give --cuda X.Y",))
    if facts.host.os == "windows":
        manager = "apt"  # the installer is the only route; _pick_recipe maps it
    recipe_id, why = _pick_recipe(facts, chosen, manager)
    reasons += why
    warnings += _repo_warnings(facts, chosen, recipe_id) + _compiler_warnings(facts, chosen, recipe_id)
    if recipe_id is None:
        return InstallPlan(framework=FRAMEWORK, version=chosen, build=None, python=python, manager=manager,
                           reasons=tuple(reasons), warnings=tuple(warnings),
                           steps=("Use --manager conda with a conda env as the target, or install CUDA "
                                  f"{chosen} from https://developer.nvidia.com/cuda-toolkit-archive",))
    repo, repo_arch = _nvidia_repo(facts) or ("", "")
    commands, steps = render(FRAMEWORK, recipe_id, python=facts.python.executable or "python", cuda=chosen,
                             cuda_dash=chosen.replace(".", "-"), cuda_release=releases()[chosen],
                             env_path=facts.python.env_path or "", repo=repo, repo_arch=repo_arch)
    if recipe_id == "windows-installer":  # a plan without commands is "nothing fits": say it as a step
        return InstallPlan(framework=FRAMEWORK, version=None, build=recipe_id, python=python, manager="installer",
                           reasons=tuple(reasons), warnings=tuple(warnings), steps=steps)
    return InstallPlan(framework=FRAMEWORK, version=chosen, build=recipe_id, python=python,
                       manager=recipe(FRAMEWORK, recipe_id)["manager"],
                       commands=commands, reasons=tuple(reasons), warnings=tuple(warnings), steps=steps)


def install_command(cuda: str, manager: str, python: Optional[str], facts_file: Optional[str], json_out: bool,
                    run: bool) -> int:
    """The CLI for `envdoctor install cuda-toolkit`: print the plan; exit 0 found, 1 nothing fits, 2 refused."""
    if run:
        raise UsageError(RUN_REFUSED)
    if facts_file and python:
        raise UsageError("--facts and --python name two different targets; give one of them")
    from envdoctor.commands.common import obtain_facts
    from envdoctor.plan.common import cuda_request

    kind, version = cuda_request(cuda)
    if kind not in ("auto", "cuda"):
        raise UsageError(f"--cuda {cuda!r}: a CUDA toolkit is a CUDA version (12.8) or auto")
    manager = manager.strip().lower()
    if manager not in MANAGERS:
        raise UsageError(f"--manager {manager!r} is not one of: {', '.join(MANAGERS)}")
    facts, _ = obtain_facts(facts_file, python)
    plan = plan_toolkit(facts, version, manager)
    if json_out:
        from envdoctor.render import print_json

        print_json(plan.to_dict())
    else:
        from envdoctor.render import console
        from envdoctor.render.plan import print_plan

        print_plan(console(), plan, facts)
    return 0 if plan.ok else 1
