"""Measurement loops, identical for every variant (the system under test is only ever
called through ``predictor(batch)``, synchronous, host arrays in and out).

Each task returns (status, fields, reason); telemetry marks exactly the timed window.
"""
from __future__ import annotations

import time

import numpy as np

from converters.base import OutOfMemory

from . import metrics
from .store import RAW_KEY
from .telemetry.maths import sig

_OOM_WORDS = ("out of memory", "outofmemory", "failed to allocate", "cannot allocate",
              "bad_alloc", "resource_exhausted", "cuda_error_out_of_memory")



def raw_ms(ms: np.ndarray) -> list[float]:
    """Per-call milliseconds, to 0.1 us: what comparisons bootstrap from. They ride in the
    record under ``store.RAW_KEY`` until ``store.append`` moves them to the run's sidecar."""
    return [round(float(v), 4) for v in ms]


def is_oom(e: BaseException) -> bool:
    if isinstance(e, (OutOfMemory, MemoryError)):
        return True
    name = type(e).__name__.lower()
    return "outofmemory" in name or any(w in str(e).lower() for w in _OOM_WORDS)


def _fit(sizes, wanted: int) -> int:
    if sizes is None or wanted in sizes:
        return wanted
    below = [b for b in sizes if b <= wanted]
    return below[-1] if below else sizes[0]


def fit_batch(predictor, wanted: int) -> int:
    """``wanted`` when the predictor can run it (``Predictor.batch_sizes``), else its largest
    size below (or its smallest): parity and accuracy give the same logits at any size."""
    return _fit(predictor.batch_sizes, wanted)


def tuned_sizes(predictor) -> list[int] | None:
    """The batch sizes ``predictor`` runs at its best (``Predictor.tuned_batch_sizes``, those
    it can run), sorted; else those it can run (None: any). A TVM build tuned at batch 1
    compiles any other size with untuned kernels: seconds per image on a CPU."""
    can = predictor.batch_sizes
    tuned = sorted(b for b in getattr(predictor, "tuned_batch_sizes", None) or ()
                   if can is None or b in can)
    return tuned or can


def pass_batch(predictor, wanted: int) -> int:
    """The batch a pass over the images (parity, accuracy; MultiStream's queries) runs at:
    ``wanted`` fitted to the sizes the predictor runs at its best (``tuned_sizes``:
    ResNet-152's batch-8 library, untuned, reached 8 of 16 images in 45 s). The logits are
    the same at any size."""
    return _fit(tuned_sizes(predictor), wanted)


def cold_start(predictor, x: np.ndarray) -> float:
    """The first call after load, in ms (includes lazy compilation/allocation)."""
    t = time.perf_counter()
    predictor(x)
    return (time.perf_counter() - t) * 1e3


def timed_calls(predictor, x: np.ndarray, min_count: int, min_s: float, max_s: float) -> np.ndarray:
    """Per-call wall times (ms) until both min_count calls and min_s seconds are reached,
    or max_s has passed. Nothing but the call sits between the two clock reads."""
    times: list[int] = []
    clock = time.perf_counter_ns
    start = clock()
    min_ns, max_ns = int(min_s * 1e9), int(max_s * 1e9)
    while True:
        t0 = clock()
        predictor(x)
        t1 = clock()
        times.append(t1 - t0)
        elapsed = t1 - start
        if (len(times) >= min_count and elapsed >= min_ns) or elapsed >= max_ns:
            break
    return np.asarray(times, dtype=np.float64) / 1e6


def latency(predictor, data, prof: dict, monitor) -> tuple[str, dict, str]:
    cfg = prof["latency"]
    bs = fit_batch(predictor, 1)
    x = data.batch(0, bs)
    for _ in range(cfg["warmup"]):
        predictor(x)
    with monitor.window() as w:
        ms = timed_calls(predictor, x, cfg["min_count"], cfg["min_s"], cfg["max_s"])
        w.n_items = ms.size * bs
    monitor.figure_window = w       # the record's power and energy: this window alone
    fields = {"batch_size": bs, "n": int(ms.size), "latency_ms": metrics.latency_summary(ms),
              "warmup": cfg["warmup"], "window_s": round(w.t1 - w.t0, 3),
              RAW_KEY: {"latency_ms": raw_ms(ms)}}
    if ms.size < cfg["min_count"]:
        return "partial", fields, (f"{ms.size} of {cfg['min_count']} calls within the "
                                   f"{cfg['max_s']} s limit of this profile")
    return "ok", fields, ""


