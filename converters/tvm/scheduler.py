"""The tuning loop: which task gets the next batch of candidates, and measuring and
committing that batch before the next search starts."""
from __future__ import annotations

import math
import os
import shutil
import time

ALLOCATIONS = ("measured", "uniform")
SMALLEST_BATCH = 2      # the smallest first-round batch of --allocation measured
# Where a session's time goes: search (cost model included), build, run, learn (database
# commits, cost-model update).
PHASES = ("search_s", "build_s", "run_s", "learn_s")


def _normalised(work: list[float]) -> list[float]:
    """Shares summing to 1; uniform when there is nothing to share."""
    total = sum(work)
    if total <= 0:
        return [1.0 / len(work)] * len(work) if work else []
    return [w / total for w in work]


def task_caps(shares: list[float], budget: int, cap: int) -> list[int]:
    """Trials per task at most: the even cap, or the task's share of the whole budget where
    that is more (the gradient rule decides how much of it a task really gets)."""
    return [max(cap, math.ceil(budget * s)) for s in shares]


def first_round_batch(per_iter: int) -> int:
    """``measured``: the first round's batch, half the even one (at least ``SMALLEST_BATCH``):
    with even batches that round spends almost the whole budget and the gradient rule never
    gets to choose (experiments/FINDINGS.md#trial-allocation-by-measured-time)."""
    return max(min(per_iter, SMALLEST_BATCH), math.ceil(per_iter / 2))


def measured_shares(weights: list[float], best_s: list) -> list[float]:
    """Each task's share of the network's measured time (calls x best latency so far,
    normalised), which unlike FLOPs sees memory-bound kernels. No good measurement: 0."""
    return _normalised([float(w) * b if b is not None and b < 1e9 else 0.0
                        for w, b in zip(weights, best_s)])


