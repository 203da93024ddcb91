"""Machine, OS, backend versions and device state for run.json."""
from __future__ import annotations

import contextlib
import os
import platform
import socket

import psutil


def cpu_model() -> str:
    with contextlib.suppress(OSError):
        for line in open("/proc/cpuinfo"):
            if line.lower().startswith(("model name", "hardware")):
                return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


def device() -> dict:
    """What the records call the device: a Jetson when the device tree says so, else the
    CPU (GPUs appear in each variant's own metadata, e.g. ORT providers)."""
    model = None
    with contextlib.suppress(OSError):
        model = open("/proc/device-tree/model").read().strip("\x00\n ")
    if model and "jetson" in model.lower():
        return {"kind": "jetson", "name": model, "arch": platform.machine()}
    return {"kind": "cpu", "name": cpu_model(), "arch": platform.machine(),
            "cores_physical": psutil.cpu_count(logical=False),
            "cores_logical": psutil.cpu_count(logical=True)}


def machine() -> dict:
    vm = psutil.virtual_memory()
    info = {"hostname": socket.gethostname(), "platform": platform.platform(),
            "kernel": platform.release(), "arch": platform.machine(), "cpu": cpu_model(),
            "cores_physical": psutil.cpu_count(logical=False),
            "cores_logical": psutil.cpu_count(logical=True),
            "memory_total_mb": round(vm.total / 2**20), "python": platform.python_version(),
            "os_release": _os_release()}
    with contextlib.suppress(Exception):
        info["cpu_freq_mhz"] = psutil.cpu_freq()._asdict()
    with contextlib.suppress(OSError):
        info["cpu_governor"] = open("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor").read().strip()
    return info


def _os_release() -> str | None:
    with contextlib.suppress(OSError):
        for line in open("/etc/os-release"):
            if line.startswith("PRETTY_NAME="):
                return line.split("=", 1)[1].strip().strip('"')
    return None


def device_state() -> dict:
    """Board, L4T/JetPack, CUDA/TensorRT versions, power mode, clocks (telemetry module)."""
    try:
        from .telemetry.device_state import device_state as read
    except ImportError as e:
        return {"available": False, "reason": f"device-state reader missing: {e}"}
    try:
        return read()
    except Exception as e:  # noqa: BLE001
        return {"available": False, "reason": f"{type(e).__name__}: {e}"}


def env_flags() -> dict:
    keys = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_CORETYPE", "XLA_FLAGS",
            "XLA_PYTHON_CLIENT_PREALLOCATE", "XLA_PYTHON_CLIENT_ALLOCATOR", "CUDA_VISIBLE_DEVICES")
    return {k: os.environ[k] for k in keys if k in os.environ}
