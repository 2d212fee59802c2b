"""Runs in a CHILD process (envdoctor's own interpreter): asks NVML about the driver and GPUs.

A crash or hang inside libnvidia-ml can only take this process down; the parent reads one JSON
object from stdout, or records how the child died. Stdlib + nvidia-ml-py only.
"""
import json
import sys


def text(value):
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else value


def device(pynvml, index, errors):
    gpu = {"index": index}
    try:
        handle = pynvml.nvmlDeviceGetHandleByIndex(index)
    except pynvml.NVMLError as exc:
        errors.append("GPU %d: %s" % (index, exc))
        return gpu
    calls = {
        "name": lambda: text(pynvml.nvmlDeviceGetName(handle)),
        "compute_capability": lambda: "%d.%d" % tuple(pynvml.nvmlDeviceGetCudaComputeCapability(handle)),
        "memory_total_mib": lambda: int(pynvml.nvmlDeviceGetMemoryInfo(handle).total) // (1024 * 1024),
        "uuid": lambda: text(pynvml.nvmlDeviceGetUUID(handle)),
        "pci_bus_id": lambda: text(pynvml.nvmlDeviceGetPciInfo(handle).busId),
    }
    for key, call in calls.items():
        try:
            gpu[key] = call()
        except pynvml.NVMLError as exc:
            errors.append("GPU %d %s: %s" % (index, key, exc))
    return gpu


def main():
    try:
        import pynvml
    except ImportError:
        return {"error": "nvidia-ml-py is not installed", "kind": "ImportError"}
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError as exc:
        return {"error": str(exc), "kind": type(exc).__name__}
    errors = []
    try:
        result = {"driver_version": text(pynvml.nvmlSystemGetDriverVersion())}
        try:
            result["cuda_driver_version"] = int(pynvml.nvmlSystemGetCudaDriverVersion())
        except pynvml.NVMLError as exc:
            errors.append("CUDA driver version: %s" % exc)
        count = pynvml.nvmlDeviceGetCount()
        result["gpus"] = [device(pynvml, i, errors) for i in range(count)]
    except pynvml.NVMLError as exc:
        return {"error": str(exc), "kind": type(exc).__name__}
    finally:
        try:
            pynvml.nvmlShutdown()
        except Exception:
            pass
    result["errors"] = errors
    return result


if __name__ == "__main__":
    sys.stdout.write(json.dumps(main()))
