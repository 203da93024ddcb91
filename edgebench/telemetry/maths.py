"""Pure maths on recorded samples: integration, windowing, idle subtraction.

Kept free of I/O so tests can feed recorded samples."""
from __future__ import annotations

from typing import Sequence


def integrate(times: Sequence[float], values: Sequence[float]) -> float:
    """Trapezoidal integral of values over times (e.g. W over s -> J)."""
    total = 0.0
    for i in range(1, len(times)):
        total += 0.5 * (values[i] + values[i - 1]) * (times[i] - times[i - 1])
    return total


def time_weighted_mean(times: Sequence[float], values: Sequence[float]) -> float | None:
    """Integral / duration; the plain mean when there is a single sample."""
    if not values:
        return None
    if len(values) == 1 or times[-1] <= times[0]:
        return float(sum(values) / len(values))
    return integrate(times, values) / (times[-1] - times[0])


def window(samples: Sequence[tuple[float, float]], t0: float, t1: float) -> list[tuple[float, float]]:
    """Samples (t, v) clipped to [t0, t1], with values interpolated at both edges so the
    integral covers exactly the timed window."""
    pts = sorted(samples)
    if not pts:
        return []

    def at(t: float) -> float:
        if t <= pts[0][0]:
            return pts[0][1]
        if t >= pts[-1][0]:
            return pts[-1][1]
        for (ta, va), (tb, vb) in zip(pts, pts[1:]):
            if ta <= t <= tb:
                return va if tb == ta else va + (vb - va) * (t - ta) / (tb - ta)
        return pts[-1][1]

    inner = [(t, v) for t, v in pts if t0 < t < t1]
    return [(t0, at(t0)), *inner, (t1, at(t1))]


def energy_summary(samples: Sequence[tuple[float, float]], t0: float, t1: float,
                   idle_w: float | None, n_items: int) -> dict:
    """Mean power (W) over [t0, t1], net of idle, and net energy per item in mJ."""
    pts = window(samples, t0, t1)
    times, watts = [p[0] for p in pts], [p[1] for p in pts]
    mean_w = time_weighted_mean(times, watts)
    duration = t1 - t0
    net_w = None if (mean_w is None or idle_w is None) else mean_w - idle_w
    per_item = (net_w * duration / n_items * 1000.0) if (net_w is not None and n_items) else None
    return {"mean": mean_w, "idle": idle_w, "net": net_w, "window_s": duration,
            "n_samples": len(samples), "energy_mj_per_sample": per_item}


def sig(v: float | None, digits: int = 6) -> float | None:
    """``v`` to ``digits`` significant digits (None stays None): how power and energy figures
    are recorded, so a by_batch entry and its record's top-level figure are the same number."""
    if v is None:
        return None
    return float(f"{float(v):.{digits}g}")
