"""Compare tuning databases of one model by the latency of the networks they build.

The tuner's estimate (sum over tasks of weight x best measured kernel, each kernel timed
alone with warm caches) ranks databases poorly: inside the network the same kernels were
3-20% slower, by a different amount for each database. This builds one batch-1 library per
database (the suite's own pipeline, ``converters.tvm.build.build_library``) and times them
in interleaved rounds in one process, so machine noise hits all of them alike. Compare
ratios within one run, not across runs.

    python benchmarks/tvm_databases.py --model mobilenetv2_100 \\
        --tuning-dirs results/tuning-seed1 results/tuning-transfer-s1

Prints one line per database: tuner estimate, p50 / p10 / fastest call, and the ratio of
p50 to the first database's. ``--json PATH`` writes the same figures.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", required=True)
    p.add_argument("--tuning-dirs", nargs="+", required=True, metavar="DIR",
                   help="tuning dirs (as for edgebench.tune --tuning-dir), first = baseline")
    p.add_argument("--target", default="host")
    p.add_argument("--weights", default="auto")
    p.add_argument("--rounds", type=int, default=15, help="interleaved rounds (default 15)")
    p.add_argument("--calls", type=int, default=40, help="calls per database per round")
    p.add_argument("--json", metavar="PATH", help="also write the figures here")
    args = p.parse_args(argv)

    import numpy as np
    import tvm
    from tvm.runtime.vm import VirtualMachine

    from converters.tvm import build, database, lowering, targets
    from edgebench.measure import timed_calls
    from edgebench.models import make_spec, resolve_weights

    target, _ = targets.resolve_target(args.target)
    threads = targets.configure_threads(target)
    weights, note = resolve_weights(args.model, args.weights, 0)
    spec = make_spec(args.model, weights)
    model = spec.build()
    x = np.random.RandomState(0).standard_normal((1, *spec.input_size)).astype("float32")
    inp = tvm.runtime.tensor(x)
    runs = {}
    for d in args.tuning_dirs:
        db = database.db_dir_for(d, target, spec.name, spec.input_size)
        if not database.database_exists(db):
            p.error(f"no database for {spec.name} on this target in {d} (looked in {db})")
        lowering = lowering.lowering_for(target, db)     # the choices it was tuned with
        res = build.build_library(model, spec.input_size, 1, target, db_dir=db, spec=spec,
                                  **lowering)
        vm = VirtualMachine(res["executable"], tvm.cpu(0))
        runs[d] = {"fn": vm["main"], "vm": vm, "times": [],
                   "estimate_ms": res["tuning"]["estimate_ms"], "lowering": lowering,
                   "trials": res["tuning"]["trials"]}
        print(f"built {d}: {res['tuning']['trials']} trials, estimate "
              f"{res['tuning']['estimate_ms']} ms", file=sys.stderr, flush=True)
    for r in runs.values():
        for _ in range(20):
            r["fn"](inp)
    for _ in range(args.rounds):
        for r in runs.values():   # the suite's own timing loop, ``calls`` calls per round
            r["times"].extend(timed_calls(lambda _, fn=r["fn"]: fn(inp), None, args.calls,
                                          0.0, 1e6))
    out = {"model": spec.name, "weights": spec.weights, "weights_note": note,
           "target": targets.target_dict(target), "tvm_threads": threads, **targets.tvm_versions(),
           "rounds": args.rounds, "calls_per_round": args.calls, "databases": []}
    base = None
    for d, r in runs.items():
        a = np.asarray(r["times"])   # ms
        row = {"tuning_dir": d, **r["lowering"], "trials": r["trials"],
               "estimate_ms": r["estimate_ms"],
               "p50_ms": round(float(np.median(a)), 3),
               "p10_ms": round(float(np.percentile(a, 10)), 3),
               "min_ms": round(float(a.min()), 3), "n": int(a.size)}
        base = base or row["p50_ms"]
        row["p50_vs_first"] = round(row["p50_ms"] / base, 3)
        out["databases"].append(row)
        print(f"{d:32s} {row['layout']} {row['conv2d']} {row['trials']:5d} trials  est {row['estimate_ms']} ms  "
              f"p50 {row['p50_ms']:.3f}  p10 {row['p10_ms']:.3f}  min {row['min_ms']:.3f} ms"
              f"  p50/first {row['p50_vs_first']:.3f}")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
