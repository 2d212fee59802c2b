"""complete: fill what the matrices can derive from what is known, with provenance.

    facts = complete(facts)      # the same for a probed machine, a replayed file, a pasted report
    facts.inferred               # {"nvidia.gpus[0].compute_capability": "gpus.toml: product 'L4' -> 8.9", ...}

Every value filled here is marked inferred with the matrix row (or the rule of thumb) it came from.
Observed values are never overwritten. Nothing is guessed where the known facts allow two answers.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Callable

from envdoctor.facts import Facts, Jetson

# A Windows driver *file* version (Device Manager, dxdiag, WMI): 31.0.15.5222 stands for driver 552.22.
_WINDOWS_FILE_VERSION = re.compile(r"^(\d{2})\.\d+\.(\d{1,2})\.(\d{4})$")
_LINUX_DRIVER = re.compile(r"^\d{3}\.\d{2,3}\.\d{2}$")  # 570.124.04: Linux numbering (Windows has two parts)


def complete(facts: Facts) -> Facts:
    inferred: dict[str, str] = dict(facts.inferred)
    for step in _STEPS:
        try:
            facts = step(facts, inferred)
        except (LookupError, ValueError, TypeError, AttributeError):
            continue  # a matrix that knows nothing about a value: nothing to infer from it
    return dataclasses.replace(facts, inferred=inferred)


Step = Callable[[Facts, dict], Facts]


def _windows_driver(facts: Facts, inferred: dict) -> Facts:
    nv = facts.nvidia
    match = _WINDOWS_FILE_VERSION.match(nv.driver_version or "") if nv else None
    if not match:
        return facts
    digits = match.group(2)[-1] + match.group(3)  # the last five digits: 1 + 5222 -> 552.22
    driver = f"{digits[:3]}.{digits[3:]}"
    inferred["nvidia.driver_version"] = (f"Windows driver file version {nv.driver_version}: its last five digits "
                                         f"are the driver number (NVIDIA's Windows numbering)")
    facts = _replace(facts, nvidia=dataclasses.replace(nv, driver_version=driver))
    return _set_host(facts, inferred, os="windows", why=f"a Windows driver file version ({match.group(0)})")


def _host_os(facts: Facts, inferred: dict) -> Facts:
    if facts.host.os:
        return facts
    nv, host = facts.nvidia, facts.host
    wsl_why = (f"a WSL kernel ({host.kernel})" if host.kernel and "microsoft" in host.kernel.lower() else
               "the driver is the Windows host's, seen from WSL2 (nvidia.driver_kind=wsl)" if nv and nv.driver_kind == "wsl"
               else None)
    if wsl_why:
        facts = _set_host(facts, inferred, os="linux", why=wsl_why)
        if facts.host.wsl is None:
            facts = _replace(facts, host=dataclasses.replace(facts.host, wsl=True))
            inferred["host.wsl"] = wsl_why
        return facts
    if host.distro:  # what the probe writes: "Ubuntu 24.04" (/etc/os-release), "macOS 15.1", "Windows 11"
        os_name = "windows" if host.distro.lower().startswith("windows") else "macos" if host.distro.lower().startswith(
            ("macos", "mac os")) else "linux"
        return _set_host(facts, inferred, os=os_name, why=f"the distribution name ({host.distro})")
    if host.glibc:
        return _set_host(facts, inferred, os="linux", why=f"a glibc version ({host.glibc}): glibc is Linux's C library")
    if nv and nv.driver_version and _LINUX_DRIVER.match(nv.driver_version) and nv.driver_kind != "wsl" and not host.wsl:
        return _set_host(facts, inferred, os="linux", why=f"a three-part driver version ({nv.driver_version}) is Linux numbering")
    exe = facts.python.executable or facts.python.env_path or ""
    if re.match(r"^[A-Za-z]:\\", exe):
        return _set_host(facts, inferred, os="windows", why=f"a Windows path ({exe})")
    if facts.jetson is not None:
        return _set_host(facts, inferred, os="linux", why="a Jetson runs Linux (L4T)")
    return facts


def _host_glibc(facts: Facts, inferred: dict) -> Facts:
    """A named distribution's glibc (CentOS 7 -> 2.17): it comes with the release and is never upgraded."""
    host = facts.host
    if host.glibc or not host.distro or host.os not in (None, "linux") or host.wsl:
        return facts
    from envdoctor.container.base_images import distro_of_name

    row = distro_of_name(host.distro)
    if row is None or not row.glibc:
        return facts
    inferred["host.glibc"] = f"base_images.toml: distro {row.name} {row.version} ({host.distro}) -> glibc {row.glibc}"
    return _replace(facts, host=dataclasses.replace(host, glibc=row.glibc))


