"""Partial facts: null or missing means unknown at every depth, and wrong types are refused in words.

The key paths are GENERATED from the Facts dataclasses (`dataclasses.fields`, recursively, into list
items and map values too), so a key added to envdoctor/facts.py is covered here without editing
this file. For every path:

(a) a full machine with that value set to null is accepted and `check` renders it (console and
    --json: exit 0 or 1, no traceback, no internal-error finding);
(b) the same with the key removed;
(c) a wrong-typed value is refused by `Facts.from_dict` with a FactsError naming the dotted path in
    words ("expected a list of GPUs", never a Python type name).

Then: hostile files (FIFO, 9 MB, /dev/zero, NaN, deep nesting, terminal escapes), the reasoning on
partial documents (what an unknown must not be read as), and every inference of envdoctor/complete.py
checked against the matrix row it cites.
"""

from __future__ import annotations

import copy
import dataclasses
import io
import json
import os
import re
import subprocess
import sys
import types
import typing
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from envdoctor.cli import app
from envdoctor.complete import complete
from envdoctor.diagnose import diagnose
from envdoctor.facts import BLOCKS, Facts, FactsError

ROOT = Path(__file__).resolve().parent.parent
MACHINES = ROOT / "tests" / "fixtures" / "machines"
RUNNER = CliRunner()
CONSOLE_ENV = {"NO_COLOR": "1", "COLUMNS": "200"}

# --- the key paths, from the dataclasses ------------------------------------------------------------

ANY_KEY = "*"  # a map's key: the first one the document has
INTERNAL = ("unrecorded",)  # Facts fields that are not document keys


def _unwrap(tp: Any) -> Any:
    """Optional[X] -> X."""
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        return args[0] if len(args) == 1 else tp
    return tp


@dataclasses.dataclass(frozen=True)
class KeyPath:
    parts: tuple  # str keys, ANY_KEY for a map key, 0 for a list item
    tp: Any  # the value's type (Optional removed)

    @property
    def is_item(self) -> bool:
        """A list element: not a key (null/removal is asked of keys)."""
        return self.parts[-1] == 0

    def dotted(self, doc: dict) -> str:
        out = ""
        node = doc
        for part in self.parts:
            if part == 0:
                out += "[0]"
                node = node[0] if isinstance(node, list) and node else None
                continue
            key = _first_key(node) if part == ANY_KEY else part
            out += ("." if out else "") + key
            node = node.get(key) if isinstance(node, dict) else None
        return out

    def __str__(self) -> str:
        return ".".join("[0]" if p == 0 else str(p) for p in self.parts).replace(".[0]", "[0]")


def _walk(tp: Any, parts: tuple) -> typing.Iterator[KeyPath]:
    tp = _unwrap(tp)
    yield KeyPath(parts, tp)
    origin = typing.get_origin(tp)
    if dataclasses.is_dataclass(tp):
        hints = typing.get_type_hints(tp)
        for f in dataclasses.fields(tp):
            if f.name not in INTERNAL:
                yield from _walk(hints[f.name], parts + (f.name,))
    elif origin in (list, tuple):
        yield from _walk(typing.get_args(tp)[0], parts + (0,))
    elif origin is dict:
        yield from _walk(typing.get_args(tp)[1], parts + (ANY_KEY,))


PATHS = [p for p in _walk(Facts, ()) if p.parts]
KEY_PATHS = [p for p in PATHS if not p.is_item and p.parts != ("schema",)]


def test_the_walk_reaches_every_level():
    names = {str(p) for p in PATHS}
    assert {"nvidia.gpus[0].compute_capability", "python.packages.*", "frameworks.*.arch_list[0]",
            "frameworks.*.extra.*", "cudnn[0].version", "amd.gpus[0].gfx", "errors[0].message", "env.*",
            "nvidia.pci_devices[0].driver", "cuda_toolkits[0].root", "jetson.l4t", "host.hostname"} <= names


# --- the documents ------------------------------------------------------------------------------------


def _machine(name: str) -> dict:
    doc = json.loads((MACHINES / name).read_text())
    # Hand-written: no "recorded", and no probe timestamp (with one and every block present, the
    # document reads as an old probe's, whose null blocks meant "none").
    doc.pop("recorded", None)
    doc.pop("collected_at", None)
    return doc


def _rtx5090_full() -> dict:
    """rtx5090-r570 with every list and map it leaves empty filled the way a probe fills them."""
    doc = _machine("rtx5090-r570.json")
    site = "/home/ana/venvs/dl/lib/python3.12/site-packages"
    doc["python"]["packages"] = {"torch": "2.7.0+cu128", "torchvision": "0.22.0+cu128", "numpy": "2.2.4",
                                 "nvidia-cudnn-cu12": "9.7.1.26", "nvidia-cuda-runtime-cu12": "12.8.57"}
    doc["python"]["nvidia_wheel_dirs"] = {"nvidia.cudnn": f"{site}/nvidia/cudnn"}
    doc["python"]["conda_packages"] = {"python": "3.12.3"}
    toolkit = {"version": "12.8", "nvcc": "/usr/local/cuda-12.8/bin/nvcc", "root": "/usr/local/cuda-12.8", "found_by": "PATH"}
    doc["cuda_toolkit"] = dict(toolkit)
    doc["cuda_toolkits"] = [dict(toolkit)]
    doc["cudnn"] = [{"version": "9.7.1", "source": "pip:nvidia-cudnn-cu12", "path": f"{site}/nvidia/cudnn"}]
    doc["frameworks"] = {"torch": {"version": "2.7.0+cu128", "cuda": "12.8", "cudnn": "9.7.1",
                                   "arch_list": ["sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120"],
                                   "device_available": True, "device_count": 1, "import_error": None,
                                   "extra": {"hip": None, "mps_available": False}}}
    doc["env"]["CUDA_VISIBLE_DEVICES"] = "0"
    doc["errors"] = [{"probe": "nvidia-smi", "message": "timed out after 5 s"}]
    doc["inferred"] = {"host.hostname": "written by hand"}
    doc["host"]["hostname"] = "ana-desktop"
    return doc


