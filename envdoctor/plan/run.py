"""`envdoctor install --run`: carry out an InstallPlan in the target environment, safely.

1. Refuse what must not happen silently: a system interpreter or a conda base environment (unless
   --allow-system), a conda plan that would create a third environment when --python names a venv,
   or running without a confirmation (no terminal to ask and no --yes). (Which target, and the
   refusal of a stale VIRTUAL_ENV or of envdoctor's own interpreter: envdoctor.target, commands.install.)
2. Before asking: record the environment's distributions in memory (pip freeze + each one's origin
   from its .dist-info: direct_url.json) and say what a rollback could not do (an editable
   install it replaces, a conda environment it cannot snapshot). After the yes: write the state file
   and say how to restore by hand.
3. Run each command (an argv list, never a shell string) with a generous timeout, streaming output.
   SIGINT, SIGTERM and SIGHUP all stop the installer's process group and roll back.
4. On failure or a stop signal: show the installer's last lines, put back what changed (uninstall what
   was added; reinstall each replaced package from where it came — its recorded URL or folder, its
   build's own index, the default registry as configured, and only then the plan's indexes — or
   remove the half-made new conda environment). A signal during the restore is noted and the restore
   finishes; a further one stops it and lists exactly what is left.
5. After: check the planned versions are installed, then import the framework in the target
   interpreter and check it sees the device the plan was made for.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import re
import signal
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional

from rich.markup import escape

from envdoctor import proc
from envdoctor.errors import UsageError
from envdoctor.facts import Facts, PythonEnv
from envdoctor.plan import InstallPlan

COMMAND_TIMEOUT = 3600.0  # one installer command; a CUDA framework can be gigabytes
QUERY_TIMEOUT = 120.0  # pip freeze, uninstall, metadata lookups
IMPORT_TIMEOUT = 300.0  # first import of a framework compiles caches
PROTECTED_ENVS = {"system": "a system interpreter", "conda-base": "a conda base environment"}
INDEX_OPTIONS = ("--index-url", "-i", "--extra-index-url", "--find-links", "-f")
NO_TERMINAL = "--run needs a confirmation but stdin is not a terminal; pass --yes to run without asking"
PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)(\[[^\]]*\])?==([^=;\s]+)$")


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


# --- 0. where the plan installs -----------------------------------------------------------------

@dataclass(frozen=True)
class Target:
    """Where the plan installs: the probed interpreter, or a conda environment the plan creates."""

    python: tuple[str, ...]  # argv prefix that runs the environment's interpreter
    new_conda_env: Optional[tuple[str, str]] = None  # ("--name", "torch") | ("--prefix", "/x") when created

    @property
    def describe(self) -> str:
        if self.new_conda_env:
            return f"a new conda environment {self.new_conda_env[1]}"
        return self.python[0]


def target_of(plan: InstallPlan, facts: Facts) -> Target:
    for argv in plan.commands:
        if Path(argv[0]).name in ("conda", "mamba", "micromamba") and "create" in argv[1:3]:
            for flag, name in (("--name", "--name"), ("-n", "--name"), ("--prefix", "--prefix"), ("-p", "--prefix")):
                if flag in argv and argv.index(flag) + 1 < len(argv):
                    where = argv[argv.index(flag) + 1]
                    return Target((argv[0], "run", name, where, "python"), (name, where))
    return Target((facts.python.executable or "python",))


# --- 1. refusals --------------------------------------------------------------------------------

def refusal(python: PythonEnv, allow_system: bool) -> Optional[str]:
    """Why --run must not write into this environment, or None."""
    what = PROTECTED_ENVS.get(python.env_kind or "")
    if what is None or allow_system:
        return None
    return (f"refusing to install into {what} ({python.executable}); create a virtual environment "
            f"(python -m venv .venv) and pass --python .venv/bin/python, or pass --allow-system")


def confirmed(con, plan: InstallPlan, python: str, assume_yes: bool, interactive: bool) -> bool:
    if plan.steps:
        con.print("\n[yellow]! --run runs only the commands; the steps under 'By hand' are yours to do "
                  "(before, where they are prerequisites).[/]", soft_wrap=True)
    if assume_yes:
        return True
    if not interactive:
        raise UsageError(NO_TERMINAL)
    import typer

    con.print()
    return typer.confirm(f"Run {len(plan.commands)} command(s) in {python}?", default=False)


# --- 2. the environment before ------------------------------------------------------------------

@dataclass(frozen=True)
class Snapshot:
    """The target's distributions before the change: canonical name → (version, requirement line)."""

    packages: dict[str, tuple[str, str]] = field(default_factory=dict)
    source: str = "pip freeze"  # pip freeze | uv pip freeze | facts (the probe's package list)
    text: str = ""  # what was recorded, as written to the state file
    origins: dict[str, "Origin"] = field(default_factory=dict)  # canonical name -> where it came from

    @property
    def complete(self) -> bool:
        return self.source != "facts"


