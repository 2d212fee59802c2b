"""Installed Python/conda packages from pasted listings and install logs.

Read, line by line (each line must be wholly of one of these shapes, so prose is not read):
  pip list / uv pip list   rows after their "Package  Version" header and "---- ----" rule, or a run of
                           at least three "name  version" rows (an excerpt without its header)
  pip freeze               "name==1.2.3", and "name @ file:///…/name-1.2.3-….whl" (the version from the
                           wheel's file name; a source-tree URL has none and is skipped)
  conda list               rows after "# Name  Version  Build  Channel", or single rows whose build
                           string or channel is conda's own ("py3.8_cuda11.3_cudnn8.2.0_0 … pytorch");
                           "pypi" rows are pip-installed and go to python.packages
  collect_env              "[pip3] name==ver", "[conda] name ver build channel"
  conda's install plan     "pytorch   pytorch/win-64::pytorch-1.10.0-py3.6_cpu_0" (NEW packages rows)
  pip show                 a "Name: x" line directly followed by "Version: 1.2.3" (the block `pip show x`
                           prints; "Summary:", "Location:" … follow)
  install logs             "Successfully installed a-1.0 b-2.0", uv's " + name==ver", "Requirement already
                           satisfied: name in /path (ver)", pip's "a 1.0 requires …, but you have b 2.0
                           which is incompatible.", uv's "Using Python 3.12.10 environment at: …"
Two conda packages that install one distribution (pytorch and pytorch-nightly) in different versions
are two copies of it: python.packages gets "v1|v2". Versions must be PEP 440. Logs are chronological, so a later line overrides an earlier one. The
pytorch conda build string also tells the build's CUDA/cuDNN (or that it is a CPU build).
"""

from __future__ import annotations

import re
from urllib.parse import unquote

from envdoctor.read._util import package_name, pep440, put

_NAME = r"[A-Za-z0-9][A-Za-z0-9._-]{0,100}"
_FREEZE = re.compile(rf"(?:\[pip3?\] )?({_NAME})==([^\s;#,]{{1,80}})")
_URL_REQ = re.compile(rf"({_NAME}) @ (\S{{1,600}})")
_WHEEL = re.compile(r"/([A-Za-z0-9_.]{1,100})-(\d[^-/\s]{0,80})-[^/\s]{1,200}\.whl$")
_COLUMNS = re.compile(rf"({_NAME})\s{{1,120}}(\S{{1,80}})(?:\s{{1,120}}((?:/|~|[A-Za-z]:\\)\S[^\n]{{0,300}}))?")
_CONDA = re.compile(r"(\[conda\]\s{1,120})?([A-Za-z0-9_][A-Za-z0-9._-]{0,100})\s{1,120}(\S{1,80})\s{1,120}"
                    r"(\S{1,120})(?:\s{1,120}(\S{1,80}))?")
_PIP_HEADER = re.compile(r"Package\s{1,120}Version(?:\s{1,120}(?:Editable project location|Location|Installer)){0,3}")
_RULE = re.compile(r"-{3,300}(?:\s{1,120}-{3,300}){1,3}")
_CONDA_HEADER = re.compile(r"#\s{0,120}Name\s{1,120}Version\s{1,120}Build(?:\s{1,120}Channel)?")
_CONDA_BUILD = re.compile(r"py\d{1,3}[._a-z0-9]{0,60}|pyh[0-9a-f]{7}_\d{1,4}|h[0-9a-f]{7}_\d{1,4}|pypi_0"
                          r"|cuda\d{2,3}_?py\d{2,3}[0-9a-z_]{0,40}|cpu_[a-z_]{0,20}py\d{2,3}[0-9a-z_]{0,40}")
_CHANNELS = {"pytorch", "conda-forge", "nvidia", "defaults", "pypi", "anaconda", "main", "pytorch-nightly", "rapidsai"}
_UV_LINE = re.compile(rf"[+~] ({_NAME})==(\S{{1,80}})")
_SATISFIED = re.compile(rf"Requirement already satisfied: ({_NAME})(?:\[[^\]]{{0,100}}\])?(?:[<>=!~]\S{{0,100}})?"
                        r" in \S.{0,400}? \((\S{1,80})\)")
_RESOLVER = re.compile(rf"({_NAME}) (\S{{1,80}}) requires .{{1,300}}?, but you have ({_NAME}) (\S{{1,80}})"
                       r" which is incompatible\.")
