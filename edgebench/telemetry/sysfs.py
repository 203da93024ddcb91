"""Reading the machine's files: sysfs, procfs and /etc readers, and pure parsers of what
they hold (L4T release, ``nvpmodel -q``, cuDNN header, meminfo). No judgement here: the
records built from these and the warnings about them are in ``device_state.py``.

Every reader takes ``root`` so tests can point it at a recreated sysfs/procfs tree.
"""
from __future__ import annotations

import glob
import json
import os
import re
from typing import Any


def path_in(root: str, path: str) -> str:
    """``path`` (absolute) under ``root`` ("/" for this machine)."""
    return os.path.join(root, path.lstrip("/"))


def read_text(path: str, root: str | None = None) -> str:
    """A small sysfs/procfs file, stripped; NULs (device-tree strings) dropped. ``path`` is
    taken under ``root`` when one is given, as it is otherwise."""
    with open(path if root is None else path_in(root, path), "rb") as f:
        return f.read().replace(b"\x00", b"").decode(errors="replace").strip()


def read_int(path: str, root: str | None = None) -> int:
    """The first number of a sysfs file (some carry a unit: "32760 ma"); ValueError when
    there is none."""
    words = read_text(path, root).split()
    return int(words[0] if words else "")


def read_float(path: str, root: str | None = None) -> float:
    words = read_text(path, root).split()
    return float(words[0] if words else "")


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
    if os.path.exists(path_in(root, "/etc/nv_tegra_release")):
        return True
    try:
        return "nvidia,tegra" in read_text("/proc/device-tree/compatible", root)
    except OSError:
        return False


def compatible(root: str = "/") -> list[str]:
    """The device tree's ``compatible`` strings (board first, SoC last)."""
    with open(path_in(root, "/proc/device-tree/compatible"), "rb") as f:
        return [c.decode(errors="replace") for c in f.read().split(b"\x00") if c]


def cpu_model(root: str = "/") -> str | None:
    text = read_text("/proc/cpuinfo", root)
    for key in ("model name", "Model", "Hardware", "CPU part"):
        m = re.search(rf"^{key}\s*:\s*(.+)$", text, re.MULTILINE)
        if m:
            return m.group(1).strip()
    return None


def cuda_toolkit_version(root: str = "/") -> str | None:
    """The CUDA *toolkit* at /usr/local/cuda (JetPack installs it there). A machine with
    only the driver and pip's CUDA libraries has none: the driver's CUDA version is then
    in ``gpus[].cuda_driver`` (NVML)."""
    vj = path_in(root, "/usr/local/cuda/version.json")
    if os.path.isfile(vj):
        with open(vj, encoding="utf-8") as f:
            return json.load(f)["cuda"]["version"]
    vt = path_in(root, "/usr/local/cuda/version.txt")
    if os.path.isfile(vt):
        m = re.search(r"([\d.]+)", read_text("/usr/local/cuda/version.txt", root))
        return m.group(1) if m else None
    raise FileNotFoundError("no CUDA toolkit at /usr/local/cuda (version.json or version.txt);"
                            " the driver's CUDA version, if any, is gpus[].cuda_driver")


def _header_version(root: str, patterns: tuple, parse) -> str | None:
    """The version ``parse`` finds in the first header matching ``patterns`` under ``root``."""
    for pat in patterns:
        for path in sorted(glob.glob(path_in(root, pat))):
            with open(path, encoding="utf-8") as f:
                v = parse(f.read())
            if v:
                return v
    return None


def cudnn_version(root: str = "/") -> str | None:
    return _header_version(root, ("/usr/include/cudnn_version.h", "/usr/include/*/cudnn_version*.h",
                                  "/usr/local/cuda/include/cudnn_version.h"), parse_cudnn_header)


def parse_nvinfer_header(text: str) -> str | None:
    parts = [re.search(rf"#define NV_TENSORRT_{k}\s+(\d+)", text) for k in ("MAJOR", "MINOR", "PATCH")]
    return ".".join(p.group(1) for p in parts) if all(parts) else None


def nvinfer_version(root: str = "/") -> str | None:
    """The system's TensorRT library (JetPack installs it with apt), from its header: a
    fact about the machine, read without importing any Python binding."""
    return _header_version(root, ("/usr/include/NvInferVersion.h", "/usr/include/*/NvInferVersion.h",
                                  "/usr/local/cuda/include/NvInferVersion.h",
                                  "/usr/src/tensorrt/include/NvInferVersion.h"), parse_nvinfer_header)