def parse_freeze(text: str) -> dict[str, tuple[str, str]]:
    """`pip freeze` lines → canonical name → (version, the line to reinstall it with)."""
    found: dict[str, tuple[str, str]] = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith(("#", "-")):
            continue  # comments, editable and option lines: not restorable by name
        if " @ " in line:
            name = line.split(" @ ", 1)[0].strip()
            found[canonical(name)] = ("@ " + line.split(" @ ", 1)[1].strip(), line)
            continue
        m = PIN.match(line)
        if m:
            found[canonical(m.group(1))] = (m.group(3), f"{m.group(1)}=={m.group(3)}")
    return found


def freeze_argv(python: str, manager: str) -> list[str]:
    if manager == "uv":
        return ["uv", "pip", "freeze", "--python", python]
    return [python, "-m", "pip", "freeze", "--all"]  # --all: pip and setuptools too (plans upgrade them)


@dataclass(frozen=True)
class Origin:
    """Where an installed distribution came from, as its .dist-info says (PEP 610 direct_url.json):
    a URL or folder for a direct or editable install, else an index."""

    version: str
    url: Optional[str] = None  # direct_url.json's url: file:///w/x.whl, git+https://..., file:///src
    editable: bool = False

    @property
    def location(self) -> Optional[str]:
        """The folder of an editable install (file:// URL), or None."""
        if not (self.editable and self.url and self.url.startswith("file://")):
            return None
        from urllib.parse import unquote, urlparse

        return unquote(urlparse(self.url).path)


ORIGINS_SCRIPT = """
import json
from importlib import metadata
out = {}
for dist in metadata.distributions():
    name = dist.metadata.get("Name")
    if not name:
        continue
    try:
        direct = json.loads(dist.read_text("direct_url.json") or "null")
    except Exception:
        direct = None
    direct = direct if isinstance(direct, dict) else {}
    out[name] = {"version": dist.version, "url": direct.get("url"), "editable": bool((direct.get("dir_info") or {}).get("editable"))}
print(json.dumps(out))
"""


