"""A tuned kernel three ways, in one process: in the network, alone, and as the database says.

benchmarks/tvm_profile.py put resnet152's kernels at 0.47x to 1.78x their database best
inside the network (experiments/tvm-winograd-2026-11-26). Those bests were measured on
another day, by MetaSchedule's runner, as the minimum over every candidate of the task. Here,
in one process and alternating rounds, for the model's top kernels by in-network time:

  network  per-call time inside the tuned network (the VM's instrument, as tvm_profile.py);
  alone    the very kernel the network calls (``<task>_prepacked``: the weight re-laid out
           ahead), built alone and timed as MetaSchedule's runner times a candidate
           (time_evaluator, number 3, repeat 1, min_repeat_ms 50: TuneConfig's defaults);
  db       the database's best for the task (the record the build applied) and its
           median over all the task's measured candidates (what the search saw).

network / alone is what sitting in a network costs a kernel; alone / db is the database's
figure against today's re-measurement of the same schedule.

    .venv/bin/python experiments/tvm-kernel-vs-network-2026-11-26/kernel_vs_network.py \\
        --model resnet152 --tuning-dir results/experiments/tvm-six-models-2026-11-25/tuning \\
        --top 8 --json out.json
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
    p.add_argument("--top", type=int, default=8, help="kernels, by in-network time")
    p.add_argument("--rounds", type=int, default=6)
    p.add_argument("--inferences", type=int, default=10, help="network calls per round")
    p.add_argument("--json")
    args = p.parse_args()

    import numpy as np
    import tvm
    from tvm.runtime.vm import VirtualMachine

    from converters.tvm import build, database, passes
    from converters.tvm.tuning import TuneConfig
    from tvm_profile import tvm_kernel_times
    from tvm_setup import kernel_alone, load

    m = load(args.model, args.tuning_dir)
    target, db_dir, lowered = m.target, m.db_dir, m.lowered
    tasks = passes.extract_tasks(lowered, target)
    summary = {t["name"]: t for t in database.tuning_summary(db_dir, tasks)["per_task"]}
    hashes, recs = database._records_by_workload(db_dir)
    runs_by_hash: dict[str, list[float]] = {}
    for i, h in enumerate(hashes):
        runs_by_hash.setdefault(h, []).extend(r for r in recs.get(i, []) if r < 1e9)
    median_by_task = {t.task_name: runs_by_hash.get(database.task_hash(t.dispatched[0]), [])
                      for t in tasks}
    applied = build.apply_database(lowered, target, db_dir)
    vm = VirtualMachine(build.compile_module(applied, target), tvm.cpu(0))
    fn = vm["main"]
    x = tvm.runtime.tensor(np.random.RandomState(0).standard_normal(
        (1, *m.spec.input_size)).astype("float32"))
    for _ in range(5):
        fn(x)
    first = tvm_kernel_times(vm, fn, x, 3)
    top = sorted(first, key=lambda k: -first[k]["us"])[:args.top]
    funcs = {gv.name_hint: f for gv, f in applied.functions_items()}
    cfg = TuneConfig()
    dev = tvm.cpu()
    alone = {}
    for name in top:
        lib, tensors = kernel_alone(funcs[name], target)
        ev = lib.mod.time_evaluator("main", dev, number=cfg.number, repeat=cfg.repeat,
                                    min_repeat_ms=cfg.min_repeat_ms)
        alone[name] = (lib, ev, tensors)
    net_us: dict[str, list[float]] = {n: [] for n in top}
    alone_us: dict[str, list[float]] = {n: [] for n in top}
    for r in range(args.rounds):
        # ABBA: network first in even rounds, the kernels alone first in odd ones
        order = ("net", "alone") if r % 2 == 0 else ("alone", "net")
        for arm in order:
            if arm == "net":
                got = tvm_kernel_times(vm, fn, x, args.inferences)
                for n in top:
                    net_us[n].append(got[n]["us"] / got[n]["calls"])
            else:
                for n, (_, ev, tensors) in alone.items():
                    alone_us[n].append(float(np.mean(ev(*tensors).results)) * 1e6)
    out = {**m.header(), "rounds": args.rounds,
           "inferences_per_round": args.inferences,
           "runner": {"number": cfg.number, "repeat": cfg.repeat,
                      "min_repeat_ms": cfg.min_repeat_ms}, "kernels": []}
    print(f"{'kernel':48s} calls  network_us  alone_us  db_best_us  db_median_us  "
          "net/alone  alone/db_best")
    for n in top:
        task = n[:-len("_prepacked")] if n.endswith("_prepacked") else n
        best = summary.get(task, {}).get("best_us")
        seen = median_by_task.get(task) or []
        row = {"kernel": n, "task": task, "calls": first[n]["calls"],
               "network_us": round(float(np.median(net_us[n])), 1),
               "alone_us": round(float(np.median(alone_us[n])), 1),
               "db_best_us": best,
               "db_candidates": len(seen),
               "db_median_us": round(float(np.median(seen)) * 1e6, 1) if seen else None}
        row["network_over_alone"] = round(row["network_us"] / row["alone_us"], 3)
        row["alone_over_db_best"] = round(row["alone_us"] / best, 3) if best else None
        out["kernels"].append(row)
        print(f"{n:48s} {row['calls']:5d}  {row['network_us']:10.1f}  {row['alone_us']:8.1f}  "
              f"{best or float('nan'):10.1f}  {row['db_median_us'] or float('nan'):12.1f}  "
              f"{row['network_over_alone']:9.3f}  {row['alone_over_db_best'] or float('nan'):13.3f}",
              flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