def _host_arch(facts: Facts, inferred: dict) -> Facts:
    host = facts.host
    if host.arch:
        return facts
    if facts.jetson is not None or (facts.nvidia and facts.nvidia.driver_kind == "jetson"):
        return _set_arch(facts, inferred, "aarch64", "a Jetson is an aarch64 machine (jetson.toml)")
    if host.os == "windows":
        return _set_arch(facts, inferred, "x86_64", "GPU builds for native Windows are win_amd64 only")
    names = [g.name for g in facts.gpus if g.name]
    grace = next((n for n in names if _GRACE.search(n)), None)
    if grace:
        return _set_arch(facts, inferred, "aarch64", f"{grace}: a Grace superchip, whose CPU is an Arm (aarch64) one")
    if host.os == "linux" and names and all(_is_desktop_card(n) for n in names):
        return _set_arch(facts, inferred, "x86_64", f"{names[0]}: a desktop/workstation card, sold for x86_64 hosts")
    if host.os == "linux":
        for arch, pattern in _KERNEL_ARCH:
            if host.kernel and pattern.search(host.kernel):
                return _set_arch(facts, inferred, arch, f"the kernel release names it ({host.kernel})")
        seen = {(arch, path) for path in _paths(facts) for arch, pattern in _PATH_ARCH if pattern.search(path)}
        arches = {arch for arch, _ in seen}
        if len(arches) == 1:
            arch, path = sorted(seen)[0]
            return _set_arch(facts, inferred, arch, f"a library path names it ({path})")
    return facts


# Grace Hopper / Grace Blackwell superchips (GH200, GB200, GB300): an Arm CPU and the GPU on one module.
_GRACE = re.compile(r"\bG[HB]\d{3}\b", re.I)
# Kernel releases that name their architecture: "5.15.148-tegra", "6.8.0-1013-nvidia-64k" (arm64 only),
# "3.10.0-1160.el7.x86_64", "6.1.0-27-amd64" / "-arm64" (Debian).
_KERNEL_ARCH = (("aarch64", re.compile(r"-tegra\b|-64k\b|[.-](?:aarch64|arm64)\b")),
                ("x86_64", re.compile(r"[.-](?:x86_64|amd64)\b")))
# Debian multiarch directories and CUDA's target directories in a path: /usr/lib/x86_64-linux-gnu, targets/sbsa-linux.
_PATH_ARCH = (("x86_64", re.compile(r"\bx86_64-linux(?:-gnu)?\b")),
              ("aarch64", re.compile(r"\baarch64-linux(?:-gnu)?\b|\bsbsa-linux\b")))


def _paths(facts: Facts) -> list[str]:
    """The file system paths a document records (where an installation lies says something of the machine)."""
    found = [c.path for c in facts.cudnn] + [t.root for t in facts.cuda_toolkits] + [t.nvcc for t in facts.cuda_toolkits]
    if facts.cuda_toolkit is not None:
        found += [facts.cuda_toolkit.root, facts.cuda_toolkit.nvcc]
    found += [facts.python.executable, facts.python.env_path, *facts.python.nvidia_wheel_dirs.values()]
    found += [v for k, v in facts.env.items() if k in ("LD_LIBRARY_PATH", "CUDA_HOME", "CUDA_PATH")]
    return [p for p in found if p]


