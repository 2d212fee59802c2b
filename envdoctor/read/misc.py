"""The other outputs reports paste: `nvcc --version`, `jax.print_environment_info()`,
`tf.sysconfig.get_build_info()`, REPL lines (`tf.__version__`, `torch.cuda.is_available()`,
`tf.config.list_physical_devices('GPU')` → `[]`, IPython's `Out[3]: '1.4.1'`), `paddle.utils.run_check()`,
`paddle.version.show()` and Paddle's `tools/summary_env.py` ("Paddle With CUDA: False"), `jetson_release`, `/etc/nv_tegra_release`, `/proc/driver/nvidia/version`,
`module load cuda/11.8` (an HPC job's toolkit), `lsb_release -a`, `/etc/os-release`, `uname -a`, Python's `platform.uname()` and `platform.platform()`, `python --version` and
the REPL banner. Each reader needs the output's own fixed words, so prose is not read.
"""

from __future__ import annotations

import re
from typing import Optional

from envdoctor.probe.host import parse_os_release
from envdoctor.probe.jetson import parse_nv_tegra_release
from envdoctor.probe.nvidia import parse_proc_driver_version
from envdoctor.probe.toolkit import parse_nvcc_version
from envdoctor.probe.cudnn import three_components
from envdoctor.read._util import arch, distro_name, major_minor, numeric, package_name, pep440, put, sm_to_cc
from envdoctor.textnorm import flatten

_OS_NAMES = {"Linux": "linux", "Darwin": "macos", "Windows": "windows"}
_UNAME_RESULT = re.compile(r"uname_result\(system='(\w{1,20})', node='[^']{0,100}', release='([^']{1,100})', "
                           r"version='[^']{0,200}', machine='(\w{1,20})'\)")
_UNAME = re.compile(r"(Linux|Darwin) \S{1,100} (\d{1,2}\.\d{1,3}\.\d{1,4}[^\s]{0,80}) #?\S{0,60} .{0,200}? "
                    r"(x86_64|aarch64|arm64|ppc64le)(?: \S{1,20}){0,3}")
_UNAME_LABEL = re.compile(r"^(?:\$ ?)?uname(?: -a)?\s{0,8}[:=>]?\s{0,8}", re.I)
# Python's platform.platform(), which many environment dumps print ("Platform: Linux-5.15.0-91-generic-
# x86_64-with-glibc2.35", "macOS-14.2.1-arm64-arm-64bit", "Windows-10-10.0.19045-SP0").
_PLATFORM = re.compile(r"(?<![\w.-])(?:Linux-(?P<kernel>\d{1,2}\.\d{1,3}\.\d{1,4}[\w.+~-]{0,80}?)-(?P<arch>x86_64|aarch64|ppc64le)"
                       r"-with-(?:glibc(?P<glibc>\d\.\d{1,2})|[\w.-]{1,60})"
                       r"|macOS-(?P<macos>1\d|2\d)(?:\.\d{1,2}){0,2}-(?P<mac_arch>arm64|x86_64)-(?:arm|i386)-64bit"
                       r"|Windows-(?:7|8|8\.1|10|11|2008Server|2012Server|2016Server|2019Server|2022Server)-\d{1,2}\.\d\.\d{4,5}(?:-SP\d)?)(?![\w-])(?!\.\w)")
_PYTHON = re.compile(r"Python (\d\.\d{1,2}\.\d{1,3})(?:(?:a|b|rc)\d{1,2})?\+?(?:$| \(| \|)")
_BANNER_OS = re.compile(r"\] on (linux|win32|darwin)$")
_JAX_KEY = re.compile(r"(jax|jaxlib|numpy|python|jax_[a-z0-9_]{1,40}):\s{1,12}(\S.{0,200})")
_JAX_DEVICES = re.compile(r"jax\.devices \((\d{1,5}) total, \d{1,5} local\): \[(.{0,4000})\]")
_TF_BUILD = re.compile(r"'(cuda_version|cudnn_version|is_cuda_build|cuda_compute_capabilities)'[,:] "
                       r"('[^']{1,20}'|True|False|\[[^\]]{0,2000}\])")