BASES = {"default": _rtx5090_full(), "jetson": _machine("jetson-orin-jp62.json"), "amd": _machine("amd-mi300.json")}


def base_for(path: KeyPath) -> dict:
    return copy.deepcopy(BASES.get(path.parts[0], BASES["default"]))


def _first_key(node: Any) -> str:
    return next(iter(node)) if isinstance(node, dict) and node else "sample"


def _sample(tp: Any) -> Any:
    """An item for an empty list or map the path goes through (the generic fallback for new keys)."""
    tp = _unwrap(tp)
    if dataclasses.is_dataclass(tp):
        return {}
    origin = typing.get_origin(tp)
    if origin in (list, tuple):
        return [_sample(typing.get_args(tp)[0])]
    if origin is dict:
        return {"sample": _sample(typing.get_args(tp)[1])}
    return {bool: True, int: 1}.get(tp, "1.0")


def parent_of(doc: dict, path: KeyPath) -> tuple[Any, Any]:
    """(the container holding the path's value, its key or index), filling empty containers on the way."""
    node: Any = doc
    tp: Any = Facts
    for part in path.parts[:-1]:
        key = _key(node, part)
        tp = _child_type(tp, part)
        if isinstance(node, list):
            if not node:
                node.append(_sample(tp))
        elif node.get(key) is None or node.get(key) in ({}, []):
            node[key] = _sample(tp)
            if isinstance(node[key], list) and not node[key]:
                node[key] = _sample(tp)
        node = node[key]
    last = path.parts[-1]
    if isinstance(node, list) and not node:
        node.append(_sample(path.tp))
    return node, _key(node, last)


def _key(node: Any, part: Any) -> Any:
    if part == 0:
        return 0
    return _first_key(node) if part == ANY_KEY else part


def _child_type(tp: Any, part: Any) -> Any:
    tp = _unwrap(tp)
    if dataclasses.is_dataclass(tp):
        return _unwrap(typing.get_type_hints(tp)[part])
    args = typing.get_args(tp)
    return _unwrap(args[-1] if typing.get_origin(tp) is dict else args[0])


def with_null(path: KeyPath) -> dict:
    doc = base_for(path)
    parent, key = parent_of(doc, path)
    parent[key] = None
    return doc


def without(path: KeyPath) -> dict:
    doc = base_for(path)
    parent, key = parent_of(doc, path)
    if isinstance(parent, dict):
        parent.pop(key, None)
    return doc


def as_recorded(doc: dict) -> dict:
    """The same document as a probe writes it: every block recorded (a null block there means "none")."""
    return {**doc, "collected_at": "2026-11-28T19:12:44Z", "recorded": list(BLOCKS)}


# --- running `check` -----------------------------------------------------------------------------------


def check_in_process(tmp_path: Path, doc: dict, name: str = "m.json") -> tuple[int, list[dict]]:
    """`check --json` and `check -v` in-process; returns (exit code, findings)."""
    path = tmp_path / name
    path.write_text(json.dumps(doc))
    result = RUNNER.invoke(app, ["check", "--json", "--facts", str(path)])
    assert result.exception is None or isinstance(result.exception, SystemExit), _failure(result)
    assert result.exit_code in (0, 1), result.output
    findings = json.loads(result.stdout)["findings"]
    assert not [f for f in findings if f["code"] == "internal-error"], findings
    console = RUNNER.invoke(app, ["check", "-v", "--facts", str(path)], env=CONSOLE_ENV)
    assert console.exception is None or isinstance(console.exception, SystemExit), _failure(console)
    assert console.exit_code == result.exit_code, console.output
    assert "Traceback" not in console.output
    return result.exit_code, findings


def _failure(result) -> str:
    import traceback

    return "".join(traceback.format_exception(result.exception)) if result.exception else result.output


def main_in_process(*argv: str) -> tuple[int, str, str]:
    """The real entry point (envdoctor.cli.main: exit codes 0/1/2, one-line errors) without a subprocess."""
    from envdoctor import cli

    out, err = io.StringIO(), io.StringIO()
    old = sys.argv
    sys.argv = ["envdoctor", *argv]
    try:
        with redirect_stdout(out), redirect_stderr(err):
            try:
                cli.main()
                code = 0
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
    finally:
        sys.argv = old
    return code, out.getvalue(), err.getvalue()


