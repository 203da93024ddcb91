"""Which tuned kernels get a weight prefetch (``edgebench.tune --prefetch``), kept beside the
tuning database and applied by every build from it.

In ResNet-152 a prefetch made five kernels 1.5-3x slower and cut others' flushed time by a few
per cent (experiments/tvm-resnet152-prefetch-2026-11-28/), so it is chosen kernel by kernel:
each scheduled kernel is built alone without a prefetch and with one in each placement
(``insert.plan``), and all of them are timed in alternating rounds, warm and with every
argument but the data flushed from the caches (as the network's kernel finds its weights; the
data was just written by the kernel before). A placement is kept where, over the rounds, its
flushed time was at least ``gain`` below the kernel's own (median of the per-round ratios) and
faster in at least ``WIN_SHARE`` of the rounds: one pass of one measurement each picked fewer
kernels on a second try, as the VM drifts. Where the model's weights fit in the last-level
cache, its warm time must also be no more than ``WARM_SLACK`` slower (``warm_slack_for``).

The choice names each kernel and the structural hash of its schedule: a build applies it only
to that very kernel, so a database that changed since (new records, ``--rerank``) leaves the
changed kernels without one, and the record counts them (``unmatched``).

    <db_dir>/prefetch.json    {"distance", "locality", "rounds", "gain", ..., "per_kernel"}
"""
from __future__ import annotations

import statistics
import time
from pathlib import Path

from edgebench.util import atomic_write_json

from .. import database
from ..database import PREFETCH as FILE
from .insert import add_prefetch

DISTANCE = 2048         # float32 elements ahead (8 KiB): the best of 1024-16384 measured
LOCALITY = 2            # prefetcht1 (into L2): t0 at 128 floats measured no better
PLACEMENTS = ("stream", "tile")
ROUNDS = 15             # ResNet-152's 25 kernels: 104 s (9 rounds of 10x3 warm: 32 s, noisier)
GAIN = 0.02
WIN_SHARE = 0.75        # of the rounds in which the prefetch must be faster
WARM_SLACK = 0.01       # warm (weights cached) it may be this much slower at most
WARM_NUMBER, WARM_REPEAT = 20, 5
FLUSHED_REPEAT = 20


def choice_path(db_dir) -> Path:
    return Path(db_dir) / FILE


def kernel_hash(func) -> str:
    """The structural hash of a scheduled kernel (before any prefetch), as the database
    hashes a workload."""
    return database.task_hash(func)


def keeps(stats: dict, gain: float = GAIN, warm_slack: float | None = WARM_SLACK) -> bool:
    """Whether one placement's figures (``decide``'s) earn it the kernel. ``warm_slack``
    None: the warm time is not looked at (the network finds every weight in memory)."""
    return (stats["flushed_ratio"] <= 1 - gain and stats["faster_share"] >= WIN_SHARE
            and (warm_slack is None or stats["warm_ratio"] <= 1 + warm_slack))


def decide(flushed: dict, warm: dict, gain: float = GAIN,
           warm_slack: float | None = WARM_SLACK) -> tuple[str | None, dict]:
    """The placement to keep for one kernel, from its per-round times (``flushed`` and
    ``warm``: {arm: [seconds per round]}, arm "none" the kernel without a prefetch), and
    each placement's figures: median flushed ratio, share of rounds faster, warm ratio."""
    stats = {}
    for arm in flushed:
        if arm == "none":
            continue
        ratios = [a / n for a, n in zip(flushed[arm], flushed["none"])]
        stats[arm] = {"flushed_ratio": round(statistics.median(ratios), 4),
                      "faster_share": round(sum(r < 1 for r in ratios) / len(ratios), 3),
                      "warm_ratio": round(statistics.median(warm[arm])
                                          / statistics.median(warm["none"]), 4)}
    return _pick(stats, gain, warm_slack), stats


def _pick(stats: dict, gain: float, warm_slack: float | None) -> str | None:
    ok = [a for a, row in stats.items() if keeps(row, gain, warm_slack)]
    return min(ok, key=lambda a: stats[a]["flushed_ratio"]) if ok else None


def warm_slack_for(weights_bytes: int | None, llc_bytes: int) -> float | None:
    """How much slower warm a kept prefetch may be: ``WARM_SLACK`` where the model's weights
    fit in the last-level cache (a kernel may find them there, as warm), none where they do
    not (every kernel reads its weights from memory each inference, as flushed; ResNet-152:
    230 MiB against 32)."""
    return None if weights_bytes and weights_bytes > llc_bytes else WARM_SLACK


def repick(choice: dict, warm_slack: float | None) -> dict:
    """``choice`` with every kernel's placement picked again from its kept figures under
    another warm slack (to compare rules on the same measurements)."""
    rows = [{**row, "picked": _pick(row["arms"], choice["gain"], warm_slack)}
            for row in choice["per_kernel"]]
    return {**choice, "warm_slack": warm_slack, "per_kernel": rows,
            "chosen": sum(r["picked"] is not None for r in rows)}


def _arms(func, distance: int) -> dict:
    """{placement: the kernel with a prefetch there} for the placements that give one; a
    placement that gives the same kernel as an earlier one is left out."""
    import tvm_ffi

    arms: dict = {}
    for placement in PLACEMENTS:
        new, blocks = add_prefetch(func, distance, LOCALITY, placement)
        if blocks and not any(tvm_ffi.structural_equal(new, f) for f in arms.values()):
            arms[placement] = new
    return arms


