"""``tegrastats`` lines -> dicts, and a ``PowerSource`` that runs ``tegrastats --interval``.

Line formats differ by generation (recorded examples in ``tests/fixtures/tegrastats/``):

=========================  ===================================================================
JetPack 3/4 (TX2, Xavier)  ``RAM 1685/7854MB (lfb 1044x4MB) ... VDD_IN 1931/1931`` (mW implied)
JetPack 5 (Orin)           ``04-11-2025 10:36:27 RAM ... CPU@44.562C ... VDD_GPU_SOC 2340mW/2340mW
                           ... NC 0mW/0mW``
JetPack 6 (Orin)           lower-case zones ``cpu@52.562C``, ``GR3D_FREQ 0%@[0,0]``
JetPack 7.0/7.1 (Thor)     ``GR3D_FREQ @[0,0,0]`` (no load), ``VDD_GPU``/``VDD_CPU_SOC_MSS``
JetPack 7.2 (Orin, Thor)   ``cpu@50.718C/50.718C`` (cur/max), ``VDD_GPU 4925mW/4925mW/4925mW``
=========================  ===================================================================

For every rail only the *first* number is used: it is the instantaneous reading. The others
are tegrastats' running average (and, on 7.2, maximum); energy must come from integrating
instantaneous samples over the timed window, never from those.
"""
from __future__ import annotations

import re
import shutil
import subprocess
import threading
import time
from typing import Any

from . import rails as _rails
from .power import PowerSource

_DATE = re.compile(r"^\s*(\d{2}-\d{2}-\d{4} \d{2}:\d{2}:\d{2})\s+")
_RAM = re.compile(r"\bRAM (\d+)/(\d+)MB(?: \(lfb (\d+)x(\d+)([kMG]B)\))?")
_SWAP = re.compile(r"\bSWAP (\d+)/(\d+)MB(?: \(cached (\d+)MB\))?")
_CPU = re.compile(r"\bCPU \[([^\]]*)\](?:@(\d+))?", re.IGNORECASE)
_EMC = re.compile(r"\bEMC_FREQ (?:(\d+)%)?(?:@(\d+))?")
_GR3D = re.compile(r"\bGR3D_FREQ (?:(\d+)%)?(?:@(?:\[([\d,]*)\]|(\d+)))?")
# name@12.5C or name@12.5C/13C (JetPack 7.2: current/max); -256C = zone offline.
_TEMP = re.compile(r"(?<![\w@/])([A-Za-z][\w]*)@(-?\d+(?:\.\d+)?)C(?:/(-?\d+(?:\.\d+)?)C)?")
# NAME cur/avg | NAME curmW/avgmW | NAME curmW/avgmW/maxmW; must end at a space or line end
# so "RAM 14700/15692MB" and "SWAP 0/2048MB" never match.
_RAIL = re.compile(r"(?<![\w@/%\[])([A-Z][A-Z0-9_]*) (\d+)(?:mW)?/(\d+)(?:mW)?(?:/(\d+)(?:mW)?)?"
                   r"(?=\s|$)")
OFFLINE_C = -256.0


class TegrastatsParseError(ValueError):
    pass


def _int(s: str | None) -> int | None:
    return int(s) if s not in (None, "") else None


