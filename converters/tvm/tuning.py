"""MetaSchedule tuning: budgeted, resumable, local or over a TVM RPC tracker.

The JSON database in ``<tuning_dir>/<target-slug>/<model>-CxHxW/`` gets every measured
candidate (failed ones too) appended as it is measured: a killed run loses at most one batch.
Resume: records already held count toward ``--trials``; the search and the cost model start
from them. Reuse and transfer: transfer.py. Sessions go to ``tuning.json``
(database.record_session); the loop is scheduler.py, the builder and runner runner.py.
"""
from __future__ import annotations

import dataclasses
import datetime as dt
import logging
import math
import sys
import time
from pathlib import Path
from typing import Callable, Optional

from edgebench.util import physical_cores

from . import (database, intrinsics, lowering, passes,
               runner, scheduler, targets, transfer)
from .cpu import design_space, pool_schedule
from .errors import TvmError
from .importer import import_model


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
    layout: Optional[str] = None        # conv2d layout (None: lowering.lowering_for's)
    conv2d: Optional[str] = None        # direct | winograd (None: lowering.lowering_for's)
    spatial_mean: Optional[str] = None  # reduce | matmul (None: lowering.lowering_for's)
    concat: Optional[str] = None        # keep | split (None: lowering.lowering_for's)
    out_channels: Optional[str] = None  # keep | pad | pad-pair (None: out_channels_for's)
    input_transpose: Optional[str] = None   # kernel | conv (None: lowering.lowering_for's)
    transfer: Optional[bool] = None     # pre-train the cost model on sibling databases
                                        # (None: transfer.auto_transfer's default)
    transfer_from: Optional[list] = None    # more databases / folders of them to learn from
    reuse: bool = True                  # start shared kernels from sibling databases' records
    design_space: str = "auto"          # auto: CPU channels-last tiles at the vector width
    allocation: str = "uniform"         # measured: caps by measured time (scheduler)
    runner_caches: Optional[str] = None  # warm | cold (None: runner.caches_for's)
    recipe: Optional[dict] = None       # the recipe the options came from (recipes.resolve)
    verbose: bool = False               # MetaSchedule's own console log


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
    intrinsics.register_for(target)      # before the first TuneContext: seconds, not minutes
    contexts, weights, spaces = [], [], {}
    loggers = get_loggers_from_work_dir(str(db_dir), [t.task_name for t in tasks])
    for task, logger, seed in zip(tasks, loggers, fork_seed(cfg.seed, n=len(tasks))):
        func = task.dispatched[0]
        space = design_space.space_for(func, target, layout, cfg.design_space)
        name = design_space.describe(space)
        spaces[name] = spaces.get(name, 0) + 1
        contexts.append(ms.TuneContext(
            mod=func, target=task.target, space_generator=space,
            search_strategy=ms.search_strategy.EvolutionarySearch(
                population_size=cfg.population),
            task_name=task.task_name, logger=logger, rand_state=seed,
            num_threads=physical_cores()).clone())
        weights.append(task.weight)
    return contexts, weights, spaces


