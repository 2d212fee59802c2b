#!/usr/bin/env bash
# Run the full `envdoctor smoke` suite on a machine with an NVIDIA GPU and keep what it found.
#
#   scripts/gpu_smoke.sh [PYTHON] [OUT_DIR]
#
# SMOKE_FRAMEWORKS="torch jax" limits the run; SMOKE_TIMEOUT (s) bounds each check (default 600).
# PYTHON   the interpreter whose frameworks are tested (default: python3 on PATH)
# OUT_DIR  where the results go (default: ./gpu-smoke-<host>-<date>)
#
# Writes: smoke.json (envdoctor.smoke/1, every framework × check on the GPU), smoke-cpu.json
# (the same on the CPU, for comparison), facts.json (the machine, replayable with
# `envdoctor check --facts`), nvidia-smi.txt, and summary.txt (device, step times, OOM reach,
# repro result per framework). Exit status: that of the GPU run (0 all passed or skipped).
#
# Status: prepared, not yet run on a GPU (none was available when it was written); the checks'
# GPU paths (oom, NCCL/multi-GPU, fp16/bf16 autocast on CUDA) are exercised only by this script.
set -u
PYTHON="${1:-python3}"
OUT="${2:-gpu-smoke-$(hostname)-$(date -u +%Y%m%dT%H%M%SZ)}"
TIMEOUT="${SMOKE_TIMEOUT:-600}"
FRAMEWORKS="${SMOKE_FRAMEWORKS:-}"  # e.g. "torch jax"; empty: every installed framework
mkdir -p "$OUT"

envdoctor() { "$PYTHON" -m envdoctor "$@"; }

nvidia-smi > "$OUT/nvidia-smi.txt" 2>&1 || echo "nvidia-smi failed (status $?)" >> "$OUT/nvidia-smi.txt"
envdoctor facts --python "$PYTHON" --deep > "$OUT/facts.json" 2> "$OUT/facts.err"

echo "smoke on the GPU (timeout ${TIMEOUT} s per check)..." >&2
envdoctor smoke $FRAMEWORKS --python "$PYTHON" --device auto --timeout "$TIMEOUT" --json > "$OUT/smoke.json" 2> "$OUT/smoke.err"
status=$?
envdoctor smoke $FRAMEWORKS --python "$PYTHON" --device cpu --checks cnn,repro --timeout "$TIMEOUT" --json > "$OUT/smoke-cpu.json" 2>> "$OUT/smoke.err"

"$PYTHON" - "$OUT/smoke.json" > "$OUT/summary.txt" <<'EOF'
import json, sys
doc = json.load(open(sys.argv[1]))
for r in doc["results"]:
    d = r.get("details") or {}
    extra = ""
    if r["status"] == "skip":
        pass
    elif r["check"] == "devices":
        extra = "; ".join("{} cc {} {} MiB".format(g.get("name"), g.get("compute_capability"), g.get("memory_mib")) for g in d.get("gpus", []))
    elif r["check"] == "cnn":
        extra = "step {} ms, loss {} -> {}".format(d.get("step_ms"), d.get("loss_first"), d.get("loss_last"))
    elif r["check"] == "oom":
        extra = "reached {} of {} MiB ({}), after release {}".format(d.get("reached_mib"), d.get("total_mib"), d.get("reached_fraction"), d.get("after_release"))
    elif r["check"] == "repro":
        extra = "deterministic identical {}, defaults identical {}".format(d.get("deterministic_identical"), d.get("defaults_identical"))
    elif r["check"] == "amp":
        extra = "{} loss {}".format(d.get("compute_dtype") or d.get("policy"), d.get("loss"))
    elif r["check"] == "multi":
        extra = "{} x{}".format(d.get("backend") or d.get("strategy") or d.get("sharding"), d.get("world_size") or d.get("replicas") or d.get("devices"))
    print("{:10} {:8} {:6} {:>7.1f}s {:18} {}{}".format(r["framework"], r["check"], r["status"], r["seconds"], r["device"] or "-", extra,
          "  REASON: " + r["reason"] + (" [" + r["code"] + "]" if r.get("code") else "") if r.get("reason") else ""))
EOF
cat "$OUT/summary.txt"
echo "results in $OUT (exit status of the GPU run: $status)" >&2
exit "$status"
