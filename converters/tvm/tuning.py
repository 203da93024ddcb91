"""MetaSchedule tuning: budgeted, resumable, local or over a TVM RPC tracker.

Database: MetaSchedule's JSON database (``database_workload.json`` +
``database_tuning_record.json``) in ``<tuning_dir>/<target-slug>/<model>-CxHxW/``. Every
measured candidate -- failed ones included -- is appended as one line the moment its
measurement is done, so a killed run loses at most the batch in flight.

Resume: a run counts the records the database already holds for this model's workloads
toward ``--trials`` and tunes only the remainder; the search starts from the best recorded
schedules (evolutionary search seeds its population from the database) and the cost model
is warm-started from the recorded measurements.

Transfer (asked for): before the first search the cost model is also trained on the other
models' databases for the same target (``<tuning_dir>/<target-slug>/*``, plus ``--transfer-from``)
that were tuned in the same layout and design space, so it ranks candidates from the first
round instead of guessing (``_transfer_cost_model``).

``tuning.json`` next to the database keeps the sessions (trials, seconds, runner) so records
can say how long tuning took.
"""
from __future__ import annotations

import dataclasses
import datetime as dt
import json
import logging
import math
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Callable, Optional

from . import core, design_space

log = logging.getLogger("edgebench.tvm.tune")


@dataclasses.dataclass
class TuneConfig:
    trials: int = 512                   # total budget for this model+target (records included)
    trials_per_iter: Optional[int] = None   # candidates measured per task per round (auto)
    max_trials_per_task: Optional[int] = None
    population: int = 256               # evolutionary search population (512 in TVM)
    builder_workers: Optional[int] = None
    build_timeout_s: float = 60.0
    run_timeout_s: float = 30.0
    number: int = 3                     # runner: calls per measurement
    repeat: int = 1
    min_repeat_ms: int = 50
    rpc_tracker: Optional[str] = None   # "host:port"
    rpc_key: Optional[str] = None
    rpc_session_timeout_s: int = 60
    seed: int = 0
    op_names: Optional[list] = None     # tune only tasks whose name contains one of these
    layout: Optional[str] = None        # conv2d layout (None: core.layout_for's default)
    transfer: bool = False              # pre-train the cost model on sibling databases
    transfer_from: Optional[list] = None    # more databases / folders of them to learn from
    design_space: str = "auto"          # auto: CPU channels-last tiles at the vector width
    verbose: bool = False               # MetaSchedule's own console log


class RpcError(RuntimeError):
    pass


def parse_tracker(value: str) -> tuple[str, int]:
    host, sep, port = (value or "").rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"--rpc-tracker must be HOST:PORT (got '{value}')")
    return host, int(port)


def check_rpc(tracker: str, key: str, timeout_s: float = 10.0) -> dict:
    """Ask the tracker for a server with ``key`` and run a trivial remote call, so a bad
    tracker/key fails in seconds, not after the first batch of candidates."""
    from tvm import rpc

    host, port = parse_tracker(tracker)
    try:
        t = rpc.connect_tracker(host, port)
    except Exception as e:  # noqa: BLE001
        raise RpcError(f"cannot reach the RPC tracker at {host}:{port}: {core._first_line(e)}") \
            from None
    try:
        summary = t.summary()
    except Exception as e:  # noqa: BLE001
        raise RpcError(f"RPC tracker at {host}:{port} did not answer: {core._first_line(e)}") \
            from None
    servers = [str(item.get("key", "")).split(":", 1)[-1]
               for item in summary.get("server_info", [])]
    queue = summary.get("queue_info", {}) or {}
    known = sorted(set(servers) | {k for k, q in queue.items() if q.get("free") or
                                   k in servers})
    if key not in servers:
        raise RpcError(f"no RPC server with key '{key}' is registered with the tracker at "
                       f"{host}:{port} (registered keys: {', '.join(known) or 'none'}); on "
                       f"the device run: python -m tvm.exec.rpc_server --tracker "
                       f"{host}:{port} --key {key}")
    try:
        sess = t.request(key, priority=1, session_timeout=int(timeout_s) + 5, max_retry=2)
        sess.cpu(0).exist  # a round trip
    except Exception as e:  # noqa: BLE001
        raise RpcError(f"the RPC server with key '{key}' did not answer via {host}:{port}: "
                       f"{core._first_line(e)}") from None
    return {"tracker": f"{host}:{port}", "key": key}


