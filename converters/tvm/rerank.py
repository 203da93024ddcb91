"""Re-rank each task's best records by measuring them again, side by side (``--rerank``).

A database's best for a task is the minimum, over all its candidates, of one ~50 ms
measurement each. On a machine whose speed drifts (this project's VM: tens of percent within
seconds) that minimum goes to a candidate measured at a fast moment, and the build applies
it. Measured on ResNet-152 (experiments/tvm-kernel-vs-network-2026-11-26): the 14x14 conv's
database best re-ran at 1.88x its stored figure while its 4th-ranked record re-ran at 1.00x,
1.71x faster; applying that one record made the network 0.838x (p50, one process, ABBA).

``rerank`` takes each task's top ``top_k`` records, builds them with the tuner's builder,
runs them ``runs`` times each with the tuner's runner in round robin (direction alternating,
so drift hits every record alike), and writes the fastest by median into a database of its
own, ``<db_dir>/reranked/``, with that median as its measurement. The original records stay
as they were; builds apply the re-ranked database first (``build.apply_database``)."""
from __future__ import annotations

import dataclasses
import json
import shutil
import time
from pathlib import Path

from . import database

META = "rerank.json"


def rerank(db_dir, target, tasks, cfg, top_k: int = 4, runs: int = 3,
           on_task=None) -> dict:
    """Re-rank the tasks' top records in ``db_dir``; returns what was measured and chosen.
    ``cfg``: the TuneConfig whose builder and runner settings to use."""
    import numpy as np
    from tvm.s_tir import meta_schedule as ms

    from . import runner as tuner_runner

    if top_k < 2 or runs < 1:
        raise ValueError("rerank needs top_k >= 2 and runs >= 1")
    t0 = time.perf_counter()
    db_dir = Path(db_dir)
    db = ms.database.JSONDatabase(work_dir=str(db_dir), allow_missing=False)
    # As asked (--runner-caches: a warm database's top records re-measured cold picks the
    # one fastest as the network runs it; the re-ranked database holds one record per task,
    # so nothing mixes, and the database is not consulted), else as the database's records
    # were measured; caches_for keeps GPUs warm either way.
    from . import targets

    caches = tuner_runner.caches_for(target, None if cfg.runner_caches else db_dir,
                                     cfg.runner_caches)
    cfg = dataclasses.replace(cfg, runner_caches=caches)
    # The runner's processes inherit TVM_NUM_THREADS. Without it TVM takes half the vCPUs:
    # `--trials 0 --rerank` (no tuning session first to set it) re-measured ResNet-152's
    # records on one of the 2 cores, at 2-2.6x their stored times.
    threads = (None if cfg.rpc_tracker or targets.is_gpu(target)
               else targets.configure_threads(target)["threads"])
    builder, runner = tuner_runner.make_builder(cfg), tuner_runner.make_runner(cfg)
    out_dir = database.reranked_dir(db_dir)
    tmp = out_dir.with_name(out_dir.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    chosen = ms.database.JSONDatabase(work_dir=str(tmp))
    dev_type = "cpu" if target.kind.name == "llvm" else target.kind.name
    per_task = []
    for i, task in enumerate(tasks):
        func = task.dispatched[0]
        if not db.has_workload(func):
            continue
        recs = [r for r in db.get_top_k(db.commit_workload(func), top_k)
                if r.run_secs and max(float(v) for v in r.run_secs) < 1e9]
        if len(recs) < 2:
            continue
        cands = [r.as_measure_candidate() for r in recs]
        built = builder.build([ms.builder.BuilderInput(c.sch.mod, target) for c in cands])
        ok = [k for k, b in enumerate(built) if b.error_msg is None]
        times: dict[int, list[float]] = {k: [] for k in ok}
        for r in range(runs):
            order = ok if r % 2 == 0 else ok[::-1]
            results = runner.run([ms.runner.RunnerInput(built[k].artifact_path, dev_type,
                                                        cands[k].args_info) for k in order])
            for k, fut in zip(order, results):
                res = fut.result()
                if res.error_msg is None and res.run_secs:
                    times[k].append(float(np.mean([float(v) for v in res.run_secs])))
        medians = {k: float(np.median(v)) for k, v in times.items() if v}
        if not medians:
            continue
        best = min(medians, key=medians.get)
        rec = recs[best]
        chosen.commit_tuning_record(ms.database.TuningRecord(
            rec.trace, chosen.commit_workload(func), [medians[best]],
            rec.target, rec.args_info))
        row = {"task": task.task_name, "weight": int(task.weight),
               "stored_us": [round(float(np.mean([float(v) for v in r.run_secs])) * 1e6, 1)
                             for r in recs],
               "remeasured_us": [round(medians[k] * 1e6, 1) if k in medians else None
                                 for k in range(len(recs))],
               "picked": best}
        per_task.append(row)
        if on_task:
            on_task(i + 1, len(tasks), row)
    summary = {"top_k": top_k, "runs": runs, "runner_caches": cfg.runner_caches,
               "measure_threads": threads,
               "tasks": len(per_task),
               "changed": sum(r["picked"] != 0 for r in per_task),
               "seconds": round(time.perf_counter() - t0, 1),
               "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "per_task": per_task}
    (tmp / META).write_text(json.dumps(summary, indent=1) + "\n", encoding="utf-8")
    shutil.rmtree(out_dir, ignore_errors=True)
    tmp.rename(out_dir)
    return summary
