"""What the machine is and what state it is in: for ``run.json``, the Monitor and the report.

- ``device_state()``: read once per run. On a Jetson: board model (``/proc/device-tree/model``),
  L4T (``/etc/nv_tegra_release``), JetPack, CUDA, cuDNN, TensorRT, ``nvpmodel -q`` mode,
  whether clocks are locked (jetson_clocks), GPU. On any Linux box: CPU model, governors,
  boost, memory, GPUs through NVML. Whatever cannot be read is ``None`` and its reason is in
  ``state["unavailable"][key]``.
- ``sample_state()``: cheap, for ``Monitor(device_state=sample_state)``: temperatures and
  current CPU/GPU clocks.
- ``clock_warnings(state, samples)``: plain-language warnings for the report (power mode
  not MAXN, clocks not locked, governor not ``performance``, clocks that moved or fell
  during the task, temperatures near a throttling trip point).

Every reader takes ``root`` so tests can point it at a recreated sysfs/procfs tree.
"""
from __future__ import annotations

import glob
import json
import os
import platform
import re
import shutil
import subprocess
import sys
from typing import Any, Callable

Runner = Callable[[list[str]], tuple[int, str]]


def _run(cmd: list[str], timeout: float = 5.0) -> tuple[int, str]:
    exe = shutil.which(cmd[0])
    if exe is None:
        raise FileNotFoundError(f"{cmd[0]} not found on PATH")
    p = subprocess.run([exe, *cmd[1:]], capture_output=True, text=True, timeout=timeout)
    return p.returncode, (p.stdout + p.stderr)


def _p(root: str, path: str) -> str:
    return os.path.join(root, path.lstrip("/"))


def _read(root: str, path: str) -> str:
    with open(_p(root, path), "rb") as f:
        return f.read().replace(b"\x00", b"").decode(errors="replace").strip()


def _read_int(root: str, path: str) -> int:
    return int(_read(root, path).split()[0])


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


# ---------------------------------------------------------------------------- parsers

L4T_RE = re.compile(r"#\s*R(\d+)\s*\(release\),\s*REVISION:\s*([\d.]+)")

# L4T -> JetPack, from NVIDIA's JetPack release notes (as tabulated by jetson-stats).
JETPACK_BY_L4T = {
    "32.7.1": "4.6.1", "32.7.2": "4.6.2", "32.7.3": "4.6.3", "32.7.4": "4.6.4",
    "32.7.5": "4.6.5", "32.7.6": "4.6.6", "32.6.1": "4.6",
    "35.1.0": "5.0.2", "35.2.1": "5.1", "35.3.1": "5.1.1", "35.4.1": "5.1.2",
    "35.5.0": "5.1.3", "35.6.0": "5.1.4", "35.6.1": "5.1.5", "35.6.2": "5.1.5",
    "36.2.0": "6.0 DP", "36.3.0": "6.0", "36.4.0": "6.1", "36.4.3": "6.2", "36.4.4": "6.2.1",
    "36.4.7": "6.2.1", "36.5.0": "6.2.2",
    "38.2.0": "7.0", "38.2.1": "7.0", "38.2.2": "7.0", "38.4.0": "7.1",
    "39.2.0": "7.2", "39.2.1": "7.2.1",
}


def parse_l4t(text: str) -> str | None:
    """``# R36 (release), REVISION: 4.4, GCID: ...`` -> ``36.4.4``."""
    m = L4T_RE.search(text)
    if not m:
        return None
    rev = m.group(2).split(".")
    rev += ["0"] * (2 - len(rev))
    return f"{m.group(1)}.{rev[0]}.{rev[1]}"


def jetpack_for_l4t(l4t: str | None) -> str | None:
    return JETPACK_BY_L4T.get(l4t or "")


def parse_nvpmodel(text: str) -> dict | None:
    """``nvpmodel -q`` -> {"name": "MAXN", "id": 0}. Prints the mode name on a labelled line
    and its number on the next one (warnings may come first)."""
    m = re.search(r"NV Power Mode:\s*(\S+)", text)
    if not m:
        return None
    rest = text[m.end():].split()
    mode_id = next((int(tok) for tok in rest if tok.isdigit()), None)
    return {"name": m.group(1), "id": mode_id}


def parse_cudnn_header(text: str) -> str | None:
    parts = [re.search(rf"#define CUDNN_{k}\s+(\d+)", text) for k in ("MAJOR", "MINOR", "PATCHLEVEL")]
    return ".".join(p.group(1) for p in parts) if all(parts) else None


def parse_meminfo(text: str) -> dict[str, int]:
    out = {}
    for line in text.splitlines():
        m = re.match(r"(\w+):\s+(\d+)", line)
        if m:
            out[m.group(1)] = int(m.group(2))
    return out


# ---------------------------------------------------------------------------- readers

def is_jetson(root: str = "/") -> bool:
    if os.path.exists(_p(root, "/etc/nv_tegra_release")):
        return True
    try:
        return "nvidia,tegra" in _read(root, "/proc/device-tree/compatible")
    except OSError:
        return False


