"""Rules about the target Python: a version no framework build exists for, and NumPy 2 with a
framework compiled against NumPy 1."""

from __future__ import annotations

import re
from typing import Iterable, Optional

from envdoctor.diagnose import knowledge, rule
from envdoctor.diagnose._common import FRAMEWORK_DISTS, FRAMEWORK_NAMES, framework_named, package, plan_fix, public
from envdoctor.diagnose.frameworks import platform_key
from envdoctor.facts import Facts
from envdoctor.findings import Finding

_NUMPY_ABI = re.compile(r"compiled using NumPy 1\.x cannot be run in\s+NumPy 2|_ARRAY_API not found|"
                        r"numpy\.core\.multiarray failed to import|numpy\.dtype size changed", re.I)


@rule
def numpy_abi_mismatch(facts: Facts) -> Iterable[Finding]:
    numpy = package(facts, "numpy")
    for key, fw in sorted(facts.frameworks.items()):
        text = fw.import_error or " ".join(str(v) for v in fw.extra.values() if isinstance(v, str))
        if _NUMPY_ABI.search(text or ""):
            yield _finding(facts, framework_named(key) or "pytorch", key, fw.version or package(facts, key), numpy,
                           f"frameworks.{key}: {_NUMPY_ABI.search(text).group(0)}")
            return
    have = public(numpy)
    if have is None:
        return
    from packaging.specifiers import SpecifierSet  # only when there is a NumPy to judge
    for framework, dists in FRAMEWORK_DISTS.items():
        dist = next((d for d in dists if package(facts, d)), None)
        if dist is None:
            continue
        version = package(facts, dist)
        specs = knowledge.numpy_requirements(framework, str(public(version)))
        if not specs or any(have in SpecifierSet(s) for s in specs):
            continue
        if have.release[0] >= 2 and not any(SpecifierSet(s).contains("2.0.0") for s in specs):
            yield _finding(facts, framework, dist, version, numpy, f"{framework} matrix: needs numpy {' or '.join(specs)}")


def _finding(facts: Facts, framework: str, dist: str, version, numpy, why: str) -> Finding:
    name = FRAMEWORK_NAMES[framework]
    return Finding(
        code="numpy-abi-mismatch", severity="error", section="python",
        title=f"{dist} {version or ''} was compiled against NumPy 1.x, but NumPy {numpy or '2'} is installed".replace("  ", " "),
        detail=(f"Binary modules built against NumPy 1.x cannot run with NumPy 2 (\"A module that was compiled using "
                f"NumPy 1.x cannot be run in NumPy 2\"): {name}'s NumPy interop breaks or the import fails."),
        fix=(("Pin NumPy 1 in this environment: `python -m pip install \"numpy<2\"`",) +
             plan_fix(facts, framework, f"or upgrade {name} to a release built against NumPy 2 (`envdoctor install {framework}`)")),
        evidence=(f"python.packages.numpy={numpy}", f"python.packages.{dist}={version}", why),
    )


@rule
def python_unsupported(facts: Facts) -> Iterable[Finding]:
    python = facts.python.version
    if not python:
        return
    minor = ".".join(python.split(".")[:2])
    for framework, dists in FRAMEWORK_DISTS.items():
        dist = next((d for d in dists if package(facts, d)), None)
        if dist is None:
            continue
        version = package(facts, dist)
        supported = knowledge.pythons(framework, str(public(version)), platform_key(facts))
        if supported is None or minor in supported:
            continue
        newest = knowledge.newest_for_python(framework, minor, platform_key(facts))
        name = FRAMEWORK_NAMES[framework]
        yield Finding(
            code="python-unsupported", severity="error", section="python",
            title=f"{name} {public(version)} has no build for Python {minor} on {platform_key(facts)}",
            detail=(f"The installed {dist} was not published for this interpreter, so it was built from source or copied "
                    "from elsewhere, and breaks on import or upgrade. " +
                    (f"The newest {name} release for Python {minor} here is {newest}." if newest else
                     f"No {name} release supports Python {minor} on this platform: use another Python version.")),
            fix=plan_fix(facts, framework, f"Create an environment with a Python version {name} supports "
                         f"(`envdoctor matrix {framework}` lists them) and install there"),
            evidence=(f"python.version={python}", f"python.packages.{dist}={version}",
                      f"host.os={facts.host.os}", f"host.arch={facts.host.arch}",
                      f"{framework} matrix: wheels for Python {', '.join(supported)}"),
        )


def no_release_for_python(facts: Facts, framework: str) -> Optional[Finding]:
    """python-unsupported for a framework that is not installed: no release has a wheel for this
    Python on this platform (what `pip install` then reports as "No matching distribution found").
    Used by `envdoctor explain`; `check` only judges installed frameworks."""
    python = facts.python.version
    platform = platform_key(facts)
    if not python or not platform:
        return None
    minor = ".".join(python.split(".")[:2])
    if knowledge.newest_for_python(framework, minor, platform) is not None:
        return None
    if not knowledge.call(framework, "releases"):
        return None  # no matrix: say nothing
    name = FRAMEWORK_NAMES[framework]
    return Finding(
        code="python-unsupported", severity="error", section="python",
        title=f"No {name} release has a wheel for Python {minor} on {platform}",
        detail=(f"pip finds no {name} build for this interpreter, so `pip install` fails with \"No matching "
                f"distribution found\". Use a Python version {name} publishes wheels for."),
        fix=plan_fix(facts, framework, f"Create an environment with a Python version {name} supports "
                     f"(`envdoctor matrix {framework}` lists them) and install there"),
        evidence=(f"python.version={python}", f"{framework} matrix: no release for Python {minor} on {platform}"),
    )