_UV_PYTHON = re.compile(r"Using (?:CPython|Python) (\d{1,2}\.\d{1,3}\.\d{1,3})\S{0,12} (?:environment|interpreter) at")
# pytorch's conda build strings: pytorch channel "py3.10_cuda11.7_cudnn8.5.0_0" / "py3.8_cpu_0" (older ones
# "py3.8_cuda10.2.89_cudnn7.6.5_0", "py36_cuda9.0.176_cudnn7.1.2_1");
# conda-forge "cuda120_py311h…" / "cpu_mkl_py311h…"
_TORCH_CUDA = re.compile(r"py\d\.?\d{1,2}_cuda(\d{1,2}\.\d{1,2})(?:\.\d{1,3})?_cudnn(\d{1,2}\.\d{1,2}\.\d{1,3})(?:\.\d{1,3})?_\d{1,3}")  # "py36_cuda9.0.176_cudnn7.1.2_1" too
_TORCH_FORGE_CUDA = re.compile(r"cuda(\d{2})(\d)_")
_TORCH_CPU = re.compile(r"py\d\.\d{1,2}_cpu_\d{1,3}|cpu_[a-z_]{0,20}py\d{2,3}")
_MIN_RUN = 3
_SHOW_NAME = re.compile(rf"Name: ({_NAME})")
_SHOW_VERSION = re.compile(r"Version: (\S{1,80})")


def parse(text: str) -> dict:
    facts: dict = {}
    lines = [line.strip() for line in text.splitlines()]
    listed = _listing_rows(lines)
    in_conda = False  # inside a `conda list` after its "# Name Version Build Channel" header
    for i, line in enumerate(lines):
        if _pip_show(facts, line, lines[i + 1] if i + 1 < len(lines) else ""):
            continue
        if _CONDA_HEADER.fullmatch(line):
            in_conda = True
            continue
        if not line or line.startswith("#") or (i in listed and _read_columns(facts, line)):
            continue
        if _read_line(facts, line) or _read_conda(facts, line, listed=in_conda) or _read_conda_plan(facts, line):
            continue
        in_conda = False
    _conda_twins(facts)
    return facts


# conda packages that install the same Python distribution under other package names: two of them in
# one environment are two copies of it (conda tracks them apart, the files overwrite each other).
_CONDA_PROVIDES = {"pytorch": "torch", "pytorch-nightly": "torch", "pytorch-cpu": "torch"}


def _conda_twins(facts: dict) -> None:
    """Two conda packages of different versions providing one distribution that pip did not list:
    python.packages[dist] = "v1|v2" (the shape of two installed copies)."""
    conda = (facts.get("python") or {}).get("conda_packages") or {}
    by_dist: dict[str, list[str]] = {}
    for name, version in conda.items():
        if name in _CONDA_PROVIDES:
            by_dist.setdefault(_CONDA_PROVIDES[name], []).append(version)
    for dist, versions in by_dist.items():
        versions = list(dict.fromkeys(versions))
        if len(versions) > 1 and dist not in (facts["python"].get("packages") or {}):
            facts["python"].setdefault("packages", {})[dist] = "|".join(versions)


def _listing_rows(lines: list[str]) -> set[int]:
    """Indexes of "name  version" rows: after a pip list header, or in runs of at least three."""
    rows, run, in_block = set(), [], False
    for i, line in enumerate(lines + [""]):
        if _RULE.fullmatch(line) and i > 0 and _PIP_HEADER.fullmatch(lines[i - 1]):
            in_block, run = True, []
            continue
        m = _COLUMNS.fullmatch(line)
        if m and pep440(m.group(2)):
            run.append(i)
            continue
        if in_block or len(run) >= _MIN_RUN:
            rows.update(run)
        run, in_block = [], False
    return rows


def _read_line(facts: dict, line: str) -> bool:
    """The shapes that are unambiguous wherever they stand."""
    for pattern, reader in ((_FREEZE, _pip_pair), (_UV_LINE, _pip_pair), (_SATISFIED, _pip_pair)):
        m = pattern.fullmatch(line)
        if m and reader(facts, m.group(1), m.group(2)):
            return True
    if line.startswith("Successfully installed "):
        return _installed(facts, line.split()[2:])
    m = _URL_REQ.fullmatch(line)
    if m:
        return _url_requirement(facts, m.group(1), m.group(2))
    m = _RESOLVER.fullmatch(line)
    if m:
        return _pip_pair(facts, m.group(1), m.group(2)) | _pip_pair(facts, m.group(3), m.group(4))
    m = _UV_PYTHON.match(line)
    if m:
        put(facts, "python.version", m.group(1))
        return True
    return False


