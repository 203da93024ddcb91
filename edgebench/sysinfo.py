"""Machine, OS, backend versions and device state for run.json."""
from __future__ import annotations

import contextlib
import glob
import os
import platform
import re
import socket
from pathlib import Path

import psutil


def cpu_model() -> str:
    with contextlib.suppress(OSError):
        for line in open("/proc/cpuinfo", encoding="utf-8"):
            if line.lower().startswith(("model name", "hardware")):
                return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


_ARCH = {"arm64": "aarch64", "amd64": "x86_64", "x64": "x86_64"}
# A 32-bit process on its own 64-bit kernel runs natively.
_NATIVE_32 = {("i386", "x86_64"), ("i686", "x86_64"), ("armv7l", "aarch64"), ("armv8l", "aarch64")}
EMULATED_NOTE = ("this process's instructions were translated by an emulator on another kind of "
                 "machine: its timings, power and clock figures are not measurements of the "
                 "device named")


def _arch(name: str) -> str:
    name = name.strip().lower()
    return _ARCH.get(name, name)


def emulation() -> dict | None:
    """How this process runs when its instruction set is not the one of the machine's kernel
    (user-mode emulation: QEMU through binfmt_misc, as in jetson/emulated/), else None.

    The process's architecture is what uname says to it (an emulator reports the guest's);
    the kernel's own is /proc/sys/kernel/arch (where the kernel has it), which user-mode emulators pass
    through, or on older kernels the kind of CPU /proc/cpuinfo describes. A kernel never
    runs natively on another architecture than its CPU's, so a difference is proof of
    translation; nothing is read that a real board could have written to mark itself."""
    here = _arch(platform.machine())
    kernel, basis = None, ""
    with contextlib.suppress(OSError):
        kernel = _arch(open("/proc/sys/kernel/arch", encoding="utf-8").read()) or None
        basis = "/proc/sys/kernel/arch"
    if kernel is None:
        with contextlib.suppress(OSError):
            text = open("/proc/cpuinfo", encoding="utf-8").read()
            if re.search(r"^vendor_id\s*:\s*(GenuineIntel|AuthenticAMD|HygonGenuine)", text, re.M):
                kernel, basis = "x86_64", "/proc/cpuinfo describes an x86 CPU"
            elif re.search(r"^CPU implementer\s*:", text, re.M):
                kernel, basis = "aarch64", "/proc/cpuinfo describes an Arm CPU"
    if kernel is None or kernel == here or (here, kernel) in _NATIVE_32:
        return None
    return {"by": _translator(here), "process_arch": here, "host_arch": kernel,
            "evidence": f"uname says {here}, the kernel is {kernel} ({basis})",
            "note": EMULATED_NOTE}


def _translator(arch: str) -> str:
    """The binfmt_misc handler the kernel runs for ``arch`` binaries, where it is readable
    (e.g. "QEMU user-mode emulation (qemu-aarch64: /usr/libexec/qemu-binfmt/aarch64-binfmt-P)")."""
    for entry in sorted(glob.glob(f"/proc/sys/fs/binfmt_misc/*{arch}*")):
        with contextlib.suppress(OSError):
            text = open(entry, encoding="utf-8").read()
            m = re.search(r"^interpreter\s+(\S+)", text, re.M)
            if text.startswith("enabled") and m:
                name = os.path.basename(entry)
                kind = "QEMU user-mode emulation" if "qemu" in (name + m.group(1)).lower() \
                    else "user-mode emulation"
                return f"{kind} (binfmt_misc {name}: {m.group(1)})"
    return "user-mode emulation (binfmt_misc handler not readable here)"


def device() -> dict:
    """What the records call the device: a Jetson when the device tree says so, else the
    CPU (GPUs appear in each variant's own metadata, e.g. ORT providers). Under user-mode
    emulation (``emulation()``) the name says "(emulated)" and ``emulated`` says how."""
    model = None
    with contextlib.suppress(OSError):
        model = open("/proc/device-tree/model", encoding="utf-8").read().strip("\x00\n ")
    emu = emulation()
    if model and "jetson" in model.lower():
        out = {"kind": "jetson", "name": model, "arch": platform.machine()}
    else:
        out = {"kind": "cpu", "name": cpu_model(), "arch": platform.machine(),
               "cores_physical": psutil.cpu_count(logical=False),
               "cores_logical": psutil.cpu_count(logical=True)}
    if emu:
        out["name"] = f"{out['name']} (emulated)"
        out["emulated"] = emu
    out["cpu_int8"] = (cpu_int8() if not emu else
                       {"best": "unknown", "flags": [],
                        "reason": "emulated: the instructions are the emulator's, not the board's"})
    return out


# The CPU's INT8 dot-product instructions, best first, as /proc/cpuinfo names them: what
# ONNX Runtime's INT8 kernels (MLAS) can use. x86: AMX tiles, AVX-512 VNNI, AVX-VNNI, else
# AVX2's multiply-add (no INT8 dot product: the INT8 speed-up is small there). aarch64:
# i8mm (SMMLA) and the dot product (SDOT, "asimddp").
_INT8_FLAGS = (("amx_int8", "AMX"), ("avx512_vnni", "AVX-512 VNNI"), ("avx_vnni", "AVX-VNNI"),
               ("i8mm", "I8MM"), ("asimddp", "DOTPROD"), ("avx2", "AVX2"))


def cpu_int8(cpuinfo: str | None = None, arch: str | None = None) -> dict:
    """{"best": "AMX" | "AVX-512 VNNI" | "AVX-VNNI" | "AVX2 only" | "I8MM" | "DOTPROD" |
    "none found", "flags": [the INT8-relevant flags present]} from /proc/cpuinfo's flags
    (x86) or Features (aarch64) line."""
    if cpuinfo is None:
        try:
            cpuinfo = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
        except OSError:
            return {"best": "unknown", "flags": [], "reason": "no /proc/cpuinfo"}
    arch = arch or platform.machine()
    key_of_arch = "Features" if arch in ("aarch64", "arm64") else "flags"
    flags: set[str] = set()
    for line in cpuinfo.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == key_of_arch:
            flags |= set(value.split())
    present = [f for f, _ in _INT8_FLAGS if f in flags]
    best = next((name for f, name in _INT8_FLAGS if f in flags), "none found")
    return {"best": "AVX2 only" if best == "AVX2" else best, "flags": present}


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
        gov = Path("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor")
        info["cpu_governor"] = gov.read_text(encoding="utf-8").strip()
    emu = emulation()
    if emu:
        info["emulated"] = emu
    return info


def _os_release() -> str | None:
    with contextlib.suppress(OSError):
        for line in open("/etc/os-release", encoding="utf-8"):
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
    # TVM_USE_RUNTIME_LIB=1: TVM loaded its runtime library alone, as on a board without
    # TVM's compiler (what an exported artifact is meant for).
    keys = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "OPENBLAS_CORETYPE", "XLA_FLAGS",
            "XLA_PYTHON_CLIENT_PREALLOCATE", "XLA_PYTHON_CLIENT_ALLOCATOR", "CUDA_VISIBLE_DEVICES",
            "TVM_USE_RUNTIME_LIB")
    return {k: os.environ[k] for k in keys if k in os.environ}