def read_origins(python: str) -> dict[str, Origin]:
    """Every distribution's origin, read inside the target (stdlib only); {} when it cannot run."""
    result = proc.run([python, "-c", ORIGINS_SCRIPT], timeout=QUERY_TIMEOUT)
    if not result.ok:
        return {}
    try:
        data = json.loads(result.stdout.strip().splitlines()[-1])
    except (json.JSONDecodeError, IndexError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {canonical(name): Origin(str(row.get("version")), row.get("url"), bool(row.get("editable")))
            for name, row in data.items() if isinstance(row, dict)}


def with_editables(packages: dict[str, tuple[str, str]], origins: dict[str, Origin]) -> dict[str, tuple[str, str]]:
    """`pip freeze` leaves editable installs out of name==version lines: add them as what they are."""
    merged = dict(packages)
    for name, origin in origins.items():
        if origin.editable:
            merged[name] = (f"{origin.version} (editable)", f"-e {origin.location or origin.url}")
    return merged


def take_snapshot(python: str, manager: str, facts: Facts) -> Snapshot:
    frozen = _freeze(python, manager)
    if frozen:
        origins = read_origins(python)
        return Snapshot(with_editables(parse_freeze(frozen[1]), origins), *frozen, origins=origins)
    # No installer could list the environment: fall back to what the probe saw (relevant packages only).
    packages = {canonical(n): (v, f"{n}=={v}") for n, v in facts.python.packages.items() if "|" not in v}
    return Snapshot(packages, "facts", "".join(f"{line}\n" for _, line in packages.values()))


def _freeze(python: str, manager: str) -> Optional[tuple[str, str]]:
    """(source, text) from the first installer that lists the environment (uv's first for a uv plan)."""
    for tool in (["uv", "pip"] if manager == "uv" else ["pip"]):
        result = proc.run(freeze_argv(python, tool), timeout=QUERY_TIMEOUT)
        if result.ok:
            return ("uv pip freeze" if tool == "uv" else "pip freeze"), result.stdout
    return None


def state_dir() -> Path:
    override = os.environ.get("ENVDOCTOR_STATE_DIR")
    if override:
        return Path(override)
    if sys.platform == "win32" and os.environ.get("LOCALAPPDATA"):
        return Path(os.environ["LOCALAPPDATA"]) / "envdoctor" / "state"
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "envdoctor"


def save_snapshot(snapshot: Snapshot, python: str, framework: str) -> Optional[Path]:
    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    path = state_dir() / f"before-{framework}-{stamp}.txt"
    for n in range(2, 100):  # two runs within a second keep both records
        if not path.exists():
            break
        path = state_dir() / f"before-{framework}-{stamp}-{n}.txt"
    header = f"# envdoctor: packages of {python} before installing {framework} ({snapshot.source}, {stamp})\n"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(header + snapshot.text, encoding="utf-8")
    except OSError:
        return None
    return path


# --- 4. putting the environment back ------------------------------------------------------------

def index_options(plan: InstallPlan) -> list[str]:
    """The package-index options the plan's commands use, so a restore can find the same builds."""
    no_index = False
    pairs: list[tuple[str, str]] = []
    for argv in plan.commands:
        for i, token in enumerate(argv):
            if token in INDEX_OPTIONS and i + 1 < len(argv) and (token, argv[i + 1]) not in pairs:
                pairs.append((token, argv[i + 1]))
            no_index = no_index or token == "--no-index"
    return (["--no-index"] if no_index else []) + [item for pair in pairs for item in pair]


def previous_build_indexes(before: Snapshot) -> list[str]:
    """Extra indexes for the local builds being put back (torch 2.3.1+cu121 is only on PyTorch's
    cu121 index), from the PyTorch matrix's index URL form."""
    tags = sorted({version.split("+", 1)[1] for name, (version, _) in before.packages.items()
                   if name in ("torch", "torchvision", "torchaudio") and "+" in version})
    if not tags:
        return []
    from envdoctor.matrix import pytorch

    return [item for tag in tags for item in ("--extra-index-url", pytorch.index_url(tag))]


def current_packages(python: str, manager: str) -> Optional[dict[str, tuple[str, str]]]:
    frozen = _freeze(python, manager)
    return with_editables(parse_freeze(frozen[1]), read_origins(python)) if frozen else None


def roll_back(con, before: Snapshot, python: str, manager: str, plan: InstallPlan) -> bool:
    """Put the environment back as it was (pip or uv), each package from where it came; True when it
    now matches the snapshot again."""
    after = current_packages(python, manager)
    if after is None:
        con.print("[red]✗ cannot list the environment's packages, so nothing was restored.[/]")
        return False
    added, changed = differences(before, after)
    partial = "" if before.complete else (" (only the packages the probe recorded: what the installer added "
                                          "besides them is left)")
    if not (added or changed):
        con.print(f"  The environment's packages are unchanged{partial}; nothing to restore.", soft_wrap=True)
        return True
    con.print("\n[bold]Restoring the previous packages:[/]")
    ok = True
    if added:
        ok = _restore_step(con, uninstall_argv(python, manager, added))
    failed = reinstall(con, before, changed, python, manager, plan)
    again = current_packages(python, manager) or {}
    left = describe_left(before, again)
    if failed or left or not ok:
        con.print("[red]✗ the environment still differs from before: " + escape("; ".join(left or failed)) + "[/]", soft_wrap=True)
        return False
    con.print(f"[green]✓ restored: the environment has the same packages as before{partial}.[/]", soft_wrap=True)
    return True


def differences(before: Snapshot, after: dict[str, tuple[str, str]]) -> tuple[list[str], list[str]]:
    """(added, changed): what the run added (only with a complete snapshot) and what it replaced or removed."""
    added = sorted(name for name in after if name not in before.packages) if before.complete else []
    changed = sorted(name for name, (version, _) in before.packages.items()
                     if after.get(name, (None,))[0] != version)
    return added, changed


def describe_left(before: Snapshot, after: dict[str, tuple[str, str]]) -> list[str]:
    """'demo-pkg 2.0 (was 1.0)', 'demo-extra 1.0 (added)', 'six (removed, was 1.16.0)': what still differs."""
    added, changed = differences(before, after)
    return ([f"{n} {after[n][0]} (added)" for n in added]
            + [f"{n} {after[n][0]} (was {before.packages[n][0]})" if n in after else f"{n} (removed, was {before.packages[n][0]})"
               for n in changed])


def uninstall_argv(python: str, manager: str, names: list[str]) -> list[str]:
    if manager == "uv":
        return ["uv", "pip", "uninstall", "--python", python, *names]
    return [python, "-m", "pip", "uninstall", "--yes", *names]


def install_argv(python: str, manager: str, requirements: list[str], options: list[str]) -> list[str]:
    if manager == "uv":
        return ["uv", "pip", "install", "--python", python, "--no-deps", *requirements, *options]
    return [python, "-m", "pip", "install", "--no-deps", *requirements, *options]


def sources_for(name: str, before: Snapshot, plan: InstallPlan) -> list[list[str]]:
    """Where to fetch the previous version of `name` from, in order: a direct URL or editable folder as
    recorded (no index); a PyTorch build tag's own index (torch 2.3.1+cu121); the default registry as
    pip/uv are configured (never replaced by the plan's --index-url); last the plan's own indexes, for a
    package that came from the vendor's index."""
    version, line = before.packages[name]
    if line.startswith("-e ") or " @ " in line:
        return [[]]
    sources: list[list[str]] = []
    if name in ("torch", "torchvision", "torchaudio") and "+" in version:
        sources.append(["--index-url", build_index(version.split("+", 1)[1], plan)])
    sources.append([])
    for vendor in command_indexes(plan):
        if vendor not in sources:
            sources.append(vendor)
    return sources


def command_indexes(plan: InstallPlan) -> list[list[str]]:
    """The index options of each of the plan's install commands, as that command uses them together."""
    found: list[list[str]] = []
    for argv in plan.commands:
        if not _is_python_installer(argv):
            continue
        options = index_options(InstallPlan(plan.framework, plan.version, plan.build, plan.python, plan.manager,
                                             commands=(argv,)))
        if options and options not in found:
            found.append(options)
    return found


def build_index(tag: str, plan: InstallPlan) -> str:
    """PyTorch's index of a build tag, on the same mirror as the plan's index when it uses one."""
    from envdoctor.matrix import pytorch

    url = pytorch.index_url(tag)
    build, mirror = plan.build or "", (plan.index_url or "").rstrip("/")
    if plan.framework != "pytorch" or not build or not mirror.endswith("/" + build):
        return url
    if mirror == pytorch.index_url(build).rstrip("/") or "--index-url" not in index_options(plan):
        return url
    return mirror[: -len(build)] + tag  # the plan's mirror, this tag's folder


def requirement_tokens(line: str) -> list[str]:
    return line.split(" ", 1) if line.startswith("-e ") else [line]


def reinstall(con, before: Snapshot, names: list[str], python: str, manager: str, plan: InstallPlan) -> list[str]:
    """Reinstall the previous versions, trying each package's sources in order (a group at once,
    then one by one); returns what could not be put back."""
    pending = {name: sources_for(name, before, plan) for name in names}
    failed: list[str] = []
    while pending:
        first = pending_by_source(pending)
        for options, group in first.items():
            done = _install_group(con, before, group, python, manager, list(options))
            for name in group:
                if name in done:
                    pending.pop(name)
                    continue
                pending[name] = pending[name][1:]
                if not pending[name]:
                    pending.pop(name)
                    failed.append(f"{name} {before.packages[name][0]} (found in none of its sources)")
    return failed


def pending_by_source(pending: dict[str, list[list[str]]]) -> dict[tuple[str, ...], list[str]]:
    groups: dict[tuple[str, ...], list[str]] = {}
    for name, sources in pending.items():
        groups.setdefault(tuple(sources[0]), []).append(name)
    return groups


def _install_group(con, before: Snapshot, group: list[str], python: str, manager: str, options: list[str]) -> set[str]:
    """Install a group from one source; when the group fails, each on its own. The names put back."""
    requirements = [t for n in group for t in requirement_tokens(before.packages[n][1])]
    if _restore_step(con, install_argv(python, manager, requirements, options), quiet_failure=True):
        return set(group)
    if len(group) == 1:
        return set()
    return {n for n in group if _restore_step(con, install_argv(python, manager, requirement_tokens(before.packages[n][1]),
                                                                     options), quiet_failure=True)}


def _restore_step(con, argv: list[str], quiet_failure: bool = False) -> bool:
    con.print(f"  $ {escape(_shell(argv))}", soft_wrap=True)
    result = proc.run(argv, timeout=COMMAND_TIMEOUT)
    if not result.ok:
        word = "not there; trying the next source" if quiet_failure else "restore step failed"
        con.print(f"[yellow]    ! {word}: {escape(result.describe_failure())}[/]", soft_wrap=True)
    return result.ok


# --- 5. verification ----------------------------------------------------------------------------

IMPORT_NAMES = {"pytorch": "torch", "tensorflow": "tensorflow", "jax": "jax", "paddle": "paddle"}
GPU_COUNT = {
    "torch": "(torch.cuda.device_count() if torch.cuda.is_available() else 0)",
    "tensorflow": "len(tensorflow.config.list_physical_devices('GPU'))",
    "jax": "sum(d.platform in ('gpu', 'cuda', 'rocm', 'METAL') for d in jax.devices())",
    "paddle": "(paddle.device.cuda.device_count() if paddle.is_compiled_with_cuda() else 0)",
}
MPS_CHECK = {"torch": "bool(getattr(torch.backends, 'mps', None) and torch.backends.mps.is_available())"}
METADATA_SCRIPT = """
import json, sys
from importlib import metadata
out = {}
for name in sys.argv[1:]:
    try:
        out[name] = metadata.version(name)
    except metadata.PackageNotFoundError:
        out[name] = None
print(json.dumps(out))
"""


def planned_pins(plan: InstallPlan) -> dict[str, str]:
    """`name==version` requirements in the plan's pip/uv commands: what must be installed after."""
    pins: dict[str, str] = {}
    for argv in plan.commands:
        if not _is_python_installer(argv):
            continue
        for token in argv:
            m = PIN.match(token)
            if m:
                pins[canonical(m.group(1))] = m.group(3)
    return pins


def _is_python_installer(argv) -> bool:
    head = " ".join(argv[:4])
    return "pip" in head and "install" in argv


def installed_versions(python: tuple[str, ...], names) -> Optional[dict[str, Optional[str]]]:
    result = proc.run([*python, "-c", METADATA_SCRIPT, *names], timeout=QUERY_TIMEOUT)
    if not result.ok:
        return None
    try:
        return json.loads(result.stdout)
    except json.JSONDecodeError:
        return None


def version_matches(installed: str, planned: str) -> bool:
    from packaging.specifiers import InvalidSpecifier, SpecifierSet
    from packaging.version import InvalidVersion, Version

    try:
        return SpecifierSet(f"=={planned}").contains(Version(installed), prereleases=True)
    except (InvalidSpecifier, InvalidVersion):
        return installed == planned


def device_script(module: str) -> str:
    gpus = GPU_COUNT.get(module, "0")
    mps = MPS_CHECK.get(module, "False")
    return (f"import json, {module}\n"
            f"print(json.dumps({{'version': getattr({module}, '__version__', None), 'gpus': {gpus}, 'mps': {mps}}}))\n")


def expected_device(plan: InstallPlan) -> Optional[str]:
    build = (plan.build or "").lower()
    if build.startswith(("cu", "jp", "rocm")) or "cuda" in build:
        return "gpu"
    if build in ("mps", "metal"):
        return "mps"
    return None


def verify(con, plan: InstallPlan, python: tuple[str, ...], facts: Facts) -> bool:
    ok = _verify_versions(con, plan, python)
    return _verify_import(con, plan, python, facts) and ok


def _verify_versions(con, plan: InstallPlan, python: tuple[str, ...]) -> bool:
    pins = planned_pins(plan)
    if not pins:
        return True
    found = installed_versions(python, list(pins))
    if found is None:
        con.print("[red]✗ cannot read the installed versions from the target interpreter.[/]")
        return False
    ok = True
    for name, planned in pins.items():
        installed = found.get(name)
        if installed and version_matches(installed, planned):
            con.print(f"[green]✓[/] {escape(name)} {escape(installed)}")
        else:
            con.print(f"[red]✗ {escape(name)}: planned {escape(planned)}, installed {escape(installed or 'nothing')}[/]")
            ok = False
    return ok


def _verify_import(con, plan: InstallPlan, python: tuple[str, ...], facts: Facts) -> bool:
    module = IMPORT_NAMES.get(plan.framework, plan.framework.replace("-", "_"))
    result = proc.run([*python, "-c", device_script(module)], timeout=IMPORT_TIMEOUT)
    if not result.ok:
        lines = (result.stderr or result.stdout).strip().splitlines()
        con.print(f"[red]✗ import {escape(module)} failed: {escape(lines[-1] if lines else result.describe_failure())}[/]")
        return False
    try:
        seen = json.loads(result.stdout.strip().splitlines()[-1])
    except (json.JSONDecodeError, IndexError):
        con.print(f"[red]✗ import {escape(module)} printed something unexpected[/]")
        return False
    con.print(f"[green]✓[/] import {escape(module)} {escape(str(seen.get('version')))}")
    return _check_device(con, plan, facts, seen)


def _check_device(con, plan: InstallPlan, facts: Facts, seen: dict) -> bool:
    expected = expected_device(plan)
    gpus = int(seen.get("gpus") or 0)
    if expected == "gpu" and not gpus and not _machine_has_gpu(facts):
        con.print(f"[yellow]! this machine has no GPU: the {escape(plan.build or '')} build is installed, "
                  "but no device could be checked[/]", soft_wrap=True)
        return True
    if expected == "gpu":
        if gpus == 0:
            con.print(f"[red]✗ {escape(plan.build or '')} build installed, but it sees no GPU[/]")
            return False
        con.print(f"[green]✓[/] sees {gpus} GPU(s)")
        if len(facts.gpus) > gpus and not facts.env.get("CUDA_VISIBLE_DEVICES"):
            con.print(f"[yellow]! the machine has {len(facts.gpus)} GPUs; the framework sees {gpus}[/]")
    elif expected == "mps":
        if not (seen.get("mps") or gpus):
            con.print("[red]✗ the Metal/MPS device is not available[/]")
            return False
        con.print("[green]✓[/] the Metal/MPS device is available")
    return True


def _machine_has_gpu(facts: Facts) -> bool:
    from envdoctor.plan.common import has_nvidia_gpu

    return has_nvidia_gpu(facts) or bool(facts.amd and facts.amd.gpus)


# --- signals: SIGTERM and SIGHUP roll back like Ctrl-C ---------------------------------------------

STOP_SIGNALS = tuple(getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name))


