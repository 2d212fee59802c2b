"""Runs INSIDE the target interpreter: stdlib only, Python 3.8+. Prints one JSON object.

Never import a framework here; this must answer in tens of milliseconds.
"""
import json
import os
import platform
import re
import sys

WANTED = re.compile(r"^(torch|tensorflow|tf-|tf_|keras|jax|paddle|nvidia-|cuda-|numpy$|triton|pytorch-triton|"
                    r"intel-extension|libtpu|ml-dtypes|tensorrt|onnxruntime)", re.I)
NVIDIA_DIRS = ("cudnn", "cuda_runtime", "cu13", "cublas", "nccl")


def canonical(name):
    return re.sub(r"[-_.]+", "-", name).lower()


def distributions():
    found = {}
    try:
        from importlib import metadata
    except ImportError:  # Python < 3.8 is not supported for the target; say so
        return found
    for dist in metadata.distributions():
        try:
            name = dist.metadata["Name"]
        except Exception:
            continue
        if name and WANTED.match(name):
            key = canonical(name)
            # Two copies of one name (duplicate install): keep both visible.
            if key in found and found[key] != dist.version:
                found[key] = found[key] + "|" + dist.version
            else:
                found[key] = dist.version
    return found


def nvidia_wheel_dirs():
    dirs = {}
    try:
        from importlib.util import find_spec
        spec = find_spec("nvidia")
    except Exception:
        return dirs
    if spec is None or not spec.submodule_search_locations:
        return dirs
    for base in spec.submodule_search_locations:
        for sub in NVIDIA_DIRS:
            path = os.path.join(base, sub)
            if os.path.isdir(path) and "nvidia." + sub not in dirs:
                dirs["nvidia." + sub] = path
    return dirs


def conda_packages(prefix):
    meta = os.path.join(prefix, "conda-meta")
    found = {}
    if not os.path.isdir(meta):
        return found
    for entry in os.listdir(meta):
        m = re.match(r"^(.+)-([^-]+)-([^-]+)\.json$", entry)
        if m and WANTED.match(m.group(1)) or (m and m.group(1) in ("cudnn", "cudatoolkit", "pytorch", "cuda-version", "pytorch-cuda")):
            found[m.group(1)] = m.group(2)
    return found


def env_kind(prefix, base_prefix):
    cfg = os.path.join(prefix, "pyvenv.cfg")
    if prefix != base_prefix or os.path.isfile(cfg):
        try:
            with open(cfg) as fh:
                text = fh.read()
        except OSError:
            text = ""
        return "uv" if re.search(r"^uv\s*=", text, re.M) else "venv"
    if os.path.isdir(os.path.join(prefix, "conda-meta")):
        return "conda-base" if os.path.isdir(os.path.join(prefix, "envs")) else "conda"
    return "system"


def main():
    prefix = sys.prefix
    info = {
        "executable": sys.executable,
        "version": platform.python_version(),
        "implementation": platform.python_implementation().lower(),
        "env_kind": env_kind(prefix, getattr(sys, "base_prefix", prefix)),
        "env_path": prefix,
        "packages": distributions(),
        "nvidia_wheel_dirs": nvidia_wheel_dirs(),
        "conda_packages": conda_packages(prefix),
        "machine": platform.machine(),
    }
    sys.stdout.write(json.dumps(info))


if __name__ == "__main__":
    main()