def _python_version(facts: Facts, inferred: dict) -> Facts:
    """The Python's major.minor from a path that names it (lib/python3.12/site-packages, bin/python3.12)."""
    if facts.python.version or facts.host.os == "windows":  # (Windows paths do not name it: Lib\\site-packages)
        return facts
    # The target environment's own paths only (LD_LIBRARY_PATH may name another environment's).
    own = [facts.python.executable, *facts.python.nvidia_wheel_dirs.values(),
           *(c.path for c in facts.cudnn if (c.source or "").startswith("pip:"))]
    seen = {m.group(1): path for path in own if path for m in [_PYTHON_IN_PATH.search(path)] if m}
    if len(seen) != 1:
        return facts  # none, or two Pythons named (a conda base and an env): nothing is guessed
    (version, path), = seen.items()
    inferred["python.version"] = f"a path of its environment names it ({path})"
    return _replace(facts, python=dataclasses.replace(facts.python, version=version))


_PYTHON_IN_PATH = re.compile(r"/(?:lib|bin)/python(3\.\d{1,2})(?:/site-packages|/dist-packages|$)")


def _driver_from_kernel_module(facts: Facts, inferred: dict) -> Facts:
    """The loaded nvidia.ko's version is the driver's (/proc/driver/nvidia/version, one of the probe's
    own sources for it); not on a Jetson, where it is the L4T release, nor after a recorded failure."""
    nv = facts.nvidia
    if (not nv or nv.driver_version or not nv.kernel_module or nv.failure or nv.driver_kind in ("jetson", "wsl")
            or facts.jetson is not None or not re.fullmatch(r"\d+(\.\d+)+", nv.kernel_module)):
        return facts
    inferred["nvidia.driver_version"] = f"the loaded kernel module's version ({nv.kernel_module}) is the driver's"
    return _replace(facts, nvidia=dataclasses.replace(nv, driver_version=nv.kernel_module))


def _failure_from_text(facts: Facts, inferred: dict) -> Facts:
    """A recorded failure message the NVIDIA probe recognises (its classify_failure) names the failure."""
    nv = facts.nvidia
    if not nv or nv.failure or not nv.failure_text:
        return facts
    from envdoctor.probe.nvidia import classify_failure

    found = classify_failure(nv.failure_text)
    if not found:
        return facts
    inferred["nvidia.failure"] = f"the failure message ({found[1][:80]}) is {found[0]} (envdoctor.probe.nvidia)"
    return _replace(facts, nvidia=dataclasses.replace(nv, failure=found[0]))


def _cudnn_from_packages(facts: Facts, inferred: dict) -> Facts:
    """A cuDNN found as a pip or conda package has that package's version (as the cuDNN probe reads it)."""
    if not any(c.version is None and c.source for c in facts.cudnn):
        return facts
    from envdoctor.probe.cudnn import three_components

    filled = []
    for i, c in enumerate(facts.cudnn):
        kind, _, name = (c.source or "").partition(":")
        version = {"pip": facts.python.packages, "conda": facts.python.conda_packages}.get(kind, {}).get(name)
        if c.version is None and version and "|" not in version:
            c = dataclasses.replace(c, version=three_components(version))
            inferred[f"cudnn[{i}].version"] = f"the {kind} package {name} {version}"
        filled.append(c)
    return dataclasses.replace(facts, cudnn=filled)


def _is_desktop_card(name: str) -> bool:
    """gpus.toml's `desktop` column: a desktop/workstation card, sold for x86_64 PCs. Data-centre GPUs
    (A100, H100, L4, GH200) also sit in aarch64 servers, so they decide nothing."""
    from envdoctor.matrix import gpus

    return bool(gpus.is_desktop_card(name))


