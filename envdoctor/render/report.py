"""The `envdoctor check` report: a section per subject, ✓ / ! / ✗ marks, a fix under each problem."""

from __future__ import annotations

from typing import Callable

from rich.markup import escape

from envdoctor.facts import Facts
from envdoctor.render import COMMAND_SCHEMAS
from envdoctor.findings import Finding, render_fix, worst_severity
from envdoctor.render.marks import fit

MARKS = {None: ("✓", "green"), "info": ("✓", "green"), "warning": ("!", "yellow"), "error": ("✗", "red")}
NOT_CHECKED = ("–", "dim")  # a section nothing was checked for (the build tools without --build): neither ✓ nor !
PROBE_SECTION = {"host": "platform", "python": "python", "nvidia": "nvidia", "nvml": "nvidia",
                 "nvidia-smi": "nvidia", "toolkit": "toolkit", "cudnn": "cudnn", "jetson": "jetson",
                 "amd": "nvidia", "deep": "frameworks", "env": "platform", "build": "build", "container": "container"}


def report_document(facts: Facts, findings: list[Finding], timings: dict[str, float]) -> dict:
    counts = {s: sum(f.severity == s for f in findings) for s in ("error", "warning", "info")}
    return {
        "schema": COMMAND_SCHEMAS["check"],
        "facts": facts.to_dict(),
        "findings": [f.to_dict() for f in findings],
        "summary": counts,
        "timings": timings,
    }


def print_report(con, facts: Facts, findings: list[Finding], timings: dict[str, float], verbose: bool) -> None:
    from envdoctor.render import quiet

    if quiet():  # -q / ENVDOCTOR_QUIET=1: the errors and the verdict line only
        for f in findings:
            if f.severity == "error":
                _print_finding(con, f, verbose, windows=facts.host.os == "windows")
        _print_summary(con, findings, len(facts.errors))
        return
    sections = _sections(facts)
    shown = {key for key, _, _ in sections}
    for key, title, describe in sections:
        mine = [f for f in findings if _belongs(f, key, shown)]
        errors = [e for e in facts.errors if _section_of(e.probe or "", shown) == key]
        severity = worst_severity(mine)
        if errors and severity in (None, "info"):
            severity = "warning"
        mark, colour = NOT_CHECKED if key == "build" and facts.build is None and severity is None else MARKS[severity]
        mark = escape(fit(mark))  # [ok] [!] [x] where stdout cannot encode the marks
        con.print(f"[bold {colour}]{mark}[/] [bold]{title}[/]")
        for line in describe(facts, verbose):
            for part in line.splitlines():  # a recorded text (a failure message) may span lines
                con.print(f"    {escape(part)}")
        for e in errors:
            con.print(f"    [yellow]! {escape(e.probe or 'a probe')}: {escape(e.message or 'failed')}[/]")
        for f in mine:
            _print_finding(con, f, verbose, windows=facts.host.os == "windows")
    _print_summary(con, findings, len(facts.errors))
    missing = unrecorded_blocks(facts)
    if verbose and missing:
        con.print(f"[dim]not recorded: {escape(', '.join(missing))}; `envdoctor facts --deep` on that machine records them[/]")
    if verbose and facts.inferred:
        con.print("[dim]inferred from the matrices:[/]")
        for path, row in facts.inferred.items():
            con.print(f"[dim]    {escape(path)}: {escape(row)}[/]")
    if verbose and timings:
        parts = ", ".join(f"{k} {v * 1000:.0f} ms" for k, v in sorted(timings.items(), key=lambda kv: -kv[1]))
        con.print(f"[dim]probe timings: {escape(parts)}[/]")
    if verbose:
        _print_knowledge_date(con)


def _print_knowledge_date(con) -> None:
    from envdoctor.render import matrices_checked

    newest = matrices_checked()
    if newest:
        con.print(f"[dim]compatibility data checked up to {newest} (the newest `checked` date in matrices/ and recipes/)[/]")


def _section_of(probe: str, shown: set[str]) -> str:
    """Where a probe's error is printed: its subject's section, or Platform when that is not shown
    (a Jetson probe that crashed leaves no Jetson section)."""
    section = PROBE_SECTION.get(probe.split(":")[0], "platform")
    return section if section in shown else "platform"


def _print_finding(con, f: Finding, verbose: bool, windows: bool) -> None:
    mark, colour = {"error": ("✗", "red"), "warning": ("!", "yellow"), "info": ("•", "cyan")}[f.severity]
    mark = escape(fit(mark))
    con.print(f"    [{colour}]{mark} {escape(f.title)}[/] [dim]\\[{f.code}][/]")
    con.print(f"      {escape(f.detail)}", soft_wrap=True)
    for fix in f.fix:
        prefix = "$ " if isinstance(fix, tuple) else "→ "
        con.print(f"      [bold]{prefix}{escape(render_fix(fix, windows))}[/]", soft_wrap=True)
    if verbose and f.evidence:
        con.print(f"      [dim]evidence: {escape(', '.join(f.evidence))}[/]", soft_wrap=True)


