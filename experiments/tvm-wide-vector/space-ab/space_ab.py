"""A/B: tune a few mobilenetv2_100 NHWC tasks with MetaSchedule's default space and with
vector-width tiling ("auto"), one JSON line per (seed, space), written to OUT/ab.json too.

    python experiments/tvm-wide-vector/space-ab/space_ab.py \
        fused_conv2d4,fused_conv2d6,fused_conv2d7 90 0,1 default,auto results/experiments/space-ab

Arguments: task-name prefixes, total trials (over those tasks), seeds, spaces, output folder.
`ab.jsonl` next to this script is the output of the 2026-11-23 run (30 candidates per task).
"""
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))   # the repo root
from converters.tvm import targets, tuning  # noqa: E402
from edgebench.models import build_model  # noqa: E402

ops, trials, seeds, spaces, out = (sys.argv[1].split(","), int(sys.argv[2]),
                                   [int(x) for x in sys.argv[3].split(",")],
                                   sys.argv[4].split(","), Path(sys.argv[5]))
target, _ = targets.resolve_target("host")
targets.configure_threads(target)
model = build_model("mobilenetv2_100", "random-seed-0")
res = []
for seed in seeds:
    for space in spaces:
        d = out / f"{space}-s{seed}" / "db"
        cfg = tuning.TuneConfig(trials=trials, seed=seed, op_names=[o + "_" for o in ops],
                                layout="NHWC", transfer=False, design_space=space)
        t0 = time.time()
        r = tuning.tune(model, (3, 224, 224), 1, target, d, cfg)
        row = {"seed": seed, "space": space, "est_ms": r["estimate_ms"], "s": round(time.time() - t0),
               "spaces": r.get("design_space"),
               "tasks": {t["name"]: t["best_us"] for t in r["per_task"]}}
        print(json.dumps(row), flush=True)
        res.append(row)
out.mkdir(parents=True, exist_ok=True)
json.dump(res, open(out / "ab.json", "w", encoding="utf-8"), indent=1)