class Stopped(KeyboardInterrupt):
    """A stop signal turned into the exception Ctrl-C raises, so every runner (proc.run and
    proc.run_streaming kill the installer's process group on KeyboardInterrupt) stops the same way."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


def signal_code(exc: BaseException) -> int:
    """The exit status of a run stopped by a signal: 128 + its number (130 Ctrl-C, 143 SIGTERM, 129 SIGHUP)."""
    return 128 + getattr(exc, "signum", signal.SIGINT)


def signal_label(exc: BaseException) -> str:
    return proc.signal_name(getattr(exc, "signum", signal.SIGINT))


@contextlib.contextmanager
def handled_signals(handler):
    """Route SIGINT, SIGTERM and SIGHUP to `handler` inside the block (main thread only: elsewhere
    Python cannot set handlers, and the block runs as before)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {}
    for number in STOP_SIGNALS:
        try:
            previous[number] = signal.signal(number, handler)
        except (OSError, ValueError):
            continue
    try:
        yield
    finally:
        for number, old in previous.items():
            signal.signal(number, old)


def _raise_stopped(signum, frame):
    raise Stopped(signum)


class DeferredSignals:
    """During a restore: the first stop signal is noted (the restore goes on), the next one stops it."""

    def __init__(self):
        self.seen: list[int] = []

    def __call__(self, signum, frame):
        self.seen.append(signum)
        if len(self.seen) == 1:
            _say(f"\n! {proc.signal_name(signum)} during the restore: finishing the restore first "
                 f"(send it again to stop at once and be told what is left)\n")
            return
        raise Stopped(signum)