def _print_summary(con, findings: list[Finding], probe_errors: int) -> None:
    errors = sum(f.severity == "error" for f in findings)
    warnings = sum(f.severity == "warning" for f in findings)
    # A probe that failed (timed out, printed garbage) left something unknown: not "no problems".
    unknown = f" {_plural(probe_errors, 'probe error')}: see the ! lines above." if probe_errors else ""
    if errors or warnings:
        colour = "red" if errors else "yellow"
        con.print(f"\n[bold {colour}]{_plural(errors, 'error')}, {_plural(warnings, 'warning')}.[/] "
                  f"Fixes are listed under each problem.{unknown}")
    elif unknown:
        con.print(f"\n[bold yellow]No problems found, but{unknown}[/]")
    else:
        con.print("\n[bold green]No problems found.[/]")


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


# --- what each section shows -----------------------------------------------------------------

Describe = Callable[[Facts, bool], list[str]]


def _sections(facts: Facts) -> list[tuple[str, str, Describe]]:
    sections: list[tuple[str, str, Describe]] = [
        ("platform", "Platform", _platform),
        ("python", "Python", _python),
        ("nvidia", "NVIDIA driver & GPUs", _nvidia),
        ("toolkit", "CUDA toolkit", _toolkit),
        ("cudnn", "cuDNN", _cudnn),
    ]
    if facts.jetson is not None:
        sections.append(("jetson", "Jetson", _jetson))
    sections.append(("frameworks", "Frameworks", _frameworks))
    if facts.container is not None and facts.container.in_container:
        sections.insert(1, ("container", "Container", _container))
    if facts.build is not None or facts.cuda_toolkit is not None:
        sections.append(("build", "CUDA extension builds", _extension_builds))
    return sections


# Findings shown under the Container / CUDA extension builds sections when those are shown.
SECTION_CODES = {"container": ("container-gpu-missing", "shm-too-small"),
                 "build": ("extension-build-mismatch", "build-toolchain-missing", "build-jobs-memory")}


def _belongs(f: Finding, key: str, shown: set[str]) -> bool:
    home = next((k for k, codes in SECTION_CODES.items() if f.code in codes and k in shown), None)
    return key == home if home else f.section == key


def _container(facts: Facts, verbose: bool) -> list[str]:
    c = facts.container
    gpus = [n for n in c.device_nodes if n != "/dev/nvidia-caps"]
    lines = [f"{c.runtime or 'a container'}" + (f" (from {c.detected_by})" if verbose and c.detected_by else ""),
             f"NVIDIA devices: {', '.join(gpus) if gpus else 'none'}",
             f"driver libraries: {', '.join(c.driver_libs) if c.driver_libs else 'none injected'}"]
    if c.shm_bytes is not None:
        lines.append(f"/dev/shm {c.shm_bytes / (1 << 20):.0f} MiB")
    for name in ("nvidia_visible_devices", "nvidia_driver_capabilities", "nvidia_require_cuda"):
        value = getattr(c, name)
        if value is not None and (verbose or name != "nvidia_require_cuda"):
            lines.append(f"{name.upper()}={value}")
    return lines


def _extension_builds(facts: Facts, verbose: bool) -> list[str]:
    b = facts.build
    if b is None:
        return ["not checked: `envdoctor check --build` reads nvcc, CUDA_HOME, the host compiler, ninja and Python.h"]
    lines = [f"nvcc {b.nvcc_version or '?'} at {b.nvcc}" + (f" (toolkit {b.nvcc_root})" if b.nvcc_root else "")
             if b.nvcc else "no nvcc on PATH"]
    if b.cuda_home:
        lines.append(f"CUDA_HOME for torch: {b.cuda_home} (from {b.cuda_home_from}), CUDA {b.cuda_home_version or '?'}")
    for c in b.compilers:
        role = "nvcc host compiler" if c.role == "nvcc-host" else "C++ compiler"
        lines.append(f"{role}: {c.command} " + (f"= {c.kind or '?'} {c.version or '?'}" + (f" ({c.path})" if verbose else "")
                                              if c.path else "not found"))
    lines.append(f"ninja {b.ninja_version or ''}".rstrip() if b.ninja else "ninja not found")
    if b.python_h is not None:
        lines.append(f"Python.h {'present' if b.python_h else 'missing'}" + (f" in {b.python_include}" if verbose else ""))
    if verbose or b.torch_cuda_arch_list or b.max_jobs:
        lines.append(f"TORCH_CUDA_ARCH_LIST={b.torch_cuda_arch_list or '(unset)'}, MAX_JOBS={b.max_jobs or '(unset)'}, "
                     f"{b.cpu_count or '?'} CPUs, {b.mem_available_mib or '?'} MiB available")
    return lines