def cpu_policies(root: str = "/") -> list[dict]:
    out = []
    for d in sorted(glob.glob(path_in(root, "/sys/devices/system/cpu/cpufreq/policy*"))):
        pol: dict[str, Any] = {"policy": os.path.basename(d)}
        for key, f in (("governor", "scaling_governor"), ("min_khz", "scaling_min_freq"),
                       ("max_khz", "scaling_max_freq"), ("hw_max_khz", "cpuinfo_max_freq"),
                       ("cur_khz", "scaling_cur_freq"), ("cpus", "related_cpus")):
            try:
                raw = read_text(os.path.join(d, f))
                pol[key] = raw if key in ("governor", "cpus") else int(raw)
            except (OSError, ValueError):
                pol[key] = None
        out.append(pol)
    return out


def cpu_cur_mhz(root: str = "/") -> list[float]:
    """Every online CPU's current clock (MHz), from cpufreq."""
    cur = []
    for d in glob.glob(path_in(root, "/sys/devices/system/cpu/cpu[0-9]*/cpufreq/scaling_cur_freq")):
        try:
            cur.append(int(read_text(d)) / 1000.0)
        except (OSError, ValueError):
            continue
    return cur


def gpu_devfreq(root: str = "/") -> dict | None:
    """The integrated GPU's devfreq node (Jetson): name, governor, min/max/cur in MHz."""
    for d in sorted(glob.glob(path_in(root, "/sys/class/devfreq/*"))):
        name = os.path.basename(d)
        of_name = ""
        try:
            of_name = read_text(os.path.join(d, "device/of_node/name"))
        except OSError:
            pass
        if not ("gpu" in name or "ga10b" in name or "gv11b" in name or "gp10b" in name
                or of_name == "gpu"):
            continue
        info: dict[str, Any] = {"node": name}
        for key, f in (("min_mhz", "min_freq"), ("max_mhz", "max_freq"), ("cur_mhz", "cur_freq")):
            try:
                info[key] = int(read_text(os.path.join(d, f))) / 1e6
            except (OSError, ValueError):
                info[key] = None
        try:
            info["governor"] = read_text(os.path.join(d, "governor"))
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
    for d in sorted(glob.glob(path_in(root, "/sys/class/thermal/thermal_zone*"))):
        try:
            name = read_text(os.path.join(d, "type"))
        except OSError:
            continue
        trips = []
        for tf in glob.glob(os.path.join(d, "trip_point_*_type")):
            try:
                kind = read_text(tf)
                if kind in ("passive", "hot"):
                    trips.append(int(read_text(tf.replace("_type", "_temp"))) / 1000.0)
            except (OSError, ValueError):
                continue
        out[name] = {"path": os.path.join(d, "temp"), "trip_c": min(trips) if trips else None}
    return out


def read_temps(root: str = "/") -> dict[str, float]:
    temps = {}
    for d in sorted(glob.glob(path_in(root, "/sys/class/thermal/thermal_zone*"))):
        try:
            name = read_text(os.path.join(d, "type"))
            value = int(read_text(os.path.join(d, "temp"))) / 1000.0
        except (OSError, ValueError):
            continue
        if value > -256.0:  # -256 C: zone offline on Jetson
            temps[name] = value
    return temps


def jetson_memory_mb(root: str = "/") -> dict | None:
    """System memory the way jtop reads it (unified memory: CPU and GPU share it):
    used = MemTotal - MemFree - Buffers - Cached; gpu = NvMapMemUsed (memory mapped for the
    GPU through nvmap). System-wide, not per process. None off Jetson."""
    try:
        mi = parse_meminfo(read_text("/proc/meminfo", root))
    except OSError:
        return None
    used = mi.get("MemTotal", 0) - mi.get("MemFree", 0) - mi.get("Buffers", 0) - mi.get("Cached", 0)
    return {"used": used / 1024.0, "total": mi.get("MemTotal", 0) / 1024.0,
            "gpu_nvmap": mi["NvMapMemUsed"] / 1024.0 if "NvMapMemUsed" in mi else None}
