"""A model's max pools as its database builds them against the hand-written sketches of
``converters/tvm/pool_schedule.py``, each kernel alone and warm, in one process.

For every pooling task of the model: the database's kernel (its best record applied), and
each design space the rule gives (the two sketches, at each unroll the root rule offers),
built alone and timed as the tuner's runner times a candidate; ``--rounds`` rounds in
alternating order (ABBA). The outputs are checked to be equal to the database kernel's.

    .venv/bin/python experiments/tvm-pool-schedule-2026-11-29/pools.py --model squeezenet1_1 \\
        --tuning-dir results/experiments/tvm-transfer-multi-2026-11-29/tuning-measured \\
        --json out.json
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))


def sketches(func, target) -> list:
    """(name, scheduled PrimFunc) for each schedule the rule's design space holds, every
    unroll decision of the root rule enumerated."""
    import tvm
    from tvm.s_tir import meta_schedule as ms

    from converters.tvm import design_space, intrinsics, pool_schedule

    intrinsics.register_for(target)     # else the first TuneContext parses them all
    out = []
    with pool_schedule.enabled(True):
        space = design_space.space_for(func, target, "NHWC", "auto")
        ctx = ms.TuneContext(mod=tvm.IRModule({"main": func}), target=target,
                             space_generator=space, task_name="pool")
        for i, sch in enumerate(ctx.generate_design_space()):
            unroll = [inst for inst in sch.trace.insts if inst.kind.name == "SampleCategorical"]
            for k, choice in enumerate(unroll[0].attrs[0] if unroll else [None]):
                trace = sch.trace
                if unroll:
                    trace = trace.with_decision(unroll[0], k, remove_postproc=True)
                s = tvm.s_tir.Schedule(tvm.IRModule({"main": func}))
                trace.apply_to_schedule(s, remove_postproc=False)
                for p in ctx.space_generator.postprocs:
                    p.apply(s)
                parallel = "rows x columns" if i else "rows"
                out.append((f"sketch {parallel}, unroll {choice}", s.mod["main"]))
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", required=True)
    p.add_argument("--tuning-dir", required=True)
    p.add_argument("--rounds", type=int, default=8)
    p.add_argument("--json")
    args = p.parse_args()

    import numpy as np

    from converters.tvm import build, passes
    from tvm_setup import load, timed_alone

    m = load(args.model, args.tuning_dir)
    raw = {gv.name_hint: f for gv, f in m.lowered.functions_items()}
    applied = {gv.name_hint: f for gv, f in
               build.apply_database(m.lowered, m.target, m.db_dir).functions_items()}
    calls = {t.task_name: int(t.weight) for t in passes.extract_tasks(m.lowered, m.target)}
    rows = []
    for name in sorted(n for n in raw if "pool" in n):
        arms = [("database", applied[name])] + sketches(raw[name], m.target)
        # every arm gets the same seeded arguments (kernel_alone, seed 0), so after a timed
        # call their outputs compare
        timed = {arm: (*timed_alone(func, m.target), []) for arm, func in arms}
        for r in range(args.rounds):
            order = list(timed) if r % 2 == 0 else list(timed)[::-1]
            for arm in order:
                ev, tensors, got = timed[arm]
                got.append(float(np.mean(ev(*tensors).results)) * 1e6)
        us = {arm: round(float(np.median(t[2])), 2) for arm, t in timed.items()}
        outs = {arm: t[1][-1].numpy() for arm, t in timed.items()}
        best = min((a for a in us if a != "database"), key=us.get)
        rows.append({"task": name, "calls": calls.get(name, 1), "us": us, "best_sketch": best,
                     "equal_outputs": {a: bool(np.array_equal(outs["database"], outs[a]))
                                       for a in outs},
                     "best_over_database": round(us[best] / us["database"], 3)})
        print(f"{name:16s} x{rows[-1]['calls']}  database {us['database']:7.2f} us  "
              f"best sketch {us[best]:7.2f} us ({best}; {rows[-1]['best_over_database']}x); "
              f"outputs equal: {all(rows[-1]['equal_outputs'].values())}",
              flush=True)
    per_inference = {k: round(sum(r["calls"] * (r["us"]["database"] if k == "database"
                                                 else r["us"][r["best_sketch"]])
                                  for r in rows), 1) for k in ("database", "best sketch")}
    print(f"per inference: database {per_inference['database']} us, best sketches "
          f"{per_inference['best sketch']} us")
    if args.json:
        Path(args.json).write_text(json.dumps({**m.header(), "rounds": args.rounds,
                                               "pools": rows,
                                               "per_inference_us": per_inference},
                                              indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
