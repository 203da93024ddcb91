"""Statistics behind ``python -m edgebench.compare`` (docs/compare.md): the bootstrap of a
ratio of medians from per-call timings, and the verdict rule.

- ``ratio_ci``     median(b)/median(a) with a 95% circular-block-bootstrap interval
- ``median_ci``    one sample's median with its interval (trend plots)
- ``process_sd``   how much a median moves from one worker process to the next
- ``widen``        a ratio's interval, widened by that between-process noise
- ``verdict``      faster / slower / no significant change, at a minimum effect size

Everything is on the *time per call* ratio B/A (> 1: B takes longer). Throughput at a batch
size is batch*1000/ms-per-call, so its ratio is the inverse of the time ratio and its interval
the inverse interval; one rule serves both.

Why a block bootstrap: calls of one run are not independent (clock and cache state drift over
seconds), so resampling single calls gives an interval that is too narrow. Resampling runs of
``block_len(n)`` consecutive calls (circular, n^(1/3) calls a block) keeps short-range
dependence. Neither captures that each cell is measured in its own process, and that a
process's median can sit several per cent (on a shared 2-vCPU VM, tens of per cent) from the
next one's: memory placement, thread start-up, the machine's state in that second
(docs/compare.md#the-statistics). One run measures batch 1 twice per model and variant, in two
processes (the latency cell and the throughput cell's batch-1 step), so each run carries a
sample of that noise: ``process_sd`` estimates it per variant from both runs' pairs, and
``widen`` adds it to the bootstrap interval. The minimum effect size (``--threshold``) then
asks for a change worth acting on, and "slower" needs the whole interval beyond it.
"""
from __future__ import annotations

import zlib
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

N_RESAMPLES = 2000
LEVEL = 0.95
MIN_CALLS = 3                 # fewer per-call times on a side: no interval, the point ratio only
_CHUNK_ELEMENTS = 4_000_000   # resampled values held at once (bounds memory for long windows)

SLOWER, FASTER, SAME = "slower", "faster", "no significant change"


@dataclass
class Ratio:
    """B/A of per-call time (point from the medians), with its interval when there is one."""
    point: float
    low: float | None = None
    high: float | None = None
    n_a: int | None = None
    n_b: int | None = None

    @property
    def has_ci(self) -> bool:
        return self.low is not None

    def inverse(self) -> Ratio:
        """The same comparison as a rate (throughput): 1/ratio, interval flipped."""
        return Ratio(1.0 / self.point, None if self.high is None else 1.0 / self.high,
                     None if self.low is None else 1.0 / self.low, self.n_a, self.n_b)


def block_len(n: int) -> int:
    """Block length of the circular block bootstrap: about n^(1/3) calls (1 for n < 8)."""
    return max(1, round(n ** (1.0 / 3.0))) if n >= 8 else 1


