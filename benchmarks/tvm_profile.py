"""Where a tuned TVM module spends its time, beside ONNX Runtime's profile of the same model.

For one model and one tuning database this builds the suite's batch-1 TVM library
(``converters.tvm.build.build_library``, the layout the database was tuned in) and the suite's
ONNX Runtime session (``export_onnx`` + ``session_options``: every graph optimisation, one
intra-op thread per physical core), then reports:

* wall time of both, timed in alternating rounds (ABBA), so the ratio is taken under the
  same machine state;
* TVM per kernel: median in-network time per call (a Relax VM instrument around each kernel
  call), calls per inference, and the tuner's own best measurement of that kernel from the
  database (timed alone, warm caches): their ratio shows what the network costs a kernel;
  kernels with no record run TVM's unscheduled default (``untuned``);
* ORT per node (its own profiler, ``enable_profiling``), grouped into the same op families
  as TVM's kernels (conv, matmul, pool, norm/softmax, data movement, elementwise);
* the time outside kernels: wall p50 minus the sum of kernel medians (VM dispatch, thread
  pool wake-ups; ORT likewise).

The instrument costs about 1 us per kernel call; the wall-clock lines carry none of it.

    python benchmarks/tvm_profile.py --model squeezenet1_1 --tuning-dir results/tuning
    python benchmarks/tvm_profile.py --model resnet152 --tuning-dir D --json profile.json
"""
from __future__ import annotations

import argparse
import collections
import json
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

# (family, substrings of a TVM kernel name, ORT op types), first match wins.
FAMILIES = [
    ("conv", ("conv2d",), {"Conv", "FusedConv", "ConvTranspose"}),
    ("matmul", ("matmul", "dense", "batch_matmul"), {"MatMul", "Gemm", "FusedMatMul",
                                                      "FusedGemm", "MatMulNBits"}),
    ("pool", ("pool", "mean", "adaptive"), {"MaxPool", "AveragePool", "GlobalAveragePool",
                                            "GlobalMaxPool", "ReduceMean"}),
    ("norm/softmax", ("softmax", "layer_norm", "rms_norm", "variance"),
     {"Softmax", "LayerNormalization", "SimplifiedLayerNormalization",
      "SkipLayerNormalization"}),
    ("data movement", ("transpose", "reshape", "layout_transform", "concatenate", "take",
                       "strided_slice", "split", "roll", "pad", "expand_dims", "squeeze"),
     {"Transpose", "Reshape", "Concat", "Gather", "Slice", "Split", "ReorderInput",
      "ReorderOutput", "Flatten", "Pad", "Squeeze", "Unsqueeze", "Expand"}),
]


def family_of_kernel(name: str) -> str:
    low = name.lower()
    for fam, keys, _ in FAMILIES:
        if any(k in low for k in keys):
            return fam
    return "elementwise/other"


def family_of_node(op_type: str) -> str:
    for fam, _, ops in FAMILIES:
        if op_type in ops:
            return fam
    return "elementwise/other"


def tvm_kernel_times(vm, fn, inp, inferences: int) -> dict:
    """{kernel name: {"us": median in-network time per inference, "calls": per inference}}
    from the VM's instrument hook, as the suite's layers task times them."""
    from converters.tvm.layers import kernel_times

    return {n: {"us": t["ms"] * 1e3, "calls": t["calls"]}
            for n, t in kernel_times(vm, lambda: fn(inp), inferences).items()}


def profiling_session(onnx_path: str, threads):
    """The suite's CPU session (``session_options``) with ORT's profiler on, writing to a
    temporary folder; ``end_profiling()`` returns the JSON file of its events."""
    import onnxruntime as ort

    from converters.onnxruntime.session import session_options

    so = session_options(threads)
    so.enable_profiling = True
    so.profile_file_prefix = str(Path(tempfile.mkdtemp()) / "ort")
    return ort.InferenceSession(onnx_path, so, providers=["CPUExecutionProvider"])


