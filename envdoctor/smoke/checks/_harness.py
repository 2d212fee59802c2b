"""Shared by the check scripts: arguments, the framework import, the one JSON result line, and what
every framework's checks have in common (the device choice, the verdicts of cnn / repro / amp, the
OOM round trip, the spawned workers of multi); a script keeps only what its framework's API needs.

Runs INSIDE the target interpreter next to a check script (`python torch_checks.py --check cnn,repro`);
stdlib only, Python 3.8+. A check function takes a Context and returns its details (status pass),
or raises Skip / Fail. The checks named run one after another in one process (the framework is
imported once); each starts with a "#envdoctor check=NAME" line on stdout and stderr and ends with one
JSON object on stdout: {"check", "status", "device", "details", "reason"}. Progress markers
("#envdoctor phase=...") go to stdout before it, so that a process killed by a signal still tells
which check it was in and how far it got; the caller reruns the checks after it in a fresh process.
A check must leave the process as it found it (a global switch it sets, it resets).
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
SEED = 0
BATCH = 64  # the classic comparison's CNN on synthetic 28×28×1 images, the same in every script
OOM_ON_CPU = "an out-of-memory round trip on the CPU would exhaust host memory"
PROBE_ELEMENTS = 1 << 24  # float32 ones after the OOM: 64 MiB, and a sum that float32 holds exactly
REPRO_STEPS = 5  # at most, per seeded run (four runs per repro check)


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
    def __init__(self, framework, device_request, steps, oom_seconds=60.0):
        self.framework = framework
        self.device_request = device_request  # auto | cpu | cuda
        self.steps = steps
        self.oom_seconds = oom_seconds
        self.device = None  # what the check ran on; the check sets it once it knows
        self.details = {}
        self.import_seconds = None
        self.planned = ()  # every check this process will run (some need the framework set up before its start)

    @property
    def repro_steps(self):
        return min(self.steps, REPRO_STEPS)

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

    def skip_oom_without_gpu(self, gpu_count, what="GPU"):
        """The OOM round trip runs on a GPU only: on the CPU it would fill host memory."""
        if self.device_request == "cpu":
            raise Skip("--device cpu: " + OOM_ON_CPU)
        if not gpu_count:
            raise Skip("no {}: {}".format(what, OOM_ON_CPU))

    def data_parallel_on_gpus(self, gpu_count):
        """multi: across the GPUs when there are two or more; otherwise the CPU path (not with --device cuda)."""
        if self.device_request != "cpu" and gpu_count >= 2:
            return True
        if self.device_request == "cuda":
            raise Skip("{} GPU(s): data parallel needs two or more".format(gpu_count))
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


def oom_round_trip(ctx, alloc, is_oom, chunk, memory, ones_sum, settle=None, total=None, max_blocks=1024):
    """The oom check on one GPU: fill it until the framework's out-of-memory error, release, and show that
    a normal allocation works again.

    memory(): the framework's own account of its allocator (a dict, read at the OOM and after release);
    ones_sum(n): the sum of n float32 ones allocated on the device; settle(): what the framework needs to
    give released memory back (an allocator cache); total: the bytes the allocation could reach, when known.
    """
    blocks, reached, raised = fill_until_oom(alloc, is_oom, chunk, ctx.oom_seconds, max_blocks=max_blocks)
    at_oom = memory()
    del blocks[:]
    if settle is not None:
        settle()
    details = {"reached_mib": reached >> 20, "error": raised, "at_oom": at_oom, "after_release": memory()}
    if total:
        details.update(total_mib=total >> 20, reached_fraction=round(reached / total, 3))
    if raised is None:
        raise Fail("no out-of-memory error within {:g} s after {} MiB".format(ctx.oom_seconds, reached >> 20), details)
    if float(ones_sum(PROBE_ELEMENTS)) != float(PROBE_ELEMENTS):
        raise Fail("allocation after the out-of-memory error gave a wrong result", details)
    return details


def gpu_entry(index, props):
    """A devices entry from CUDA device properties (torch and paddle share their shape)."""
    return {"index": index, "name": props.name, "memory_mib": props.total_memory >> 20,
            "compute_capability": "{}.{}".format(props.major, props.minor)}


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


def cnn_details(losses, durations, batch, **extra):
    """The cnn check's verdict: the loss is finite and falls; the step time is the median after warm-up."""
    check_losses(losses)
    details = {"steps": len(losses), "batch": batch, "loss_first": round(losses[0], 4),
               "loss_last": round(losses[-1], 4), "step_ms": step_ms(durations, warmup=2)}
    details.update(extra)
    return details


def compare_runs(first, second):
    """(losses, param_digest) pairs -> bit-identical?"""
    return first[0] == second[0] and first[1] == second[1]


def two_runs(run):
    """The same seeded training twice: run() -> (losses, param_digest)."""
    return run(), run()


def repro_details(steps, default, deterministic, settings):
    """The repro check's verdict from two_runs() with the defaults and with the deterministic settings:
    the deterministic pair must be bit-identical; whether the defaults are is reported."""
    details = {"steps": steps, "deterministic_identical": compare_runs(*deterministic),
               "defaults_identical": compare_runs(*default), "param_digest": deterministic[0][1],
               "settings": settings}
    if not details["deterministic_identical"]:
        raise Fail("two seeded runs with deterministic settings differ", details)
    return details