def _builder(cfg: TuneConfig):
    from tvm.s_tir import meta_schedule as ms

    from . import _msbuild

    workers = cfg.builder_workers or core.physical_cores()
    # Over RPC the remote links the candidates itself (TVM's default .tar export): the
    # device's architecture may differ from this machine's.
    return ms.builder.LocalBuilder(max_workers=workers, timeout_sec=cfg.build_timeout_s,
                                   f_build=_msbuild.build,
                                   f_export=None if cfg.rpc_tracker else _msbuild.export_so)


def _runner(cfg: TuneConfig):
    from tvm.s_tir import meta_schedule as ms

    ev = ms.runner.EvaluatorConfig(number=cfg.number, repeat=cfg.repeat,
                                   min_repeat_ms=cfg.min_repeat_ms,
                                   enable_cpu_cache_flush=False)
    if cfg.rpc_tracker:
        host, port = parse_tracker(cfg.rpc_tracker)
        rc = ms.runner.RPCConfig(tracker_host=host, tracker_port=port, tracker_key=cfg.rpc_key,
                                 session_timeout_sec=cfg.rpc_session_timeout_s)
        return ms.runner.RPCRunner(rpc_config=rc, evaluator_config=ev, max_workers=1)
    return ms.runner.LocalRunner(timeout_sec=cfg.run_timeout_s, evaluator_config=ev,
                                 f_alloc_argument=alloc_valid_indices)


def alloc_valid_indices(device, args_info, alloc_repeat):
    """MetaSchedule's argument allocation for the local runner, with integer arguments set
    to zero instead of random values.

    The default fills every argument at random, index tensors included, so a ``take``
    (gather) kernel reads far out of bounds and the runner's process dies: Swin-T's six
    relative-position-bias gathers got "LocalRunner: An exception occurred" for every
    candidate and kept TVM's default schedule. Zero is a valid index for any gather; float
    arguments stay random. (The RPC runner allocates on the device with its own default.)"""
    import numpy as np
    from tvm.s_tir.meta_schedule.runner.local_runner import default_alloc_argument

    repeated = default_alloc_argument(device, args_info, alloc_repeat)
    for args in repeated:
        for a in args:
            if "int" in str(a.dtype):
                a.copyfrom(np.zeros(a.shape, dtype=str(a.dtype)))
    return repeated


def _light_tensor_intrin(target) -> bool:
    """Register only the CPU tensor intrinsics (about 1 s) instead of all of them.

    ``TuneContext`` imports ``tvm.s_tir.tensor_intrin``, whose ``__init__`` registers every
    tensor intrinsic, the CUDA ones included: about 20 s here, paid by every tuning run. For
    an LLVM target only the x86/Arm ones can be used, so the package is entered without its
    ``__init__`` and those two modules are imported; other submodules stay importable."""
    import importlib
    import importlib.util

    name = "tvm.s_tir.tensor_intrin"
    if target.kind.name != "llvm" or name in sys.modules:
        return False
    import tvm.s_tir

    spec = importlib.util.find_spec(name)
    pkg = importlib.util.module_from_spec(spec)
    sys.modules[name] = pkg
    tvm.s_tir.tensor_intrin = pkg
    try:
        for sub in ("x86", "arm_cpu"):
            importlib.import_module(f"{name}.{sub}")
    except Exception:  # noqa: BLE001 - fall back to the full registration
        sys.modules.pop(name, None)
        for k in [k for k in sys.modules if k.startswith(name + ".")]:
            sys.modules.pop(k, None)
        importlib.import_module(name)
    return True


def _train_on_records(cost_model, ctx, db, workload, top_k: int = 256) -> int:
    """Feed the best ``top_k`` measured records of ``workload`` in ``db`` to the cost model
    under ``ctx`` (its target and workload); returns how many."""
    from tvm.s_tir.meta_schedule.runner import RunnerResult

    recs = db.get_top_k(workload, top_k)
    if recs:
        cost_model.update(ctx, [r.as_measure_candidate() for r in recs],
                          [RunnerResult(run_secs=list(r.run_secs), error_msg=None)
                           for r in recs])
    return len(recs)