_PADDLE_START = re.compile(r"full_version: \S{1,40}|commit: [0-9a-f]{40}")
_PADDLE_WITH_CUDA = re.compile(r"Paddle With CUDA: (True|False)")
_PADDLE_SHOW = re.compile(r"(full_version|commit|cuda|cudnn): '?([^'\s]{1,60})'?")
_JETSON_KEY = re.compile(r"(?:[-*] )?(Model|Jetpack|L4T|CUDA|cuDNN|Python|Distribution|Release): (\S.{0,120})")
_JETPACK = re.compile(r"Jetpack:? (\d{1,2}\.\d{1,2}(?:\.\d{1,2})?) \[L4T (\d{2}\.\d{1,2}\.\d{1,2})\]")
_ARCH_WORD = re.compile(r"\b(x86_64|aarch64|ppc64le)\b")
# (expression, fact, kind): "EXPR" then its value on the next line, or "EXPR: value" on one line.
_EXPRESSIONS = (
    (r"(?:tf|tensorflow)\.(?:__version__|version\.VERSION)", "frameworks.tensorflow.version", "version"),
    (r"torch\.__version__", "frameworks.torch.version", "version"),
    (r"jax\.__version__", "frameworks.jax.version", "version"),
    (r"paddle\.__version__", "frameworks.paddle.version", "version"),
    (r"torch\.version\.cuda", "frameworks.torch.cuda", "cuda"),
    (r"torch\.cuda\.is_available\(\)", "frameworks.torch.device_available", "bool"),
    (r"tf\.test\.is_built_with_cuda\(\)", "frameworks.tensorflow.extra.cuda_build", "bool"),
    (r"tf\.test\.is_gpu_available\(\)", "frameworks.tensorflow.device_available", "bool"),
    (r"(?:tf|tensorflow)\.config\.(?:experimental\.)?list_physical_devices\((?:device_type=)?['\"]GPU['\"]\)",
     "frameworks.tensorflow.device_available", "devices"),
)
_EXPRESSION_LINES = tuple((re.compile(rf"({e})(?:\s{{0,3}}[:=]\s{{0,3}}(\S.{{0,200}}))?"), path, kind)
                          for e, path, kind in _EXPRESSIONS)
_PROMPT = re.compile(r"(?:>>> |In \[\d{1,4}\]: |returns |Out\[\d{1,4}\]: )")


def parse(text: str) -> dict:
    facts: dict = {}
    lines = [line.strip() for line in text.splitlines()]
    for reader in (_nvcc, _jax_env, _expressions, _paddle, _jetson_release, _tegra_release, _proc_driver,
                   _lsb_release, _os_release, _uname, _platform, _python):
        reader(facts, lines)
    _tf_build_info(facts, flatten(text) if "is_cuda_build" in text else "")
    return facts


# An HPC job's `module load cuda/11.8` (Environment Modules / Lmod) puts that toolkit on the PATH; a module
# named after its compiler too ("cuda-10.2.89-gcc-9.2.0-fa5atrg", Spack's naming) still starts with its version.
_MODULE_LOAD = re.compile(r"^(?:\$ ?)?(?:module|ml) (?:load|add)\b[^\n]{0,80}?\b(?:cuda|cudatoolkit|cuda-toolkit)[/-](\d{1,2}\.\d{1,2})(?:\.[\d.]{1,12})?(?![\w.])", re.I)


def _nvcc(facts: dict, lines: list[str]) -> None:
    line = next((l for l in lines if l.startswith("Cuda compilation tools, release ")), None)
    if line:
        put(facts, "cuda_toolkit.version", parse_nvcc_version(line))
        return
    loaded = {m.group(1) for m in map(_MODULE_LOAD.match, lines) if m}
    put(facts, "cuda_toolkit.version", loaded.pop() if len(loaded) == 1 else None)


def _jax_env(facts: dict, lines: list[str]) -> None:
    """`jax.print_environment_info()`: "jax:    0.4.33", "jaxlib: …", "python: …", "jax.devices (…): […]"."""
    start = next((i for i, l in enumerate(lines) if l.startswith("jax:") and _jaxlib_near(lines, i)), None)
    if start is None:
        return
    for line in lines[start:start + 12]:
        m = _JAX_KEY.fullmatch(line)
        if m and m.group(1) == "python":
            put(facts, "python.version", _leading_version(m.group(2)))
        elif m and pep440(m.group(2)):
            put(facts, f"python.packages.{package_name(m.group(1))}", m.group(2))
            put(facts, "frameworks.jax.version", m.group(2) if m.group(1) == "jax" else None)
        devices = _JAX_DEVICES.fullmatch(line)
        if devices:
            gpu = re.search(r"\b(?:Cuda|Gpu|Rocm)Device\(", devices.group(2))
            put(facts, "frameworks.jax.device_available", bool(gpu))
            put(facts, "frameworks.jax.device_count", int(devices.group(1)) if gpu else None)


def _jaxlib_near(lines: list[str], i: int) -> bool:
    return any(l.startswith("jaxlib:") for l in lines[i + 1:i + 3])


def _leading_version(text: str) -> Optional[str]:
    m = re.match(r"(\d\.\d{1,2}\.\d{1,3})\b", text)
    return m.group(1) if m else None


