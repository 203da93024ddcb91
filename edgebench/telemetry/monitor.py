"""Background sampler for one worker process: memory always, power where a sensor exists."""
from __future__ import annotations

import contextlib
import dataclasses
import os
import threading
import time
from typing import Callable, Optional

import psutil

from . import maths
from .power import PowerSource
from .sources import detect_power_source


def tree_rss_mb(proc: psutil.Process) -> float:
    """Resident memory of a process and all its children, in MiB."""
    total = 0
    for p in [proc, *proc.children(recursive=True)]:
        with contextlib.suppress(psutil.Error):
            total += p.memory_info().rss
    return total / 2**20


@dataclasses.dataclass
class WindowSummary:
    t0: float
    t1: float
    n_items: int = 0


class Monitor:
    """Samples process-tree RSS and (if present) power every ``interval_s`` seconds.

    ``device_state`` is an optional callable returning temperatures/clocks (Jetson, NVML);
    it is read once a second at most, since such reads are slow on some boards."""

    def __init__(self, pid: Optional[int] = None, interval_s: float = 0.1,
                 power: PowerSource | None | str = "auto",
                 device_state: Callable[[], dict] | None = None,
                 device_memory: Callable[[], float | None] | None = None):
        self.proc = psutil.Process(pid or os.getpid())
        self.interval_s = interval_s
        if power == "auto":
            power, self.power_reason = detect_power_source()
        else:
            self.power_reason = "" if power else "power sampling disabled"
        self.power: PowerSource | None = power
        self.device_state = device_state
        self.device_memory = device_memory
        self.baseline_mb = tree_rss_mb(self.proc)
        self.start_mb = self.baseline_mb
        self.framework_mb = None
        self.device_baseline_mb = device_memory() if device_memory else None
        self.rss: list[tuple[float, float]] = []
        self.device_mem: list[tuple[float, float]] = []
        self.watts: list[tuple[float, float]] = []
        self.rails: dict[str, list[tuple[float, float]]] = {}
        self.states: list[tuple[float, dict]] = []
        self.idle_w: float | None = None
        self.windows: list[WindowSummary] = []
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._last_state = 0.0

    def rebaseline(self) -> None:
        """Memory baseline = now. Called after the backend is imported and before the model
        is built, so the delta is the model's footprint, not the framework's import."""
        self.framework_mb = tree_rss_mb(self.proc)
        self.baseline_mb = self.framework_mb
        if self.device_memory:
            self.device_baseline_mb = self.device_memory()
        with self._lock:
            self.rss.clear()

    # -- sampling ---------------------------------------------------------------------
    def sample_now(self) -> None:
        t = time.perf_counter()
        rss = tree_rss_mb(self.proc)
        dev = self.device_memory() if self.device_memory else None
        mw = None
        if self.power is not None:
            try:
                mw = self.power.read_mw()
            except Exception as e:  # noqa: BLE001 - a failing sensor must not kill the task
                self.power_reason = f"power source {self.power.name} failed: {e}"
                self.power = None
        state = None
        if self.device_state and t - self._last_state >= 1.0:
            self._last_state = t
            with contextlib.suppress(Exception):
                state = self.device_state()
        with self._lock:
            self.rss.append((t, rss))
            if dev is not None:
                self.device_mem.append((t, dev))
            if mw:
                total = mw.get("total", sum(v for k, v in mw.items() if k != "total"))
                self.watts.append((t, total / 1000.0))
                for rail, v in mw.items():
                    if rail != "total":
                        self.rails.setdefault(rail, []).append((t, v / 1000.0))
            if state:
                self.states.append((t, state))

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_s):
            self.sample_now()

    def start(self) -> "Monitor":
        self.sample_now()
        self._thread = threading.Thread(target=self._loop, name="edgebench-monitor", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread:
            self._thread.join(timeout=5)
        self.sample_now()
        if self.power is not None:
            with contextlib.suppress(Exception):
                self.power.close()

    # -- windows ----------------------------------------------------------------------
    def measure_idle(self, seconds: float) -> None:
        """Idle power just before the task: the mean over ``seconds`` of doing nothing."""
        if self.power is None:
            return
        t0 = time.perf_counter()
        self.sample_now()
        time.sleep(seconds)
        self.sample_now()
        t1 = time.perf_counter()
        with self._lock:
            pts = maths.window(self.watts, t0, t1)
        self.idle_w = maths.time_weighted_mean([p[0] for p in pts], [p[1] for p in pts])

    @contextlib.contextmanager
    def window(self):
        """Marks the timed window; the caller sets ``n_items`` on the yielded summary."""
        self.sample_now()
        w = WindowSummary(time.perf_counter(), 0.0)
        try:
            yield w
        finally:
            w.t1 = time.perf_counter()
            self.sample_now()
            self.windows.append(w)

    # -- results ----------------------------------------------------------------------
    def memory_mb(self) -> dict:
        with self._lock:
            peak = max((v for _, v in self.rss), default=self.baseline_mb)
            out = {"baseline": round(self.baseline_mb, 1), "peak": round(peak, 1),
                   "delta": round(peak - self.baseline_mb, 1), "process_start": round(self.start_mb, 1),
                   "source": "psutil process-tree RSS; baseline after the backend import, "
                             "before the model is built"}
            if self.device_mem:
                dpeak = max(v for _, v in self.device_mem)
                base = self.device_baseline_mb or 0.0
                out["device"] = {"baseline": round(base, 1), "peak": round(dpeak, 1),
                                 "delta": round(dpeak - base, 1)}
        return out

    def power_summary(self) -> tuple[dict | None, str | None, float | None]:
        """(power_w, power_reason, energy_mj_per_sample) over all marked windows."""
        if not self.watts:
            return None, self.power_reason or "no power samples", None
        if not self.windows:
            return None, "no timed window was marked", None
        n = sum(w.n_items for w in self.windows)
        t0, t1 = self.windows[0].t0, self.windows[-1].t1
        with self._lock:
            s = maths.energy_summary(self.watts, t0, t1, self.idle_w, n)
            rails = {}
            for rail, pts in self.rails.items():
                w = maths.window(pts, t0, t1)
                rails[rail] = maths.time_weighted_mean([p[0] for p in w], [p[1] for p in w])
        power = {"mean": s["mean"], "idle": s["idle"], "net": s["net"], "rails": rails,
                 "window_s": s["window_s"], "source": self.power.name if self.power else None,
                 "caveat": getattr(self.power, "caveat", "") if self.power else ""}
        reason = None if self.idle_w is not None else "idle power not measured: energy not net of idle"
        return power, reason, s["energy_mj_per_sample"]

    def device_states(self) -> list[dict]:
        with self._lock:
            return [dict(s, t=round(t - self.windows[0].t0, 3) if self.windows else t)
                    for t, s in self.states]
