"""Is a kernel's in-network slowdown its inputs' cold caches? Take chosen kernels of a tuned
model exactly as its network calls them (the suite's ``build.apply_database``: the tuned
schedule, its weight re-layout split off and folded into the constant, the kernel named
``<task>_prepacked``), build each alone, and time it with warm caches (time_evaluator's repeated
calls, as MetaSchedule's runner measures) and with the CPU caches flushed before every call
(``cache_flush_cpu_non_first_arg``: the weights and other inputs start in memory, as in a
network that streamed 200 MB of other weights since the last call), in alternating rounds.
Compare with the kernel's in-network time from benchmarks/tvm_profile.py.

    .venv/bin/python experiments/tvm-winograd-2026-11-26/cold_cache.py --model resnet152 \\
        --tuning-dir results/experiments/tvm-six-models-2026-11-25/tuning \\
        --tasks fused_conv2d16_add9_relu71 fused_conv2d13_add10_add11_relu81 --json out.json
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", required=True)
    p.add_argument("--tuning-dir", required=True)
    p.add_argument("--tasks", nargs="+", required=True, help="task names (tvm_profile's, "
                   "without _prepacked)")
    p.add_argument("--rounds", type=int, default=8)
    p.add_argument("--json")
    args = p.parse_args()

    import tvm
    from tvm.s_tir import meta_schedule as ms

    from converters.tvm import build, database, importer, passes, targets
    from edgebench.models import make_spec, resolve_weights

    target, _ = targets.resolve_target(None)
    threads = targets.configure_threads(target)
    weights, _ = resolve_weights(args.model, "auto", 0)
    spec = make_spec(args.model, weights)
    db_dir = database.db_dir_for(args.tuning_dir, target, spec.name, spec.input_size)
    mod, _, _ = importer.import_model(spec.build(), (1, *spec.input_size))
    lowered = passes.lower_for_tuning(mod, target, passes.layout_for(target, db_dir),
                                      passes.conv2d_for(db_dir))
    applied = build.apply_database(lowered, target, db_dir)
    funcs = {gv.name_hint: f for gv, f in applied.functions_items()}
    dev = tvm.cpu()
    built = {}
    for name in args.tasks:
        # The network's own kernel: the weight arrives already re-laid out (no preproc).
        f = funcs.get(name + "_prepacked") or funcs[name]
        lib = tvm.compile(tvm.IRModule({"main": f.with_attr("global_symbol", "main")}),
                          target=target)
        rng = np.random.default_rng(0)
        tensors = [tvm.runtime.tensor(rng.standard_normal([int(s) for s in a.shape])
                                      .astype(str(a.dtype)), dev)
                   for a in ms.arg_info.ArgInfo.from_prim_func(f)]
        built[name] = (lib, tensors)
    out = {"model": spec.name, "database": str(db_dir), "threads": threads["threads"],
           "rounds": args.rounds, "tasks": {}}
    for name, (lib, tensors) in built.items():
        t = {"warm": [], "cold": []}
        for r in range(args.rounds):
            order = ["warm", "cold"] if r % 2 == 0 else ["cold", "warm"]
            for mode in order + order[::-1]:
                ev = lib.mod.time_evaluator(
                    "main", dev, number=1 if mode == "cold" else 10, repeat=5,
                    f_preproc="cache_flush_cpu_non_first_arg" if mode == "cold" else "")
                t[mode].extend(ev(*tensors).results)
        med = {m: float(np.median(v)) * 1e3 for m, v in t.items()}
        out["tasks"][name] = {"warm_ms": round(med["warm"], 4), "cold_ms": round(med["cold"], 4),
                              "cold_over_warm": round(med["cold"] / med["warm"], 3),
                              "n": {m: len(v) for m, v in t.items()}}
        print(f"{name}: warm {med['warm']:.3f} ms, cold {med['cold']:.3f} ms, "
              f"cold/warm {med['cold'] / med['warm']:.2f}", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
