"""Does the task that holds half of ResNet-152 lack trials? Copy a tuned database, give one
task ``--extra`` more candidates in a session of its own (the tuner's own loop, that task
alone), and leave the comparison of the two networks to benchmarks/tvm_databases.py (one
process, interleaved rounds).

    .venv/bin/python experiments/tvm-kernel-vs-network-2026-11-26/more_trials.py \\
        --model resnet152 --from results/experiments/tvm-six-models-2026-11-25/tuning \\
        --to results/experiments/tvm-kernel-vs-network-2026-11-26/tuning \\
        --task fused_conv2d16_add9_relu71 --extra 128 --json out.json
"""
from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", required=True)
    p.add_argument("--from", dest="src", required=True, help="tuning dir to copy from")
    p.add_argument("--to", dest="dst", required=True, help="tuning dir to write (a copy)")
    p.add_argument("--task", required=True, help="the task's full name")
    p.add_argument("--extra", type=int, default=128)
    p.add_argument("--json")
    args = p.parse_args()

    from converters.tvm import database, passes, targets, tuning
    from edgebench.models import make_spec, resolve_weights

    target, _ = targets.resolve_target("host")
    weights, _ = resolve_weights(args.model, "auto", 0)
    spec = make_spec(args.model, weights)
    src = database.db_dir_for(args.src, target, spec.name, spec.input_size)
    dst = database.db_dir_for(args.dst, target, spec.name, spec.input_size)
    if not database.database_exists(src):
        p.error(f"no database in {src}")
    if not dst.exists():
        shutil.copytree(src, dst, ignore=shutil.ignore_patterns("logs"))
    cfg = tuning.TuneConfig(op_names=[args.task], reuse=False,
                            layout=passes.layout_for(target, src),
                            conv2d=passes.conv2d_for(src))
    # --trials counts the task's records already there (resuming this script continues it).
    from converters.tvm import importer
    mod, _, _ = importer.import_model(spec.build(), (1, *spec.input_size))
    tasks = [t for t in passes.extract_tasks(passes.lower_for_tuning(
        mod, target, cfg.layout, cfg.conv2d), target) if t.task_name == args.task]
    if not tasks:
        p.error(f"no task named {args.task}")
    have = database.tuning_summary(src, tasks)["trials"]
    cfg.trials = have + args.extra
    res = tuning.tune(spec.build(), spec.input_size, 1, target, dst, cfg, spec=spec)
    out = {"model": spec.name, "task": args.task, "from": str(src), "to": str(dst),
           "trials_in_source": have, "extra": args.extra,
           "per_task": res.get("per_task"), "trials_run": res.get("trials_run"),
           "tuning_s": res.get("tuning_s"), "errors": res.get("errors")}
    print(json.dumps(out, indent=1))
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