def _pip_show(facts: dict, line: str, following: str) -> bool:
    """`pip show` prints "Name: x" then "Version: 1.2.3" on the next line."""
    name = _SHOW_NAME.fullmatch(line)
    version = _SHOW_VERSION.fullmatch(following) if name else None
    return bool(version) and _pip_pair(facts, name.group(1), version.group(1))


def _pip_pair(facts: dict, name: str, version: str) -> bool:
    if not pep440(version):
        return False
    facts.setdefault("python", {}).setdefault("packages", {})[package_name(name)] = version
    return True


def _installed(facts: dict, tokens: list[str]) -> bool:
    read = False
    for token in tokens:
        name, _, version = token.rpartition("-")
        read |= bool(name) and _pip_pair(facts, name, version)
    return read


def _url_requirement(facts: dict, name: str, url: str) -> bool:
    m = _WHEEL.search(unquote(url))
    if m and package_name(m.group(1)) == package_name(name):
        return _pip_pair(facts, name, m.group(2))
    return True  # a source-tree URL: a package line, but no version to read


def _read_columns(facts: dict, line: str) -> bool:
    m = _COLUMNS.fullmatch(line)
    return bool(m) and _pip_pair(facts, m.group(1), m.group(2))


def _read_conda(facts: dict, line: str, listed: bool) -> bool:
    m = _CONDA.fullmatch(line)
    if not m or not pep440(m.group(3)):
        return False
    name, version, build, channel = package_name(m.group(2)), m.group(3), m.group(4), m.group(5)
    if not (listed or m.group(1) or channel in _CHANNELS or _CONDA_BUILD.fullmatch(build)):
        return False
    if channel == "pypi" or build == "pypi_0":
        return _pip_pair(facts, name, version)
    facts.setdefault("python", {}).setdefault("conda_packages", {})[name] = version
    if name == "pytorch":
        _torch_build(facts, build)
    elif _cpu_selector(name, build):
        put(facts, "frameworks.torch.extra.cuda_build", False)
    return True


def _cpu_selector(name: str, build: str) -> bool:
    """A conda package that selects torch's CPU build: the pytorch channel's `cpuonly` and
    `pytorch-mutex … cpu`, the defaults channel's `_pytorch_select … cpu_0`."""
    return (name == "cpuonly" or (name == "pytorch-mutex" and build == "cpu")
            or (name == "_pytorch-select" and build.startswith("cpu")))


# conda's "The following NEW packages will be INSTALLED:" rows: "pytorch   pytorch/win-64::pytorch-1.10.0-py3.6_cpu_0"
_CONDA_PLAN = re.compile(r"([A-Za-z0-9_][A-Za-z0-9._-]{0,100})\s{1,120}(?:[\w.-]{1,80}/)?[\w-]{1,20}::([A-Za-z0-9_][A-Za-z0-9._-]{0,100})"
                         r"-([^-\s]{1,60})-([^-\s]{1,80})(?: .{0,200})?")


def _read_conda_plan(facts: dict, line: str) -> bool:
    """A row of conda's install plan: what the solver is about to install (the build string included)."""
    m = _CONDA_PLAN.fullmatch(line) if "::" in line else None
    if not m or m.group(1) != m.group(2) or not pep440(m.group(3)):
        return False
    name, version, build = package_name(m.group(1)), m.group(3), m.group(4)
    facts.setdefault("python", {}).setdefault("conda_packages", {})[name] = version
    if name == "pytorch":
        _torch_build(facts, build)
    elif _cpu_selector(name, build):
        put(facts, "frameworks.torch.extra.cuda_build", False)
    return True


def _torch_build(facts: dict, build: str) -> None:
    m = _TORCH_CUDA.fullmatch(build)
    forge = _TORCH_FORGE_CUDA.match(build)
    if m:
        put(facts, "frameworks.torch.cuda", m.group(1))
        put(facts, "frameworks.torch.cudnn", m.group(2))
    elif forge:
        put(facts, "frameworks.torch.cuda", f"{int(forge.group(1))}.{forge.group(2)}")
    elif _TORCH_CPU.match(build):
        put(facts, "frameworks.torch.extra.cuda_build", False)