# The max-batch search stops on gain only after this many steps in a row each fail to beat
# the best throughput so far by the profile's ``min_gain``. One step is not enough: a single
# noisy window (a GC pause, another process, a clock change) would end the search below the
# batch the study means by "max-batch throughput". Two in a row is where throughput has
# clearly stopped rising; on the doubling ladder it costs at most one batch size more than a
# one-step rule, and a step that does beat the best resets the count.
FLAT_STEPS_TO_STOP = 2


def _window_fields(monitor, w) -> dict:
    """Memory and power of one batch size's timed window, for its ``by_batch`` entry: the
    energy is net power x this window's length / the samples timed in it (None without a
    power sensor, never estimated)."""
    out = monitor.window_memory(w)
    p = monitor.window_power(w) or {}
    out.update(window_s=sig(w.t1 - w.t0), power_mean_w=sig(p.get("mean")),
               power_net_w=sig(p.get("net")), energy_mj_per_sample=sig(p.get("energy_mj_per_sample")))
    return out


def throughput(predictor, data, prof: dict, monitor, ref_by_batch=None,
               on_step=None) -> tuple[str, dict, str]:
    """Max-batch search: 1, 2, 4, ... (or the sizes the predictor runs at its best,
    ``tuned_sizes``: a TVM build's tuned ones) until OOM, the profile's cap, the time budget,
    or the gain has stopped (``FLAT_STEPS_TO_STOP`` steps in a row); on OOM one step down
    halfway between the last good batch and the failed one.

    ``on_step(fields)``, when given, is called after each batch size with the record's
    fields as measured so far (the worker writes them to disk: a worker killed later, e.g.
    by the OOM killer, still leaves the sizes it measured)."""
    cfg = prof["throughput"]
    # None: doubling; else only the sizes it runs at its best (a TVM build's tuned sizes: an
    # untuned size is compiled for minutes and runs 10-100x slower) or can run, sorted
    sizes = tuned_sizes(predictor)
    tuned_only = sizes is not None and set(sizes) != set(predictor.batch_sizes or ())

    def larger(b: int) -> int:
        if sizes is None:
            return b * 2
        return next((s for s in sizes if s > b), cfg["max_batch"] + 1)

    by_batch: list[dict] = []
    windows: list = []
    raw: dict[str, list] = {}

    def result(stop: str) -> dict:
        metrics.batch_scaling(by_batch, ref_by_batch)
        i = max(range(len(by_batch)), key=lambda k: by_batch[k]["samples_per_s"])
        monitor.figure_window = windows[i]    # the record's power/energy: the best batch's
        top = by_batch[i]
        return {"best_batch": top["batch_size"], "samples_per_s": top["samples_per_s"],
                "by_batch": by_batch, "stop_reason": stop,
                RAW_KEY: {"by_batch_ms": raw}}

    start = time.perf_counter()
    status, reason, stop_reason = "ok", "", ""
    b, last_ok, best, flat = (sizes[0] if sizes else 1), 0, 0.0, 0
    tried_down = False
    while b <= cfg["max_batch"]:
        x = data.tiled(b)
        try:
            for _ in range(cfg["warmup"]):
                predictor(x)
            with monitor.window() as w:
                ms = timed_calls(predictor, x, cfg["min_iters"], cfg["min_s"], 10 * cfg["min_s"])
                w.n_items = ms.size * b
        except Exception as e:  # noqa: BLE001
            if not is_oom(e):
                raise
            stop_reason = f"out of memory at batch {b}: {str(e).splitlines()[0][:200]}"
            mid = (last_ok + b) // 2 if sizes is None else \
                max((s for s in sizes if last_ok < s < b), default=last_ok)
            if not tried_down and mid > last_ok:
                tried_down, b = True, mid
                continue
            break
        sps = b * ms.size / (ms.sum() / 1e3)
        raw[str(b)] = raw_ms(ms)
        by_batch.append({"batch_size": b, "samples_per_s": round(sps, 3), "iters": int(ms.size),
                         "latency_ms_p50": round(float(np.median(ms)), 4),
                         **_window_fields(monitor, w)})
        windows.append(w)
        last_ok = b
        if on_step is not None:
            on_step(result(f"the search had not ended after batch {b}"))
        if tried_down:
            break
        flat = flat + 1 if sps < best * cfg["min_gain"] else 0
        best = max(best, sps)
        if flat >= FLAT_STEPS_TO_STOP:
            stop_reason = (f"gain stopped at batch {b} ({flat} steps in a row < "
                           f"{cfg['min_gain']:g}x the best so far)")
            break
        # The budget cuts the search short only when a larger batch was still to come: a
        # search that crossed it on its last size is complete.
        if time.perf_counter() - start > cfg["budget_s"] and larger(b) <= cfg["max_batch"]:
            status, reason = "partial", f"time budget {cfg['budget_s']:g} s reached after batch {b}"
            break
        b = larger(b)
    else:
        stop_reason = (f"batch cap {cfg['max_batch']} of this profile reached"
                       if sizes is None or sizes[-1] > cfg["max_batch"]
                       else f"largest batch size the variant is tuned for ({sizes[-1]}) reached: "
                            "it would run a larger one with untuned kernels" if tuned_only
                       else f"largest batch size the variant was built for ({sizes[-1]}) reached")
    if not by_batch:
        return "failed", {"by_batch": []}, stop_reason or "no batch size ran"
    return status, result(stop_reason or reason), reason