def parse_line(line: str) -> dict[str, Any]:
    """One tegrastats line -> dict. Raises ``TegrastatsParseError`` when the line carries no
    ``RAM used/totalMB`` field (every generation prints one)."""
    text = line.strip()
    ram = _RAM.search(text)
    if not ram:
        raise TegrastatsParseError("no 'RAM used/totalMB' field")
    out: dict[str, Any] = {}
    m = _DATE.match(text)
    out["time"] = m.group(1) if m else None
    out["ram_used_mb"] = int(ram.group(1))
    out["ram_total_mb"] = int(ram.group(2))
    if ram.group(3):
        out["ram_lfb"] = {"blocks": int(ram.group(3)), "block": f"{ram.group(4)}{ram.group(5)}"}
    sw = _SWAP.search(text)
    if sw:
        out["swap_used_mb"] = int(sw.group(1))
        out["swap_total_mb"] = int(sw.group(2))
        out["swap_cached_mb"] = _int(sw.group(3))

    cpu = _CPU.search(text)
    if cpu:
        loads: list[int | None] = []
        freqs: list[int | None] = []
        shared_freq = _int(cpu.group(2))  # old form "CPU [17%,13%]@408"
        for item in cpu.group(1).split(","):
            item = item.strip()
            if not item or item == "off":
                loads.append(None)
                freqs.append(None)
                continue
            lm = re.match(r"(\d+)%(?:@(\d+))?$", item)
            loads.append(int(lm.group(1)) if lm else None)
            freqs.append(_int(lm.group(2)) if lm and lm.group(2) else shared_freq)
        out["cpu_load_pct"] = loads
        out["cpu_freq_mhz"] = freqs
        out["cpus_online"] = sum(1 for x in loads if x is not None)

    emc = _EMC.search(text)
    if emc:
        out["emc_load_pct"] = _int(emc.group(1))
        out["emc_freq_mhz"] = _int(emc.group(2))

    gr = _GR3D.search(text)
    out["gpu_load_pct"] = _int(gr.group(1)) if gr else None
    if gr and gr.group(2) is not None:
        out["gpu_freq_mhz"] = [int(x) for x in gr.group(2).split(",") if x]
    elif gr and gr.group(3) is not None:
        out["gpu_freq_mhz"] = [int(gr.group(3))]
    else:
        out["gpu_freq_mhz"] = None

    temps: dict[str, float] = {}
    temps_max: dict[str, float] = {}
    offline: list[str] = []
    for name, cur, mx in _TEMP.findall(text):
        value = float(cur)
        if value <= OFFLINE_C:
            offline.append(name)
            continue
        temps[name] = value
        if mx:
            temps_max[name] = float(mx)
    out["temps_c"] = temps
    if temps_max:
        out["temps_max_c"] = temps_max
    if offline:
        out["temps_offline"] = offline

    rails: dict[str, float] = {}
    unconnected = 0
    for name, cur, _avg, _max in _RAIL.findall(text):
        if _rails.is_unconnected(name):
            unconnected += 1
            continue
        rails[name] = int(cur)
    out["rails_mw"] = rails
    if unconnected:
        out["rails_unconnected"] = unconnected
    if rails:
        total, inp, caveat = _rails.total_and_caveat(rails, "tegrastats")
        out["total_mw"] = total
        out["input_rail"] = inp
        out["total_kind"] = f"input rail {inp}" if inp else "sum of rails"
    else:
        out["total_mw"] = None
        out["input_rail"] = None
        out["total_kind"] = None
    return out


class TegrastatsSource(PowerSource):
    """Runs ``tegrastats --interval MS`` and hands out the newest line's rails.

    The values are instantaneous INA3221 readings taken by tegrastats every ``interval_ms``;
    between two lines ``read_mw`` returns the newest one again (a step-hold signal), so keep
    ``interval_ms`` at or below the Monitor's interval where the board allows it."""

    name = "tegrastats"

    def __init__(self, exe: str | None = None, interval_ms: int = 100, first_line_s: float = 5.0):
        exe = exe or shutil.which("tegrastats") or "/usr/bin/tegrastats"
        self.interval_ms = int(interval_ms)
        self.caveat = "tegrastats"
        self._lock = threading.Lock()
        self._latest: tuple[float, dict] | None = None
        self._error: str | None = None
        self._proc = subprocess.Popen([exe, "--interval", str(self.interval_ms)],
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                      text=True, bufsize=1)
        self._thread = threading.Thread(target=self._pump, name="tegrastats-reader", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + first_line_s
        while time.monotonic() < deadline:
            with self._lock:
                if self._latest is not None or self._error:
                    break
            if self._proc.poll() is not None:
                break
            time.sleep(0.02)
        with self._lock:
            latest, error = self._latest, self._error
        if latest is None:
            err = error or ""
            if self._proc.poll() is not None and self._proc.stderr is not None:
                err = (err + " " + self._proc.stderr.read().strip()).strip()
            self.close()
            raise RuntimeError(f"tegrastats gave no parseable line with rails in {first_line_s:.0f} s"
                               + (f": {err}" if err else ""))
        _, self.caveat = _rails.with_total(latest[1]["rails_mw"], "tegrastats")

    def _pump(self) -> None:
        assert self._proc.stdout is not None
        for line in self._proc.stdout:
            try:
                rec = parse_line(line)
            except TegrastatsParseError:
                continue
            if not rec["rails_mw"]:
                with self._lock:
                    self._error = "tegrastats prints no power rails here (run as root?)"
                continue
            with self._lock:
                self._latest = (time.monotonic(), rec)

    def read_mw(self) -> dict[str, float]:
        with self._lock:
            latest = self._latest
        if latest is None:
            raise RuntimeError("no tegrastats sample yet")
        age = time.monotonic() - latest[0]
        if age > max(2.0, 5 * self.interval_ms / 1000.0):
            raise RuntimeError(f"tegrastats output stale ({age:.1f} s old; process "
                               f"{'exited' if self._proc.poll() is not None else 'silent'})")
        out, _ = _rails.with_total(latest[1]["rails_mw"], "tegrastats")
        return out

    def close(self) -> None:
        if self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(timeout=2)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait(timeout=2)
