"""Which tuning tasks models share: the same kernel (workload) in two models can reuse the
first model's measurements as they are.

MetaSchedule files every measurement under the workload's structural hash, so a task of
model B whose workload is already in model A's database (same target, layout and design
space) needs no search of its own: A's records are measurements of that very kernel on that
very CPU. This extracts each model's tasks the way ``edgebench.tune`` does (same importer,
layout and lowering) and prints, for each ordered pair, how many of B's tasks (and of its
kernel calls) A already has.

    python benchmarks/tvm_shared_workloads.py --models resnet50 resnet152 mobilenetv2_100
    python benchmarks/tvm_shared_workloads.py --json shared.json      # the six study models
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

SIX = ["mobilenetv2_100", "squeezenet1_1", "efficientnet_b0", "resnet152", "vgg16",
       "swin_tiny_patch4_window7_224"]


def model_tasks(name: str, target, layout: str | None) -> dict:
    """{workload hash: (task name, weight)} of ``name`` at batch 1."""
    from converters.tvm import database, lowering, passes
    from converters.tvm.importer import import_model
    from edgebench.models import make_spec, resolve_weights

    weights, _ = resolve_weights(name, "random", 0)   # the kernels do not depend on weights
    spec = make_spec(name, weights)
    mod, _, _ = import_model(spec.build(), (1, *spec.input_size), "auto", spec=spec,
                             cache=REPO / "results" / "cache")
    lowered = passes.lower_for_tuning(mod, target, lowering.lowering_for(target, None, layout=layout)["layout"])
    return {database.task_hash(t.dispatched[0]): (t.task_name, int(t.weight))
            for t in passes.extract_tasks(lowered, target)}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--models", nargs="+", default=SIX)
    p.add_argument("--target", default="host")
    p.add_argument("--layout", choices=["NCHW", "NHWC"], help="default: the target's")
    p.add_argument("--json", metavar="PATH", help="also write the figures here")
    args = p.parse_args(argv)

    from converters.tvm import targets

    target, _ = targets.resolve_target(args.target)
    tasks = {}
    for m in args.models:
        tasks[m] = model_tasks(m, target, args.layout)
        print(f"{m}: {len(tasks[m])} tasks, {sum(w for _, w in tasks[m].values())} kernel "
              f"calls", file=sys.stderr, flush=True)
    pairs = []
    for b in args.models:
        for a in args.models:
            if a == b:
                continue
            shared = set(tasks[a]) & set(tasks[b])
            calls = sum(tasks[b][h][1] for h in shared)
            pairs.append({"model": b, "from": a, "tasks": len(tasks[b]),
                          "shared_tasks": len(shared),
                          "calls": sum(w for _, w in tasks[b].values()),
                          "shared_calls": calls,
                          "shared_names": sorted(tasks[b][h][0] for h in shared)})
    print(f"{'model':32s} {'already tuned for':32s} {'tasks':>12s} {'kernel calls':>14s}")
    for r in pairs:
        if r["shared_tasks"]:
            print(f"{r['model']:32s} {r['from']:32s} {r['shared_tasks']:5d} of {r['tasks']:<4d}"
                  f" {r['shared_calls']:6d} of {r['calls']:<5d}")
    if not any(r["shared_tasks"] for r in pairs):
        print("(no pair shares a task)")
    if args.json:
        Path(args.json).write_text(json.dumps({
            "target": targets.target_dict(target), "layout": args.layout, **targets.tvm_versions(),
            "models": {m: {"tasks": len(t), "calls": sum(w for _, w in t.values())}
                       for m, t in tasks.items()},
            "pairs": pairs}, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