def _expressions(facts: dict, lines: list[str]) -> None:
    for i, line in enumerate(lines):
        bare = _PROMPT.sub("", line.replace("`", ""), count=1)
        bare = bare[6:-1] if bare.startswith("print(") and bare.endswith(")") else bare
        for pattern, path, kind in _EXPRESSION_LINES:
            m = pattern.fullmatch(bare)
            if m:
                value = m.group(2) or _next_value(lines, i)
                put(facts, path, _value(kind, value))


def _next_value(lines: list[str], i: int) -> str:
    following = next((l for l in lines[i + 1:i + 3] if l), "")
    return _PROMPT.sub("", following, count=1)


def _value(kind: str, text: str):
    text = text.strip().strip("'\"")
    if kind == "version":
        return pep440(text)
    if kind == "cuda":
        return major_minor(numeric(text, 2))
    if kind == "bool":
        return {"True": True, "False": False}.get(text)
    if text == "[]":
        return False
    return True if text.startswith("[PhysicalDevice(") and "device_type='GPU'" in text else None


def _paddle(facts: dict, lines: list[str]) -> None:
    """`paddle.utils.run_check()` and `paddle.version.show()`."""
    if any(re.match(r"PaddlePaddle works well on \d{1,3} GPUs?\.", l) for l in lines):
        put(facts, "frameworks.paddle.device_available", True)
    if any(l.startswith("You are using GPU version PaddlePaddle, but there is no GPU") for l in lines):
        put(facts, "frameworks.paddle.device_available", False)
    with_cuda = next((m.group(1) for l in lines if (m := _PADDLE_WITH_CUDA.fullmatch(l))), None)
    if with_cuda:  # tools/summary_env.py: paddle.base.core.is_compiled_with_cuda()
        put(facts, "frameworks.paddle.extra.compiled_with_cuda", with_cuda == "True")
    start = next((i for i, l in enumerate(lines) if _PADDLE_START.fullmatch(l)), None)
    if start is None:
        return
    for line in lines[start:start + 10]:
        m = _PADDLE_SHOW.fullmatch(line)
        key, value = (m.group(1), m.group(2)) if m else (None, None)
        if key == "full_version":
            put(facts, "frameworks.paddle.version", pep440(value))
        elif key in ("cuda", "cudnn") and value == "False":
            put(facts, "frameworks.paddle.extra.compiled_with_cuda", False)
        elif key in ("cuda", "cudnn"):
            put(facts, f"frameworks.paddle.{key}", numeric(value, 2))


def _jetson_release(facts: dict, lines: list[str]) -> None:
    """jetson-stats' `jetson_release`: " - Model: …", " - L4T: 36.4.3", "Jetpack 6.2 [L4T 36.4.3]", " - CUDA: …"."""
    if not any("jetson-stats" in l or _JETPACK.search(l) for l in lines):
        return
    for line in lines:
        jetpack = _JETPACK.search(line)
        if jetpack:
            put(facts, "jetson.jetpack", jetpack.group(1))
            put(facts, "jetson.l4t", jetpack.group(2))
        m = _JETSON_KEY.fullmatch(line)
        if m:
            _jetson_value(facts, m.group(1), _JETPACK.sub("", m.group(2)).strip(" -"))
    if facts.get("jetson"):
        put(facts, "host.os", "linux")
        put(facts, "host.arch", "aarch64")


def _jetson_value(facts: dict, key: str, value: str) -> None:
    if key == "Model":
        put(facts, "jetson.model", value or None)
    elif key in ("L4T", "Jetpack"):
        put(facts, f"jetson.{key.lower()}", numeric(value, 2))
    elif key == "CUDA":
        put(facts, "jetson.cuda", major_minor(numeric(value, 2)))
        put(facts, "cuda_toolkit.version", major_minor(numeric(value, 2)))
    elif key == "cuDNN" and numeric(value, 3):
        facts.setdefault("cudnn", []).append({"version": three_components(value), "source": "jetson_release"})
    elif key == "Python":
        put(facts, "python.version", numeric(value, 2))
    elif key == "Distribution":
        put(facts, "host.distro", distro_name(value))
    elif key == "Release" and re.fullmatch(r"\d{1,2}\.\d{1,3}\.\d{1,4}-\S{1,60}", value):
        put(facts, "host.kernel", value)


def _tegra_release(facts: dict, lines: list[str]) -> None:
    l4t = parse_nv_tegra_release("\n".join(l for l in lines if l.startswith("# R")))
    if l4t:
        put(facts, "jetson.l4t", l4t)
        put(facts, "host.os", "linux")
        put(facts, "host.arch", "aarch64" if any("EABI: aarch64" in l for l in lines) else None)


