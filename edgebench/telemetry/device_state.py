"""What the machine is and what state it is in: the records ``run.json``, the Monitor and
the report take, built from the readers in ``sysfs.py``.

- ``device_state()``: read once per run. On a Jetson: board model (``/proc/device-tree/model``),
  L4T (``/etc/nv_tegra_release``), JetPack, CUDA, cuDNN, TensorRT, ``nvpmodel -q`` mode,
  whether clocks are locked (jetson_clocks), GPU. On any Linux box: CPU model, governors,
  boost, memory, GPUs through NVML. Whatever cannot be read is ``None`` and its reason is in
  ``state["unavailable"][key]``.
- ``sample_state()``: cheap, for ``Monitor(device_state=sample_state)``: temperatures and
  current CPU/GPU clocks. ``nvmap_used_mb()``: a ``Monitor(device_memory=...)`` hook (Jetson).
- ``clock_warnings(state, samples)``: plain-language warnings for the report (power mode
  not MAXN, clocks not locked, governor not ``performance``, clocks that moved or fell
  during the task, temperatures near a throttling trip point).

Every reader takes ``root`` so tests can point it at a recreated sysfs/procfs tree, and
``device_state`` takes ``run`` (how commands are run) so tests need no nvpmodel or dpkg.
"""
from __future__ import annotations

import os
import platform
import re
import shutil
import subprocess
import sys
from typing import Any, Callable

from .sysfs import (clocks_locked, compatible, cpu_cur_mhz, cpu_model, cpu_policies,
                    cuda_toolkit_version, cudnn_version, gpu_devfreq, is_jetson,
                    jetpack_for_l4t, jetson_memory_mb, nvinfer_version, parse_l4t, parse_meminfo,
                    parse_nvpmodel, read_temps, read_text, thermal_zones)

Runner = Callable[[list[str]], tuple[int, str]]


def _run(cmd: list[str], timeout: float = 5.0) -> tuple[int, str]:
    exe = shutil.which(cmd[0])
    if exe is None:
        raise FileNotFoundError(f"{cmd[0]} not found on PATH")
    p = subprocess.run([exe, *cmd[1:]], capture_output=True, text=True, timeout=timeout)
    return p.returncode, (p.stdout + p.stderr)


class _State(dict):
    """dict with ``set(key, fn)``: runs fn, stores None and the reason when it fails."""

    def __init__(self):
        super().__init__()
        self["unavailable"] = {}

    def set(self, key: str, fn: Callable[[], Any]) -> Any:
        try:
            value = fn()
        except Exception as e:  # noqa: BLE001 - every failure becomes a reason
            value = None
            self["unavailable"][key] = f"{type(e).__name__}: {e}".strip()
        if value is None and key not in self["unavailable"]:
            self["unavailable"][key] = "not found"
        self[key] = value
        return value


def _jetpack(s: dict, run: Runner) -> str | None:
    """The nvidia-jetpack package's version where dpkg knows it, else from the L4T release."""
    try:
        v = _dpkg_version("nvidia-jetpack", run)
    except Exception:  # noqa: BLE001 - no dpkg (container): fall back to the L4T table
        v = None
    if v:
        s["jetpack_basis"] = "dpkg nvidia-jetpack"
        return v
    v = jetpack_for_l4t(s.get("l4t"))
    if v:
        s["jetpack_basis"] = f"L4T {s.get('l4t')} (nvidia-jetpack package not queried/installed)"
    return v


def _dpkg_version(pkg: str, run: Runner) -> str | None:
    rc, out = run(["dpkg-query", "--showformat=${Version}", "--show", pkg])
    return out.strip() if rc == 0 and out.strip() else None


def _gpu(run: Runner) -> tuple[Any, str]:
    from .nvml import gpu_info

    gpus, why = gpu_info()
    if gpus:
        return gpus, ""
    torch = sys.modules.get("torch")  # only when already imported: importing torch is slow
    if torch is not None and torch.cuda.is_available():
        out = []
        for i in range(torch.cuda.device_count()):
            p = torch.cuda.get_device_properties(i)
            out.append({"index": i, "name": p.name, "compute_capability": f"{p.major}.{p.minor}",
                        "memory_total_mb": p.total_memory / 2**20, "via": "torch.cuda"})
        return out, ""
    raise RuntimeError(why + ("; torch not imported" if torch is None else "; torch sees no CUDA device"))


