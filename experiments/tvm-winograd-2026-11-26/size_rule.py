"""Winograd only where a conv's output is large: the per-conv rule, measured as a network.

The Winograd database's kernel bests beat the direct ones at 56x56 and 28x28 and lost at
14x14 and 7x7 (README, ResNet-152). This builds, in one process, the network with
  direct       every conv direct (the direct database),
  winograd     every eligible 3x3 conv Winograd (the Winograd database),
  rule-N       Winograd only where the output is at least N pixels a side,
and times them in interleaved rounds. The rule-N module's direct tasks take their records
from the direct database first (``OrderedUnionDatabase``: every task the direct build has
gets the very same schedule), its Winograd tasks from the Winograd database: rule-N differs
from ``direct`` in the rewritten convs alone. No tuning runs here; both databases must exist
(``run.sh``; the direct one: ``../tvm-six-models-2026-11-25/run.sh``).

    .venv/bin/python experiments/tvm-winograd-2026-11-26/size_rule.py --model resnet152 \\
        --direct results/experiments/tvm-six-models-2026-11-25/tuning \\
        --winograd results/experiments/tvm-winograd-2026-11-26/tuning --rules 28 56 \\
        --json out.json
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", required=True)
    p.add_argument("--direct", required=True, help="tuning dir of the direct database")
    p.add_argument("--winograd", required=True, help="tuning dir of the Winograd database")
    p.add_argument("--rules", type=int, nargs="+", default=[28],
                   help="minimum output sizes to build a rule-N network for (default 28)")
    p.add_argument("--rounds", type=int, default=15)
    p.add_argument("--calls", type=int, default=40)
    p.add_argument("--json")
    args = p.parse_args()

    import numpy as np
    import tvm
    from tvm.runtime.vm import VirtualMachine
    from tvm.s_tir import meta_schedule as ms

    from converters.tvm import build, database, importer, passes, targets
    from edgebench.measure import timed_calls
    from edgebench.models import make_spec, resolve_weights

    target, _ = targets.resolve_target("host")
    threads = targets.configure_threads(target)
    weights, note = resolve_weights(args.model, "auto", 0)
    spec = make_spec(args.model, weights)
    dbs = {}
    for kind, root in (("direct", args.direct), ("winograd", args.winograd)):
        d = database.db_dir_for(root, target, spec.name, spec.input_size)
        if not database.database_exists(d) or passes.conv2d_for(d) != kind:
            p.error(f"no {kind} database for {spec.name} on this target in {root} ({d})")
        dbs[kind] = ms.database.JSONDatabase(work_dir=str(d), allow_missing=False)
    mod, _, _ = importer.import_model(spec.build(), (1, *spec.input_size))
    arms = {"direct": ("direct", 0, dbs["direct"]),
            "winograd": ("winograd", 0, dbs["winograd"])}
    for n in args.rules:
        arms[f"rule-{n}"] = ("winograd", n, ms.database.OrderedUnionDatabase(
            dbs["direct"], dbs["winograd"]))
    x = tvm.runtime.tensor(np.random.RandomState(0).standard_normal(
        (1, *spec.input_size)).astype("float32"))
    runs = {}
    for name, (conv2d, min_out, db) in arms.items():
        lowered = passes.lower_for_tuning(mod, target, "NHWC", conv2d, min_out)
        tasks = passes.extract_tasks(lowered, target)
        untuned = [t.task_name for t in tasks
                   if db.query_tuning_record(t.dispatched[0], target, t.task_name) is None]
        wino = sum("winograd" in t.task_name for t in tasks)
        vm = VirtualMachine(build.compile_module(build.apply_records(lowered, target, db),
                                                 target), tvm.cpu(0))
        runs[name] = {"fn": vm["main"], "vm": vm, "times": [], "tasks": len(tasks),
                      "winograd_tasks": wino, "untuned": untuned}
        print(f"built {name}: {len(tasks)} tasks, {wino} Winograd, untuned {untuned}",
              file=sys.stderr, flush=True)
    for r in runs.values():
        for _ in range(20):
            r["fn"](x)
    for _ in range(args.rounds):
        for r in runs.values():
            r["times"].extend(timed_calls(lambda _, fn=r["fn"]: fn(x), None, args.calls,
                                          0.0, 1e6))
    out = {"model": spec.name, "weights": spec.weights, "weights_note": note,
           "target": targets.target_dict(target), "tvm_threads": threads,
           **targets.tvm_versions(), "rounds": args.rounds, "calls_per_round": args.calls,
           "direct": args.direct, "winograd": args.winograd, "arms": []}
    base = None
    for name, r in runs.items():
        a = np.asarray(r["times"])
        row = {"arm": name, "tasks": r["tasks"], "winograd_tasks": r["winograd_tasks"],
               "untuned": r["untuned"], "p50_ms": round(float(np.median(a)), 3),
               "p10_ms": round(float(np.percentile(a, 10)), 3),
               "min_ms": round(float(a.min()), 3), "n": int(a.size)}
        base = base or row["p50_ms"]
        row["p50_vs_direct"] = round(row["p50_ms"] / base, 3)
        out["arms"].append(row)
        print(f"{name:10s} {r['tasks']:3d} tasks ({r['winograd_tasks']} Winograd)  "
              f"p50 {row['p50_ms']:.3f}  p10 {row['p10_ms']:.3f}  min {row['min_ms']:.3f} ms"
              f"  p50/direct {row['p50_vs_direct']:.3f}")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