def _jetson_from_gpu(facts: Facts, inferred: dict) -> Facts:
    """A GPU named like a Jetson module ("Orin", "Xavier") in a report that says nothing of the Jetson."""
    if facts.jetson is not None or not facts.gpus:
        return facts
    from envdoctor.matrix import gpus

    for gpu in facts.gpus:
        row = gpus.product_for_name(gpu.name or "")
        if row is not None and row.family.startswith("Jetson"):
            inferred["jetson"] = f"gpus.toml: product {row.pattern.pattern!r} is a {row.family} module"
            return _replace(facts, jetson=Jetson(model=gpu.name))
    return facts


def _gpu_capabilities(facts: Facts, inferred: dict) -> Facts:
    nv = facts.nvidia
    if not nv or not nv.gpus or all(g.compute_capability for g in nv.gpus):
        return facts
    from envdoctor.matrix import gpus

    filled = []
    for i, gpu in enumerate(nv.gpus):
        row = gpus.product_for_name(gpu.name) if gpu.name and not gpu.compute_capability else None
        if row is not None:
            gpu = dataclasses.replace(gpu, compute_capability=row.cc)
            inferred[f"nvidia.gpus[{i}].compute_capability"] = f"gpus.toml: product {row.pattern.pattern!r} -> {row.cc}"
        filled.append(gpu)
    return _replace(facts, nvidia=dataclasses.replace(nv, gpus=filled))


def _driver_cuda(facts: Facts, inferred: dict) -> Facts:
    nv = facts.nvidia
    if not nv or nv.driver_cuda or not nv.driver_version or nv.driver_kind == "jetson" or facts.jetson is not None:
        return facts
    from envdoctor.matrix import drivers

    cuda = drivers.branch_cuda(nv.driver_version)
    if not cuda:
        return facts
    inferred["nvidia.driver_cuda"] = f"drivers.toml: branch of driver {nv.driver_version} supports CUDA ≤ {cuda}"
    return _replace(facts, nvidia=dataclasses.replace(nv, driver_cuda=cuda))


def _packages_from_frameworks(facts: Facts, inferred: dict) -> Facts:
    """A framework version a report states (collect_env's "PyTorch version") is its installed package.
    Not Paddle's: its two packages are two builds (`paddlepaddle` CPU, `paddlepaddle-gpu`), and the
    version does not say which."""
    from envdoctor.probe.deep import DISTRIBUTIONS  # framework key -> the distributions that install it

    packages = dict(facts.python.packages)
    for key, fw in facts.frameworks.items():
        dists = DISTRIBUTIONS.get(key, ()) if key != "paddle" else ()
        dist = dists[0] if dists else None
        if dist and fw.version and not any(d in packages for d in dists):
            packages[dist] = fw.version
            inferred[f"python.packages.{dist}"] = f"frameworks.{key}.version ({fw.version})"
    if packages == facts.python.packages:
        return facts
    return dataclasses.replace(facts, python=dataclasses.replace(facts.python, packages=packages),
                               unrecorded=facts.unrecorded - {"python.packages"})


def _torch_arch_list(facts: Facts, inferred: dict) -> Facts:
    """A torch build whose CUDA is known but whose kernels were not listed: the build row's arch list."""
    fw = facts.frameworks.get("torch")
    version = facts.python.packages.get("torch") or (fw.version if fw else None)
    if not version or fw is None or fw.arch_list or not fw.cuda:
        return facts  # the rules read the build rows themselves when no build record was given
    from envdoctor.diagnose import knowledge
    from envdoctor.diagnose._common import public

    _, build, how = knowledge.torch_build(facts)
    if not build or not build.startswith("cu"):
        return facts
    # The build row of this machine's platform; where the OS or architecture is not recorded, only an
    # arch list every platform it can be agrees on (the rows differ between x86_64 and aarch64).
    candidates = knowledge.candidate_platforms(facts)
    archs = knowledge.unanimous(knowledge.torch_arch_list(str(public(version)), build, p) for p in candidates)
    if not archs:
        return facts
    where = candidates[0] if len(candidates) == 1 else "every platform this machine can be"
    frameworks = {**facts.frameworks, "torch": dataclasses.replace(fw, arch_list=list(archs))}
    inferred["frameworks.torch.arch_list"] = f"pytorch.toml: build {build} of torch {public(version)} on {where} ({how})"
    return dataclasses.replace(facts, frameworks=frameworks)