class Tolerant:
    """A console's file that drops what it cannot write (a hung-up terminal, a closed pipe) instead of
    raising in the middle of a restore."""

    def __init__(self, file):
        self.file = file

    def write(self, text: str) -> int:
        try:
            return self.file.write(text)
        except (OSError, ValueError):
            return len(text)

    def flush(self) -> None:
        try:
            self.file.flush()
        except (OSError, ValueError):
            pass

    def __getattr__(self, name):
        return getattr(self.file, name)


def _say(text: str) -> None:
    """Write from a signal handler: straight to stderr, never through the console's locks."""
    try:
        os.write(2, text.encode("utf-8", "replace"))
    except OSError:
        pass


# --- the whole --run ----------------------------------------------------------------------------

def run_plan(con, plan: InstallPlan, facts: Facts, assume_yes: bool = False, allow_system: bool = False,
             interactive: bool = False) -> int:
    """Run an InstallPlan for real; the exit code: 0 installed and verified, 1 failed, 128+N stopped
    by signal N (130 Ctrl-C, 143 SIGTERM, 129 SIGHUP) after the rollback."""
    target = target_of(plan, facts)
    env_exists = check_target(plan, target, facts, allow_system)
    if not (assume_yes or interactive):
        raise UsageError(NO_TERMINAL)
    undo = _prepare_undo(con, plan, target, facts, env_exists)  # what a rollback can and cannot do, said now
    if not confirmed(con, plan, target.describe, assume_yes, interactive):
        con.print("Nothing was run.")
        return 0
    with handled_signals(_raise_stopped):
        try:  # a signal anywhere in the loop (not only inside the installer) rolls back
            undo.record()
            for number, argv in enumerate(plan.commands, 1):
                con.print(f"\n[bold]\\[{number}/{len(plan.commands)}] $ {escape(_shell(argv))}[/]", soft_wrap=True)
                result = proc.run_streaming(argv, COMMAND_TIMEOUT, lambda line: con.print(f"[dim]  {escape(line)}[/]", soft_wrap=True))
                if not result.ok:
                    _report_failure(con, result)
                    return _undo(con, undo, 1)
        except KeyboardInterrupt as exc:
            con.file = Tolerant(con.file)  # after SIGHUP the terminal may be gone: the restore must not die writing
            con.print(f"\n[red]✗ interrupted: the installer was stopped ({signal_label(exc)}).[/]")
            return _undo(con, undo, signal_code(exc))
    con.print("\n[bold]Checking the result:[/]")
    if not verify(con, plan, target.python, facts):
        con.print("[red]✗ installed, but the check failed (see above); the environment is left as it is "
                  "so you can look (the restore command is above).[/]", soft_wrap=True)
        return 1
    con.print(f"[bold green]✓ {escape(plan.framework)} {escape(plan.version or '')} ({escape(plan.build or '')}) is installed and works.[/]")
    return 0


