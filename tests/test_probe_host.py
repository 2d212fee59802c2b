"""Host probe: os-release, WSL2, containers, macOS/Rosetta, Windows, AMD/ROCm (small)."""

from __future__ import annotations

import sys

import pytest

from envdoctor.probe import amd, host
from probe_helpers import SYSTEM_PATH, context, put, script

UBUNTU = 'PRETTY_NAME="Ubuntu 24.04.1 LTS"\nNAME="Ubuntu"\nVERSION_ID="24.04"\nVERSION="24.04.1 LTS (Noble Numbat)"\nID=ubuntu\n'
DEBIAN = 'PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"\nNAME="Debian GNU/Linux"\nVERSION_ID="12"\nID=debian\n'
ARCH = 'NAME="Arch Linux"\nPRETTY_NAME="Arch Linux"\nID=arch\nBUILD_ID=rolling\n'


@pytest.mark.parametrize("text,expected", [(UBUNTU, "Ubuntu 24.04"), (DEBIAN, "Debian 12"), (ARCH, "Arch Linux"), ("", None)])
def test_os_release(text, expected):
    assert host.parse_os_release(text) == expected


# os-release(5) quoting: single quotes, escapes inside double quotes, comments, blank lines.
QUOTED = """# a comment
NAME='Fedora Linux'
VERSION_ID=41
PRETTY_NAME="Fedora Linux 41 (Workstation \\"Edition\\")"
ID=fedora
"""


def test_os_release_quoting_and_escapes_follow_the_spec():
    values = host.os_release_values(QUOTED)
    assert values["NAME"] == "Fedora Linux" and values["VERSION_ID"] == "41"
    assert values["PRETTY_NAME"] == 'Fedora Linux 41 (Workstation "Edition")'
    assert host.parse_os_release(QUOTED) == "Fedora Linux 41"


@pytest.mark.skipif(not hasattr(__import__("platform"), "_parse_os_release"), reason="CPython's own reader to compare with")
@pytest.mark.parametrize("text", [UBUNTU, DEBIAN, ARCH, QUOTED])
def test_os_release_reads_like_pythons_platform_module(text):
    import platform

    expected = platform._parse_os_release(text.splitlines())
    expected.pop("ID", None), expected.pop("NAME", None)  # platform.py adds defaults for these two
    values = host.os_release_values(text)
    assert {k: v for k, v in values.items() if k not in ("ID", "NAME")} == expected


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the Linux branch reads /proc")
def test_usr_lib_os_release_is_the_fallback(tmp_path):
    put(tmp_path, "/usr/lib/os-release", DEBIAN)
    assert host.probe(context(tmp_path)).distro == "Debian 12"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the Linux branch reads /proc")
def test_wsl2_tree(tmp_path):
    put(tmp_path, "/etc/os-release", UBUNTU)
    put(tmp_path, "/proc/version", "Linux version 5.15.153.1-microsoft-standard-WSL2 (root@941d701f84f1) (gcc (GCC) 12.2.0) #1 SMP\n")
    put(tmp_path, "/proc/sys/kernel/osrelease", "5.15.153.1-microsoft-standard-WSL2\n")
    put(tmp_path, "/usr/lib/wsl/lib/libcuda.so.1", b"")
    h = host.probe(context(tmp_path))
    assert (h.os, h.distro, h.kernel, h.wsl, h.container) == ("linux", "Ubuntu 24.04", "5.15.153.1-microsoft-standard-WSL2", True, None)


def test_wsl1_kernel_string_and_plain_linux():
    assert host.is_wsl("Linux version 4.4.0-19041-Microsoft (Microsoft@Microsoft.com) (gcc version 5.4.0) #1237-Microsoft", False)
    assert not host.is_wsl("Linux version 6.8.0-45-generic (buildd@lcy02-amd64-075) (x86_64-linux-gnu-gcc-13)", False)


@pytest.mark.parametrize("files,environ,expected", [
    ({"/.dockerenv": ""}, {}, "docker"),
    ({"/run/.containerenv": ""}, {}, "podman"),
    ({}, {"KUBERNETES_SERVICE_HOST": "10.0.0.1"}, "kubernetes"),
    ({"/proc/1/cgroup": "0::/kubepods/besteffort/pod1234/abcd\n"}, {}, "kubernetes"),
    ({"/proc/1/cgroup": "0::/init.scope\n"}, {}, None),
])
def test_containers(tmp_path, files, environ, expected):
    for path, content in files.items():
        put(tmp_path, path, content)
    assert host.detect_container(context(tmp_path, **environ)) == expected