def _cuda_version(root: str) -> str | None:
    """The CUDA *toolkit* at /usr/local/cuda (JetPack installs it there). A machine with
    only the driver and pip's CUDA libraries has none: the driver's CUDA version is then
    in ``gpus[].cuda_driver`` (NVML)."""
    vj = _p(root, "/usr/local/cuda/version.json")
    if os.path.isfile(vj):
        with open(vj) as f:
            return json.load(f)["cuda"]["version"]
    vt = _p(root, "/usr/local/cuda/version.txt")
    if os.path.isfile(vt):
        m = re.search(r"([\d.]+)", _read(root, "/usr/local/cuda/version.txt"))
        return m.group(1) if m else None
    raise FileNotFoundError("no CUDA toolkit at /usr/local/cuda (version.json or version.txt);"
                            " the driver's CUDA version, if any, is gpus[].cuda_driver")


def _cudnn_version(root: str) -> str | None:
    for pat in ("/usr/include/cudnn_version.h", "/usr/include/*/cudnn_version*.h",
                "/usr/local/cuda/include/cudnn_version.h"):
        for path in sorted(glob.glob(_p(root, pat))):
            with open(path) as f:
                v = parse_cudnn_header(f.read())
            if v:
                return v
    return None


def _module_version(name: str) -> str | None:
    from importlib import metadata

    for dist in (name, f"{name}-cu12", f"{name}-cu13", f"{name}_cu12"):
        try:
            return metadata.version(dist)
        except metadata.PackageNotFoundError:
            continue
    import importlib.util

    if importlib.util.find_spec(name) is None:
        raise ModuleNotFoundError(f"No module named '{name}'")
    mod = __import__(name)
    return getattr(mod, "__version__", None)


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


def cpu_policies(root: str = "/") -> list[dict]:
    out = []
    for d in sorted(glob.glob(_p(root, "/sys/devices/system/cpu/cpufreq/policy*"))):
        pol: dict[str, Any] = {"policy": os.path.basename(d)}
        for key, f in (("governor", "scaling_governor"), ("min_khz", "scaling_min_freq"),
                       ("max_khz", "scaling_max_freq"), ("hw_max_khz", "cpuinfo_max_freq"),
                       ("cur_khz", "scaling_cur_freq"), ("cpus", "related_cpus")):
            try:
                raw = _read("/", os.path.join(d, f))
                pol[key] = raw if key in ("governor", "cpus") else int(raw)
            except (OSError, ValueError):
                pol[key] = None
        out.append(pol)
    return out


def gpu_devfreq(root: str = "/") -> dict | None:
    """The integrated GPU's devfreq node (Jetson): name, governor, min/max/cur in MHz."""
    for d in sorted(glob.glob(_p(root, "/sys/class/devfreq/*"))):
        name = os.path.basename(d)
        of_name = ""
        try:
            of_name = _read("/", os.path.join(d, "device/of_node/name"))
        except OSError:
            pass
        if not ("gpu" in name or "ga10b" in name or "gv11b" in name or "gp10b" in name
                or of_name == "gpu"):
            continue
        info: dict[str, Any] = {"node": name}
        for key, f in (("min_mhz", "min_freq"), ("max_mhz", "max_freq"), ("cur_mhz", "cur_freq")):
            try:
                info[key] = int(_read("/", os.path.join(d, f))) / 1e6
            except (OSError, ValueError):
                info[key] = None
        try:
            info["governor"] = _read("/", os.path.join(d, "governor"))
        except OSError:
            info["governor"] = None
        return info
    return None


def clocks_locked(policies: list[dict], gpu: dict | None) -> tuple[bool | None, str]:
    """What ``jetson_clocks`` does, seen from sysfs: every CPU policy's min == max == hardware
    max and the GPU's min == max. (``jetson_clocks --show`` needs root, this does not.)"""
    if not policies and not gpu:
        return None, "no cpufreq policies or GPU devfreq node readable"
    why = []
    cpu_ok = all(p["min_khz"] is not None and p["min_khz"] == p["max_khz"] for p in policies)
    if policies and not cpu_ok:
        why.append("CPU min != max frequency")
    gpu_ok = gpu is None or (gpu["min_mhz"] is not None and gpu["min_mhz"] == gpu["max_mhz"])
    if not gpu_ok:
        why.append("GPU min != max frequency")
    return (cpu_ok and gpu_ok), "; ".join(why) or "CPU and GPU min == max frequency"


def thermal_zones(root: str = "/") -> dict[str, dict]:
    """{type: {"path", "temp_c", "trip_c"}} where trip_c is the lowest passive/hot trip."""
    out = {}
    for d in sorted(glob.glob(_p(root, "/sys/class/thermal/thermal_zone*"))):
        try:
            name = _read("/", os.path.join(d, "type"))
        except OSError:
            continue
        trips = []
        for tf in glob.glob(os.path.join(d, "trip_point_*_type")):
            try:
                kind = _read("/", tf)
                if kind in ("passive", "hot"):
                    trips.append(int(_read("/", tf.replace("_type", "_temp"))) / 1000.0)
            except (OSError, ValueError):
                continue
        out[name] = {"path": os.path.join(d, "temp"), "trip_c": min(trips) if trips else None}
    return out