def check_target(plan: InstallPlan, target: Target, facts: Facts, allow_system: bool) -> Optional[bool]:
    """Refuse, before anything runs, a target the plan must not write into; for a plan that creates a
    conda environment, whether it exists (None: conda cannot say)."""
    if target.new_conda_env is None:
        if not facts.python.executable:
            raise UsageError("--run: the target interpreter is unknown")
        reason = refusal(facts.python, allow_system)
        if reason:
            raise UsageError(reason)
        return None
    kind, where = target.new_conda_env
    if facts.python.target_source == "--python":
        raise UsageError(f"--run: --python names {facts.python.executable}, which is not a conda environment, but the "
                         f"conda plan would create another one ({where}); install into it with --manager pip or uv, or "
                         f"pass --python of a conda environment's interpreter to install into that prefix")
    exists = conda_env_exists(target)
    if exists:
        raise UsageError(f"the plan creates the conda environment {where}, but it exists already and "
                         f"`conda create --yes` would replace it; remove it (conda env remove {kind} {where}) "
                         f"or activate it and run envdoctor there")
    return exists


def _undo(con, undo: Callable[[], bool], code: int) -> int:
    """Run the rollback. A stop signal during it is noted and the restore finishes; a second one stops
    it, and what is left is listed exactly (with the command that finishes the job)."""
    deferred = DeferredSignals()
    try:
        with handled_signals(deferred):
            undo()
    except KeyboardInterrupt as exc:
        with handled_signals(signal.SIG_IGN):
            _report_half_restored(con, undo)
        return signal_code(exc) if deferred.seen else 130
    if deferred.seen:
        con.print(f"[yellow]! {proc.signal_name(deferred.seen[0])} arrived during the restore; the restore was "
                  "finished first.[/]", soft_wrap=True)
    return code