def _platform(facts: Facts, verbose: bool) -> list[str]:
    h = facts.host
    parts = [h.distro or _OS_NAMES.get(h.os or "", h.os) or "OS unknown"]
    if h.arch:
        parts.append(h.arch + _inferred(facts, "host.arch"))
    if h.os and not h.distro and facts.is_inferred("host.os"):
        parts[0] += _inferred(facts, "host.os")
    if h.glibc:
        parts.append(f"glibc {h.glibc}")
    if h.wsl:
        parts.append("WSL2")
    if h.container:
        parts.append(f"in {h.container}")
    if h.rosetta:
        parts.append("x86_64 Python under Rosetta")
    lines = [", ".join(parts)]
    if verbose and h.kernel:
        lines.append(f"kernel {h.kernel}")
    if verbose:
        lines += [f"{k}={v}" for k, v in facts.env.items() if v is not None]
    return lines


def _python(facts: Facts, verbose: bool) -> list[str]:
    p = facts.python
    line = f"Python {p.version}" if p.version else "Python version unknown"
    if p.implementation:
        line += f" ({p.implementation})"
    if p.env_kind:
        line += f", {p.env_kind}" + (f" at {p.env_path}" if p.env_path else "")
    lines = [line]
    if p.target_source:
        lines.append(f"target {p.executable} (chosen by {p.target_source})")
    elif verbose and p.executable:
        lines.append(f"interpreter {p.executable}")
    if verbose and p.packages:
        lines.append("packages: " + ", ".join(f"{k} {v}" for k, v in sorted(p.packages.items())))
    return lines


_OS_NAMES = {"linux": "Linux", "windows": "Windows", "macos": "macOS"}


def _inferred(facts: Facts, path: str) -> str:
    """ " (inferred)" after a value the completion stage derived from the matrices, not observed."""
    return " (inferred)" if facts.is_inferred(path) else ""


def unrecorded_blocks(facts: Facts) -> list[str]:
    """What `envdoctor facts --deep` on the machine would add to a document that lacks it."""
    wanted = {"host.os": "the platform", "python.version": "the Python version", "python.packages": "the installed packages",
              "nvidia.driver_version": "the NVIDIA driver", "nvidia.gpus": "the GPUs", "cuda_toolkits": "the CUDA toolkits",
              "cudnn": "cuDNN", "frameworks": "each framework's build (--deep)"}
    return [what for path, what in wanted.items() if not facts.known(path)]


DRIVER_MEANING = {
    "wsl": " (the Windows host's driver, seen from WSL2)",
    "jetson": " (Jetson integrated driver; JetPack decides compatibility)",
}


def _nvidia(facts: Facts, verbose: bool) -> list[str]:
    lines = _nvidia_driver(facts, verbose)
    if facts.amd is not None:  # the other GPUs the probe reads (the AMD probe's errors show here too)
        rocm = f"ROCm {facts.amd.rocm_version}" if facts.amd.rocm_version else "no ROCm found"
        lines += [f"AMD GPU {i}: {g.name or '?'}{f' ({g.gfx})' if g.gfx else ''}" for i, g in enumerate(facts.amd.gpus)]
        lines.append(rocm)
    return lines