def _allocation(tasks, cfg: TuneConfig, per_iter: int, cap: int):
    """Each task's batch size and trial cap, and what tuning.json says of them."""
    if cfg.allocation not in scheduler.ALLOCATIONS:
        raise ValueError(f"allocation must be one of {', '.join(scheduler.ALLOCATIONS)} "
                         f"(got '{cfg.allocation}')")
    if cfg.allocation == "uniform":
        return [per_iter] * len(tasks), [cap] * len(tasks), {"rule": "uniform"}
    if cfg.allocation == "measured":
        first = scheduler.first_round_batch(per_iter)
        return [per_iter] * len(tasks), [cap] * len(tasks), {
            "rule": "measured", "first_round_batch": first,
            "first_round_trials": first * len(tasks), "later_batch": per_iter,
            "caps_from_measured_time": not cfg.max_trials_per_task}


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
    runner_name, threads = measured_where(cfg, target)
    cfg = dataclasses.replace(cfg, runner_caches=runner.caches_for(target, db_dir,
                                                                  cfg.runner_caches))
    mod, used, note = import_model(model, (batch, *input_size), importer, spec=spec, cache=cache)
    choices = lowering.lowering_for(target, db_dir, {n: getattr(cfg, n)
                                                     for n in lowering.CHOICE_NAMES})
    layout = choices["layout"]
    lowered = passes.lower_for_tuning(mod, target, **choices)
    tasks = passes.extract_tasks(lowered, target)
    if cfg.op_names:
        every = tasks
        tasks = [t for t in tasks if any(o in t.task_name for o in cfg.op_names)]
        if every and not tasks:
            raise TvmError(f"no task's name contains any of {', '.join(cfg.op_names)} (the "
                           f"tasks: {', '.join(sorted(t.task_name for t in every))})")
    if not tasks:
        raise TvmError("nothing to tune: the model lowered to no tunable TIR functions")
    profile = (layout, design_space.session_space(cfg.design_space, target, layout))
    # Reuse only records measured with the same runner caches: a warm record of a kernel
    # beats a cold one and would win the task on how it was measured.
    reused = (transfer.reuse_alike(db_dir, tasks, [
        d for d in transfer.transfer_databases(db_dir, cfg.transfer_from)
        if runner.caches_for(target, d) == cfg.runner_caches], profile)
        if cfg.reuse else {"records": 0, "tasks": 0, "not_replayable": 0, "databases": [],
                           "skipped": []})
    before = database.tuning_summary(db_dir, tasks)
    remaining = cfg.trials - before["trials"]
    n_tasks = len(tasks)
    per_iter = cfg.trials_per_iter or max(4, min(64, remaining // max(1, n_tasks)))
    per_task_cap = cfg.max_trials_per_task or max(per_iter, math.ceil(cfg.trials / n_tasks) * 4)
    batches, caps, allocation = _allocation(tasks, cfg, per_iter, per_task_cap)
    info = {"model_tasks": n_tasks, "trials_before": before["trials"], "budget": cfg.trials,
            "remaining": max(0, remaining), "trials_per_iter": per_iter,
            "max_trials_per_task": per_task_cap, "allocation": allocation,
            "population": cfg.population, "importer": used, "importer_note": note,
            "runner": runner_name, "runner_caches": cfg.runner_caches,
            "database": str(db_dir), "batch_size": batch, **choices,
            "measure_threads": threads["threads"], "measure_threads_source": threads["source"],
            "reused_records": reused}
    auto = transfer.auto_transfer(cfg.transfer, profile[1])
    siblings = (transfer.transfer_databases(db_dir, cfg.transfer_from, auto)
                if remaining > 0 else [])
    transfer_from, transfer_skipped = transfer.split_by_profile(siblings, profile)
    info["transfer_from"] = [str(p) for p in transfer_from]
    info["transfer_skipped"] = transfer_skipped
    info["session_design_space"] = profile[1]
    info["pool_schedule"] = pool_schedule.for_space(profile[1])
    if on_start:
        on_start(info)
    t_tune = time.perf_counter()
    interrupted = False
    loop = None
    if remaining > 0:
        # hand-written pooling sketches in edgebench's CPU spaces (pool_schedule)
        with pool_schedule.enabled(info["pool_schedule"] == "channels-last"):
            t_setup = time.perf_counter()
            contexts, weights, spaces = _tune_contexts(tasks, db_dir, target, layout, cfg)
            info["design_space"] = spaces
            db = ms.database.JSONDatabase(work_dir=str(db_dir))
            cost_model = ms.cost_model.XGBModel(
                extractor=ms.feature_extractor.PerStoreFeature(),
                adaptive_training=True, num_tuning_cores=physical_cores())
            warm = (transfer.warm_start_cost_model(cost_model, contexts, db)
                    if before["trials"] else 0)
            info["cost_model_warm_start_records"] = warm
            if transfer_from:
                info["cost_model_transfer"] = transfer.transfer_cost_model(cost_model, target,
                                                                           transfer_from)
            info["setup_s"] = round(time.perf_counter() - t_setup, 1)
            measurer = runner.make_runner(cfg)
            builder = runner.make_builder(cfg)
            loop = scheduler.Loop(
                contexts, weights, db, cost_model, builder, measurer, batches,
                caps, before["per_task"], on_update,
                first_batch=allocation.get("first_round_batch"),      # measured only
                budget_total=cfg.trials if allocation.get("caps_from_measured_time") else None)
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
                # the runner's worker processes, and the builder's where it keeps a pool
                for workers in (getattr(measurer, "pool", None), builder):
                    try:
                        if hasattr(workers, "shutdown"):
                            workers.shutdown(wait=False)
                    except Exception:  # noqa: BLE001
                        pass
    run_trials = loop.done if loop else 0
    state = loop.state if loop else {"errors": 0, "build_errors": 0, "first_error": None}
    tuning_s = time.perf_counter() - t_tune
    after = database.tuning_summary(db_dir, tasks)
    phases = scheduler.phase_record(loop.phases, run_trials, loop.batch_ends) if loop else None
    if loop is not None and loop.recapped:
        info["allocation"] = {**info["allocation"], **loop.recapped}
    if run_trials or interrupted or reused["records"]:
        database.record_session(db_dir, {
            "started_at": started_at, **choices, "defaults": targets.defaults_for(target),
            "batch_size": batch,
            "budget": cfg.trials, "trials_before": before["trials"], "trials_run": run_trials,
            "trials_per_iter": info["trials_per_iter"],
            "max_trials_per_task": info["max_trials_per_task"],
            "allocation": info["allocation"], "population": cfg.population,
            "trials_after": after["trials"], "tuning_s": round(tuning_s, 1),
            "interrupted": interrupted, "runner": info["runner"],
            "runner_caches": cfg.runner_caches,
            "measure_threads": threads["threads"], "recipe": cfg.recipe,
            "cost_model_transfer": info.get("cost_model_transfer"),
            "reused_records": reused,
            "design_space": info.get("design_space"),
            "pool_schedule": info["pool_schedule"],
            "phases": phases,
            "target": targets.target_dict(target), "errors": state["errors"],
            "build_errors": state["build_errors"], **targets.tvm_versions()},
            choices=choices)
    return {**info, "trials_run": run_trials, "trials_after": after["trials"],
            "tasks_tuned": after["tasks_tuned"], "estimate_ms": after["estimate_ms"],
            "tuning_s": round(tuning_s, 1), "wall_s": round(time.perf_counter() - t_start, 1),
            "errors": state["errors"], "build_errors": state["build_errors"],
            "first_error": state["first_error"], "interrupted": interrupted,
            "phases": phases,
            "per_task": after["per_task"]}


def measured_where(cfg: TuneConfig, target) -> tuple[str, dict]:
    """The runner's name and the threads a candidate is measured with, for the records."""
    if cfg.rpc_tracker:
        return (f"rpc {cfg.rpc_tracker} key={cfg.rpc_key}",
                {"threads": None, "source": "the device's RPC server (its TVM_NUM_THREADS)"})
    if targets.is_gpu(target):
        # Candidates run on the GPU: a CPU thread count says nothing about them.
        kind = target.kind.name.upper()
        return f"local, on the {kind} GPU", {"threads": None, "source": f"the local {kind} GPU"}
    # The runner's worker processes inherit TVM_NUM_THREADS: candidates are measured with as
    # many threads as the tuned build will run with.
    return "local", targets.configure_threads(target)


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
