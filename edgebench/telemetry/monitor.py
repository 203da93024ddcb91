"""Background sampler for one worker process: memory always, power where a sensor exists.

Every figure is taken over a marked window (``Monitor.window()``): power and energy over
exactly the timed window behind the figure they sit beside (``window_power``), memory as the
process-tree RSS, the system's used memory (CPU and GPU share it on a Jetson) and the
device's own figure (NvMap on Jetson, NVML on discrete GPUs) where readable."""
from __future__ import annotations

import contextlib
import dataclasses
import os
import threading
import time
from typing import Callable, Optional

import psutil

from . import maths
from .memory import SYSTEM_MEMORY_SOURCE, system_used_mb, tree_rss_mb
from .power import PowerSource
from .sources import detect_power_source


# A reader that hands back one sample for a whole window (jtop's client when its service is
# starved: under QEMU beside CI's workers, 2026-11-27, MAXN's 16 s window was its idle to the
# last digit) gives a figure that is not a measurement of the window. Real rails move by a
# few mW between samples, so every sample of 2 s or more being equal is said, not hidden.
UNCHANGED_MIN_SAMPLES = 5
UNCHANGED_MIN_SPAN_S = 2.0


def unchanged_note(source: str, n: int, span_s: float) -> str:
    return (f"{source}'s reading did not change over the window ({n} samples, {span_s:.1f} s): "
            "the source may have served one sample throughout (a stalled reader, e.g. a starved "
            "jtop service), so the window's power may be older than the window")


# A stretch of a window this long with no power sample is said in the record (power_w.gap):
# the figure there is interpolated between the samples around it. jtop's service samples
# every 0.5 s and drops a client silent for 3 s (jtop_source.SERVICE_DROP_S).
POWER_GAP_NOTE_S = 3.0


def gap_note(source: str, longest_s: float, span_s: float) -> str:
    return (f"{source} gave no sample for {longest_s:.1f} s of the {span_s:.1f} s window: the "
            "power there is interpolated between the samples around it")


def _closed(source: PowerSource) -> None:
    """Close a source that failed (stop() closes only the live ones: a jtop client would
    keep its thread and socket); None, what the monitor then holds instead."""
    with contextlib.suppress(Exception):
        source.close()
    return None


NET_AT_OR_BELOW_IDLE = ("mean power at or below the idle measured before the task: the load "
                        "drew no power above idle that this source resolved (samples older "
                        "than the window, or a load below the sensor's noise); net power and "
                        "energy per sample are as measured")


@dataclasses.dataclass
class WindowSummary:
    t0: float
    t1: float
    n_items: int = 0
    # Monitor.window_power's result, kept once computed: the by_batch entry and the record
    # level then show the very same figure for the same window.
    power: dict | None = dataclasses.field(default=None, repr=False)


def _in_window(samples: list[tuple[float, float]], t0: float, t1: float) -> list[float]:
    """Values sampled in [t0, t1] plus the nearest sample on each side: ``window()`` reads
    once just before t0 and once just after t1, so even a window shorter than the sampling
    interval has its edges."""
    pts = sorted(samples)
    before = [p for p in pts if p[0] < t0][-1:]
    after = [p for p in pts if p[0] > t1][:1]
    return [v for _, v in before + [p for p in pts if t0 <= p[0] <= t1] + after]


