"""A/B: tune a few mobilenetv2 NHWC tasks with the default and the wide-vector space."""
import json, sys, time
sys.path.insert(0, "/work/main")
from pathlib import Path
from converters.tvm import core, tuning
from edgebench.models import build_model

ops, trials, seeds, spaces, out = sys.argv[1].split(","), int(sys.argv[2]), [int(x) for x in sys.argv[3].split(",")], sys.argv[4].split(","), Path(sys.argv[5])
target, _ = core.resolve_target("host")
core.configure_threads(target)
model = build_model("mobilenetv2_100", "random-seed-0")
res = []
for seed in seeds:
    for space in spaces:
        d = out / f"{space}-s{seed}" / "db"
        cfg = tuning.TuneConfig(trials=trials, seed=seed, op_names=[o + "_" for o in ops], layout="NHWC",
                                transfer=False, design_space=space)
        t0 = time.time()
        r = tuning.tune(model, (3, 224, 224), 1, target, d, cfg)
        row = {"seed": seed, "space": space, "est_ms": r["estimate_ms"], "s": round(time.time() - t0),
               "spaces": r.get("design_space"),
               "tasks": {t["name"]: t["best_us"] for t in r["per_task"]}}
        print(json.dumps(row), flush=True)
        res.append(row)
json.dump(res, open(out / "ab.json", "w"), indent=1)
