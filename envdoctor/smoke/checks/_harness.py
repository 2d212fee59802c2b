"""Shared by the check scripts: arguments, the framework import, the one JSON result line.

Runs INSIDE the target interpreter next to a check script (`python torch_checks.py --check cnn`);
stdlib only, Python 3.8+. A check function takes a Context and returns its details (status pass),
or raises Skip / Fail. Whatever happens, the last line on stdout is one JSON object:
{"status", "device", "details", "reason"}. Progress markers ("#envdoctor phase=...") go to stdout
before it, so that a process killed by a signal still tells how far it got.
"""

import argparse
import hashlib
import json
import math
import os
import statistics
import sys
import time
import traceback

PHASE_PREFIX = "#envdoctor phase="


class Skip(Exception):
    """The check does not apply here; the message says why."""


class Fail(Exception):
    """The check ran and found a problem; the message says what."""

    def __init__(self, reason, details=None):
        Exception.__init__(self, reason)
        self.details = details or {}


class ImportFailed(Exception):
    pass


class Context:
    def __init__(self, framework, device_request, steps):
        self.framework = framework
        self.device_request = device_request  # auto | cpu | cuda
        self.steps = steps
        self.device = None  # what the check ran on; the check sets it once it knows
        self.details = {}
        self.import_seconds = None

    def load(self, module_name):
        """Import the framework, marking the phase so a crash inside the import is recognisable."""
        phase("import")
        start = time.perf_counter()
        try:
            module = __import__(module_name)
        except BaseException as exc:  # ImportError, but also SystemExit or anything a broken build raises
            raise ImportFailed("import {} failed: {}".format(module_name, one_line(exc)))
        self.import_seconds = round(time.perf_counter() - start, 3)
        phase("imported")
        return module

    def want_gpu(self, gpu_count):
        """Decide the device from --device and what the framework sees; cuda without a GPU is a Fail."""
        if self.device_request == "cpu":
            return False
        if gpu_count > 0:
            return True
        if self.device_request == "cuda":
            raise Fail("--device cuda, but {} sees no CUDA device".format(self.framework), dict(self.details))
        return False


def phase(name):
    sys.stdout.write(PHASE_PREFIX + name + "\n")
    sys.stdout.flush()


def one_line(exc):
    text = str(exc).strip().splitlines()
    return "{}: {}".format(type(exc).__name__, text[0][:300] if text else "").rstrip(": ")


def fill_until_oom(alloc, is_oom, chunk, seconds, min_chunk=64 << 20, max_blocks=1024):
    """Allocate blocks of `chunk` bytes until the framework raises its out-of-memory error, halving the
    block after each error to get close to the limit; bounded in time and in count.

    Returns (blocks, bytes reached, the first out-of-memory error as one line or None).
    """
    blocks, reached, first = [], 0, None
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and len(blocks) < max_blocks:
        try:
            blocks.append(alloc(chunk))
            reached += chunk
        except Exception as exc:
            if not is_oom(exc):
                raise
            first = first or one_line(exc)
            if chunk <= min_chunk:
                break
            chunk //= 2
    return blocks, reached, first


def finite(values):
    return all(math.isfinite(v) for v in values)


def check_losses(losses):
    """The loss must be finite and fall over the steps."""
    if not finite(losses):
        raise Fail("loss is not finite: {}".format(losses))
    if not losses[-1] < losses[0]:
        raise Fail("loss did not fall: first {:.4f}, last {:.4f}".format(losses[0], losses[-1]))


def step_ms(durations, warmup):
    measured = durations[warmup:] or durations
    return round(statistics.median(measured) * 1000, 3)


def digest(chunks):
    """sha256 over byte strings (parameters), to compare runs bit for bit."""
    h = hashlib.sha256()
    for chunk in chunks:
        h.update(chunk)
    return h.hexdigest()[:16]


def compare_runs(first, second):
    """(losses, param_digest) pairs -> bit-identical?"""
    return first[0] == second[0] and first[1] == second[1]


def parse_args(argv, check_names):
    parser = argparse.ArgumentParser()
    parser.add_argument("--check", required=True, choices=sorted(check_names))
    parser.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"])
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--oom-seconds", type=float, default=60.0)
    return parser.parse_args(argv)


def emit(status, device, details, reason):
    sys.stdout.write(json.dumps({"status": status, "device": device, "details": details, "reason": reason},
                                default=str) + "\n")
    sys.stdout.flush()


def main(framework, checks, argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv, checks)
    ctx = Context(framework, args.device, args.steps)
    ctx.oom_seconds = args.oom_seconds
    phase("start")
    status, reason = "pass", None
    try:
        details = checks[args.check](ctx) or {}
    except Skip as exc:
        status, reason, details = "skip", str(exc), {}
    except Fail as exc:
        status, reason, details = "fail", str(exc), exc.details
    except ImportFailed as exc:
        status, reason, details = "error", str(exc), {"phase": "import"}
    except Exception as exc:  # the workout itself broke: that is what the check is for
        status, reason = "fail", one_line(exc)
        details = {"traceback": traceback.format_exc().strip().splitlines()[-6:]}
    details = dict(ctx.details, **details)
    if ctx.import_seconds is not None:
        details.setdefault("import_seconds", ctx.import_seconds)
    emit(status, ctx.device, details, reason)
    # Some frameworks hang in their atexit handlers after a failure; the result is out already.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)