def _warm_start_cost_model(cost_model, contexts, db):
    """Feed the measurements already in the database to the cost model (resume)."""
    n = 0
    for ctx in contexts:
        try:
            if db.has_workload(ctx.mod):
                n += _train_on_records(cost_model, ctx, db, db.commit_workload(ctx.mod))
        except Exception as e:  # noqa: BLE001 - warm start is an optimisation only
            log.debug("cost-model warm start skipped a task: %s", e)
    return n


def transfer_databases(db_dir, extra=None, auto: bool = True) -> list[Path]:
    """Tuning databases whose measurements pre-train the cost model for ``db_dir``.

    ``auto``: the other models' databases for the same target (``db_dir``'s siblings under
    ``<tuning-dir>/<target-slug>/``). ``extra``: more folders, each a database or a folder
    of databases (e.g. another tuning dir's ``<target-slug>``, or a tuning dir: then its
    sub-folder for this target). This model's own database is left out (it warm-starts the
    model anyway, see ``_warm_start_cost_model``)."""
    db_dir = Path(db_dir)
    found: list[Path] = []

    def add_children(folder: Path):
        if folder.is_dir():
            found.extend(sorted(c for c in folder.iterdir() if core.database_exists(c)))

    if auto:
        add_children(db_dir.parent)
    for e in extra or []:
        e = Path(e)
        if not e.is_dir():
            raise ValueError(f"--transfer-from {e}: no such directory")
        n = len(found)
        if core.database_exists(e):
            found.append(e)
        else:
            add_children(e / db_dir.parent.name)   # a tuning dir: this target's folder
            add_children(e)                        # a target folder
        if len(found) == n:
            raise ValueError(f"--transfer-from {e}: holds no tuning database (for this "
                             f"target: {db_dir.parent.name})")
    out, seen = [], set()
    for f in found:
        key = f.resolve()
        if key != db_dir.resolve() and key not in seen:
            seen.add(key)
            out.append(f)
    return out


def split_by_profile(db_dirs, profile: tuple[str, str]) -> tuple[list[Path], list[dict]]:
    """The databases tuned like this session (``profile``: layout, design space), and the
    others with theirs. Only the first are used for the transfer: NCHW databases of the
    default space pre-training an NHWC vector-width search took mobilenetv2's 512-trial
    estimate from 1.74 to 3.63 ms (docs/tvm.md, "Vector-width tiling")."""
    same, other = [], []
    for d in db_dirs:
        p = core.database_profile(d)
        if p == tuple(profile):
            same.append(d)
        else:
            other.append({"database": str(d), "layout": p[0], "design_space": p[1]})
    return same, other


def _transfer_cost_model(cost_model, target, db_dirs, per_workload: int = 256) -> dict:
    """Train the cost model on other tuning databases' measurements before the first search.

    MetaSchedule's XGBoost model learns a schedule's speed *relative to the best one of its
    own workload* from features of the loop nest (PerStoreFeature), so what it learns on one
    model's convolutions ranks candidates for another's (the idea of TenSet, Zheng et al.
    2021). Without it the model predicts at random until 100 of this model's own candidates
    are measured, and with ~15 candidates per task at 512 trials most tasks are searched
    blind. This shapes only which candidates get measured: every figure in the database is
    still this model's own measurement on this target."""
    from tvm.s_tir import meta_schedule as ms

    t0 = time.perf_counter()
    n = workloads = 0
    used = []
    for d in db_dirs:
        try:
            db = ms.database.JSONDatabase(work_dir=str(d), allow_missing=False)
            by_hash = {core.task_hash(r.workload.mod): r.workload
                       for r in db.get_all_tuning_records()}
        except Exception as e:  # noqa: BLE001 - an unreadable database is skipped, said below
            log.warning("cost-model transfer skipped %s: %s", d, core._first_line(e))
            continue
        k = 0
        for wl in by_hash.values():
            try:
                ctx = ms.TuneContext(mod=wl.mod, target=target, task_name="transfer")
                got = _train_on_records(cost_model, ctx, db, wl, per_workload)
            except Exception as e:  # noqa: BLE001 - e.g. a workload this TVM cannot replay
                log.debug("cost-model transfer skipped a workload of %s: %s", d, e)
                continue
            k += got
            workloads += bool(got)
        n += k
        used.append({"database": str(d), "records": k})
    return {"records": n, "workloads": workloads, "databases": used,
            "seconds": round(time.perf_counter() - t0, 1)}