def resampled_medians(x, n_boot: int, rng: np.random.Generator) -> np.ndarray:
    """Medians of ``n_boot`` circular-block-bootstrap resamples of ``x``, vectorised (in
    chunks so a long window does not need n_boot*n values at once)."""
    x = np.asarray(x, dtype=np.float64)
    n = x.size
    blk = block_len(n)
    k = -(-n // blk)                                  # blocks per resample
    offsets = np.arange(blk)
    out = np.empty(n_boot)
    step = max(1, _CHUNK_ELEMENTS // (k * blk))
    for s in range(0, n_boot, step):
        m = min(step, n_boot - s)
        starts = rng.integers(0, n, size=(m, k))
        idx = ((starts[:, :, None] + offsets) % n).reshape(m, k * blk)[:, :n]
        out[s:s + m] = np.median(x[idx], axis=1)
    return out


def _rng(seed: int, key: str) -> np.random.Generator:
    """A generator per cell: the interval of one cell does not depend on which others ran."""
    return np.random.default_rng([seed, zlib.crc32(key.encode())])


def ratio_ci(a, b, n_boot: int = N_RESAMPLES, seed: int = 0, key: str = "",
             level: float = LEVEL) -> Ratio:
    """median(b)/median(a) of per-call times, with a percentile interval from resampling each
    run's calls independently (block bootstrap, see the module note)."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    point = float(np.median(b) / np.median(a))
    if a.size < MIN_CALLS or b.size < MIN_CALLS:
        return Ratio(point, n_a=int(a.size), n_b=int(b.size))
    rng = _rng(seed, key)
    r = resampled_medians(b, n_boot, rng) / resampled_medians(a, n_boot, rng)
    lo, hi = np.quantile(r, [(1 - level) / 2, (1 + level) / 2])
    return Ratio(point, float(lo), float(hi), int(a.size), int(b.size))


def median_ci(x, n_boot: int = N_RESAMPLES, seed: int = 0, key: str = "",
              level: float = LEVEL) -> tuple[float, float | None, float | None]:
    """Median of ``x`` and its interval (None, None with fewer than MIN_CALLS values)."""
    x = np.asarray(x, dtype=np.float64)
    med = float(np.median(x))
    if x.size < MIN_CALLS:
        return med, None, None
    lo, hi = np.quantile(resampled_medians(x, n_boot, _rng(seed, key)),
                         [(1 - level) / 2, (1 + level) / 2])
    return med, float(lo), float(hi)


def process_sd(pairs: list[tuple[float, float]]) -> float | None:
    """The standard deviation of ln(median per-call time) between two worker processes of a
    run, from pairs of medians of the same model, variant and batch size measured in two
    processes: d = ln(m1/m2) has variance 2*sd^2, so sd^2 = mean(d^2)/2. Uncentred on
    purpose: a steady gap between the two tasks' conditions counts as noise (it errs toward
    "no significant change"). None without pairs."""
    d = [np.log(m1 / m2) for m1, m2 in pairs if m1 > 0 and m2 > 0]
    if not d:
        return None
    return float(np.sqrt(np.mean(np.square(d)) / 2.0))


def widen(r: Ratio, sd: float | None, level: float = LEVEL) -> Ratio:
    """``r`` with its interval widened by between-process noise of ``sd`` per side (each
    side's median sits in one process: the ratio moves by sqrt(2)*sd on the log scale). The
    bootstrap half-widths and the process term add in quadrature on the log scale (normal
    approximation), each side of the point separately."""
    if not r.has_ci or not sd:
        return r
    z = NormalDist().inv_cdf((1 + level) / 2)
    extra = (z * np.sqrt(2.0) * sd) ** 2
    lp = np.log(r.point)
    lo = lp - np.sqrt((lp - np.log(r.low)) ** 2 + extra)
    hi = lp + np.sqrt((np.log(r.high) - lp) ** 2 + extra)
    return Ratio(r.point, float(np.exp(lo)), float(np.exp(hi)), r.n_a, r.n_b)


def widen_median(med: float, lo: float | None, hi: float | None, sd: float | None,
                 level: float = LEVEL) -> tuple[float, float | None, float | None]:
    """One run's median interval widened by its between-process sd (a trend point: one
    process), as ``widen`` does for a ratio."""
    if lo is None or hi is None or not sd:
        return med, lo, hi
    z = NormalDist().inv_cdf((1 + level) / 2)
    lm = np.log(med)
    return (med, float(np.exp(lm - np.sqrt((lm - np.log(lo)) ** 2 + (z * sd) ** 2))),
            float(np.exp(lm + np.sqrt((np.log(hi) - lm) ** 2 + (z * sd) ** 2))))


def verdict(r: Ratio, threshold: float) -> str:
    """On the time ratio B/A: slower when the whole interval lies above 1+threshold, faster
    when it lies below 1/(1+threshold) (the threshold is symmetric on a log scale: +5% time is
    -4.8% throughput). Without an interval the point ratio is judged the same way."""
    up, down = 1.0 + threshold, 1.0 / (1.0 + threshold)
    lo, hi = (r.low, r.high) if r.has_ci else (r.point, r.point)
    if lo > up:
        return SLOWER
    if hi < down:
        return FASTER
    return SAME


def note(r: Ratio, threshold: float) -> str:
    """Why a verdict is what it is, when that is not obvious from the figures."""
    if not r.has_ci:
        if r.n_a is not None:
            return f"no CI (fewer than {MIN_CALLS} calls)"
        return "no CI (no raw timings)"
    v = verdict(r, threshold)
    if v == SAME and (r.point > 1 + threshold or r.point < 1 / (1 + threshold)):
        return "point beyond threshold, CI overlaps it"
    return ""
