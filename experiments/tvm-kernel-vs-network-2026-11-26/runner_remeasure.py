"""Re-measure a task's best database records with MetaSchedule's own builder and runner.

The database keeps, per candidate, one measurement (TuneConfig: number 3, repeat 1,
min_repeat_ms 50), and a task's "best" is the minimum over all its candidates. This builds
the top-k records of each given task with the tuner's builder (converters/tvm/runner.py),
runs them ``--runs`` times each with the tuner's LocalRunner (round robin, so the VM's
drift hits every record alike), and prints them beside the stored figure: whether the best
is a schedule that fast or a measurement that low, and which record is fastest today.

    .venv/bin/python experiments/tvm-kernel-vs-network-2026-11-26/runner_remeasure.py \\
        --model resnet152 --tuning-dir results/experiments/tvm-six-models-2026-11-25/tuning \\
        --tasks fused_conv2d16_add9_relu71 fused_conv2d15_add9_relu71 --json out.json
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
    p.add_argument("--tasks", nargs="+", required=True)
    p.add_argument("--top", type=int, default=3)
    p.add_argument("--runs", type=int, default=6)
    p.add_argument("--json")
    args = p.parse_args()

    import numpy as np
    from tvm.s_tir import meta_schedule as ms

    from converters.tvm import intrinsics, passes
    from converters.tvm import runner as tuner_runner
    from converters.tvm.tuning import TuneConfig
    from tvm_setup import load

    m = load(args.model, args.tuning_dir)
    target, db_dir = m.target, m.db_dir
    tasks = {t.task_name: t for t in passes.extract_tasks(m.lowered, target)}
    db = ms.database.JSONDatabase(work_dir=str(db_dir), allow_missing=False)
    intrinsics.register_for(target)
    cfg = TuneConfig()
    builder, runner = tuner_runner.make_builder(cfg), tuner_runner.make_runner(cfg)
    out = {**m.header(),
           "runner": {"number": cfg.number, "repeat": cfg.repeat,
                      "min_repeat_ms": cfg.min_repeat_ms}, "tasks": {}}
    for name in args.tasks:
        if name not in tasks:
            p.error(f"no task {name} in {m.spec.name}; tasks: {', '.join(sorted(tasks))}")
        recs = db.get_top_k(db.commit_workload(tasks[name].dispatched[0]), args.top)
        built = []
        for rank, rec in enumerate(recs):
            cand = rec.as_measure_candidate()
            b = builder.build([ms.builder.BuilderInput(cand.sch.mod, target)])[0]
            if b.error_msg:
                p.error(f"{name} record {rank}: build failed: {b.error_msg[:500]}")
            built.append((rec, cand, b.artifact_path))
        now: list[list[float]] = [[] for _ in built]
        for r in range(args.runs):
            # Round robin, direction alternating: the VM's drift hits every record alike.
            order = range(len(built)) if r % 2 == 0 else reversed(range(len(built)))
            for k in order:
                _, cand, path = built[k]
                res = runner.run([ms.runner.RunnerInput(path, "cpu", cand.args_info)])[0].result()
                if res.error_msg:
                    p.error(f"{name} record {k}: run failed: {res.error_msg[:500]}")
                now[k].append(float(np.mean([float(v) for v in res.run_secs])) * 1e6)
        rows = []
        for rank, ((rec, _, _), got) in enumerate(zip(built, now)):
            stored = float(np.mean([float(v) for v in rec.run_secs])) * 1e6
            row = {"rank": rank, "stored_us": round(stored, 1),
                   "now_us": [round(v, 1) for v in got],
                   "now_median_us": round(float(np.median(got)), 1),
                   "now_over_stored": round(float(np.median(got)) / stored, 3)}
            rows.append(row)
            print(f"{name} #{rank}: stored {stored:.1f} us, runner now {row['now_us']} "
                  f"(median {row['now_median_us']}, {row['now_over_stored']}x)", flush=True)
        fastest = min(rows, key=lambda x: x["now_median_us"])
        print(f"{name}: fastest by today's median is #{fastest['rank']} "
              f"({fastest['now_median_us']} us against #0's {rows[0]['now_median_us']} us)")
        out["tasks"][name] = rows
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