def choose(applied, target, distance: int = DISTANCE, rounds: int = ROUNDS,
           gain: float = GAIN, weights_bytes: int | None = None, on_kernel=None) -> dict:
    """Measure every kernel of ``applied`` (a module the database was applied to, without
    prefetch: ``build.apply_database(..., prefetch=False)``) that a prefetch fits, and
    return the choice to ``save``. ``weights_bytes``: the model's weights, against the
    last-level cache (``warm_slack_for``). ``on_kernel(i, n, row)`` is called after each
    kernel."""
    import numpy as np
    import tvm

    from .. import build, targets
    from ..runner import last_level_cache_bytes

    if rounds < 2:
        raise ValueError("the prefetch choice needs at least 2 rounds")
    t0 = time.perf_counter()
    llc = last_level_cache_bytes()
    warm_slack = warm_slack_for(weights_bytes, llc)
    threads = targets.configure_threads(target)["threads"]     # as the network will run
    todo = []
    for gv, func in applied.functions_items():
        if isinstance(func, tvm.tirx.PrimFunc):
            arms = _arms(func, distance)
            if arms:
                todo.append((gv.name_hint, func, arms))
    dev = tvm.cpu()
    per_kernel = []
    for i, (name, func, arms) in enumerate(todo):
        timers = {}
        for arm, f in {"none": func, **arms}.items():
            lib, tensors = build.kernel_alone(f, target)
            timers[arm] = (
                lib.mod.time_evaluator("main", dev, number=WARM_NUMBER, repeat=WARM_REPEAT),
                lib.mod.time_evaluator("main", dev, number=1, repeat=FLUSHED_REPEAT,
                                       f_preproc="cache_flush_cpu_non_first_arg"),
                tensors)
        flushed: dict = {a: [] for a in timers}
        warm: dict = {a: [] for a in timers}
        order = list(timers)
        for r in range(rounds):
            for arm in (order if r % 2 == 0 else order[::-1]):   # drift hits every arm alike
                w, f, tensors = timers[arm]
                warm[arm].append(float(np.median(w(*tensors).results)))
                flushed[arm].append(float(np.median(f(*tensors).results)))
        pick, stats = decide(flushed, warm, gain, warm_slack)
        row = {"kernel": name, "hash": kernel_hash(func), "picked": pick,
               "none_us": {"flushed": round(statistics.median(flushed["none"]) * 1e6, 1),
                           "warm": round(statistics.median(warm["none"]) * 1e6, 1)},
               "arms": stats}
        per_kernel.append(row)
        if on_kernel:
            on_kernel(i + 1, len(todo), row)
    return {"distance": distance, "locality": LOCALITY, "placements": list(PLACEMENTS),
            "rounds": rounds, "gain": gain, "win_share": WIN_SHARE, "warm_slack": warm_slack,
            "weights_mib": round(weights_bytes / 2**20, 1) if weights_bytes else None,
            "llc_mib": round(llc / 2**20, 1),
            "measure_threads": threads, "target": str(target),
            "kernels_measured": len(per_kernel),
            "chosen": sum(r["picked"] is not None for r in per_kernel),
            "seconds": round(time.perf_counter() - t0, 1),
            "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "per_kernel": per_kernel}


def save(db_dir, choice: dict) -> Path:
    p = choice_path(db_dir)
    atomic_write_json(p, choice)
    return p


def load(db_dir) -> dict | None:
    """The choice kept beside ``db_dir``'s database (None: none, or unreadable)."""
    import json

    p = choice_path(db_dir) if db_dir else None
    if p is None or not p.is_file():
        return None
    try:
        return json.loads(p.read_text(encoding="utf-8"))
    except ValueError:
        return None


def apply_chosen(mod, db_dir) -> tuple:
    """``mod`` (the database applied) with a prefetch in each kernel the choice kept beside
    ``db_dir`` picked (``apply_choice``). Returns (module, report): report None without a
    choice, else the choice's ``summary`` with "applied" and "unmatched" (kernel names)."""
    choice = load(db_dir)
    if not choice:
        return mod, None
    mod, applied = apply_choice(mod, choice)
    return mod, {**summary(choice), **applied}


def apply_choice(mod, choice: dict) -> tuple:
    """``apply_chosen`` with the choice given: a prefetch in each kernel it picked one for,
    where the kernel is the one measured (same name and schedule hash)."""
    funcs = {gv.name_hint: (gv, f) for gv, f in mod.functions_items()}
    out, applied, unmatched = None, 0, []
    for row in choice.get("per_kernel", []):
        if not row.get("picked"):
            continue
        gv, func = funcs.get(row["kernel"], (None, None))
        if func is None or kernel_hash(func) != row["hash"]:
            unmatched.append(row["kernel"])
            continue
        new, blocks = add_prefetch(func, int(choice["distance"]),
                                   int(choice.get("locality", LOCALITY)), row["picked"])
        if blocks:
            out = out if out is not None else mod.clone()
            out.update_func(gv, new)
            applied += 1
    return (out if out is not None else mod), {"applied": applied, "unmatched": unmatched}


def summary(choice: dict) -> dict:
    """What a choice says, for a record's ``tuning`` block."""
    return {k: choice.get(k) for k in ("chosen", "kernels_measured", "distance", "locality",
                                       "rounds", "gain", "warm_slack", "at")}