def _tune_contexts(tasks, db_dir, target, layout: str, cfg: TuneConfig):
    """One TuneContext per task (as ``extracted_tasks_to_tune_contexts``, same seeds and
    logs), each with its own design space (``design_space.space_for``). Returns the
    contexts, their weights and how many tasks got which space."""
    from tvm.s_tir import meta_schedule as ms
    from tvm.s_tir.meta_schedule.logging import get_loggers_from_work_dir
    from tvm.s_tir.meta_schedule.utils import fork_seed

    if cfg.design_space not in design_space.CHOICES:
        raise ValueError(f"design_space must be one of {', '.join(design_space.CHOICES)} "
                         f"(got '{cfg.design_space}')")
    contexts, weights, spaces = [], [], {}
    loggers = get_loggers_from_work_dir(str(db_dir), [t.task_name for t in tasks])
    for task, logger, seed in zip(tasks, loggers, fork_seed(cfg.seed, n=len(tasks))):
        func = task.dispatched[0]
        space = "post-order-apply" if cfg.design_space == "default" else \
            design_space.space_for(func, target, layout)
        name = design_space.describe(space)
        spaces[name] = spaces.get(name, 0) + 1
        contexts.append(ms.TuneContext(
            mod=func, target=task.target, space_generator=space,
            search_strategy=ms.search_strategy.EvolutionarySearch(
                population_size=cfg.population),
            task_name=task.task_name, logger=logger, rand_state=seed,
            num_threads=core.physical_cores()).clone())
        weights.append(task.weight)
    return contexts, weights, spaces


class _Loop:
    """The tuning loop (MetaSchedule's TaskScheduler, re-done in Python for three reasons):

    * every batch of candidates is measured and committed to the database before the next
      search starts: a kill loses at most one batch (TVM's GradientBased scheduler joins no
      result before it has dispatched one batch of *every* task, so stopping it during that
      first round loses everything measured so far);
    * measurements never overlap the next search (on 2 cores they would share the CPU);
    * resume: tasks with no record go first, and the allocation afterwards starts from the
      best latencies already recorded.

    Allocation: one round over all tasks, then MetaSchedule's gradient rule (pick the task
    with the largest weight x expected latency gain; alpha 0.2, window 3)."""

    ALPHA, WINDOW = 0.2, 3

    def __init__(self, contexts, weights, database, cost_model, builder, runner, per_iter,
                 per_task_cap, existing, on_batch):
        self.ctx, self.w = contexts, [float(x) for x in weights]
        self.db, self.cm, self.builder, self.runner = database, cost_model, builder, runner
        self.per_iter, self.cap = per_iter, per_task_cap
        self.trials = [int(t["trials"]) for t in existing]          # database + this session
        self.best = [(t["best_us"] / 1e6 if t["best_us"] else None) for t in existing]
        self.hist = [[b] if b else [] for b in self.best]
        self.alive = [True] * len(contexts)
        self.on_batch = on_batch
        self.done = 0
        self.state = {"errors": 0, "build_errors": 0, "first_error": None}

    def run(self, budget: int, stop=lambda: False):
        for ctx in self.ctx:
            ctx.pre_tuning(self.cap, self.per_iter, ctx.generate_design_space(), self.db,
                           self.cm)
        first = sorted(range(len(self.ctx)), key=lambda i: self.trials[i])
        try:
            for i in first:
                if self.done >= budget or stop():
                    return
                self._step(i)
            while self.done < budget and not stop():
                i = self._pick()
                if i is None:
                    return
                self._step(i)
        finally:
            for ctx in self.ctx:
                ctx.post_tuning()

    def _pick(self):
        best_i, best_g = None, None
        for i, ctx in enumerate(self.ctx):
            if not self.alive[i] or self.trials[i] >= self.cap:
                continue
            h = self.hist[i]
            if not h or h[-1] >= 1e9:
                g = float("inf") if not h else -1.0     # never measured: go; all failed: last
            else:
                n = max(1, self.trials[i] / self.per_iter)
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
        if self.trials[i] >= self.cap:
            self.alive[i] = False
            return
        cands = ctx.generate_measure_candidates()
        if not cands:
            self.alive[i] = False                     # search space exhausted
            return
        built = self.builder.build([BuilderInput(c.sch.mod, ctx.target) for c in cands])
        ok = [k for k, b in enumerate(built) if b.error_msg is None]
        dev = {"llvm": "cpu", "c": "cpu"}.get(ctx.target.kind.name, ctx.target.kind.name)
        futures = self.runner.run([RunnerInput(built[k].artifact_path, dev, cands[k].args_info)
                                   for k in ok])
        results = [RunnerResult(None, b.error_msg) for b in built]
        for k, f in zip(ok, futures):
            results[k] = f.result()
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
        self.hist[i].append(self.best[i] if self.best[i] is not None else 1e10)
        self.trials[i] += len(cands)
        self.done += len(cands)
        if self.on_batch:
            est = sum(w * b for w, b in zip(self.w, self.best) if b is not None) * 1e3
            self.on_batch(self.done, est, sum(b is not None for b in self.best), len(self.ctx),
                          self.state)