class Loop:
    """The tuning loop: MetaSchedule's TaskScheduler re-done so that every batch is measured
    and committed before the next search starts (a kill loses one batch; TVM's joins nothing
    before a first round over every task), measurements never overlap a search, and on
    resume unrecorded tasks go first.

    One round over all tasks, then the gradient rule (largest weight x expected gain).
    ``per_iter`` and ``per_task_cap``: one number per task. ``first_batch`` (``measured``)
    sizes the first round; after it caps follow ``measured_shares`` of ``budget_total``
    (``recapped`` says so). ``phases`` sums seconds by ``PHASES``."""

    ALPHA, WINDOW = 0.2, 3

    def __init__(self, contexts, weights, database, cost_model, builder, runner, per_iter,
                 per_task_cap, existing, on_batch, first_batch=None,
                 budget_total=None):
        self.ctx, self.w = contexts, [float(x) for x in weights]
        self.db, self.cm, self.builder, self.runner = database, cost_model, builder, runner
        self.per_iter, self.cap = list(per_iter), list(per_task_cap)
        self.trials = [int(t["trials"]) for t in existing]          # database + this session
        self.best = [(t["best_us"] / 1e6 if t["best_us"] else None) for t in existing]
        self.hist = [[b] if b else [] for b in self.best]
        self.alive = [True] * len(contexts)
        self.on_batch = on_batch
        self.first_batch, self.budget_total = first_batch, budget_total
        self.recapped = None
        self.phases = dict.fromkeys(PHASES, 0.0)
        self.done = 0
        self.batch_ends = []              # trials done after each measured batch
        self.budget = None                # run's: the last batch is cut to what is left of it
        self.state = {"errors": 0, "build_errors": 0, "first_error": None}

    def run(self, budget: int, stop=lambda: False):
        self.budget = budget
        spaces = [ctx.generate_design_space() for ctx in self.ctx]
        first_sizes = ([self.first_batch] * len(self.ctx) if self.first_batch
                       else self.per_iter)
        for i, ctx in enumerate(self.ctx):
            ctx.pre_tuning(self.cap[i], first_sizes[i], spaces[i], self.db, self.cm)
        first = sorted(range(len(self.ctx)), key=lambda i: self.trials[i])
        try:
            for i in first:
                if self.done >= budget or stop():
                    return
                self._step(i)
            if self.first_batch:
                self._recap(spaces)
            while self.done < budget and not stop():
                i = self._pick()
                if i is None:
                    return
                self._step(i)
        finally:
            for ctx in self.ctx:
                ctx.post_tuning()

    def _recap(self, spaces):
        """``measured``, after the first round: caps from the measured time, and the
        strategies re-armed with the later batch size and new caps (keeping database and
        cost model)."""
        shares = measured_shares(self.w, self.best)
        if self.budget_total:           # else the caps were given (--max-trials-per-task)
            self.cap = task_caps(shares, self.budget_total, max(self.cap))
        for i, ctx in enumerate(self.ctx):
            ctx.post_tuning()
            ctx.pre_tuning(self.cap[i], self.per_iter[i], spaces[i], self.db, self.cm)
        top = sorted(range(len(self.ctx)), key=lambda i: -shares[i])[:5]
        self.recapped = {
            "after_trials": self.done,
            "largest_measured_shares": [{"task": self.ctx[i].task_name,
                                         "share": round(shares[i], 4),
                                         "cap": self.cap[i]} for i in top]}

    def _pick(self):
        best_i, best_g = None, None
        for i, ctx in enumerate(self.ctx):
            if not self.alive[i] or self.trials[i] >= self.cap[i]:
                continue
            h = self.hist[i]
            if not h or h[-1] >= 1e9:
                g = float("inf") if not h else -1.0     # never measured: go; all failed: last
            else:
                n = max(1, self.trials[i] / self.per_iter[i])
                g1 = (h[-1 - self.WINDOW] - h[-1]) / self.WINDOW if len(h) > self.WINDOW else 0
                g = (self.ALPHA * g1 + (1 - self.ALPHA) * h[-1] / n) * self.w[i]
            if best_g is None or g > best_g:
                best_i, best_g = i, g
        return best_i

    def _step(self, i: int):
        from tvm.s_tir.meta_schedule.builder import BuilderInput
        from tvm.s_tir.meta_schedule.database import TuningRecord
        from tvm.s_tir.meta_schedule.runner import RunnerInput, RunnerResult

        ctx = self.ctx[i]
        if self.trials[i] >= self.cap[i]:
            self.alive[i] = False
            return
        t0 = time.perf_counter()
        cands = ctx.generate_measure_candidates()
        t1 = time.perf_counter()
        self.phases["search_s"] += t1 - t0
        if not cands:
            self.alive[i] = False                     # search space exhausted
            return
        if self.budget is not None:
            # Keep to --trials: the rest of the batch is dropped unmeasured.
            cands = list(cands)[:max(0, self.budget - self.done)]
        built = self.builder.build([BuilderInput(c.sch.mod, ctx.target) for c in cands])
        t2 = time.perf_counter()
        ok = [k for k, b in enumerate(built) if b.error_msg is None]
        dev = {"llvm": "cpu", "c": "cpu"}.get(ctx.target.kind.name, ctx.target.kind.name)
        futures = self.runner.run([RunnerInput(built[k].artifact_path, dev, cands[k].args_info)
                                   for k in ok])
        results = [RunnerResult(None, b.error_msg) for b in built]
        for k, f in zip(ok, futures):
            results[k] = f.result()
        t3 = time.perf_counter()
        ctx.notify_runner_results(cands, results)
        wl = self.db.commit_workload(ctx.mod)
        good_c, good_r = [], []
        for c, b, r in zip(cands, built, results):
            err = b.error_msg or r.error_msg
            secs = [1e10] if err or r.run_secs is None else [float(x) for x in r.run_secs]
            self.db.commit_tuning_record(TuningRecord(c.sch.trace, wl, secs, ctx.target,
                                                      c.args_info))
            if err:
                self.state["errors"] += 1
                self.state["build_errors"] += b.error_msg is not None
                if self.state["first_error"] is None:
                    self.state["first_error"] = (f"{ctx.task_name}: "
                                                 + str(err).strip().splitlines()[0][:300])
                continue
            good_c.append(c)
            good_r.append(r)
            med = sorted(secs)[len(secs) // 2]
            if self.best[i] is None or med < self.best[i]:
                self.best[i] = med
        if good_c:
            self.cm.update(ctx, good_c, good_r)
        for b in built:
            if b.artifact_path:
                shutil.rmtree(os.path.dirname(b.artifact_path), ignore_errors=True)
        t4 = time.perf_counter()
        for name, secs in (("build_s", t2 - t1), ("run_s", t3 - t2), ("learn_s", t4 - t3)):
            self.phases[name] += secs
        self.hist[i].append(self.best[i] if self.best[i] is not None else 1e10)
        self.trials[i] += len(cands)
        self.done += len(cands)
        self.batch_ends.append(self.done)
        if self.on_batch:
            est = sum(w * b for w, b in zip(self.w, self.best) if b is not None) * 1e3
            self.on_batch(self.done, est, sum(b is not None for b in self.best), len(self.ctx),
                          self.state)


def phase_record(phases: dict, candidates: int, batch_ends=()) -> dict:
    """A session's time by phase (``Loop.phases``): seconds, and milliseconds per candidate
    where any was measured (experiments/FINDINGS.md#gpu-tuning-cost)."""
    rec = {"candidates": int(candidates), "batch_ends": list(batch_ends),
           **{k: round(v, 2) for k, v in phases.items()}}
    if candidates:
        rec["per_candidate_ms"] = {k[:-2]: round(1e3 * v / candidates, 1)
                                   for k, v in phases.items()}
    return rec