def test_macos_apple_silicon_native_and_rosetta():
    native = host.macos_host("arm64", "15.1", "24.1.0", rosetta=False)
    assert (native.os, native.distro, native.arch, native.machine_arch, native.rosetta) == ("macos", "macOS 15.1", "arm64", "arm64", False)
    rosetta = host.macos_host("x86_64", "15.1", "24.1.0", rosetta=True)
    assert (rosetta.arch, rosetta.machine_arch, rosetta.rosetta) == ("x86_64", "arm64", True)
    intel = host.macos_host("x86_64", "13.6", "22.6.0", rosetta=False)
    assert (intel.arch, intel.machine_arch) == ("x86_64", "x86_64")


def test_windows_versions():
    w11 = host.windows_host("10", "10.0.26100", "AMD64")
    assert (w11.os, w11.distro, w11.arch, w11.os_version) == ("windows", "Windows 11", "x86_64", "10.0.26100")
    assert host.windows_host("10", "10.0.19045", "AMD64").distro == "Windows 10"
    assert host.windows_host("11", "10.0.26100", "ARM64").arch == "aarch64"


# --- AMD (kept small) ---------------------------------------------------------------------------------

def test_rocm_version_and_agents():
    assert amd.parse_rocm_version("6.4.1-120\n") == "6.4.1"
    assert amd.parse_agents("gfx000\ngfx942\ngfx942\n") == ["gfx942", "gfx942"]


def test_amd_gpu_with_rocm(tmp_path):
    base = "/sys/bus/pci/devices/0000:83:00.0"
    put(tmp_path, f"{base}/vendor", "0x1002\n")
    put(tmp_path, f"{base}/class", "0x038000\n")
    put(tmp_path, f"{base}/product_name", "AMD Instinct MI300X\n")
    put(tmp_path, "/opt/rocm/.info/version", "6.4.1-120\n")
    fake = script(tmp_path, "/opt/rocm/bin/rocm_agent_enumerator", "printf 'gfx000\\ngfx942\\n'")
    found = amd.probe(context(tmp_path, path=f"{fake.parent}:{SYSTEM_PATH}"))
    assert found.rocm_version == "6.4.1"
    assert [(g.name, g.gfx) for g in found.gpus] == [("AMD Instinct MI300X", "gfx942")]


def test_no_amd_gpu(tmp_path):
    put(tmp_path, "/opt/rocm/.info/version", "6.4.1-120\n")  # ROCm installed, no GPU
    assert amd.probe(context(tmp_path, path="/nonexistent")) is None


def test_rosetta_is_decided_by_the_target_interpreter():
    """envdoctor native on Apple silicon, checking an x86_64 Python (Rosetta), and the reverse."""
    native = host.macos_host("arm64", "15.1", "24.1.0", rosetta=False)
    target = host.for_target(native, "x86_64")
    assert (target.arch, target.machine_arch, target.rosetta) == ("x86_64", "arm64", True)
    translated = host.macos_host("x86_64", "15.1", "24.1.0", rosetta=True)
    target = host.for_target(translated, "arm64")
    assert (target.arch, target.machine_arch, target.rosetta) == ("arm64", "arm64", False)
    intel = host.macos_host("x86_64", "13.6", "22.6.0", rosetta=False)
    assert host.for_target(intel, "x86_64") == intel
    assert host.for_target(native, None) == native  # the target could not be run: keep what envdoctor saw
    windows = host.windows_host("10", "10.0.19045", "AMD64")
    assert host.for_target(windows, "x86_64") == windows


def test_the_python_probe_records_the_target_machine():
    from envdoctor.probe import ProbeContext, pyenv

    ctx = ProbeContext(python="/v/bin/python", environ={})
    pyenv.parse('{"executable": "/v/bin/python", "version": "3.12.7", "machine": "x86_64"}', ctx)
    assert ctx.target_machine == "x86_64" and ctx.errors == []