def device_state(root: str = "/", run: Runner = _run) -> dict:
    s = _State()
    jetson = is_jetson(root)
    s["kind"] = "jetson" if jetson else ("linux" if sys.platform.startswith("linux") else sys.platform)
    s["machine"] = platform.machine()
    s["kernel"] = platform.release()
    s["python"] = platform.python_version()
    s.set("os", lambda: re.search(r'PRETTY_NAME="?([^"\n]+)', read_text("/etc/os-release", root)).group(1))
    s.set("cpu_model", lambda: cpu_model(root))
    s["cpu_count"] = os.cpu_count()
    meminfo = {}
    try:
        meminfo = parse_meminfo(read_text("/proc/meminfo", root))
    except OSError as e:
        s["unavailable"]["memory_total_mb"] = str(e)
    s["memory_total_mb"] = round(meminfo["MemTotal"] / 1024, 1) if "MemTotal" in meminfo else None
    policies = cpu_policies(root)
    s["cpu_governors"] = sorted({p["governor"] for p in policies if p["governor"]}) or None
    if not policies:
        s["unavailable"]["cpu_governors"] = s["unavailable"]["cpu_policies"] = \
            "no /sys/devices/system/cpu/cpufreq/policy*"
    s["cpu_policies"] = policies or None
    s.set("cpu_boost", lambda: read_text("/sys/devices/system/cpu/cpufreq/boost", root))
    zones = thermal_zones(root)
    s["thermal_trips_c"] = {k: v["trip_c"] for k, v in zones.items() if v["trip_c"] is not None} or None
    if s["thermal_trips_c"] is None:
        s["unavailable"]["thermal_trips_c"] = ("no passive/hot trip points under /sys/class/thermal"
                                              if zones else "no /sys/class/thermal/thermal_zone*")
    s.set("gpus", lambda: _gpu(run)[0])

    if jetson:
        s.set("board_model", lambda: read_text("/proc/device-tree/model", root))
        s.set("compatible", lambda: compatible(root))
        s.set("soc", lambda: next((c for c in reversed(s["compatible"] or []) if "tegra" in c), None))
        s.set("l4t", lambda: parse_l4t(read_text("/etc/nv_tegra_release", root)))
        s.set("jetpack", lambda: _jetpack(s, run))
        s.set("cuda", lambda: cuda_toolkit_version(root))
        s.set("cudnn", lambda: cudnn_version(root))
        s.set("tensorrt", lambda: nvinfer_version(root))
        s.set("nvpmodel", lambda: parse_nvpmodel(run(["nvpmodel", "-q"])[1]))
        gpu = gpu_devfreq(root)
        s["gpu_devfreq"] = gpu
        if gpu is None:
            s["unavailable"]["gpu_devfreq"] = "no GPU node under /sys/class/devfreq"
        locked, how = clocks_locked(policies, gpu)
        s["jetson_clocks"] = None if locked is None else ("on" if locked else "off")
        s["jetson_clocks_basis"] = f"inferred from sysfs: {how}"
        if locked is None:
            s["unavailable"]["jetson_clocks"] = how
    else:
        s.set("cuda", lambda: cuda_toolkit_version(root))
        s.set("tensorrt", lambda: nvinfer_version(root))
    return dict(s)


def sample_state(root: str = "/") -> dict:
    """Temperatures (C) and clocks (MHz) now. Cheap: a few dozen small sysfs reads."""
    out: dict[str, Any] = {"temps_c": read_temps(root)}
    cur = cpu_cur_mhz(root)
    if cur:
        out["cpu_mhz"] = {"min": min(cur), "max": max(cur), "mean": round(sum(cur) / len(cur), 1)}
    gpu = gpu_devfreq(root)
    if gpu and gpu.get("cur_mhz") is not None:
        out["gpu_mhz"] = gpu["cur_mhz"]
    return out