def _proc_driver(facts: dict, lines: list[str]) -> None:
    """/proc/driver/nvidia/version. On Jetson this prints the L4T release (35.3.1), not a driver."""
    line = next((l for l in lines if l.startswith("NVRM version:")), None)
    version = parse_proc_driver_version(line) if line else None
    if version and int(version.split(".")[0]) >= 100:
        put(facts, "nvidia.driver_version", version)
    if version:
        word = _ARCH_WORD.search(line)
        put(facts, "host.os", "linux")
        put(facts, "host.arch", arch(word.group(1)) if word else None)


def _lsb_release(facts: dict, lines: list[str]) -> None:
    if not any(re.match(r"Distributor ID:\s", l) for l in lines):
        return
    line = next((l for l in lines if re.match(r"Description:\s", l)), "")
    name = distro_name(line.partition(":")[2]) if line else None
    if name:
        put(facts, "host.os", "linux")
        put(facts, "host.distro", name)


def _os_release(facts: dict, lines: list[str]) -> None:
    block = [l for l in lines if re.fullmatch(r"[A-Z_]{2,40}=(\"?)[^\"\n]{0,200}\1", l)]
    if not any(l.startswith("ID=") for l in block):
        return
    name = parse_os_release("\n".join(block))
    if name:
        put(facts, "host.os", "linux")
        put(facts, "host.distro", name)


def _uname(facts: dict, lines: list[str]) -> None:
    for line in lines:
        line = _UNAME_LABEL.sub("", line)  # "uname : Linux host 6.14.0 …", "$ uname -a Linux …"
        m = _UNAME.fullmatch(line) or _UNAME.fullmatch(line.removesuffix(" GNU/Linux"))
        result = _UNAME_RESULT.search(line)
        found = m or result
        system, release, machine = found.group(1, 2, 3) if found else (None, None, None)
        if system in _OS_NAMES:
            put(facts, "host.os", _OS_NAMES[system])
            put(facts, "host.kernel", release if system != "Windows" else None)
            put(facts, "host.arch", machine if system == "Darwin" and machine == "arm64" else arch(machine))
            put(facts, "host.wsl", True if system == "Linux" and "microsoft" in release.lower() else None)


def _platform(facts: dict, lines: list[str]) -> None:
    """The first platform.platform() string: the OS, and on Linux the kernel, architecture and glibc."""
    m = next((m for m in map(_PLATFORM.search, lines) if m), None)
    if m is None:
        return
    if m.group("kernel"):
        put(facts, "host.os", "linux")
        put(facts, "host.kernel", m.group("kernel"))
        put(facts, "host.arch", arch(m.group("arch")))
        put(facts, "host.glibc", m.group("glibc"))
        put(facts, "host.wsl", True if "microsoft" in m.group("kernel").lower() else None)
    elif m.group("macos"):
        put(facts, "host.os", "macos")
        put(facts, "host.arch", m.group("mac_arch"))
    else:
        put(facts, "host.os", "windows")


def _python(facts: dict, lines: list[str]) -> None:
    for i, line in enumerate(lines):
        m = _PYTHON.match(line)
        if not m or not (line == m.group(0) or m.group(0).endswith((" (", " |"))):
            continue
        put(facts, "python.version", m.group(1))
        banner = _BANNER_OS.search(line) or _BANNER_OS.search(lines[i + 1] if i + 1 < len(lines) else "")
        if banner:
            put(facts, "host.os", {"linux": "linux", "win32": "windows", "darwin": "macos"}[banner.group(1)])


def _tf_build_info(facts: dict, flat: str) -> None:
    """`tf.sysconfig.get_build_info()`, printed as a dict or (pprint) an OrderedDict of pairs. Windows
    builds spell the versions "64_112" (11.2) and "64_8"."""
    for m in _TF_BUILD.finditer(flat):
        key, value = m.group(1), m.group(2).strip("'")
        if key == "is_cuda_build":
            put(facts, "frameworks.tensorflow.extra.cuda_build", value == "True")
        elif key == "cuda_compute_capabilities":
            tokens = re.findall(r"(?:sm|compute)_\d{2,3}a?", value)
            put(facts, "frameworks.tensorflow.arch_list", [t for t in tokens if sm_to_cc(t)] or None)
        else:
            put(facts, f"frameworks.tensorflow.{key.split('_')[0]}", _tf_version(value))


def _tf_version(value: str) -> Optional[str]:
    windows = re.fullmatch(r"64_(\d{1,3})", value)
    if windows:
        digits = windows.group(1)
        return digits if len(digits) == 1 else f"{digits[:-1]}.{digits[-1]}"
    return numeric(value)
