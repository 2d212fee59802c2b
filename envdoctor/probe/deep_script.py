"""Runs INSIDE the target interpreter, one framework per process: `python deep_script.py torch`.

Stdlib only, Python 3.8+. Imports the framework and prints its build as one JSON object on the last
line, after a marker (frameworks print banners to stdout while importing; those go to stderr here).
A crash while importing (segfault, illegal instruction) kills only this process.
"""
import json
import os
import sys

MARKER = "@@envdoctor-deep@@"


def cudnn_text(value):
    """cudnnGetVersion() integer -> "9.1.0" (cuDNN >= 9: M*10000+m*100+p; <= 8: M*1000+m*100+p)."""
    if not value:
        return None
    value = int(value)
    if value >= 10000:
        return "%d.%d.%d" % (value // 10000, (value % 10000) // 100, value % 100)
    return "%d.%d.%d" % (value // 1000, (value % 1000) // 100, value % 100)


def dist_version(name):
    try:
        from importlib import metadata
        return metadata.version(name)
    except Exception:
        return None


def torch_info():
    import torch

    info = {"version": torch.__version__, "cuda": torch.version.cuda,
            "arch_list": list(torch.cuda.get_arch_list()),
            "device_available": bool(torch.cuda.is_available()),
            "device_count": int(torch.cuda.device_count())}
    try:
        info["cudnn"] = cudnn_text(torch.backends.cudnn.version())
    except Exception as exc:
        info["cudnn"] = None
        info.setdefault("extra", {})["cudnn_error"] = str(exc)
    extra = info.setdefault("extra", {})
    extra["hip"] = getattr(torch.version, "hip", None)
    mps = getattr(torch.backends, "mps", None)
    if mps is not None:
        try:
            extra["mps_available"] = bool(mps.is_available())
        except Exception:
            pass
    return info


def tensorflow_info():
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import tensorflow as tf

    build = dict(tf.sysconfig.get_build_info())
    gpus = tf.config.list_physical_devices("GPU")
    return {"version": tf.__version__, "cuda": build.get("cuda_version"), "cudnn": build.get("cudnn_version"),
            "arch_list": build.get("cuda_compute_capabilities"), "device_available": bool(gpus),
            "device_count": len(gpus),
            "extra": {"is_cuda_build": build.get("is_cuda_build"), "is_rocm_build": build.get("is_rocm_build"),
                      "devices": [d.name for d in gpus]}}


def jax_info():
    import jax

    plugins = {}
    for name in ("jax-cuda12-plugin", "jax-cuda12-pjrt", "jax-cuda13-plugin", "jax-cuda13-pjrt", "jax-rocm-plugin"):
        version = dist_version(name)
        if version:
            plugins[name] = version
    backend = jax.default_backend()
    devices = jax.devices()
    cuda = None
    for name in plugins:
        if name.startswith("jax-cuda"):
            cuda = name[len("jax-cuda"):].split("-")[0]
            break
    return {"version": jax.__version__, "cuda": cuda, "device_available": backend in ("gpu", "cuda", "rocm"),
            "device_count": len(devices) if backend != "cpu" else 0,
            "extra": {"jaxlib": dist_version("jaxlib"), "plugins": plugins, "backend": backend,
                      "devices": [str(d) for d in devices]}}


def paddle_info():
    import paddle

    compiled = bool(paddle.is_compiled_with_cuda())
    cuda = paddle.version.cuda() if compiled else None
    cudnn = paddle.version.cudnn() if compiled else None
    count = int(paddle.device.cuda.device_count()) if compiled else 0
    return {"version": paddle.__version__, "cuda": None if cuda in (None, "False") else str(cuda),
            "cudnn": None if cudnn in (None, "False") else str(cudnn),
            "device_available": count > 0, "device_count": count,
            "extra": {"compiled_with_cuda": compiled}}


PROBES = {"torch": torch_info, "tensorflow": tensorflow_info, "jax": jax_info, "paddle": paddle_info}


def main():
    name = sys.argv[1]
    real_stdout = sys.stdout
    sys.stdout = sys.stderr  # import-time banners must not corrupt the JSON
    try:
        info = PROBES[name]()
    except BaseException as exc:  # ImportError, OSError from a missing library, SystemExit, ...
        info = {"import_error": "%s: %s" % (type(exc).__name__, str(exc).strip().splitlines()[0] if str(exc).strip() else "")}
    sys.stdout = real_stdout
    real_stdout.write("\n" + MARKER + json.dumps(info, default=str) + "\n")
    real_stdout.flush()


if __name__ == "__main__":
    main()