def _report_half_restored(con, undo) -> None:
    con.print("\n[red]✗ interrupted while restoring: the environment may be half restored.[/]", soft_wrap=True)
    left = getattr(undo, "left", None)
    lines = left() if left else None
    if lines is None:
        con.print("  Run the restore command shown above by hand.", soft_wrap=True)
        return
    if not lines:
        con.print("  [green]✓ nothing is left: the packages are as before.[/]", soft_wrap=True)
        return
    con.print("  Still different from before: " + escape("; ".join(lines)), soft_wrap=True)
    con.print("  Finish with the restore command shown above (it reinstalls the recorded versions).", soft_wrap=True)


class Undo:
    """What the rollback needs, recorded before the run; calling it rolls back."""

    def __init__(self, con, plan: InstallPlan, python: Optional[str], before: Optional[Snapshot],
                 rollback: Callable[[], bool], record: Callable[[], None] = lambda: None):
        self.con, self.plan, self.python, self.before = con, plan, python, before
        self._rollback, self.record = rollback, record

    def __call__(self) -> bool:
        return self._rollback()

    def left(self) -> Optional[list[str]]:
        """What still differs from the snapshot, or None when that cannot be told."""
        if self.before is None or self.python is None:
            return None
        now = current_packages(self.python, self.plan.manager)
        return None if now is None else describe_left(self.before, now)


def _prepare_undo(con, plan: InstallPlan, target: Target, facts: Facts,
                  env_exists: Optional[bool] = None) -> Undo:
    """Record (in memory) what is needed to undo the plan, and say now what a rollback cannot do."""
    if target.new_conda_env:
        return Undo(con, plan, None, None, _undo_new_conda_env(con, target, env_exists))
    python = target.python[0]
    if plan.manager == "conda":
        con.print("\n[yellow]! envdoctor cannot snapshot a conda environment: if this fails, nothing is rolled back "
                  "automatically.[/] conda keeps a history: [bold]conda list --revisions[/] then "
                  "[bold]conda install --revision N[/]", soft_wrap=True)

        def no_rollback() -> bool:
            con.print("[yellow]! conda changes are not rolled back automatically; see conda's revisions above.[/]")
            return False

        return Undo(con, plan, None, None, no_rollback)
    before = take_snapshot(python, plan.manager, facts)
    for line in restore_limits(before, plan):
        con.print(f"\n[yellow]! {escape(line)}[/]", soft_wrap=True)
    return Undo(con, plan, python, before, lambda: roll_back(con, before, python, plan.manager, plan),
                record=lambda: _record(con, plan, python, facts, before))


