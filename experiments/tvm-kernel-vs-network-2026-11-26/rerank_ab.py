"""The network with each task's database-best record against the network with chosen tasks
given another of their top records (the one runner_remeasure.py found fastest today), timed
in one process in interleaved rounds.

    .venv/bin/python experiments/tvm-kernel-vs-network-2026-11-26/rerank_ab.py \\
        --model resnet152 --tuning-dir results/experiments/tvm-kernel-vs-network-2026-11-26/tuning \\
        --pick fused_conv2d16_add9_relu71=3 --json out.json
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", required=True)
    p.add_argument("--tuning-dir", required=True)
    p.add_argument("--pick", nargs="+", required=True, metavar="TASK=RANK",
                   help="use the task's RANK-th best record (0 = the database's best)")
    p.add_argument("--rounds", type=int, default=15)
    p.add_argument("--calls", type=int, default=40)
    p.add_argument("--json")
    args = p.parse_args()

    import numpy as np
    import tvm
    from tvm.runtime.vm import VirtualMachine
    from tvm.s_tir import meta_schedule as ms

    from converters.tvm import build, passes
    from edgebench.measure import timed_calls
    from tvm_setup import load

    m = load(args.model, args.tuning_dir)
    target = m.target
    tasks = {t.task_name: t for t in passes.extract_tasks(m.lowered, target)}
    db = ms.database.JSONDatabase(work_dir=str(m.db_dir), allow_missing=False)
    chosen = ms.database.MemoryDatabase()
    picks = {}
    for item in args.pick:
        name, _, rank = item.partition("=")
        if name not in tasks:
            p.error(f"no task {name}")
        rec = db.get_top_k(db.commit_workload(tasks[name].dispatched[0]), int(rank) + 1)[int(rank)]
        wk = chosen.commit_workload(tasks[name].dispatched[0])
        chosen.commit_tuning_record(ms.database.TuningRecord(
            rec.trace, wk, rec.run_secs, rec.target, rec.args_info))
        picks[name] = {"rank": int(rank),
                       "stored_us": round(float(np.mean([float(v) for v in rec.run_secs])) * 1e6, 1)}
    arms = {"database best": db, "picked": ms.database.OrderedUnionDatabase(chosen, db)}
    x = tvm.runtime.tensor(np.random.RandomState(0).standard_normal(
        (1, *m.spec.input_size)).astype("float32"))
    runs = {}
    for name, d in arms.items():
        vm = VirtualMachine(build.compile_module(build.apply_records(m.lowered, target, d),
                                                 target), tvm.cpu(0))
        runs[name] = {"fn": vm["main"], "vm": vm, "times": []}
    for r in runs.values():
        for _ in range(10):
            r["fn"](x)
    for i in range(args.rounds):
        order = list(runs.values()) if i % 2 == 0 else list(runs.values())[::-1]   # ABBA
        for r in order:
            r["times"].extend(timed_calls(lambda _, fn=r["fn"]: fn(x), None, args.calls,
                                          0.0, 1e6))
    out = {**m.header(), "picks": picks, "rounds": args.rounds, "calls_per_round": args.calls,
           "arms": []}
    base = None
    for name, r in runs.items():
        a = np.asarray(r["times"])
        row = {"arm": name, "p50_ms": round(float(np.median(a)), 3),
               "p10_ms": round(float(np.percentile(a, 10)), 3),
               "min_ms": round(float(a.min()), 3), "n": int(a.size)}
        base = base or row["p50_ms"]
        row["p50_vs_database_best"] = round(row["p50_ms"] / base, 3)
        out["arms"].append(row)
        print(f"{name:14s} p50 {row['p50_ms']:.3f}  p10 {row['p10_ms']:.3f}  "
              f"min {row['min_ms']:.3f} ms  p50/database-best {row['p50_vs_database_best']:.3f}")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