def nvmap_used_mb(root: str = "/") -> float | None:
    """A ``Monitor(device_memory=...)`` hook for Jetson: NvMapMemUsed in MiB (device-wide)."""
    m = jetson_memory_mb(root)
    return None if m is None else m["gpu_nvmap"]


# ---------------------------------------------------------------------------- warnings

def _spread(values: list[float]) -> tuple[float, float] | None:
    vals = [v for v in values if v is not None]
    return (min(vals), max(vals)) if vals else None


def clock_warnings(state: dict, samples: list[dict] | None = None, rel_tol: float = 0.05,
                   trip_margin_c: float = 5.0) -> list[str]:
    """Warnings for the report. ``state`` is ``device_state()``; ``samples`` are
    ``sample_state()`` dicts taken during the task (``Monitor.device_states()``)."""
    warn: list[str] = []
    samples = samples or []
    if state.get("kind") == "jetson":
        mode = state.get("nvpmodel")
        if mode is None:
            warn.append("power mode unknown (nvpmodel -q unreadable): figures depend on it")
        elif not str(mode.get("name", "")).upper().startswith("MAXN"):
            warn.append(f"power mode is {mode.get('name')} (nvpmodel {mode.get('id')}), not MAXN: "
                        "figures are not comparable with MAXN runs (sudo nvpmodel -m 0)")
        if state.get("jetson_clocks") == "off":
            warn.append("clocks not locked (jetson_clocks off): DVFS may change CPU/GPU clocks "
                        "during timing (sudo jetson_clocks)")
        elif state.get("jetson_clocks") is None:
            warn.append("could not tell whether clocks are locked (jetson_clocks)")
    else:
        govs = state.get("cpu_governors") or []
        if govs and any(g != "performance" for g in govs):
            warn.append(f"CPU frequency governor is {'/'.join(govs)}, not performance: "
                        "clocks may change during timing")
    gpu_lo_hi = _spread([s.get("gpu_mhz") for s in samples])
    if gpu_lo_hi and gpu_lo_hi[1] > 0 and (gpu_lo_hi[1] - gpu_lo_hi[0]) > rel_tol * gpu_lo_hi[1]:
        warn.append(f"GPU clock varied between {gpu_lo_hi[0]:.0f} and {gpu_lo_hi[1]:.0f} MHz "
                    "during the task")
    locked_gpu = (state.get("gpu_devfreq") or {}).get("max_mhz") if state.get("jetson_clocks") == "on" else None
    if gpu_lo_hi and locked_gpu and gpu_lo_hi[0] < (1 - rel_tol) * locked_gpu:
        warn.append(f"throttling seen: GPU clock fell to {gpu_lo_hi[0]:.0f} MHz, below the "
                    f"locked {locked_gpu:.0f} MHz")
    cpu_lo_hi = _spread([(s.get("cpu_mhz") or {}).get("min") for s in samples])
    if state.get("jetson_clocks") == "on" and cpu_lo_hi:
        hw = [p.get("max_khz") for p in state.get("cpu_policies") or [] if p.get("max_khz")]
        if hw and cpu_lo_hi[0] < (1 - rel_tol) * min(hw) / 1000.0:
            warn.append(f"throttling seen: a CPU clock fell to {cpu_lo_hi[0]:.0f} MHz, below "
                        f"the locked {min(hw) / 1000.0:.0f} MHz")
    trips = state.get("thermal_trips_c") or {}
    hottest: dict[str, float] = {}
    for s in samples:
        for zone, t in (s.get("temps_c") or {}).items():
            hottest[zone] = max(t, hottest.get(zone, t))
    for zone, t in sorted(hottest.items()):
        trip = trips.get(zone)
        if trip is not None and t >= trip - trip_margin_c:
            warn.append(f"{zone} reached {t:.1f} C, within {trip_margin_c:.0f} C of its "
                        f"throttling trip point {trip:.1f} C")
    return warn