def run_all(predictor, data, batch_size: int, limit: int | None = None,
            budget_s: float | None = None):
    """Logits for the first ``limit`` images in order, plus the wall time of the pass (data
    normalisation included: the pipeline is part of what accuracy's samples_per_s shows).
    With ``budget_s`` the pass stops after the batch that crosses the budget."""
    outs, labels = [], []
    batch_size = pass_batch(predictor, batch_size)
    t0 = time.perf_counter()
    for x, y in data.batches(batch_size, limit):
        out = predictor(x)
        outs.append(out if isinstance(out, tuple) else np.asarray(out))
        labels.append(y)
        if budget_s is not None and time.perf_counter() - t0 > budget_s:
            break
    wall = time.perf_counter() - t0
    return concat_outputs(outs), np.concatenate(labels), wall


def concat_outputs(outs: list):
    """Batches of a model's output(s) joined: one array, or a tuple of arrays for a model of
    several outputs (``converters.base.host_outputs``)."""
    if outs and isinstance(outs[0], tuple):
        return tuple(np.concatenate([o[i] for o in outs]) for i in range(len(outs[0])))
    return np.concatenate(outs)


def warm_up_pass(predictor, data, batch_size: int, limit: int | None = None) -> int:
    """One untimed call at each batch shape a ``run_all`` pass will use (the full batch and
    the remainder); returns the batch size. A variant that compiles per shape (TVM's static
    shapes compile on first call, torch.compile's guards recompile) does so here, outside
    the pass and its budget: a pass budget bounds running images, not compiling."""
    bs = pass_batch(predictor, batch_size)
    n = min(len(data), limit or len(data))
    for size in dict.fromkeys(s for s in (min(bs, n), n % bs) if s > 0):
        predictor(data.batch(0, size))
    return bs


def budgeted_pass(predictor, data, batch_size: int, limit: int | None = None,
                  budget_s: float | None = None):
    """``run_all`` after ``warm_up_pass``: the parity pass."""
    bs = warm_up_pass(predictor, data, batch_size, limit)
    return run_all(predictor, data, bs, limit, budget_s)


def accuracy(predictor, data, prof: dict, monitor) -> tuple[str, dict, str]:
    bs = warm_up_pass(predictor, data, prof["accuracy_batch"])
    with monitor.window() as w:
        logits, labels, wall = run_all(predictor, data, bs, budget_s=prof.get("pass_budget_s"))
        w.n_items = len(labels)
    monitor.figure_window = w
    # The runner skips this cell without a worker where the model's outputs are known
    # (model_info); this guards a cell run without them, after the pass that shows the shapes.
    if isinstance(logits, tuple) or logits.ndim != 2:
        return "skipped", {}, ("Top-1/Top-5 apply to one [batch, classes] output; this model "
                               "gives " + ", ".join(str(list(np.shape(o))) for o in
                                                    (logits if isinstance(logits, tuple) else [logits])))
    known = labels >= 0
    fields = {"n_images": int(len(labels)), "n_labelled": int(known.sum()),
              "skipped_images": len(data.skipped), "batch_size": bs,
              "samples_per_s": round(len(labels) / wall, 3)}
    if known.any():
        fields["top1"] = round(100.0 * metrics.topk_correct(logits[known], labels[known], 1).mean(), 4)
        fields["top5"] = round(100.0 * metrics.topk_correct(logits[known], labels[known], 5).mean(), 4)
        if len(labels) < len(data):
            return "partial", fields, (f"{len(labels)} of {len(data)} images within the "
                                       f"{prof['pass_budget_s']:g} s budget of this profile")
        return "ok", fields, ""
    fields["top1"] = fields["top5"] = None
    return "partial", fields, "no labelled images: Top-1/Top-5 need labels"