class Monitor:
    """Samples process-tree RSS and (if present) power every ``interval_s`` seconds.

    ``device_state`` is an optional callable returning temperatures/clocks (Jetson, NVML);
    it is read once a second at most, since such reads are slow on some boards."""

    def __init__(self, pid: Optional[int] = None, interval_s: float = 0.1,
                 power: PowerSource | None | str = "auto",
                 device_state: Callable[[], dict] | None = None,
                 device_memory: Callable[[], float | None] | None = None,
                 device_memory_source: str = ""):
        self.proc = psutil.Process(pid or os.getpid())
        self.interval_s = interval_s
        if power == "auto":
            power, self.power_reason = detect_power_source()
        else:
            self.power_reason = "" if power else "power sampling disabled"
        self.power: PowerSource | None = power
        # Kept after the source fails (sample_now drops it): the samples it gave still carry
        # its name, caveat and events, and power_reason says why it stopped.
        self.power_given: PowerSource | None = power
        # EDGEBENCH_POWER_CHECK=<source>: a second source read at the same instants, so that
        # one source can be checked against another over the very same window (jtop against
        # the INA3221 files it reads itself; sources.check_source).
        self.check: PowerSource | None = None
        self.check_reason = ""
        self.check_watts: list[tuple[float, float]] = []
        if self.power is not None:
            from .sources import check_source

            self.check, self.check_reason = check_source(self.power.name)
        self.device_state = device_state
        self.device_memory = device_memory
        self.device_memory_source = device_memory_source
        self.baseline_mb = tree_rss_mb(self.proc)
        self.start_mb = self.baseline_mb
        self.framework_mb = None
        self.device_baseline_mb = device_memory() if device_memory else None
        self.rss: list[tuple[float, float]] = []
        self.device_mem: list[tuple[float, float]] = []
        self.sys_mem: list[tuple[float, float]] = []
        self.sys_baseline_mb = system_used_mb()
        self.sys_total_mb = psutil.virtual_memory().total / 2**20
        self.watts: list[tuple[float, float]] = []
        self.rails: dict[str, list[tuple[float, float]]] = {}
        self.states: list[tuple[float, dict]] = []
        self.idle_w: float | None = None
        self.windows: list[WindowSummary] = []
        # The window behind the record's own figure (latency: its one window; throughput:
        # the best batch size's): the record's power_w and energy are over it alone.
        self.figure_window: WindowSummary | None = None
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._last_state = 0.0

    def rebaseline(self, rss_mb: float | None = None, sys_mb: float | None = None) -> None:
        """Memory baseline = now. Called after the backend is imported and before the model
        is built, so the delta is the model's footprint, not the framework's import. A cell
        forked from a process that built the model already passes that process's figures
        from before the build (``rss_mb``, ``sys_mb``)."""
        self.framework_mb = tree_rss_mb(self.proc) if rss_mb is None else rss_mb
        self.baseline_mb = self.framework_mb
        if self.device_memory:
            self.device_baseline_mb = self.device_memory()
        self.sys_baseline_mb = system_used_mb() if sys_mb is None else sys_mb
        with self._lock:
            self.rss.clear()
            self.sys_mem.clear()

    # -- sampling ---------------------------------------------------------------------
    def sample_now(self) -> None:
        t = time.perf_counter()
        rss = tree_rss_mb(self.proc)
        dev = self.device_memory() if self.device_memory else None
        sysm = system_used_mb()
        mw = None
        if self.power is not None:
            try:
                mw = self.power.read_mw()
            except Exception as e:  # noqa: BLE001 - a failing sensor must not kill the task
                self.power_reason = f"power source {self.power.name} failed: {e}"
                self.power = _closed(self.power)
        check_mw = None
        if self.check is not None:
            try:
                check_mw = self.check.read_mw()
            except Exception as e:  # noqa: BLE001 - the check must not stop the measurement
                self.check_reason = f"power check source {self.check.name} failed: {e}"
                self.check = _closed(self.check)
        state = None
        if self.device_state and t - self._last_state >= 1.0:
            self._last_state = t
            with contextlib.suppress(Exception):
                state = self.device_state()
        with self._lock:
            self.rss.append((t, rss))
            if dev is not None:
                self.device_mem.append((t, dev))
            if sysm is not None:
                self.sys_mem.append((t, sysm))
            if mw:
                total = mw.get("total", sum(v for k, v in mw.items() if k != "total"))
                self.watts.append((t, total / 1000.0))
                for rail, v in mw.items():
                    if rail != "total":
                        self.rails.setdefault(rail, []).append((t, v / 1000.0))
            if check_mw:
                self.check_watts.append((t, check_mw.get("total", 0.0) / 1000.0))
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
        for src in (self.power, self.check):
            if src is not None:
                with contextlib.suppress(Exception):
                    src.close()

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
    def window_memory(self, w: WindowSummary) -> dict:
        """Peaks inside window ``w``: process-tree RSS, system used memory (and its
        time-weighted mean), device memory (NvMap/NVML) where readable; None where unsampled."""
        with self._lock:
            rss = _in_window(self.rss, w.t0, w.t1)
            sysm = _in_window(self.sys_mem, w.t0, w.t1)
            cut = maths.window(self.sys_mem, w.t0, w.t1)
            dev = _in_window(self.device_mem, w.t0, w.t1)
        mean = maths.time_weighted_mean([p[0] for p in cut], [p[1] for p in cut])

        def r(v):
            return None if v is None else round(v, 1)
        return {"peak_rss_mb": r(max(rss, default=None)),
                "system_memory_peak_mb": r(max(sysm, default=None)),
                "system_memory_mean_mb": r(mean),
                "device_memory_peak_mb": r(max(dev, default=None))}

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
                if self.device_memory_source:
                    out["device"]["source"] = self.device_memory_source
            sysm = list(self.sys_mem)
            windows = list(self.windows)
        system = self._system_memory(sysm, windows)
        if system is not None:
            out["system"] = system
        return out

    def _system_memory(self, sysm: list[tuple[float, float]], windows: list[WindowSummary]):
        """System used memory: peak and time-weighted mean over the timed windows (the
        study's "system memory during inference"), or over the whole cell where no window
        was marked (parity, convert)."""
        if not sysm:
            return None
        windows = [w for w in windows if w.t1 > w.t0]
        over = "timed windows" if windows else "whole cell"
        if windows:
            peak = max(max(_in_window(sysm, w.t0, w.t1)) for w in windows)
            weighted = span = 0.0
            for w in windows:
                cut = maths.window(sysm, w.t0, w.t1)
                m = maths.time_weighted_mean([x[0] for x in cut], [x[1] for x in cut])
                weighted, span = weighted + m * (w.t1 - w.t0), span + (w.t1 - w.t0)
            mean = weighted / span
        else:
            pts = sorted(sysm)
            peak = max(v for _, v in pts)
            mean = maths.time_weighted_mean([x[0] for x in pts], [x[1] for x in pts])
        base = self.sys_baseline_mb
        return {"baseline": round(base, 1) if base is not None else None,
                "peak": round(peak, 1), "mean": round(mean, 1),
                "delta": round(peak - base, 1) if base is not None else None,
                "total": round(self.sys_total_mb, 1), "over": over,
                "source": SYSTEM_MEMORY_SOURCE}

    def window_power(self, w: WindowSummary) -> dict | None:
        """Power over exactly window ``w``: mean, idle, net (W), window_s, rails, and
        energy_mj_per_sample = net x window_s / w.n_items. None without power samples.
        Computed once per window (kept on ``w``)."""
        if w.power is not None:
            return w.power
        if not self.watts:
            return None
        with self._lock:
            s = maths.energy_summary(self.watts, w.t0, w.t1, self.idle_w, w.n_items)
            pts = [(t, v) for t, v in self.watts if w.t0 <= t <= w.t1]   # as read, no edges
            inside = [v for _, v in pts]
            times = [w.t0, *(t for t, _ in pts), w.t1]
            longest = max(b - a for a, b in zip(times, times[1:]))    # no sample for that long
            same = len(inside) >= UNCHANGED_MIN_SAMPLES and len(set(inside)) == 1
            unchanged = len(inside) if same and s["window_s"] >= UNCHANGED_MIN_SPAN_S else 0
            rails = {}
            for rail, pts in self.rails.items():
                cut = maths.window(pts, w.t0, w.t1)
                rails[rail] = maths.time_weighted_mean([p[0] for p in cut], [p[1] for p in cut])
            check = None
            if self.check_watts or self.check_reason:
                cut = maths.window(self.check_watts, w.t0, w.t1)
                check = {"mean": maths.time_weighted_mean([p[0] for p in cut], [p[1] for p in cut])
                         if cut else None, "n_samples": len(cut)}
        w.power = {"mean": s["mean"], "idle": s["idle"], "net": s["net"], "rails": rails,
                   "window_s": s["window_s"], "n_items": w.n_items,
                   "energy_mj_per_sample": s["energy_mj_per_sample"], "check": check,
                   "unchanged": unchanged,      # samples all equal (0: it moved, or too few)
                   "longest_gap_s": longest}
        return w.power

    def power_summary(self, w: WindowSummary | None = None
                      ) -> tuple[dict | None, str | None, float | None]:
        """(power_w, power_reason, energy_mj_per_sample) over exactly one window: ``w``, else
        the figure's window (``figure_window``), else the last one marked. Energy per sample
        is net power x that window's length / the samples timed in it, never spread over
        several windows or the gaps between them."""
        if not self.watts:
            return None, self.power_reason or "no power samples", None
        w = w or self.figure_window or (self.windows[-1] if self.windows else None)
        if w is None:
            return None, "no timed window was marked", None
        p = self.window_power(w)
        sig = maths.sig
        power = {"mean": sig(p["mean"]), "idle": sig(p["idle"]), "net": sig(p["net"]),
                 "rails": {k: sig(v) for k, v in p["rails"].items()},
                 "window_s": sig(p["window_s"]), "source": getattr(self.power_given, "name", None),
                 "caveat": getattr(self.power_given, "caveat", "") if self.power_given else ""}
        if p.get("check") is not None:
            power["check"] = self._check_figures(p["mean"], p["check"])
        if p["unchanged"]:
            power["unchanged"] = unchanged_note(power["source"] or "the power source",
                                                p["unchanged"], p["window_s"])
        if p["longest_gap_s"] > POWER_GAP_NOTE_S:
            power["gap"] = gap_note(power["source"] or "the power source",
                                    p["longest_gap_s"], p["window_s"])
        events = getattr(self.power_given, "events", None)
        if events:
            power["source_events"] = list(events)
        if p["net"] is not None and p["net"] <= 0:
            # Kept as measured (never clamped): the reader is told why it is not positive.
            power["note"] = NET_AT_OR_BELOW_IDLE
        # A source that failed during the task stops giving samples (power_w.gap then shows
        # where): its reason goes in the record, before the idle note.
        reason = self.power_reason or (None if self.idle_w is not None
                                       else "idle power not measured: energy not net of idle")
        return power, reason, sig(p["energy_mj_per_sample"])

    def _check_figures(self, mean: float | None, check: dict) -> dict:
        from .sources import CHECK_ENV

        sig = maths.sig
        name = os.environ.get(CHECK_ENV, "").strip().lower()
        out = {"source": getattr(self.check, "name", None) or name,
               "mean": sig(check["mean"]) if check["mean"] is not None else None,
               "n_samples": check["n_samples"]}
        if check["mean"] and mean is not None:
            out["diff_w"] = sig(mean - check["mean"])
            out["rel_diff"] = sig((mean - check["mean"]) / check["mean"])
        else:
            out["diff_w"] = out["rel_diff"] = None
            out["reason"] = self.check_reason or "no check samples in the window"
        if self.check is not None:
            out["caveat"] = getattr(self.check, "caveat", "")
        return out

    def device_states(self) -> list[dict]:
        with self._lock:
            return [dict(s, t=round(t - self.windows[0].t0, 3) if self.windows else t)
                    for t, s in self.states]
