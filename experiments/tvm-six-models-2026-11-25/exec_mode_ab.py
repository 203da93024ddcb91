"""A/B: the Relax VM's bytecode interpreter (the suite's build) against its compiled mode.

The per-kernel profiles (`benchmarks/tvm_profile.py`) put 0.5-0.65 ms of a 6-8 ms batch-1
call outside the kernels (mobilenetv2_100, squeezenet1_1): the VM's own work between
kernels. ``relax.build(..., exec_mode="compiled")`` turns the VM program into native code.
Both arms are built from the same tuned module (the suite's lowering and database) and timed
in one process in ABBA rounds with the suite's timing loop.

    python experiments/tvm-six-models-2026-11-25/exec_mode_ab.py --model squeezenet1_1 \\
        --tuning-dir results/experiments/tvm-six-models-2026-11-25/tuning --json out.json
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", required=True)
    p.add_argument("--tuning-dir", required=True)
    p.add_argument("--rounds", type=int, default=10)
    p.add_argument("--calls", type=int, default=40)
    p.add_argument("--json", metavar="PATH")
    args = p.parse_args(argv)

    import numpy as np
    import tvm
    from tvm import relax

    from converters.tvm import build, database, passes, targets
    from converters.tvm.importer import import_model
    from edgebench import sysinfo
    from edgebench.measure import timed_calls
    from edgebench.models import make_spec, resolve_weights

    target, _ = targets.resolve_target("host")
    threads = targets.configure_threads(target)
    weights, _ = resolve_weights(args.model, "auto", 0)
    spec = make_spec(args.model, weights)
    db = database.db_dir_for(args.tuning_dir, target, spec.name, spec.input_size)
    layout = passes.layout_for(target, db)
    mod, _, _ = import_model(spec.build(), (1, *spec.input_size), "auto", spec=spec)
    applied = build.apply_database(passes.lower_for_tuning(mod, target, layout), target, db)
    x = np.random.RandomState(0).standard_normal((1, *spec.input_size)).astype("float32")
    inp = tvm.runtime.tensor(x)
    arms, outs = {}, {}
    for mode in ("bytecode", "compiled"):
        with tvm.transform.PassContext(opt_level=3):
            ex = relax.build(applied, target=target, exec_mode=mode)
        vm = relax.VirtualMachine(ex, tvm.cpu())
        arms[mode] = (vm, vm["main"])
        out = vm["main"](inp)
        outs[mode] = (out if hasattr(out, "numpy") else out[0]).numpy()
    same = float(np.abs(outs["bytecode"] - outs["compiled"]).max())
    for _, f in arms.values():
        for _ in range(20):
            f(inp)
    times = {m: [] for m in arms}
    for r in range(args.rounds):
        order = ["bytecode", "compiled"] if r % 2 == 0 else ["compiled", "bytecode"]
        for m in order + order[::-1]:
            f = arms[m][1]
            times[m].extend(timed_calls(lambda _, f=f: f(inp), None, args.calls // 2, 0.0, 1e6))
    res = {"model": spec.name, "database": str(db), "layout": layout, "cpu": sysinfo.cpu_model(),
           "target": targets.target_dict(target), "tvm_threads": threads,
           **targets.tvm_versions(), "max_abs_diff_between_modes": same, "arms": {}}
    for m, v in times.items():
        a = np.asarray(v)
        res["arms"][m] = {"p50_ms": round(float(np.median(a)), 3),
                          "min_ms": round(float(a.min()), 3), "n": int(a.size)}
    res["compiled_over_bytecode_p50"] = round(res["arms"]["compiled"]["p50_ms"]
                                              / res["arms"]["bytecode"]["p50_ms"], 3)
    print(json.dumps(res, indent=1))
    if args.json:
        Path(args.json).write_text(json.dumps(res, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