def amp_details(dtype, compute_dtype, loss, grads_finite, **extra):
    """The amp check's verdict: the model computed in `dtype`, and the loss and gradients are finite."""
    details = {"dtype": dtype, "compute_dtype": compute_dtype, "loss": round(loss, 4), "grads_finite": grads_finite}
    details.update(extra)
    if compute_dtype != dtype:
        raise Fail("the model did not compute in {} under mixed precision".format(dtype), details)
    if not (finite([loss]) and grads_finite):
        raise Fail("mixed-precision step gave a non-finite loss or gradient", details)
    return details


def run_workers(target, world, args=(), timeout=240.0):
    """multi: start `world` spawned processes running target(rank, world, *args, results) and collect the
    one tuple each puts on `results` (rank first), sorted by rank. A worker that dies is a Fail at once."""
    import multiprocessing
    import queue

    spawn = multiprocessing.get_context("spawn")
    results = spawn.Queue()
    procs = [spawn.Process(target=target, args=(rank, world) + tuple(args) + (results,)) for rank in range(world)]
    for p in procs:
        p.start()
    got = []
    deadline = time.monotonic() + timeout
    try:
        while len(got) < world:
            try:
                got.append(results.get(timeout=1))
            except queue.Empty:
                dead = sorted(p.exitcode for p in procs if p.exitcode not in (None, 0))
                if dead:
                    raise Fail("a worker process exited with status {} before reporting".format(dead))
                if all(p.exitcode is not None for p in procs):
                    raise Fail("{} of {} worker processes reported before they exited".format(len(got), world))
                if time.monotonic() > deadline:
                    raise Fail("{} of {} worker processes reported within {:g} s".format(len(got), world, timeout))
    finally:
        for p in procs:
            p.join(timeout=30)
            if p.is_alive():
                p.kill()
    bad = [p.exitcode for p in procs if p.exitcode != 0]
    if bad:
        raise Fail("a worker process exited with status {}".format(bad))
    return sorted(got)


CHECK_PREFIX = "#envdoctor check="  # before each check, on stdout and on stderr: whose output follows


def parse_args(argv, check_names):
    parser = argparse.ArgumentParser()
    parser.add_argument("--check", required=True, help="one check, or several separated by commas: " +
                        ",".join(sorted(check_names)))
    parser.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"])
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--oom-seconds", type=float, default=60.0)
    args = parser.parse_args(argv)
    args.checks = [c.strip() for c in args.check.split(",") if c.strip()]
    unknown = [c for c in args.checks if c not in check_names]
    if unknown or not args.checks:
        parser.error("unknown check {} (choose from {})".format(",".join(unknown) or "''", ",".join(sorted(check_names))))
    return args


def emit(check, status, device, details, reason):
    sys.stdout.write(json.dumps({"check": check, "status": status, "device": device, "details": details,
                                 "reason": reason}, default=str) + "\n")
    sys.stdout.flush()


def missing_module(exc, framework):
    """The module a check needed and did not find, when it is not the framework itself (an optional
    dependency of the framework, e.g. numpy for torch's tensor.numpy()), or None."""
    if not isinstance(exc, ImportError):
        return None
    name = (getattr(exc, "name", None) or "").split(".")[0]
    return name if name and name != framework else None


def run_one(framework, name, check, args):
    """One check in this process: (status, device, details, reason); never raises (but a crash kills us)."""
    ctx = Context(framework, args.device, args.steps, args.oom_seconds)
    ctx.planned = tuple(args.checks)
    phase("start")
    status, reason = "pass", None
    try:
        details = check(ctx) or {}
    except Skip as exc:
        status, reason, details = "skip", str(exc), {}
    except Fail as exc:
        status, reason, details = "fail", str(exc), exc.details
    except ImportFailed as exc:
        status, reason, details = "error", str(exc), {"phase": "import"}
    except Exception as exc:  # the workout itself broke: that is what the check is for
        status, reason = "fail", one_line(exc)
        details = {"traceback": traceback.format_exc().strip().splitlines()[-6:]}
        module = missing_module(exc, framework)
        if module:
            reason = "{} needs the optional module '{}' here, which is not installed ({})".format(
                framework, module, reason)
            details["missing_module"] = module
    details = dict(ctx.details, **details)
    if ctx.import_seconds is not None:
        details.setdefault("import_seconds", ctx.import_seconds)
    return status, ctx.device, details, reason


def main(framework, checks, argv=None, prepare=None):
    """Run the checks named by --check (comma-separated) one after another in this process.

    prepare(names, device_request), when given, runs first: what must be set before the framework starts
    (environment variables the framework reads once) for every check planned in this process.
    Before each check a CHECK_PREFIX line goes to stdout and stderr; after it, its JSON result line.
    """
    args = parse_args(sys.argv[1:] if argv is None else argv, checks)
    if prepare is not None:
        prepare(args.checks, args.device)
    for name in args.checks:
        sys.stderr.write(CHECK_PREFIX + name + "\n")
        sys.stderr.flush()
        sys.stdout.write(CHECK_PREFIX + name + "\n")
        sys.stdout.flush()
        status, device, details, reason = run_one(framework, name, checks[name], args)
        emit(name, status, device, details, reason)
        if status == "error" and details.get("phase") == "import":
            break  # the framework does not import: the other checks cannot run in this process
    # Some frameworks hang in their atexit handlers after a failure; the results are out already.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)
