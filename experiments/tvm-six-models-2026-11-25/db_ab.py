"""A/B: one model's TVM build from two tuning databases (e.g. two trial allocations at the
same budget), with ONNX Runtime as the yardstick, timed in one process in rotating rounds.

Each round runs the arms in one order and then in the reverse order (A B C C B A, then
B C A A C B, ...), so a drift of the VM's speed falls on every arm alike. Both TVM arms are
built with the suite's lowering (``build.build_library``) from their own database.

    python experiments/tvm-six-models-2026-11-25/db_ab.py --model swin_tiny_patch4_window7_224 \\
        --tuning-dir A=results/.../tuning --tuning-dir B=results/.../tuning-cap64 --json out.json
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
    p.add_argument("--tuning-dir", action="append", required=True, metavar="LABEL=DIR",
                   help="a TVM arm: its label and tuning dir (give two or more)")
    p.add_argument("--cache-dir", default="results/cache", help="ONNX export cache")
    p.add_argument("--rounds", type=int, default=8)
    p.add_argument("--calls", type=int, default=30, help="calls per arm per round")
    p.add_argument("--json", metavar="PATH")
    args = p.parse_args(argv)

    import numpy as np
    import onnxruntime as ort
    import tvm
    from tvm.runtime.vm import VirtualMachine

    from converters.onnxruntime.export import export_onnx
    from converters.onnxruntime.session import session_options
    from converters.tvm import build, database, passes, targets
    from edgebench import sysinfo
    from edgebench.measure import timed_calls
    from edgebench.models import make_spec, resolve_weights
    from edgebench.util import physical_cores

    target, _ = targets.resolve_target("host")
    threads = targets.configure_threads(target)
    weights, _ = resolve_weights(args.model, "auto", 0)
    spec = make_spec(args.model, weights)
    x = np.random.RandomState(0).standard_normal((1, *spec.input_size)).astype("float32")
    inp = tvm.runtime.tensor(x)
    arms, meta, outs = {}, {}, {}
    for item in args.tuning_dir:
        label, _, tdir = item.partition("=")
        db = database.db_dir_for(tdir, target, spec.name, spec.input_size)
        if not database.database_exists(db):
            p.error(f"{label}: no database for {spec.name} in {tdir} (looked in {db})")
        res = build.build_library(spec.build(), spec.input_size, 1, target, db_dir=db, spec=spec,
                                  layout=passes.layout_for(target, db))
        fn = VirtualMachine(res["executable"], tvm.cpu(0))["main"]
        arms[label] = lambda _, fn=fn: fn(inp)
        out = fn(inp)
        outs[label] = (out if hasattr(out, "numpy") else out[0]).numpy()
        meta[label] = {"database": str(db), "trials": res["tuning"]["trials"],
                       "estimate_ms": res["tuning"]["estimate_ms"],
                       "max_trials_per_task": [sess.get("max_trials_per_task") for sess in
                                               database.read_db_meta(db).get("sessions", [])]}
    onnx = export_onnx(spec, Path(args.cache_dir))
    sess = ort.InferenceSession(str(onnx.path), session_options(physical_cores()),
                                providers=["CPUExecutionProvider"])
    name = sess.get_inputs()[0].name
    arms["onnxruntime"] = lambda _: sess.run(None, {name: x})
    ref = sess.run(None, {name: x})[0]
    for f in arms.values():
        for _ in range(10):
            f(None)
    labels = list(arms)
    times = {a: [] for a in labels}
    for r in range(args.rounds):
        order = labels[r % len(labels):] + labels[:r % len(labels)]
        for a in order + order[::-1]:
            times[a].extend(timed_calls(arms[a], None, args.calls // 2, 0.0, 1e6))
        print(f"round {r}: " + ", ".join(f"{a} {np.median(times[a]):.2f}" for a in labels),
              file=sys.stderr)
    res = {"model": spec.name, "cpu": sysinfo.cpu_model(), "target": targets.target_dict(target),
           "tvm_threads": threads, **targets.tvm_versions(), "ort_version": ort.__version__,
           "databases": meta, "arms": {},
           "max_abs_diff_vs_ort": {a: float(np.abs(o - ref).max()) for a, o in outs.items()}}
    ort_p50 = float(np.median(times["onnxruntime"]))
    for a, v in times.items():
        v = np.asarray(v)
        res["arms"][a] = {"p50_ms": round(float(np.median(v)), 3),
                          "min_ms": round(float(v.min()), 3), "n": int(v.size),
                          "over_ort_p50": round(float(np.median(v)) / ort_p50, 3)}
    print(json.dumps(res, indent=1, default=str))
    if args.json:
        Path(args.json).write_text(json.dumps(res, indent=1, default=str) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
