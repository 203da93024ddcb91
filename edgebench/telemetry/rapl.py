"""CPU package power on x86 from RAPL energy counters (Linux powercap sysfs).

Layout (kernel ``Documentation/power/powercap/powercap.rst``)::

    /sys/class/powercap/intel-rapl:0/name                 "package-0"   (also on AMD Zen)
    /sys/class/powercap/intel-rapl:0/energy_uj            cumulative uJ, wraps to 0
    /sys/class/powercap/intel-rapl:0/max_energy_range_uj  wrap point, e.g. 262143328850
    /sys/class/powercap/intel-rapl:0:0/name               "core" (sub-zones: core, uncore, dram)
    /sys/class/powercap/intel-rapl:1/name                 "psys" on some laptops

``energy_uj`` is readable by root only on kernels patched for CVE-2020-8694 (Platypus).
Power is the counter delta over the time between two reads, with one wrap-around allowed:
an average over the sampling interval, not an instantaneous reading.
"""
from __future__ import annotations

import glob
import os
import re
import threading
import time
from typing import Callable

from .power import PowerSource
from .sysfs import read_int, read_text


def counter_delta_uj(prev: int, cur: int, max_range_uj: int) -> int:
    """Energy between two ``energy_uj`` readings, across at most one wrap-around."""
    if cur >= prev:
        return cur - prev
    return (max_range_uj - prev) + cur


def power_mw(prev_uj: int, cur_uj: int, t0: float, t1: float, max_range_uj: int) -> float:
    """Mean power (mW) between two counter readings taken at t0 and t1 (seconds)."""
    if t1 <= t0:
        raise ValueError("t1 must be after t0")
    return counter_delta_uj(prev_uj, cur_uj, max_range_uj) / (t1 - t0) / 1000.0


def discover(powercap_root: str = "/sys/class/powercap") -> tuple[list[dict], str]:
    """Top-level RAPL zones and their DRAM sub-zones: [{name, energy, max}], or ([], reason)."""
    if not os.path.isdir(powercap_root):
        return [], f"no {powercap_root}"
    zones = []
    reasons = []
    for d in sorted(glob.glob(os.path.join(powercap_root, "intel-rapl:*"))):
        base = os.path.basename(d)
        if not re.fullmatch(r"intel-rapl:\d+(:\d+)?", base):
            continue
        try:
            name = read_text(os.path.join(d, "name"))
        except OSError:
            continue
        top = base.count(":") == 1
        if not top and name != "dram":
            continue
        label = name if top else f"dram-{base.split(':')[1]}"
        energy = os.path.join(d, "energy_uj")
        try:
            read_int(energy)
            max_range = read_int(os.path.join(d, "max_energy_range_uj"))
        except PermissionError:
            reasons.append(f"{energy} not readable (root only since the CVE-2020-8694 fix)")
            continue
        except (OSError, ValueError) as e:
            reasons.append(f"{energy}: {e}")
            continue
        zones.append({"name": label, "energy": energy, "max": max_range, "package": top and name.startswith("package")})
    if not zones:
        return [], "; ".join(reasons) or f"no RAPL zones under {powercap_root}"
    return zones, ""


class RaplSource(PowerSource):
    name = "rapl"

    def __init__(self, powercap_root: str = "/sys/class/powercap",
                 clock: Callable[[], float] = time.monotonic, min_interval_s: float = 0.02,
                 prime: bool = True):
        self.zones, reason = discover(powercap_root)
        if not any(z["package"] for z in self.zones):
            raise RuntimeError(reason or "no RAPL package zone")
        self._clock = clock
        self._lock = threading.Lock()
        self._min_interval_s = min_interval_s
        self._last: dict[str, float] | None = None
        self._prev = self._snapshot()
        if prime:  # one real reading now, so the first read_mw never lands inside min_interval
            time.sleep(max(2 * min_interval_s, 0.05))
            self.read_mw()
        names = "+".join(z["name"] for z in self.zones if z["package"])
        self.caveat = (f"RAPL: CPU package only ({names}), mean over each sampling interval "
                       "from energy-counter deltas; GPU, board and PSU losses not included")

    def _snapshot(self) -> tuple[float, list[int]]:
        return self._clock(), [read_int(z["energy"]) for z in self.zones]

    def read_mw(self) -> dict[str, float]:
        """Mean power since the previous read. Reads closer together than ``min_interval_s``
        return the previous figure again: a counter delta over microseconds is noise."""
        with self._lock:
            t1, cur = self._snapshot()
            t0, prev = self._prev
            if t1 - t0 < self._min_interval_s:
                if self._last is not None:
                    return dict(self._last)
                raise RuntimeError("RAPL read again too soon after the first reading")
            self._prev = (t1, cur)
            out = {z["name"]: power_mw(p, c, t0, t1, z["max"])
                   for z, p, c in zip(self.zones, prev, cur)}
            out["total"] = sum(out[z["name"]] for z in self.zones if z["package"])
            self._last = out
        return dict(out)