def restore_limits(before: Snapshot, plan: InstallPlan) -> list[str]:
    """What a rollback of this plan cannot promise, in words, before anyone confirms."""
    limits = []
    if not before.complete:
        limits.append("no installer could list this environment, so a rollback can only put back the packages the "
                      "probe saw; what the installer adds besides them would stay")
    touched = set(planned_pins(plan)) | uninstalled(plan)
    for name in sorted(touched):
        origin = before.origins.get(name)
        if origin and origin.editable:
            where = origin.location or origin.url or "its source folder"
            gone = "" if (origin.location and Path(origin.location).exists()) else " (that folder is not there now, so it cannot be)"
            limits.append(f"{name} is an editable install from {where}; the plan replaces it, and a rollback can only "
                          f"reinstall it from that folder (pip install -e, with its build tools){gone}")
    return limits


def uninstalled(plan: InstallPlan) -> set[str]:
    names = set()
    for argv in plan.commands:
        if _is_python_installer(argv) or "uninstall" not in argv:
            continue
        start = list(argv).index("uninstall") + 1
        names |= {canonical(t) for t in argv[start:] if not t.startswith("-") and t != "pip" and not Path(t).is_absolute()}
    return names


def conda_env_exists(target: Target) -> Optional[bool]:
    """Whether the conda environment the plan creates is there already; None when conda cannot say."""
    conda, where = target.python[0], target.python[3]
    listed = proc.run([conda, "env", "list", "--json"], timeout=QUERY_TIMEOUT)
    if not listed.ok:
        return None
    return any(Path(e).name == where or e == where for e in _json_list(listed.stdout, "envs"))


def _undo_new_conda_env(con, target: Target, existed: Optional[bool]) -> Callable[[], bool]:
    conda, _, flag, where, _ = target.python
    remove = [conda, "env", "remove", "--yes", flag, where]
    if existed is not False:
        con.print(f"\n[yellow]! cannot tell whether the conda environment {escape(where)} exists already; "
                  "envdoctor will not remove it on failure.[/]", soft_wrap=True)
        return lambda: False
    con.print(f"\nThe plan creates the conda environment {escape(where)}; on failure it is removed "
              f"({escape(_shell(remove))}).", soft_wrap=True)

    def undo() -> bool:
        result = proc.run(remove, timeout=COMMAND_TIMEOUT)
        ok = result.ok
        con.print(f"[green]✓ removed the half-made environment {escape(where)}[/]" if ok else
                  f"[red]✗ could not remove {escape(where)}: {escape(result.describe_failure())}[/]")
        return ok

    return undo


def _json_list(text: str, key: str) -> list[str]:
    try:
        value = json.loads(text).get(key, [])
    except (json.JSONDecodeError, AttributeError):
        return []
    return [str(v) for v in value] if isinstance(value, list) else []


def _record(con, plan: InstallPlan, python: str, facts: Facts, before: Optional[Snapshot] = None) -> Snapshot:
    before = before or take_snapshot(python, plan.manager, facts)
    path = save_snapshot(before, python, plan.framework)
    where = f"saved to {path}" if path else "kept in memory (the state directory is not writable)"
    partial = "" if before.complete else " (only the packages the probe saw: no installer could list the environment)"
    con.print(f"\nRecorded {len(before.packages)} installed package(s) before the change{partial}; {escape(where)}", soft_wrap=True)
    if path:
        restore = [python, "-m", "pip", "install", "--no-deps", "-r", str(path)]
        if plan.manager == "uv":
            restore = ["uv", "pip", "install", "--python", python, "--no-deps", "-r", str(path)]
        restore += previous_build_indexes(before)  # torch 2.3.1+cu121 is only on its own index
        con.print(f"  To put these versions back by hand: [bold]{escape(_shell(restore))}[/]", soft_wrap=True)
    return before


def _report_failure(con, result: proc.RunResult) -> None:
    con.print(f"\n[red]✗ the installer failed: {escape(result.error or f'exit status {result.returncode}')}[/]")
    last = [line for line in result.stdout.splitlines() if line.strip()][-10:]
    if last:
        con.print("[bold]Its last lines:[/]")
        for line in last:
            con.print(f"  {escape(line)}", soft_wrap=True)


def _shell(argv) -> str:
    from envdoctor.render.plan import shell_command

    return shell_command(argv, windows=sys.platform == "win32")
