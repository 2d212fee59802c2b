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
CONDA_ALSO = ("cudnn", "cudatoolkit", "pytorch", "cuda-version", "pytorch-cuda")  # conda-only names


def canonical(name):
    return re.sub(r"[-_.]+", "-", name).lower()


def distributions():
    """Installed distributions that matter, from the names of *.dist-info / *.egg-info folders.

    Reading folder names (not importlib.metadata, which imports email parsing and reads every
    METADATA file) keeps this script at a few milliseconds with hundreds of packages installed.
    """
    found = {}
    for base in sys.path:
        try:
            entries = os.listdir(base or ".")
        except OSError:
            continue
        for entry in entries:
            parsed = parse_dist_folder(base, entry)
            if parsed is None:
                continue
            key, version = parsed
            # Two copies of one name (duplicate install): keep both visible.
            if key in found and version not in found[key].split("|"):
                found[key] = found[key] + "|" + version
            elif key not in found:
                found[key] = version
    return dict(sorted(found.items()))  # the same machine gives the same document


def parse_dist_folder(base, entry):
    """"nvidia_cudnn_cu12-9.1.0.70.dist-info" -> ("nvidia-cudnn-cu12", "9.1.0.70"), if wanted."""
    if entry.endswith(".dist-info"):
        stem = entry[: -len(".dist-info")]
    elif entry.endswith(".egg-info"):
        stem = entry[: -len(".egg-info")]
    else:
        return None
    name, _, rest = stem.partition("-")
    name = canonical(name)
    if not WANTED.match(name):
        return None
    version = rest.split("-")[0] if rest else metadata_version(os.path.join(base, entry))
    if not version:
        return None
    return name, version


def metadata_version(path):
    """Version line of an egg-info folder/file that does not carry it in its name."""
    for candidate in (os.path.join(path, "PKG-INFO"), path):
        try:
            with open(candidate, encoding="utf-8", errors="replace") as fh:
                for line in fh:
                    if line.startswith("Version:"):
                        return line.split(":", 1)[1].strip()
                    if not line.strip():
                        break
        except OSError:
            continue
    return None


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
        if m and (WANTED.match(m.group(1)) or m.group(1) in CONDA_ALSO):
            found[m.group(1)] = m.group(2)
    return dict(sorted(found.items()))


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


def describe():
    prefix = sys.prefix
    return {
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


def main():
    sys.stdout.write(json.dumps(describe()))


if __name__ == "__main__":
    main()