def _nvidia_driver(facts: Facts, verbose: bool) -> list[str]:
    nv = facts.nvidia
    if nv is None:
        return ["no NVIDIA driver or GPU found" if facts.known("nvidia") else "not recorded"]
    lines = []
    if nv.driver_version:
        meaning = DRIVER_MEANING.get(nv.driver_kind or "", "")
        cuda = f", supports CUDA ≤ {nv.driver_cuda}{_inferred(facts, 'nvidia.driver_cuda')}" if nv.driver_cuda else ""
        source = f" [from {nv.source}]" if verbose and nv.source else ""
        lines.append(f"driver {nv.driver_version}{meaning}{cuda}{source}")
    if nv.failure:  # may come with a version: the old kernel module after an upgrade
        lines.append(f"driver not usable: {nv.failure_text or nv.failure}")
    if not nv.driver_version and not nv.failure and facts.driver_present is None and not nv.kernel_module:
        lines.append("driver version unknown" + (f" (supports CUDA ≤ {nv.driver_cuda})" if nv.driver_cuda else ""))
    elif not nv.driver_version and not nv.failure:
        tools_failed = any(e.probe in ("nvidia-smi", "nvml") for e in facts.errors)
        if nv.driver_kind == "jetson" and nv.kernel_module:  # JetPack 5 and older have no nvidia-smi
            lines.append(f"Jetson integrated driver loaded (L4T {nv.kernel_module}); JetPack decides compatibility")
        else:
            lines.append("the NVIDIA tools gave no usable answer" if tools_failed else "no NVIDIA driver loaded")
    for i, g in enumerate(nv.gpus):
        cc = f"sm_{g.compute_capability.replace('.', '')}" if g.compute_capability else "compute capability unknown"
        if facts.is_inferred(f"nvidia.gpus[{i}].compute_capability"):
            cc += ", inferred from the name"
        mem = f", {g.memory_total_mib} MiB" if g.memory_total_mib else ""
        bus = f" at {g.pci_bus_id}" if verbose and g.pci_bus_id else ""
        label = f"GPU {g.index}" if g.index is not None else "GPU"
        lines.append(f"{label}: {g.name or 'name unknown'} ({cc}{mem}){bus}")
    if not nv.gpus and not facts.known("nvidia.gpus"):
        lines.append("GPUs not recorded")
    if verbose or not nv.gpus:
        for d in nv.pci_devices:
            lines.append(f"PCI {d.address}: NVIDIA device {d.device_id or '?'}, kernel driver {d.driver or 'none'}")
    if nv.nouveau_loaded and (verbose or not nv.driver_version):
        lines.append("nouveau (open-source) kernel driver is loaded")
    if verbose and nv.kernel_module:
        what = "L4T version reported by the kernel module" if nv.driver_kind == "jetson" else "loaded kernel module"
        lines.append(f"{what}: {nv.kernel_module}")
    return lines


def _toolkit(facts: Facts, verbose: bool) -> list[str]:
    if facts.cuda_toolkit is None and not facts.cuda_toolkits and not facts.known("cuda_toolkits"):
        return ["not recorded"]
    if facts.cuda_toolkit is None and not facts.cuda_toolkits:
        return ["none found (pip wheels bring their own CUDA runtime; a toolkit is only needed to compile)"]
    lines = []
    active = facts.cuda_toolkit
    for tk in facts.cuda_toolkits or [active]:
        is_active = active is not None and tk.root == active.root
        where = f" at {tk.root}" if tk.root else ""
        how = f" via {tk.found_by}" if verbose and tk.found_by else ""
        lines.append(f"CUDA {tk.version or '?'}{where}{' (active)' if is_active and len(facts.cuda_toolkits) > 1 else ''}{how}")
    return lines


def _cudnn(facts: Facts, verbose: bool) -> list[str]:
    if not facts.cudnn:
        return ["none found" if facts.known("cudnn") else "not recorded"]
    lines = []
    for c in facts.cudnn:
        path = f" ({c.path})" if verbose and c.path and c.path not in (c.source or "") else ""  # a header's source names it
        lines.append(f"cuDNN {c.version or '?'} from {c.source or '?'}{path}")
    return lines


def _jetson(facts: Facts, verbose: bool) -> list[str]:
    j = facts.jetson
    assert j is not None
    jetpack = f"JetPack {j.jetpack}" if j.jetpack else "JetPack unknown for this L4T"
    lines = [f"{j.model or 'Jetson'}: L4T {j.l4t or '?'}, {jetpack}, CUDA {j.cuda or '?'}"]
    if j.soc:
        lines.append(f"SoC {j.soc}" + (f" ({j.compatible})" if verbose and j.compatible else ""))
    return lines


# Distributions listed under their framework besides the one that installs it.
COMPANIONS = {"jax": ("jaxlib",)}


def _frameworks(facts: Facts, verbose: bool) -> list[str]:
    from envdoctor.probe.deep import DISTRIBUTIONS  # the one table of framework -> distributions

    lines = []
    pkgs = facts.python.packages
    for key, names in DISTRIBUTIONS.items():
        present = [n for n in names + COMPANIONS.get(key, ()) if n in pkgs]
        fw = facts.frameworks.get(key)
        if fw is not None and not present:  # a recorded build without its package list
            lines.append(f"{key} {fw.version or '?'}{_build(fw)}")
        for i, name in enumerate(present):
            # --deep imported the framework once: its build belongs to the distribution that installs it
            lines.append(f"{name} {pkgs[name]}" + (_build(fw) if fw is not None and i == 0 else ""))
    if not lines:
        if not facts.known("python.packages"):
            return ["not recorded"]
        return ["none installed (try `envdoctor install pytorch`)"]
    if not facts.frameworks:
        lines.append("(builds not inspected; `envdoctor check --deep` imports each framework)")
    return lines


def _build(fw) -> str:
    if fw.import_error:
        return f" — import failed: {fw.import_error}"
    build = f"CUDA {fw.cuda}" if fw.cuda else "no CUDA"
    device = "GPU available" if fw.device_available else "no GPU visible"
    return f" — {build}, {device}"