def _jetson(facts: Facts, inferred: dict) -> Facts:
    j = facts.jetson
    if j is None:
        return facts
    from envdoctor.matrix import jetson as jetson_matrix

    release = jetson_matrix.release_for_l4t(j.l4t) if j.l4t else None
    rows = [release] if release is not None else []
    if not rows and j.jetpack:
        rows = [r for r in jetson_matrix.releases() if r.jetpack == j.jetpack]  # one JetPack may span L4T rows
    if not rows:
        return facts
    changes = {}
    for key in ("l4t", "jetpack", "cuda"):
        values = {getattr(r, key) for r in rows}
        value = values.pop() if len(values) == 1 else None  # two rows that differ: nothing is guessed
        if getattr(j, key) is None and value:
            changes[key] = value
            row = rows[0] if len(rows) == 1 else None
            inferred[f"jetson.{key}"] = (f"jetson.toml: L4T {row.l4t} = JetPack {row.jetpack}" if row else
                                         f"jetson.toml: every L4T row of JetPack {j.jetpack} has {key} {value}")
    return _replace(facts, jetson=dataclasses.replace(j, **changes)) if changes else facts


def _jetson_soc(facts: Facts, inferred: dict) -> Facts:
    """A Jetson's SoC, where one SoC alone fits what is known: the SoCs of its L4T release (jetson.toml) and
    the compute capability of its GPU (recorded, or its model's row in gpus.toml) against the SoC table."""
    j = facts.jetson
    if j is None or j.soc:
        return facts
    from envdoctor.matrix import gpus, jetson as jetson_matrix

    release = jetson_matrix.release_for_l4t(j.l4t) if j.l4t else None
    every = sorted({soc for row in jetson_matrix.releases() for soc in row.socs})
    socs = list(release.socs) if release is not None and release.socs else every
    why = [f"L4T {release.l4t} ({', '.join(release.socs)})"] if release is not None and release.socs else []
    ccs = {g.compute_capability for g in facts.gpus if g.compute_capability}
    model = gpus.product_for_name(j.model) if j.model else None
    if model is not None:
        ccs.add(model.cc)
    if len(ccs) > 1:
        return facts  # two answers: nothing is guessed
    if ccs:
        cc = ccs.pop()
        socs = [s for s in socs if jetson_matrix.soc_compute_capability(s) == cc]
        why.append(f"compute capability {cc}" + (f" ({j.model}: gpus.toml {model.family})" if model is not None else ""))
    if len(socs) != 1 or not why:
        return facts
    inferred["jetson.soc"] = f"jetson.toml: {socs[0]} is the one SoC that fits {' and '.join(why)}"
    return _replace(facts, jetson=dataclasses.replace(j, soc=socs[0]))


def _set_host(facts: Facts, inferred: dict, os: str, why: str) -> Facts:
    if facts.host.os:
        return facts
    inferred["host.os"] = why
    return _replace(facts, host=dataclasses.replace(facts.host, os=os))


def _set_arch(facts: Facts, inferred: dict, arch: str, why: str) -> Facts:
    inferred["host.arch"] = why
    return _replace(facts, host=dataclasses.replace(facts.host, arch=arch))


def _replace(facts: Facts, **changes) -> Facts:
    return dataclasses.replace(facts, **changes)


_STEPS: tuple[Step, ...] = (_windows_driver, _failure_from_text, _driver_from_kernel_module, _jetson_from_gpu, _host_os, _host_glibc,
                            _jetson, _jetson_soc, _host_arch, _python_version, _gpu_capabilities, _driver_cuda, _cudnn_from_packages,
                            _packages_from_frameworks, _torch_arch_list)