def run_real(*argv: str, timeout: float = 60) -> subprocess.CompletedProcess:
    env = {**os.environ, **CONSOLE_ENV}
    return subprocess.run([sys.executable, "-m", "envdoctor", *argv], capture_output=True, text=True,
                          env=env, timeout=timeout, cwd=ROOT)


def codes_of(findings: list[dict]) -> set[str]:
    return {f["code"] for f in findings}


# --- (a) null, (b) removed ----------------------------------------------------------------------------


@pytest.mark.parametrize("path", KEY_PATHS, ids=str)
def test_null_value_is_unknown_and_renders(tmp_path, path):
    doc = with_null(path)
    Facts.from_dict(doc)
    check_in_process(tmp_path, doc)
    check_in_process(tmp_path, as_recorded(doc), "recorded.json")


@pytest.mark.parametrize("path", KEY_PATHS, ids=str)
def test_removed_key_is_unknown_and_renders(tmp_path, path):
    doc = without(path)
    Facts.from_dict(doc)
    check_in_process(tmp_path, doc)
    check_in_process(tmp_path, as_recorded(doc), "recorded.json")


def test_the_full_bases_render(tmp_path):
    for name, doc in BASES.items():
        check_in_process(tmp_path, doc, f"{name}.json")


def test_a_few_partial_documents_through_the_real_cli(tmp_path):
    """~10 paths through a real subprocess each (side by side): main()'s exit code and stderr."""
    chosen = KEY_PATHS[:: max(1, len(KEY_PATHS) // 10)][:10]
    procs = {}
    for i, path in enumerate(chosen):
        file = tmp_path / f"p{i}.json"
        file.write_text(json.dumps(with_null(path) if i % 2 else without(path)))
        procs[str(path)] = subprocess.Popen([sys.executable, "-m", "envdoctor", "check", "--facts", str(file)],
                                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                            env={**os.environ, **CONSOLE_ENV}, cwd=ROOT)
    for name, proc in procs.items():
        out, err = proc.communicate(timeout=120)
        assert proc.returncode in (0, 1), (name, err)
        assert "Traceback" not in out + err and "internal-error" not in out, name


# --- (c) wrong types ----------------------------------------------------------------------------------

PYTHON_TYPE_NAMES = re.compile(r"\b(NoneType|str|dict|int|bool|float|tuple|Optional|Union|typing|Any)\b|<class")


def wrong_values(tp: Any) -> list[Any]:
    """Values of the wrong JSON type for a field of type `tp` (none for Any: anything goes)."""
    origin = typing.get_origin(tp)
    if tp is Any:
        return []
    if tp is str:
        return [["x"], {"a": "b"}]
    if tp is bool:
        return ["yes", ["true"]]
    if tp is int:
        return ["3", [3]]
    if origin in (list, tuple) or origin is dict or dataclasses.is_dataclass(tp):
        return ["x", 5] if origin is dict or dataclasses.is_dataclass(tp) else ["x", {"a": "b"}]
    return []


WRONG = [(p, v) for p in PATHS for v in wrong_values(p.tp)]


@pytest.mark.parametrize("path, value", WRONG, ids=[f"{p}={json.dumps(v)}" for p, v in WRONG])
def test_wrong_type_is_refused_in_words(path, value):
    doc = base_for(path)
    parent, key = parent_of(doc, path)
    parent[key] = value
    with pytest.raises(FactsError) as caught:
        Facts.from_dict(doc)
    message = str(caught.value)
    if path.parts == ("schema",):
        assert "schema" in message
        return
    assert path.dotted(doc) in message, message
    assert "expected" in message, message
    assert not PYTHON_TYPE_NAMES.search(message), message


def test_wrong_gpus_say_what_was_expected():
    doc = base_for(KeyPath(("nvidia", "gpus"), list))
    doc["nvidia"]["gpus"] = "NVIDIA L4"
    with pytest.raises(FactsError, match=r"nvidia\.gpus: expected a list of GPUs, got a string"):
        Facts.from_dict(doc)


def test_schema_null_or_missing_is_refused(tmp_path):
    for doc in ({**BASES["default"], "schema": None}, {k: v for k, v in BASES["default"].items() if k != "schema"}):
        path = tmp_path / "s.json"
        path.write_text(json.dumps(doc))
        code, out, err = main_in_process("check", "--facts", str(path))
        assert code == 2 and "no facts schema" in err and "Traceback" not in err


# --- hostile files ------------------------------------------------------------------------------------


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="POSIX FIFOs")
def test_fifo_as_facts_exits_2_at_once(tmp_path):
    fifo = tmp_path / "facts.fifo"
    os.mkfifo(fifo)
    result = run_real("check", "--facts", str(fifo), timeout=10)
    assert result.returncode == 2 and "not a regular file" in result.stderr, result.stderr
    assert "Traceback" not in result.stderr


def test_dev_zero_exits_2():
    if not os.path.exists("/dev/zero"):
        pytest.skip("no /dev/zero")
    code, _, err = main_in_process("check", "--facts", "/dev/zero")
    assert code == 2 and "not a regular file" in err and "Traceback" not in err


def test_nine_megabyte_file_exits_2(tmp_path):
    path = tmp_path / "big.json"
    filler = "x" * 1000
    path.write_text(json.dumps({"schema": "envdoctor.facts/1", "env": {f"V{i}": filler for i in range(9000)}}))
    assert path.stat().st_size > 9_000_000
    code, _, err = main_in_process("check", "--facts", str(path))
    assert code == 2 and "MB" in err and "Traceback" not in err


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_json_constants_exit_2(tmp_path, constant):
    path = tmp_path / "nan.json"
    path.write_text('{"schema": "envdoctor.facts/1", "nvidia": {"gpus": [{"memory_total_mib": %s}]}}' % constant)
    code, _, err = main_in_process("check", "--facts", str(path))
    assert code == 2 and constant.lstrip("-") in err and "Traceback" not in err


def test_deep_nesting_exits_2(tmp_path):
    path = tmp_path / "deep.json"
    path.write_text('{"schema": "envdoctor.facts/1", "env": ' + "[" * 40 + "]" * 40 + "}")
    code, _, err = main_in_process("check", "--facts", str(path))
    assert code == 2 and "nested" in err and "Traceback" not in err


def test_terminal_escape_in_a_gpu_name_is_not_printed(tmp_path):
    doc = copy.deepcopy(BASES["default"])
    doc["nvidia"]["gpus"][0]["name"] = "NVIDIA \x1b[31mGeForce RTX 5090\x1b]0;pwned\x07"
    path = tmp_path / "esc.json"
    path.write_text(json.dumps(doc))
    result = run_real("check", "-v", "--facts", str(path))
    assert result.returncode in (0, 1), result.stderr
    assert "\x1b" not in result.stdout and "\x07" not in result.stdout
    assert "GeForce RTX 5090" in result.stdout
    code, out, _ = main_in_process("check", "--json", "--facts", str(path))
    assert code in (0, 1) and "\x1b" not in out and "\\u001b" not in out


# --- reasoning on partial documents -------------------------------------------------------------------

ISSUE_EXAMPLE = {"schema": "envdoctor.facts/1", "python": {"packages": {"torch": "2.13.0"}},
                 "nvidia": {"driver_version": "535.183.01", "gpus": [{"name": "NVIDIA L4"}]}}


def test_issue_example_gives_driver_too_old_and_shows_the_l4_as_sm_89(tmp_path):
    path = tmp_path / "issue.json"
    path.write_text(json.dumps(ISSUE_EXAMPLE))
    code, out, err = main_in_process("check", "--json", "--facts", str(path))
    assert code == 1, err
    report = json.loads(out)
    assert "driver-too-old" in codes_of(report["findings"])
    assert report["facts"]["nvidia"]["gpus"][0]["compute_capability"] == "8.9"
    code, out, _ = main_in_process("check", "--facts", str(path))
    assert code == 1
    assert re.search(r"NVIDIA L4 \(sm_89", out), out


def _partial(**blocks) -> dict:
    return {"schema": "envdoctor.facts/1", **blocks}


@pytest.mark.parametrize("nvidia", [None, "missing"])
def test_unknown_nvidia_is_not_a_machine_without_gpu(tmp_path, nvidia):
    doc = _partial(host={"os": "linux", "arch": "x86_64"}, python={"version": "3.14.0", "packages": {"torch": "2.5.1"}})
    if nvidia != "missing":
        doc["nvidia"] = nvidia
    _, findings = check_in_process(tmp_path, doc)
    assert not codes_of(findings) & {"no-gpu-platform", "no-nvidia-driver", "cpu-only-build", "toolkit-without-driver"}
    for finding in findings:  # no CPU build proposed for a machine whose GPUs nobody recorded
        for fix in finding["fix"]:
            text = " ".join(fix) if isinstance(fix, list) else fix
            assert "/whl/cpu" not in text and "--cuda cpu" not in text, (finding["code"], text)


def test_full_machine_with_nvidia_null_is_not_a_cpu_box(tmp_path):
    doc = copy.deepcopy(BASES["default"])
    doc["nvidia"] = None
    _, findings = check_in_process(tmp_path, doc)
    assert not codes_of(findings) & {"no-gpu-platform", "no-nvidia-driver", "toolkit-without-driver"}
    assert not any("/whl/cpu" in json.dumps(f["fix"]) for f in findings)


def test_recorded_nvidia_null_is_a_machine_without_nvidia(tmp_path):
    """The same null in a probe's document (nvidia recorded) means "none": the opposite reading."""
    doc = as_recorded(copy.deepcopy(BASES["default"]))
    doc["nvidia"] = None
    doc["python"]["packages"] = {"torch": "2.7.0+cpu"}
    doc["frameworks"] = {}
    doc["cuda_toolkit"], doc["cuda_toolkits"] = None, []
    doc["errors"] = []  # (a timed-out nvidia-smi would leave it unknown again)
    _, findings = check_in_process(tmp_path, doc)
    assert "no-gpu-platform" in codes_of(findings)


def test_gpu_with_unknown_driver_is_not_no_driver(tmp_path):
    doc = _partial(host={"os": "linux", "arch": "x86_64"}, python={"packages": {"torch": "2.6.0+cu124"}},
                   nvidia={"driver_version": None, "gpus": [{"name": "NVIDIA L4", "index": 0}]})
    _, findings = check_in_process(tmp_path, doc)
    assert not codes_of(findings) & {"no-nvidia-driver", "driver-too-old", "driver-library-mismatch", "cpu-only-build"}
    assert Facts.from_dict(doc).driver_present is None


def test_gpu_with_unknown_driver_gets_no_driver_claim_in_fixes(tmp_path):
    """python-unsupported's fix must not say "install a working NVIDIA driver" when nobody recorded it."""
    doc = _partial(host={"os": "linux", "arch": "x86_64"}, python={"version": "3.14.0", "packages": {"torch": "2.5.1+cu124"}},
                   nvidia={"gpus": [{"name": "NVIDIA L4", "index": 0}]})
    _, findings = check_in_process(tmp_path, doc)
    assert "python-unsupported" in codes_of(findings)
    for f in findings:
        assert "working NVIDIA driver" not in json.dumps(f["fix"]), f


def test_unrecorded_lists_read_as_empty_but_unknown():
    facts = Facts.from_dict(_partial(nvidia={"driver_version": "570.124.04", "gpus": None}, cudnn=None))
    assert facts.gpus == [] and not facts.known("nvidia.gpus") and not facts.known("cudnn")
    assert facts.known("nvidia.driver_version") and facts.driver_present is True


# --- every inference of complete.py against the matrix row it cites -----------------------------------


def completed(doc: dict) -> Facts:
    return complete(Facts.from_dict(_partial(**doc)))


def test_gpu_capability_is_the_product_row():
    from envdoctor.matrix import gpus

    for name in ("NVIDIA L4", "NVIDIA GeForce RTX 5090", "Tesla T4", "NVIDIA H100 80GB HBM3", "NVIDIA GeForce GTX 1080"):
        row = gpus.product_for_name(name)
        assert row is not None, name
        facts = completed({"nvidia": {"gpus": [{"name": name}]}})
        assert facts.gpus[0].compute_capability == row.cc, name
        assert row.cc in facts.inferred["nvidia.gpus[0].compute_capability"]
        assert repr(row.pattern.pattern) in facts.inferred["nvidia.gpus[0].compute_capability"]


def test_observed_capability_is_never_overwritten():
    facts = completed({"nvidia": {"gpus": [{"name": "NVIDIA L4", "compute_capability": "9.9"}]}})
    assert facts.gpus[0].compute_capability == "9.9" and not facts.inferred


def test_unknown_gpu_name_infers_nothing():
    facts = completed({"nvidia": {"gpus": [{"name": "Some Future Accelerator 9000"}]}})
    assert facts.gpus[0].compute_capability is None and not facts.is_inferred("nvidia.gpus[0].compute_capability")


@pytest.mark.parametrize("driver", ["535.183.01", "570.124.04", "580.82.09", "550.54.15"])
def test_driver_cuda_is_the_branch_row(driver):
    from envdoctor.matrix import drivers

    rows = [r for r in drivers.branches() if r.branch <= int(driver.split(".")[0])]
    row = max(rows, key=lambda r: r.branch)
    facts = completed({"nvidia": {"driver_version": driver}})
    assert facts.nvidia.driver_cuda == row.cuda == drivers.branch_cuda(driver)
    assert row.cuda in facts.inferred["nvidia.driver_cuda"]


def test_driver_cuda_not_inferred_for_a_jetson_driver():
    facts = completed({"nvidia": {"driver_version": "540.4.0", "driver_kind": "jetson"}})
    assert facts.nvidia.driver_cuda is None


def test_windows_driver_file_version_is_nvidia_numbering():
    facts = completed({"nvidia": {"driver_version": "32.0.15.6094"}})
    assert facts.nvidia.driver_version == "560.94"  # last five digits: 5 + 6094 -> 560.94
    assert facts.host.os == "windows" and facts.is_inferred("host.os") and facts.is_inferred("nvidia.driver_version")
    from envdoctor.matrix import drivers

    assert facts.nvidia.driver_cuda == drivers.branch_cuda("560.94")  # and the branch row after it


def test_host_os_from_a_wsl_kernel():
    facts = completed({"host": {"kernel": "5.15.167.4-microsoft-standard-WSL2"}})
    assert (facts.host.os, facts.host.wsl) == ("linux", True)
    assert facts.is_inferred("host.os") and facts.is_inferred("host.wsl")


def test_host_os_from_a_windows_path_and_arch_from_the_windows_builds():
    from envdoctor.matrix import pytorch

    facts = completed({"python": {"executable": "C:\\Users\\ana\\venv\\Scripts\\python.exe"}})
    assert facts.host.os == "windows" and facts.host.arch == "x86_64"
    windows_gpu = {p for p in pytorch.platforms_with("cuda") if p.startswith("windows")}
    assert windows_gpu == {"windows_amd64"}  # the row the arch inference cites


def test_host_arch_from_a_desktop_card_is_only_for_desktop_lines():
    facts = completed({"host": {"os": "linux"}, "nvidia": {"gpus": [{"name": "NVIDIA GeForce RTX 4090"}]}})
    assert facts.host.arch == "x86_64" and facts.is_inferred("host.arch")
    for name in ("NVIDIA H100 80GB HBM3", "NVIDIA L4", "NVIDIA A100-SXM4-80GB", "NVIDIA B200"):
        facts = completed({"host": {"os": "linux"}, "nvidia": {"gpus": [{"name": name}]}})
        assert facts.host.arch is None, name  # data-centre GPUs sit in aarch64 servers too


@pytest.mark.parametrize("name", ["NVIDIA GH200 480GB", "NVIDIA GB200", "NVIDIA GB300"])
def test_host_arch_of_a_grace_superchip_is_aarch64(name):
    from envdoctor.matrix import gpus

    assert gpus.product_for_name(name) is not None  # a product the GPU table knows
    facts = completed({"nvidia": {"gpus": [{"name": name}]}})
    assert facts.host.arch == "aarch64" and "Grace" in facts.inferred["host.arch"]


@pytest.mark.parametrize("kernel, arch", [("5.15.148-tegra", "aarch64"), ("6.8.0-1013-nvidia-64k", "aarch64"),
                                          ("3.10.0-1160.el7.x86_64", "x86_64"), ("6.1.0-27-amd64", "x86_64"),
                                          ("6.1.0-27-arm64", "aarch64"), ("6.8.0-45-generic", None)])
def test_host_arch_from_a_kernel_release_that_names_it(kernel, arch):
    facts = completed({"host": {"os": "linux", "kernel": kernel}})
    assert facts.host.arch == arch


@pytest.mark.parametrize("path, arch", [("/usr/lib/x86_64-linux-gnu/libcudnn.so.9", "x86_64"),
                                        ("/usr/lib/aarch64-linux-gnu/libcudnn.so.9", "aarch64"),
                                        ("/usr/local/cuda-12.8/targets/sbsa-linux/lib/libcudnn.so.9", "aarch64")])
def test_host_arch_from_a_multiarch_path(path, arch):
    facts = completed({"host": {"os": "linux"}, "cudnn": [{"version": "9.1.0", "source": "ldconfig", "path": path}]})
    assert facts.host.arch == arch and path in facts.inferred["host.arch"]


def test_host_arch_not_guessed_from_paths_that_disagree():
    facts = completed({"host": {"os": "linux"},
                       "cudnn": [{"path": "/usr/lib/x86_64-linux-gnu/libcudnn.so.9"},
                                 {"path": "/usr/lib/aarch64-linux-gnu/libcudnn.so.8"}]})
    assert facts.host.arch is None


@pytest.mark.parametrize("host, os_name", [({"distro": "Ubuntu 22.04"}, "linux"), ({"distro": "Windows 11"}, "windows"),
                                           ({"distro": "macOS 15.1"}, "macos"), ({"glibc": "2.35"}, "linux")])
def test_host_os_from_the_distribution_or_glibc(host, os_name):
    facts = completed({"host": host})
    assert facts.host.os == os_name and facts.is_inferred("host.os")


@pytest.mark.parametrize("distro, glibc", [("CentOS 7.9", "2.17"), ("CentOS Linux release 7.9.2009 (Core)", "2.17"),
                                           ("Rocky Linux 8.6", "2.28"), ("Ubuntu 18.04.6 LTS", "2.27"), ("Debian 12", "2.36"),
                                           ("Ubuntu 14.04", None), ("Arch Linux", None)])
def test_host_glibc_from_the_named_distribution(distro, glibc):
    from envdoctor.container import base_images

    facts = completed({"host": {"distro": distro}})
    assert facts.host.glibc == glibc
    if glibc:  # the row it came from is the base_images table's
        row = base_images.distro_of_name(distro)
        assert row.glibc == glibc and f"distro {row.name} {row.version}" in facts.inferred["host.glibc"]
    assert completed({"host": {"distro": distro, "glibc": "2.99"}}).host.glibc == "2.99"  # observed is kept


def test_host_os_from_a_wsl_driver():
    facts = completed({"nvidia": {"driver_version": "573.24", "driver_kind": "wsl"}})
    assert (facts.host.os, facts.host.wsl) == ("linux", True)


def test_failure_from_its_message_is_the_probe_classification():
    from envdoctor.probe.nvidia import classify_failure

    text = "Failed to initialize NVML: Driver/library version mismatch"
    facts = completed({"nvidia": {"failure_text": text}})
    assert facts.nvidia.failure == classify_failure(text)[0] == "driver-library-mismatch"
    assert facts.driver_present is False
    assert completed({"nvidia": {"failure_text": "something else entirely"}}).nvidia.failure is None


def test_driver_version_from_the_loaded_kernel_module():
    facts = completed({"nvidia": {"kernel_module": "570.124.04", "gpus": [{"name": "NVIDIA L4"}]}})
    assert facts.nvidia.driver_version == "570.124.04" and facts.driver_present is True
    from envdoctor.matrix import drivers

    assert facts.nvidia.driver_cuda == drivers.branch_cuda("570.124.04")  # and the branch row after it
    for nvidia in ({"kernel_module": "36.4.3", "driver_kind": "jetson"},
                   {"kernel_module": "550.54.15", "failure": "driver-library-mismatch"}):
        assert completed({"nvidia": nvidia}).nvidia.driver_version is None, nvidia


def test_python_version_from_its_site_packages():
    site = "/home/ana/venv/lib/python3.12/site-packages"
    facts = completed({"python": {"nvidia_wheel_dirs": {"nvidia.cudnn": f"{site}/nvidia/cudnn"}}})
    assert facts.python.version == "3.12" and facts.is_inferred("python.version")
    two = completed({"python": {"executable": "/opt/conda/bin/python3.11",
                                "nvidia_wheel_dirs": {"nvidia.cudnn": f"{site}/nvidia/cudnn"}}})
    assert two.python.version is None  # two Pythons named: nothing guessed
    windows = completed({"host": {"os": "windows"}, "python": {"nvidia_wheel_dirs": {"nvidia.cudnn": f"{site}/nvidia/cudnn"}}})
    assert windows.python.version is None


def test_cudnn_version_from_its_package_is_the_probe_reading():
    from envdoctor.facts import PythonEnv
    from envdoctor.probe.cudnn import from_pip

    packages = {"nvidia-cudnn-cu12": "9.1.0.70"}
    facts = completed({"python": {"packages": packages}, "cudnn": [{"source": "pip:nvidia-cudnn-cu12"}]})
    assert facts.cudnn[0].version == from_pip(PythonEnv(packages=packages))[0].version == "9.1.0"
    assert facts.is_inferred("cudnn[0].version")


def test_jetson_from_a_gpu_name_is_the_jetson_product_row():
    from envdoctor.matrix import gpus

    row = gpus.product_for_name("Orin (nvgpu)")
    assert row is not None and row.family.startswith("Jetson")
    facts = completed({"nvidia": {"gpus": [{"name": "Orin (nvgpu)"}]}})
    assert facts.jetson is not None and facts.is_inferred("jetson")
    assert facts.host.arch == "aarch64" and facts.host.os == "linux"


def test_jetson_release_is_the_l4t_row():
    from envdoctor.matrix import jetson

    for release in jetson.releases():
        facts = completed({"jetson": {"l4t": release.l4t}})
        assert facts.jetson.jetpack == release.jetpack and facts.jetson.cuda == release.cuda, release.l4t
        if release.jetpack:
            back = completed({"jetson": {"jetpack": release.jetpack}})
            same = [r for r in jetson.releases() if r.jetpack == release.jetpack]
            if len(same) == 1:  # one row for this JetPack: its L4T and CUDA follow
                assert (back.jetson.l4t, back.jetson.cuda) == (release.l4t, release.cuda)
            else:  # two rows: only what they agree on
                assert back.jetson.l4t is None, release.jetpack
                cudas = {r.cuda for r in same}
                assert back.jetson.cuda == (cudas.pop() if len(cudas) == 1 else None), release.jetpack


def test_packages_from_framework_records():
    facts = completed({"frameworks": {"torch": {"version": "2.6.0+cu124"}, "paddle": {"version": "3.0.0"}}})
    assert facts.python.packages["torch"] == "2.6.0+cu124" and facts.is_inferred("python.packages.torch")
    assert "paddlepaddle" not in facts.python.packages  # Paddle's version does not say CPU or GPU package
    assert facts.known("python.packages")


def test_packages_from_frameworks_never_overwrite():
    facts = completed({"python": {"packages": {"torch": "2.5.1+cu121"}}, "frameworks": {"torch": {"version": "2.6.0"}}})
    assert facts.python.packages["torch"] == "2.5.1+cu121" and not facts.is_inferred("python.packages.torch")


def test_torch_arch_list_is_the_build_row():
    from envdoctor.matrix import pytorch

    facts = completed({"host": {"os": "linux", "arch": "x86_64"}, "python": {"packages": {"torch": "2.6.0+cu124"}},
                       "frameworks": {"torch": {"version": "2.6.0+cu124", "cuda": "12.4"}}})
    row = pytorch.build("2.6.0", "cu124", "linux_x86_64")
    assert row is not None and row.archs
    assert facts.frameworks["torch"].arch_list == list(row.archs)
    assert "cu124" in facts.inferred["frameworks.torch.arch_list"]


def test_torch_arch_list_needs_a_platform_all_candidates_agree_on():
    """No host recorded: the arch list is filled only when every platform the machine can be has the same row."""
    from envdoctor.matrix import pytorch

    facts = completed({"python": {"packages": {"torch": "2.6.0+cu124"}},
                       "frameworks": {"torch": {"version": "2.6.0+cu124", "cuda": "12.4"}}})
    rows = {p: pytorch.build("2.6.0", "cu124", p) for p in ("linux_x86_64", "linux_aarch64", "windows_amd64")}
    lists = {tuple(r.archs) if r is not None and r.archs else None for r in rows.values()}
    arch_list = facts.frameworks["torch"].arch_list
    if len(lists) == 1 and None not in lists:
        assert tuple(arch_list) == lists.pop()
    else:
        assert not arch_list and not facts.is_inferred("frameworks.torch.arch_list")


def test_every_inference_step_is_covered_here():
    """A new step in complete.py needs its own matrix test above."""
    from envdoctor import complete as module

    covered = {"_windows_driver", "_jetson_from_gpu", "_host_os", "_jetson", "_host_arch", "_gpu_capabilities",
               "_driver_cuda", "_packages_from_frameworks", "_torch_arch_list", "_failure_from_text",
               "_driver_from_kernel_module", "_python_version", "_cudnn_from_packages",
               "_jetson_soc", "_host_glibc"}  # (tests/test_complete_inference.py)
    assert {step.__name__ for step in module._STEPS} <= covered


def test_completion_on_every_partial_document_keeps_observed_values():
    """For each path removed, the completed facts agree with the full document wherever both know a value."""
    full = complete(Facts.from_dict(BASES["default"])).to_dict()
    for path in KEY_PATHS:
        if path.parts[0] in ("jetson", "amd", "inferred"):
            continue
        completed_partial = complete(Facts.from_dict(without(path)))
        partial = completed_partial.to_dict()
        for dotted, value in _leaves(partial):
            want = dict(_leaves(full)).get(dotted)
            if completed_partial.is_inferred(dotted):
                continue  # derived from a matrix row (the hand-written base need not follow it)
            if value is not None and want is not None and not dotted.startswith(("inferred", "recorded")):
                assert value == want, (str(path), dotted, value, want)


def _leaves(node: Any, prefix: str = "") -> typing.Iterator[tuple[str, Any]]:
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _leaves(v, f"{prefix}.{k}" if prefix else k)
    elif isinstance(node, list) and node and all(isinstance(v, dict) for v in node):
        for i, v in enumerate(node):
            yield from _leaves(v, f"{prefix}[{i}]")
    else:
        yield prefix, node


def test_diagnosis_of_a_partial_document_never_crashes():
    """Every partial document straight through diagnose (the benchmark's path), completed first."""
    for path in KEY_PATHS:
        for doc in (with_null(path), without(path)):
            findings = diagnose(complete(Facts.from_dict(doc)))
            assert not [f for f in findings if f.code == "internal-error"], (str(path), findings)


# --- what a missing entry of a hand-written list does not say ---------------------------------------


def _codes_of(doc: dict) -> set[str]:
    return {f.code for f in diagnose(complete(Facts.from_dict(doc))) if f.severity != "info"}


def test_a_package_missing_from_a_hand_written_list_is_not_absent():
    """tensorflow-cpu alone, paddlepaddle without -gpu, TF without nvidia-* wheels: only a probe's list says
    the other package is not installed."""
    from envdoctor.facts import load_facts

    for name, code in (("diag-dup-tf-cpu.json", "duplicate-install"), ("diag-tf-no-cuda-libs.json", "cuda-libs-missing"),
                       ("diag-paddle-cpu-gpu.json", "cpu-only-build"), ("diag-jaxlib-no-plugin.json", "cpu-only-build")):
        recorded = json.loads((MACHINES / name).read_text())
        assert code in {f.code for f in diagnose(complete(load_facts(MACHINES / name)))}, name
        handwritten = {k: v for k, v in recorded.items() if k not in ("collected_at", "recorded")}
        if name == "diag-dup-tf-cpu.json":
            handwritten["python"]["packages"].pop("tensorflow")  # tensorflow-cpu left: a CPU package, or a duplicate?
            assert "cpu-only-build" not in _codes_of(handwritten)
        elif code == "cuda-libs-missing" or code == "cpu-only-build":
            assert code not in _codes_of(handwritten), name


def test_cuda_visible_devices_index_judged_only_against_a_recorded_gpu_list():
    doc = json.loads((MACHINES / "diag-cvd-invalid.json").read_text())
    assert "cuda-visible-devices" in _codes_of(doc)
    handwritten = {k: v for k, v in doc.items() if k != "collected_at"}
    assert "cuda-visible-devices" not in _codes_of(handwritten)  # "1" may be a GPU the list left out
    handwritten["env"]["CUDA_VISIBLE_DEVICES"] = ""
    assert "cuda-visible-devices" in _codes_of(handwritten)  # empty hides every GPU, however many


@pytest.mark.parametrize("name, code", [("diag-cvd-empty.json", "cuda-visible-devices"),
                                        ("diag-win-torch-pypi.json", "cpu-only-build"),
                                        ("diag-tf-maxwell.json", "gpu-arch-unsupported"),
                                        ("windows-tf.json", "tf-windows-native-gpu")])
def test_listed_gpus_with_an_unknown_driver_still_get_the_build_findings(name, code):
    doc = json.loads((MACHINES / name).read_text())
    doc.pop("collected_at")
    for key in ("driver_version", "kernel_module", "driver_cuda"):
        doc["nvidia"].pop(key, None)
    facts = complete(Facts.from_dict(doc))
    assert facts.driver_present is None and facts.gpus
    assert code in _codes_of(doc)
    assert not _codes_of(doc) & {"no-nvidia-driver", "driver-too-old"}


def test_jetson_with_an_unknown_jetpack_is_not_told_its_build_is_for_another():
    doc = json.loads((MACHINES / "diag-jetson-nv-torch.json").read_text())
    assert "jetson-wrong-wheel" not in _codes_of(doc)
    doc.pop("collected_at")
    doc["jetson"] = {"model": doc["jetson"]["model"]}
    assert "jetson-wrong-wheel" not in _codes_of(doc)


def test_partial_benchmark_has_no_false_alarms():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import diagnosis_accuracy
    finally:
        sys.path.pop(0)
    for seed in (1, 2, 3):
        results = [diagnosis_accuracy.judge_partial(e, seed) for e in diagnosis_accuracy.expectations()]
        assert not [(r["file"], r["false_alarms"]) for r in results if r["false_alarms"]], seed
        assert all(set(r["found"]) <= set(r["full_errors"]) for r in results)
        for r in results:  # the partial document is hand-written and has no frameworks block
            assert "frameworks" not in r["partial"] and "collected_at" not in r["partial"]
