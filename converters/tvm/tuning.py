"""MetaSchedule tuning: budgeted, resumable, local or over a TVM RPC tracker.

Database: MetaSchedule's JSON database (``database_workload.json`` +
``database_tuning_record.json``) in ``<tuning_dir>/<target-slug>/<model>-CxHxW/``. Every
measured candidate -- failed ones included -- is appended as one line the moment its
measurement is done, so a killed run loses at most the batch in flight.

Resume: a run counts the records the database already holds for this model's workloads
toward ``--trials`` and tunes only the remainder; the search starts from the best recorded
schedules (evolutionary search seeds its population from the database) and the cost model
is warm-started from the recorded measurements.

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
import time
from pathlib import Path
from typing import Callable, Optional

from . import core

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
    keys = {q.get("key") for q in summary.get("queue_info", [])} | \
        {k for k in summary.get("queue_info", {})} if isinstance(summary.get("queue_info"), dict) \
        else set()
    try:
        sess = t.request(key, priority=1, session_timeout=int(timeout_s) + 5)
        sess.cpu(0).exist  # a round trip
    except Exception as e:  # noqa: BLE001
        raise RpcError(f"no RPC server with key '{key}' answered via {host}:{port} "
                       f"(keys the tracker knows: {sorted(k for k in keys if k) or 'none'}): "
                       f"{core._first_line(e)}") from None
    return {"tracker": f"{host}:{port}", "key": key}


def _builder(cfg: TuneConfig):
    from tvm.s_tir import meta_schedule as ms

    workers = cfg.builder_workers or core.physical_cores()
    return ms.builder.LocalBuilder(max_workers=workers, timeout_sec=cfg.build_timeout_s)


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
    return ms.runner.LocalRunner(timeout_sec=cfg.run_timeout_s, evaluator_config=ev)


def _make_progress_callback(tasks, db_dir, existing: dict, budget: int, on_update: Callable):
    """A MeasureCallback that tracks trials and the best latency so far per task."""
    from tvm.s_tir.meta_schedule.measure_callback import PyMeasureCallback
    from tvm.ir.utils import derived_object

    best = {i: (t["best_us"] / 1e6 if t["best_us"] else None)
            for i, t in enumerate(existing["per_task"])}
    weights = [t.weight for t in tasks]
    state = {"done": 0, "errors": 0, "build_errors": 0, "first_error": None}

    @derived_object
    class Progress(PyMeasureCallback):
        def apply(self, task_scheduler, task_id, measure_candidates, builder_results,
                  runner_results):
            for br, rr in zip(builder_results, runner_results):
                state["done"] += 1
                err = br.error_msg or rr.error_msg
                if err:
                    state["errors"] += 1
                    if br.error_msg:
                        state["build_errors"] += 1
                    if state["first_error"] is None:
                        state["first_error"] = str(err).strip().splitlines()[-1][:300]
                    continue
                secs = sorted(float(s) for s in rr.run_secs)
                med = secs[len(secs) // 2]
                if best.get(task_id) is None or med < best[task_id]:
                    best[task_id] = med
            known = [weights[i] * b for i, b in best.items() if b is not None]
            est = sum(known) * 1e3
            on_update(state["done"], est, sum(b is not None for b in best.values()),
                      len(tasks), state)

    return Progress(), state


def _warm_start_cost_model(cost_model, contexts, db):
    """Feed the measurements already in the database to the cost model (resume)."""
    from tvm.s_tir.meta_schedule.runner import RunnerResult

    n = 0
    for ctx in contexts:
        try:
            if not db.has_workload(ctx.mod):
                continue
            wl = db.commit_workload(ctx.mod)
            recs = db.get_top_k(wl, 256)
            if not recs:
                continue
            cands = [r.as_measure_candidate() for r in recs]
            results = [RunnerResult(run_secs=list(r.run_secs), error_msg=None) for r in recs]
            cost_model.update(ctx, cands, results)
            n += len(recs)
        except Exception as e:  # noqa: BLE001 - warm start is an optimisation only
            log.debug("cost-model warm start skipped a task: %s", e)
    return n


def tune(model, input_size, batch: int, target, db_dir: Path, cfg: TuneConfig, *,
         importer: str = "auto", spec=None, cache=None,
         on_start: Callable | None = None, on_update: Callable | None = None) -> dict:
    """Tune ``model`` at ``batch`` for ``target`` into the JSON database in ``db_dir``.

    Returns a summary: trials before/run/after, tuning seconds, tasks, estimate."""
    from tvm.s_tir import meta_schedule as ms

    db_dir = Path(db_dir)
    db_dir.mkdir(parents=True, exist_ok=True)
    t_start = time.perf_counter()
    mod, used, note = core.import_model(model, (batch, *input_size), importer, spec=spec,
                                        cache=cache)
    lowered = core.lower_for_tuning(mod, target)
    all_tasks = core.extract_tasks(lowered, target)
    if cfg.op_names:
        all_tasks = [t for t in all_tasks if any(o in t.task_name for o in cfg.op_names)]
    if not all_tasks:
        raise core.TvmError("nothing to tune: the model lowered to no tunable TIR functions")
    before = core.tuning_summary(db_dir, all_tasks)
    remaining = cfg.trials - before["trials"]
    n_tasks = len(all_tasks)
    per_iter = cfg.trials_per_iter or max(4, min(64, remaining // max(1, n_tasks)))
    per_task_cap = cfg.max_trials_per_task or max(per_iter, math.ceil(cfg.trials / n_tasks) * 4)
    # Tasks that already used their share are left alone on resume.
    keep = [i for i, t in enumerate(before["per_task"]) if t["trials"] < per_task_cap]
    tasks = [all_tasks[i] for i in keep]
    info = {"model_tasks": n_tasks, "trials_before": before["trials"], "budget": cfg.trials,
            "remaining": max(0, remaining), "trials_per_iter": per_iter,
            "max_trials_per_task": per_task_cap, "importer": used, "importer_note": note,
            "runner": f"rpc {cfg.rpc_tracker} key={cfg.rpc_key}" if cfg.rpc_tracker else "local",
            "database": str(db_dir), "batch_size": batch}
    if on_start:
        on_start(info)
    run_trials = 0
    state = {"errors": 0, "build_errors": 0, "first_error": None}
    t_tune = time.perf_counter()
    interrupted = False
    if remaining > 0 and tasks:
        existing_sub = {"per_task": [before["per_task"][i] for i in keep]}
        seen = {"n": 0}

        def _update(done, est, n_tuned, n_total, st):
            seen["n"] = done
            if on_update:
                on_update(done, est, n_tuned, n_total, st)

        progress_cb, state = _make_progress_callback(tasks, db_dir, existing_sub, remaining,
                                                     _update)
        contexts, weights = ms.relax_integration.extracted_tasks_to_tune_contexts(
            extracted_tasks=tasks, work_dir=str(db_dir / "logs"),
            strategy=ms.search_strategy.EvolutionarySearch(population_size=cfg.population),
            num_threads=core.physical_cores(), seed=cfg.seed)
        database = ms.database.JSONDatabase(work_dir=str(db_dir))
        cost_model = ms.cost_model.XGBModel(
            extractor=ms.feature_extractor.PerStoreFeature(),
            adaptive_training=True, num_tuning_cores=core.physical_cores())
        warm = _warm_start_cost_model(cost_model, contexts, database) if before["trials"] else 0
        info["cost_model_warm_start_records"] = warm
        callbacks = list(ms.measure_callback.MeasureCallback.create("default")) + [progress_cb]
        try:
            ms.tune.tune_tasks(
                tasks=contexts, task_weights=weights, work_dir=str(db_dir),
                max_trials_global=remaining, max_trials_per_task=per_task_cap,
                num_trials_per_iter=per_iter, builder=_builder(cfg), runner=_runner(cfg),
                database=database, cost_model=cost_model, measure_callbacks=callbacks,
                task_scheduler="gradient")
        except KeyboardInterrupt:
            interrupted = True
        run_trials = seen["n"]
    tuning_s = time.perf_counter() - t_tune
    after = core.tuning_summary(db_dir, all_tasks)
    _record_session(db_dir, {
        "started_at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "batch_size": batch, "budget": cfg.trials, "trials_before": before["trials"],
        "trials_run": run_trials, "trials_after": after["trials"],
        "tuning_s": round(tuning_s, 1), "interrupted": interrupted,
        "runner": info["runner"], "target": core.target_dict(target),
        "errors": state.get("errors", 0), "build_errors": state.get("build_errors", 0),
        **core.tvm_versions()})
    return {**info, "trials_run": run_trials, "trials_after": after["trials"],
            "tasks_tuned": after["tasks_tuned"], "estimate_ms": after["estimate_ms"],
            "tuning_s": round(tuning_s, 1), "wall_s": round(time.perf_counter() - t_start, 1),
            "errors": state.get("errors", 0), "build_errors": state.get("build_errors", 0),
            "first_error": state.get("first_error"), "interrupted": interrupted,
            "per_task": after["per_task"]}


def _record_session(db_dir: Path, session: dict) -> None:
    meta = core.read_db_meta(db_dir)
    sessions = meta.get("sessions", [])
    sessions.append(session)
    meta["sessions"] = sessions
    meta["tuning_s"] = round(sum(s.get("tuning_s", 0) for s in sessions), 1)
    meta["target"] = session["target"]
    tmp = db_dir / (core.DB_META + ".part")
    tmp.write_text(json.dumps(meta, indent=1) + "\n")
    os.replace(tmp, db_dir / core.DB_META)
    gi = db_dir / ".gitignore"
    if not gi.exists():
        gi.write_text("# MetaSchedule per-task logs: large, for debugging build errors only\nlogs/\n")