def tune(model, input_size, batch: int, target, db_dir: Path, cfg: TuneConfig, *,
         importer: str = "auto", spec=None, cache=None,
         on_start: Callable | None = None, on_update: Callable | None = None) -> dict:
    """Tune ``model`` at ``batch`` for ``target`` into the JSON database in ``db_dir``.

    Returns a summary: trials before/run/after, tuning seconds, tasks, estimate."""
    from tvm.s_tir import meta_schedule as ms

    db_dir = Path(db_dir)
    db_dir.mkdir(parents=True, exist_ok=True)
    t_start = time.perf_counter()
    started_at = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    # MetaSchedule logs to the console at this logger's level; keep the console for our
    # progress (everything still goes to <db_dir>/logs/).
    ms_logger = logging.getLogger("tvm.s_tir.meta_schedule")
    if ms_logger.level == logging.NOTSET and not cfg.verbose:
        ms_logger.setLevel(logging.WARNING)
    if cfg.rpc_tracker:
        threads = {"threads": None, "source": "the device's RPC server (its TVM_NUM_THREADS)"}
    else:
        # The runner's worker processes inherit TVM_NUM_THREADS: candidates are measured
        # with as many threads as the tuned build will run with.
        threads = core.configure_threads(target)
    mod, used, note = core.import_model(model, (batch, *input_size), importer, spec=spec,
                                        cache=cache)
    layout = core.layout_for(target, db_dir, cfg.layout)
    lowered = core.lower_for_tuning(mod, target, layout)
    tasks = core.extract_tasks(lowered, target)
    if cfg.op_names:
        tasks = [t for t in tasks if any(o in t.task_name for o in cfg.op_names)]
    if not tasks:
        raise core.TvmError("nothing to tune: the model lowered to no tunable TIR functions")
    before = core.tuning_summary(db_dir, tasks)
    remaining = cfg.trials - before["trials"]
    n_tasks = len(tasks)
    per_iter = cfg.trials_per_iter or max(4, min(64, remaining // max(1, n_tasks)))
    per_task_cap = cfg.max_trials_per_task or max(per_iter, math.ceil(cfg.trials / n_tasks) * 4)
    info = {"model_tasks": n_tasks, "trials_before": before["trials"], "budget": cfg.trials,
            "remaining": max(0, remaining), "trials_per_iter": per_iter,
            "max_trials_per_task": per_task_cap, "importer": used, "importer_note": note,
            "runner": f"rpc {cfg.rpc_tracker} key={cfg.rpc_key}" if cfg.rpc_tracker else "local",
            "database": str(db_dir), "batch_size": batch, "layout": layout,
            "measure_threads": threads["threads"], "measure_threads_source": threads["source"]}
    profile = (layout, design_space.session_space(cfg.design_space, target, layout))
    transfer_from, transfer_skipped = split_by_profile(
        transfer_databases(db_dir, cfg.transfer_from, cfg.transfer) if remaining > 0 else [],
        profile)
    info["transfer_from"] = [str(p) for p in transfer_from]
    info["transfer_skipped"] = transfer_skipped
    info["session_design_space"] = profile[1]
    if on_start:
        on_start(info)
    t_tune = time.perf_counter()
    interrupted = False
    loop = None
    if remaining > 0:
        t_setup = time.perf_counter()
        _light_tensor_intrin(target)
        contexts, weights, spaces = _tune_contexts(tasks, db_dir, target, layout, cfg)
        info["design_space"] = spaces
        database = ms.database.JSONDatabase(work_dir=str(db_dir))
        cost_model = ms.cost_model.XGBModel(
            extractor=ms.feature_extractor.PerStoreFeature(),
            adaptive_training=True, num_tuning_cores=core.physical_cores())
        warm = _warm_start_cost_model(cost_model, contexts, database) if before["trials"] else 0
        info["cost_model_warm_start_records"] = warm
        if transfer_from:
            info["cost_model_transfer"] = _transfer_cost_model(cost_model, target, transfer_from)
        info["setup_s"] = round(time.perf_counter() - t_setup, 1)
        runner = _runner(cfg)
        loop = _Loop(contexts, weights, database, cost_model, _builder(cfg), runner,
                     per_iter, per_task_cap, before["per_task"], on_update)
        hit, old_handlers = _catch_interrupts()
        try:
            loop.run(remaining, stop=lambda: hit["signal"] is not None)
            interrupted = hit["signal"] is not None
        except BaseException:
            # Ctrl-C/SIGTERM inside one of MetaSchedule's Python callbacks reaches us as a
            # bare TVM RuntimeError: the flag says whether it was an interrupt.
            if not hit["signal"]:
                raise
            interrupted = True
        finally:
            _restore_handlers(old_handlers)
            pool = getattr(runner, "pool", None)   # the runner's worker processes
            if pool is not None:
                try:
                    pool.shutdown(wait=False)
                except Exception:  # noqa: BLE001
                    pass
    run_trials = loop.done if loop else 0
    state = loop.state if loop else {"errors": 0, "build_errors": 0, "first_error": None}
    tuning_s = time.perf_counter() - t_tune
    after = core.tuning_summary(db_dir, tasks)
    if run_trials or interrupted:
        _record_session(db_dir, {
            "started_at": started_at, "layout": layout, "batch_size": batch,
            "budget": cfg.trials, "trials_before": before["trials"], "trials_run": run_trials,
            "trials_after": after["trials"], "tuning_s": round(tuning_s, 1),
            "interrupted": interrupted, "runner": info["runner"],
            "measure_threads": threads["threads"],
            "cost_model_transfer": info.get("cost_model_transfer"),
            "design_space": info.get("design_space"),
            "target": core.target_dict(target), "errors": state["errors"],
            "build_errors": state["build_errors"], **core.tvm_versions()})
    return {**info, "trials_run": run_trials, "trials_after": after["trials"],
            "tasks_tuned": after["tasks_tuned"], "estimate_ms": after["estimate_ms"],
            "tuning_s": round(tuning_s, 1), "wall_s": round(time.perf_counter() - t_start, 1),
            "errors": state["errors"], "build_errors": state["build_errors"],
            "first_error": state["first_error"], "interrupted": interrupted,
            "per_task": after["per_task"]}


def _catch_interrupts():
    """SIGINT/SIGTERM while tuning: the first one stops after the batch being measured
    (it is committed to the database); a second one interrupts at once. Either way the
    records already written stay (resume by running the same command)."""
    import signal
    import threading

    hit = {"signal": None}
    if threading.current_thread() is not threading.main_thread():
        return hit, {}

    def handler(signum, frame):  # noqa: ARG001
        if hit["signal"] is None:
            hit["signal"] = signum
            print("\n[tune] stopping after the current batch (again to stop now)",
                  file=sys.stderr, flush=True)
            return
        raise KeyboardInterrupt(f"signal {signum}")

    old = {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}
    return hit, old


def _restore_handlers(old: dict) -> None:
    import signal

    for sig, h in old.items():
        signal.signal(sig, h)


def _record_session(db_dir: Path, session: dict) -> None:
    meta = core.read_db_meta(db_dir)
    sessions = meta.get("sessions", [])
    sessions.append(session)
    meta["sessions"] = sessions
    meta["tuning_s"] = round(sum(s.get("tuning_s", 0) for s in sessions), 1)
    meta["target"] = session["target"]
    meta["layout"] = session.get("layout", "NCHW")
    tmp = db_dir / (core.DB_META + ".part")
    tmp.write_text(json.dumps(meta, indent=1) + "\n")
    os.replace(tmp, db_dir / core.DB_META)
    gi = db_dir / ".gitignore"
    if not gi.exists():
        gi.write_text("# MetaSchedule per-task logs: large, for debugging build errors only\nlogs/\n")