def ort_node_times(onnx_path: str, x, threads, runs: int) -> list[dict]:
    """ORT's own per-node kernel times (median us over ``runs``) with the suite's options."""
    sess = profiling_session(onnx_path, threads)
    name = sess.get_inputs()[0].name
    for _ in range(10):
        sess.run(None, {name: x})
    for _ in range(runs):
        sess.run(None, {name: x})
    from converters.onnxruntime.layers import node_times

    with open(sess.end_profiling(), encoding="utf-8") as f:
        events = json.load(f)
    # The first 10 runs are warm-up: node_times keeps the last ``runs`` samples of each node.
    return [{"node": nd["name"], "op": nd["op"], "us": nd["ms"] * 1e3}
            for nd in node_times(events, runs)]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", required=True)
    p.add_argument("--tuning-dir", required=True, help="as for edgebench.tune --tuning-dir")
    p.add_argument("--target", default="host")
    p.add_argument("--weights", default="auto")
    p.add_argument("--cache-dir", default="results/cache", help="ONNX export cache")
    p.add_argument("--rounds", type=int, default=8, help="ABBA wall-time rounds (default 8)")
    p.add_argument("--calls", type=int, default=30, help="calls per arm per round")
    p.add_argument("--profile-runs", type=int, default=50,
                   help="inferences profiled per kernel / node (default 50)")
    p.add_argument("--top", type=int, default=12, help="kernels listed (default 12)")
    p.add_argument("--json", metavar="PATH", help="also write every figure here")
    args = p.parse_args(argv)

    import numpy as np
    import onnxruntime as ort
    import tvm
    from tvm.runtime.vm import VirtualMachine

    from converters.onnxruntime.export import export_onnx
    from converters.onnxruntime.session import session_options
    from converters.tvm import build, database, lowering, targets
    from edgebench import sysinfo
    from edgebench.measure import timed_calls
    from edgebench.models import make_spec, resolve_weights
    from edgebench.util import physical_cores

    target, _ = targets.resolve_target(args.target)
    threads = targets.configure_threads(target)
    weights, note = resolve_weights(args.model, args.weights, 0)
    spec = make_spec(args.model, weights)
    db = database.db_dir_for(args.tuning_dir, target, spec.name, spec.input_size)
    if not database.database_exists(db):
        p.error(f"no database for {spec.name} on this target in {args.tuning_dir} "
                f"(looked in {db})")
    x = np.random.RandomState(0).standard_normal((1, *spec.input_size)).astype("float32")

    lowering = lowering.lowering_for(target, db)
    layout, conv2d = lowering["layout"], lowering["conv2d"]
    res = build.build_library(spec.build(), spec.input_size, 1, target, db_dir=db, spec=spec,
                              **lowering)
    vm = VirtualMachine(res["executable"], tvm.cpu(0))
    fn, inp = vm["main"], tvm.runtime.tensor(x)
    # Kernel -> its task's database figures (several kernels can share one workload).
    per_task = {t["name"]: t for t in res["tuning"]["per_task"]}
    best = {k: per_task.get(t.task_name)
            for k, t in database.kernel_workloads(res["lowered"], res["tasks"]).items()}
    del res["lowered"]

    onnx = export_onnx(spec, Path(args.cache_dir))
    sess = ort.InferenceSession(str(onnx.path), session_options(physical_cores()),
                                providers=["CPUExecutionProvider"])
    in_name = sess.get_inputs()[0].name
    arms = {"tvm": lambda _: fn(inp), "ort": lambda _: sess.run(None, {in_name: x})}
    for f in arms.values():
        for _ in range(10):
            f(None)
    wall = {"tvm": [], "ort": []}
    for r in range(args.rounds):            # ABBA: tvm ort ort tvm, ort tvm tvm ort, ...
        order = ["tvm", "ort"] if r % 2 == 0 else ["ort", "tvm"]
        for a in order + order[::-1]:
            wall[a].extend(timed_calls(arms[a], None, args.calls // 2, 0.0, 1e6))
    w = {a: {"p50_ms": round(float(np.median(v)), 3), "min_ms": round(float(np.min(v)), 3),
             "n": len(v)} for a, v in wall.items()}

    kern = tvm_kernel_times(vm, fn, inp, args.profile_runs)
    nodes = ort_node_times(str(onnx.path), x, physical_cores(), args.profile_runs)

    kernels = []
    for n, k in kern.items():
        # A tuned kernel whose weights were re-laid out at build time is called as
        # "<name>_prepacked" (SplitLayoutRewritePreproc).
        t = best.get(n) or best.get(n.removesuffix("_prepacked"))
        b = t["best_us"] if t else None
        kernels.append({"kernel": n, "family": family_of_kernel(n), "calls": k["calls"],
                        "us": round(k["us"], 1), "task": t["name"] if t else None,
                        "db_best_us": b, "db_trials": t["trials"] if t else None,
                        "tuned": b is not None,
                        "in_network_vs_db": (round(k["us"] / (b * k["calls"]), 2)
                                             if b else None)})
    fam = collections.defaultdict(lambda: {"tvm_us": 0.0, "ort_us": 0.0, "tvm_kernels": 0,
                                           "ort_nodes": 0})
    for k in kernels:
        fam[k["family"]]["tvm_us"] += k["us"]
        fam[k["family"]]["tvm_kernels"] += 1
    for nd in nodes:
        fam[family_of_node(nd["op"])]["ort_us"] += nd["us"]
        fam[family_of_node(nd["op"])]["ort_nodes"] += 1
    tvm_sum = sum(k["us"] for k in kernels) / 1e3
    ort_sum = sum(nd["us"] for nd in nodes) / 1e3
    untuned = [k for k in kernels if not k["tuned"]]
    out = {"model": spec.name, "weights": spec.weights, "weights_note": note,
           "tuning_dir": args.tuning_dir, "database": str(db), "layout": layout,
           **lowering, "trials": res["tuning"]["trials"],
           "estimate_ms": res["tuning"]["estimate_ms"],
           "target": targets.target_dict(target), "tvm_threads": threads,
           "ort_version": ort.__version__, **targets.tvm_versions(),
           "cpu": sysinfo.cpu_model(),
           "wall": w, "tvm_over_ort_p50": round(w["tvm"]["p50_ms"] / w["ort"]["p50_ms"], 3),
           "tvm_kernel_sum_ms": round(tvm_sum, 3), "ort_node_sum_ms": round(ort_sum, 3),
           "tvm_outside_kernels_ms": round(w["tvm"]["p50_ms"] - tvm_sum, 3),
           "ort_outside_nodes_ms": round(w["ort"]["p50_ms"] - ort_sum, 3),
           "families": {k: {kk: round(vv, 1) if isinstance(vv, float) else vv
                            for kk, vv in v.items()} for k, v in fam.items()},
           "untuned_kernels": [k["kernel"] for k in untuned],
           "kernels": sorted(kernels, key=lambda k: -k["us"]),
           "ort_nodes": sorted(nodes, key=lambda nd: -nd["us"])}

    print(f"{spec.name} ({spec.weights}), {layout}, conv2d {conv2d}, "
          f"mean {lowering['spatial_mean']}, concat {lowering['concat']}, "
          f"channels {lowering['out_channels']}, input {lowering['input_transpose']}, "
          f"database {res['tuning']['trials']} trials, "
          f"tuner estimate {res['tuning']['estimate_ms']} ms, TVM threads {threads['threads']}")
    print(f"wall p50 (ABBA, {w['tvm']['n']} calls each): TVM {w['tvm']['p50_ms']} ms "
          f"(fastest {w['tvm']['min_ms']}), ORT {w['ort']['p50_ms']} ms (fastest "
          f"{w['ort']['min_ms']}): TVM/ORT {out['tvm_over_ort_p50']}x")
    print(f"sum of kernels: TVM {tvm_sum:.3f} ms ({len(kernels)} kernels), ORT {ort_sum:.3f} ms "
          f"({len(nodes)} nodes); outside kernels: TVM {out['tvm_outside_kernels_ms']} ms, "
          f"ORT {out['ort_outside_nodes_ms']} ms")
    print(f"untuned kernels: {len(untuned)}" + (f" ({', '.join(k['kernel'] for k in untuned)})"
                                                if untuned else ""))
    print(f"\n{'family':18s} {'TVM ms':>8s} {'ORT ms':>8s} {'TVM/ORT':>8s}  kernels/nodes")
    for f_, v in sorted(fam.items(), key=lambda kv: -kv[1]["tvm_us"]):
        ratio = f"{v['tvm_us'] / v['ort_us']:.2f}x" if v["ort_us"] else "-"
        print(f"{f_:18s} {v['tvm_us'] / 1e3:8.3f} {v['ort_us'] / 1e3:8.3f} {ratio:>8s}  "
              f"{v['tvm_kernels']}/{v['ort_nodes']}")
    print(f"\n{'TVM kernel (top by time)':48s} {'calls':>5s} {'us':>8s} {'db best':>8s} "
          f"{'net/db':>6s}")
    for k in out["kernels"][:args.top]:
        b = f"{k['db_best_us']:.1f}" if k["db_best_us"] is not None else "untuned"
        r = f"{k['in_network_vs_db']:.2f}" if k["in_network_vs_db"] is not None else "-"
        print(f"{k['kernel'][:48]:48s} {k['calls']:5d} {k['us']:8.1f} {b:>8s} {r:>6s}")
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