def read_temps(root: str = "/") -> dict[str, float]:
    temps = {}
    for d in sorted(glob.glob(_p(root, "/sys/class/thermal/thermal_zone*"))):
        try:
            name = _read("/", os.path.join(d, "type"))
            value = int(_read("/", os.path.join(d, "temp"))) / 1000.0
        except (OSError, ValueError):
            continue
        if value > -256.0:  # -256 C: zone offline on Jetson
            temps[name] = value
    return temps


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
    s.set("os", lambda: re.search(r'PRETTY_NAME="?([^"\n]+)', _read(root, "/etc/os-release")).group(1))
    s.set("cpu_model", lambda: _cpu_model(root))
    s["cpu_count"] = os.cpu_count()
    meminfo = {}
    try:
        meminfo = parse_meminfo(_read(root, "/proc/meminfo"))
    except OSError as e:
        s["unavailable"]["memory_total_mb"] = str(e)
    s["memory_total_mb"] = round(meminfo["MemTotal"] / 1024, 1) if "MemTotal" in meminfo else None
    policies = cpu_policies(root)
    s["cpu_governors"] = sorted({p["governor"] for p in policies if p["governor"]}) or None
    if not policies:
        s["unavailable"]["cpu_governors"] = s["unavailable"]["cpu_policies"] = \
            "no /sys/devices/system/cpu/cpufreq/policy*"
    s["cpu_policies"] = policies or None
    s.set("cpu_boost", lambda: _read(root, "/sys/devices/system/cpu/cpufreq/boost"))
    zones = thermal_zones(root)
    s["thermal_trips_c"] = {k: v["trip_c"] for k, v in zones.items() if v["trip_c"] is not None} or None
    if s["thermal_trips_c"] is None:
        s["unavailable"]["thermal_trips_c"] = ("no passive/hot trip points under /sys/class/thermal"
                                              if zones else "no /sys/class/thermal/thermal_zone*")
    s.set("gpus", lambda: _gpu(run)[0])

    if jetson:
        s.set("board_model", lambda: _read(root, "/proc/device-tree/model"))
        s.set("compatible", lambda: _compatible(root))
        s.set("soc", lambda: next((c for c in reversed(s["compatible"] or []) if "tegra" in c), None))
        s.set("l4t", lambda: parse_l4t(_read(root, "/etc/nv_tegra_release")))
        s.set("jetpack", lambda: _jetpack(s, run))
        s.set("cuda", lambda: _cuda_version(root))
        s.set("cudnn", lambda: _cudnn_version(root))
        s.set("tensorrt", lambda: _module_version("tensorrt"))
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
        s.set("cuda", lambda: _cuda_version(root))
        s.set("tensorrt", lambda: _module_version("tensorrt"))
    return dict(s)


def _compatible(root: str) -> list[str]:
    with open(_p(root, "/proc/device-tree/compatible"), "rb") as f:
        return [c.decode(errors="replace") for c in f.read().split(b"\x00") if c]


def _cpu_model(root: str) -> str | None:
    text = _read(root, "/proc/cpuinfo")
    for key in ("model name", "Model", "Hardware", "CPU part"):
        m = re.search(rf"^{key}\s*:\s*(.+)$", text, re.MULTILINE)
        if m:
            return m.group(1).strip()
    return None


def sample_state(root: str = "/") -> dict:
    """Temperatures (C) and clocks (MHz) now. Cheap: a few dozen small sysfs reads."""
    out: dict[str, Any] = {"temps_c": read_temps(root)}
    cur = []
    for d in glob.glob(_p(root, "/sys/devices/system/cpu/cpu[0-9]*/cpufreq/scaling_cur_freq")):
        try:
            cur.append(int(_read("/", d)) / 1000.0)
        except (OSError, ValueError):
            continue
    if cur:
        out["cpu_mhz"] = {"min": min(cur), "max": max(cur), "mean": round(sum(cur) / len(cur), 1)}
    gpu = gpu_devfreq(root)
    if gpu and gpu.get("cur_mhz") is not None:
        out["gpu_mhz"] = gpu["cur_mhz"]
    return out


def jetson_memory_mb(root: str = "/") -> dict | None:
    """System memory the way jtop reads it (unified memory: CPU and GPU share it):
    used = MemTotal - MemFree - Buffers - Cached; gpu = NvMapMemUsed (memory mapped for the
    GPU through nvmap). System-wide, not per process. None off Jetson."""
    try:
        mi = parse_meminfo(_read(root, "/proc/meminfo"))
    except OSError:
        return None
    used = mi.get("MemTotal", 0) - mi.get("MemFree", 0) - mi.get("Buffers", 0) - mi.get("Cached", 0)
    return {"used": used / 1024.0, "total": mi.get("MemTotal", 0) / 1024.0,
            "gpu_nvmap": mi["NvMapMemUsed"] / 1024.0 if "NvMapMemUsed" in mi else None}


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
