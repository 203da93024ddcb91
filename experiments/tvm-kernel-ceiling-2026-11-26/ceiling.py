"""How fast can MetaSchedule make a model's heaviest kernels, given trials to spare, and how
does that compare with ONNX Runtime's kernel for the very same operator?

Issue 33 asks, for each model still slower than ORT, whether the remaining gap is ours (the
trials a task got, our allocation, our measurements) or TVM's own (what its design space and
code generation can reach). This script separates the two for the kernels that hold a
model's time:

  1. the model's ``--top`` tasks by weight x the database's applied time (a re-ranked record
     where there is one, else the best);
  2. on a copy of the database, each of them gets ``--extra`` more candidates in a tuning
     session of its own (the tuner's loop, that task alone), then its ``--rerank`` best
     records are re-measured side by side and the fastest by median is kept
     (``converters.tvm.rerank``): the *ceiling*, the best this design space gave with
     several times the trials a 512-trial network session gives a task;
  3. one process, ``--rounds`` alternating rounds: each kernel as the original database
     builds it and as the ceiling builds it, alone (``time_evaluator`` as the tuner's runner:
     number 3, min_repeat_ms 50), and ORT's whole network with its profiler on; ORT's time
     for a kernel is the median over the network's nodes with the same operator shapes
     (conv: output channels, input channels per group, kernel, output and input sizes;
     matmul: output elements, reduction length and output width). Where TVM's kernel has
     the conv's SiLU fused in, ORT's SiLU node of the same shape (QuickGelu) is added.

TVM's kernels run alone, ORT's nodes inside the network: tuned kernels ran 1.01x alone what
they ran in the network (experiments/tvm-kernel-vs-network-2026-11-26), so the two are
comparable to a few per cent. Both sides get the same threads (one per physical core).

    .venv/bin/python experiments/tvm-kernel-ceiling-2026-11-26/ceiling.py --model resnet152 \\
        --from results/experiments/tvm-allocation-2026-11-26/tuning \\
        --to results/experiments/tvm-kernel-ceiling-2026-11-26/tuning --top 2 --extra 192 \\
        --json out.json
"""
from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))


def shape_key(func, name: str):
    """('conv', CO, CI per group, KH, KW, OH, OW, H, W) or ('matmul', output elements, K, N)
    for a task's unscheduled PrimFunc (NHWC data first, OHWI weights), else None. The input
    size tells a stride-2 conv from a stride-1 one with the same weights and output."""
    from tvm.s_tir import meta_schedule as ms

    if hasattr(func, "functions_items"):          # a task's dispatched IRModule
        func = next(f for _, f in func.functions_items())
    shapes = [[int(s) for s in a.shape] for a in ms.arg_info.ArgInfo.from_prim_func(func)]
    out = shapes[-1]
    if "conv2d" in name and len(out) == 4:
        weights = [s for s in shapes[:-1] if len(s) == 4 and s[0] == out[3] and s[0] != 1]
        if weights:
            co, kh, kw, cig = weights[0]
            return ("conv", co, cig, kh, kw, out[1], out[2], shapes[0][1], shapes[0][2])
    if "matmul" in name or "dense" in name:
        n = 1
        for s in out:
            n *= s
        return ("matmul", n, shapes[0][-1], out[-1])
    return None


def ort_shape_key(op: str, ins: list, out: list):
    """The same key for an ORT profiler node (logical NCHW shapes, OIHW weights)."""
    if op in ("Conv", "FusedConv") and len(ins) >= 2 and len(out) == 4 and len(ins[1]) == 4:
        co, cig, kh, kw = ins[1]
        return ("conv", co, cig, kh, kw, out[2], out[3], ins[0][2], ins[0][3])
    if op in ("MatMul", "FusedMatMul", "Gemm", "FusedGemm") and ins and out:
        n = 1
        for s in out:
            n *= s
        return ("matmul", n, ins[0][-1], out[-1])
    if op in SILU_NODES:
        return ("elementwise", op, *out)
    return None


# TVM fuses a conv's SiLU (x * sigmoid(x)) into the conv's kernel; ORT runs it as a node of
# its own after the conv (QuickGelu, its fusion of Sigmoid + Mul), or as the two.
SILU_NODES = ("QuickGelu", "Sigmoid", "Mul")


def ort_silu_us(task_name: str, key, ort_by_key) -> tuple[float, str]:
    """ORT's time for the SiLU that a TVM conv kernel has fused (0 where it has none): the
    median QuickGelu node of the conv's output shape, else a Sigmoid and a Mul node's."""
    import numpy as np

    if "sigmoid" not in task_name or key[0] != "conv":
        return 0.0, ""
    out = (1, key[1], key[5], key[6])

    def median(op):
        nodes = ort_by_key.get(("elementwise", op, *out), [])
        return float(np.median([np.median(d) for d in nodes])) if nodes else None

    if median("QuickGelu") is not None:
        return median("QuickGelu"), "QuickGelu"
    if median("Sigmoid") is not None and median("Mul") is not None:
        return median("Sigmoid") + median("Mul"), "Sigmoid+Mul"
    return 0.0, "no SiLU node found"


def _shape(entry) -> list:
    return [int(x) for x in next(iter(entry.values()))] if entry else []


def ort_profile(onnx_path, x, threads):
    """An ORT session with its profiler on, as the suite makes it; returns (run, read): run()
    runs the network once, read(skip_runs) ends profiling and gives ({key: [[node us per run
    after the first skip_runs], one list per node]}, {node: (op, key or None, [us per run
    after the first skip_runs])}, the second with every node)."""
    from tvm_profile import profiling_session

    sess = profiling_session(onnx_path, threads)
    feed = {sess.get_inputs()[0].name: x}

    def run():
        sess.run(None, feed)

    def read(skip_runs: int):
        nodes = {name: (op, key, durs[skip_runs:])
                 for name, (op, key, durs) in ort_nodes(sess.end_profiling()).items()}
        keyed: dict = {}
        for _, key, durs in nodes.values():
            if key is not None:
                keyed.setdefault(key, []).append(durs)
        return keyed, nodes

    return run, read


def ort_nodes(profile_path) -> dict:
    """{node name: (op, shape key or None, [us per run])} from an ORT profile's events."""
    with open(profile_path, encoding="utf-8") as f:
        events = json.load(f)
    by_node: dict = {}
    for e in events:
        if e.get("cat") == "Node" and e["name"].endswith("_kernel_time"):
            a = e["args"]
            key = ort_shape_key(a.get("op_name"), [_shape(s) for s in
                                                    a.get("input_type_shape", [])],
                                _shape((a.get("output_type_shape") or [None])[0]))
            by_node.setdefault(e["name"], (a.get("op_name"), key, []))[2].append(
                float(e["dur"]))
    return by_node


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", required=True)
    p.add_argument("--from", dest="src", required=True, help="tuning dir of the database")
    p.add_argument("--to", dest="dst", required=True, help="tuning dir for the copy")
    p.add_argument("--top", type=int, default=2, help="tasks, by weight x applied time")
    p.add_argument("--extra", type=int, default=192, help="more candidates per task")
    p.add_argument("--rerank", type=int, default=8, help="records re-measured per task")
    p.add_argument("--rounds", type=int, default=8)
    p.add_argument("--ort-runs", type=int, default=10, help="ORT inferences per round")
    p.add_argument("--cache-dir", default="results/cache", help="where the ONNX export goes")
    p.add_argument("--design-space", default="auto",
                   help="the extra trials' design space: the database's own (edgebench.tune "
                   "--design-space; the database does not record it)")
    p.add_argument("--json")
    args = p.parse_args()

    import numpy as np
    import tvm_ffi

    from converters.tvm import build, database, passes, rerank, tuning
    from edgebench.util import physical_cores
    from tvm_setup import load, timed_alone

    m = load(args.model, args.src)
    target, src = m.target, m.db_dir
    tasks = passes.extract_tasks(m.lowered, target)
    summary = {t["name"]: t for t in database.tuning_summary(src, tasks)["per_task"]}

    def applied_us(name):
        row = summary.get(name) or {}
        return row.get("reranked_us") or row.get("best_us")

    ranked = sorted((t for t in tasks if applied_us(t.task_name)),
                    key=lambda t: -t.weight * applied_us(t.task_name))
    chosen = []
    for t in ranked:
        # tune() picks tasks by substring: skip a name that is part of another task's
        if (sum(t.task_name in u.task_name for u in tasks) == 1
                and shape_key(t.dispatched[0], t.task_name)):
            chosen.append(t)
        if len(chosen) == args.top:
            break
    dst = database.db_dir_for(args.dst, target, m.spec.name, m.spec.input_size)
    if not database.database_exists(dst):
        shutil.copytree(src, dst, ignore=shutil.ignore_patterns("logs", "reranked*"))

    tuned = []
    for t in chosen:
        have = database.tuning_summary(src, [t])["trials"]
        cfg = tuning.TuneConfig(op_names=[t.task_name], reuse=False,
                                layout=passes.layout_for(target, src),
                                conv2d=passes.conv2d_for(src), trials=have + args.extra,
                                max_trials_per_task=have + args.extra,
                                # the task's own records warm-start the cost model; no
                                # sibling database's (transfer stays off in any space)
                                design_space=args.design_space, transfer=False)
        t0 = time.perf_counter()
        res = tuning.tune(m.spec.build(), m.spec.input_size, 1, target, dst, cfg, spec=m.spec)
        tuned.append({"task": t.task_name, "trials_before": have,
                      "trials_after": database.tuning_summary(dst, [t])["trials"],
                      "trials_run": res.get("trials_run"),     # 0 on a rerun: resumed
                      "tuning_s": round(time.perf_counter() - t0, 1),
                      "errors": res.get("errors")})
        print(f"[ceiling] {t.task_name}: {have} -> {tuned[-1]['trials_after']} trials in "
              f"{tuned[-1]['tuning_s']} s", file=sys.stderr, flush=True)
    rr = rerank.rerank(dst, target, chosen, tuning.TuneConfig(), top_k=args.rerank)

    # The two builds' kernels, alone; ORT's network with its profiler.
    base = {gv.name_hint: f for gv, f in build.apply_database(m.lowered, target, src)
            .functions_items()}
    ceil = {gv.name_hint: f for gv, f in build.apply_database(m.lowered, target, dst)
            .functions_items()}
    # the function the network calls for a task (its weights re-laid out ahead, if so)
    kernel_of = {t.task_name: next(n for n in (t.task_name + "_prepacked", t.task_name)
                                   if n in base) for t in chosen}
    kernels = {}
    for t in chosen:
        name = kernel_of[t.task_name]
        for arm, funcs in (("database", base), ("ceiling", ceil)):
            kernels[(t.task_name, arm)] = (*timed_alone(funcs[name], target), [])
    from converters.onnxruntime.export import export_onnx
    onnx_path = str(export_onnx(m.spec, Path(args.cache_dir)).path)
    x = np.random.RandomState(0).standard_normal((1, *m.spec.input_size)).astype("float32")
    ort_run, ort_read = ort_profile(onnx_path, x, physical_cores())
    warm = 5
    for _ in range(warm):
        ort_run()
    for r in range(args.rounds):
        arms = ["tvm", "ort"] if r % 2 == 0 else ["ort", "tvm"]
        for arm in arms:
            if arm == "ort":
                for _ in range(args.ort_runs):
                    ort_run()
                continue
            items = list(kernels.items()) if r % 2 == 0 else list(kernels.items())[::-1]
            for _, (ev, tensors, got) in items:
                got.append(float(np.mean(ev(*tensors).results)) * 1e6)
    ort_by_key, _ = ort_read(warm)

    rows = []
    for t in chosen:
        key = shape_key(t.dispatched[0], t.task_name)
        nodes = ort_by_key.get(key, [])
        ort_us = float(np.median([np.median(d) for d in nodes])) if nodes else None
        silu_us, silu = ort_silu_us(t.task_name, key, ort_by_key)
        if ort_us is not None:
            ort_us += silu_us
        macs = (key[1] * key[2] * key[3] * key[4] * key[5] * key[6] if key[0] == "conv"
                else key[1] * key[2])
        row = {"task": t.task_name, "calls": int(t.weight), "shape_key": list(key),
               "gflop": round(2 * macs / 1e9, 4), "ort_nodes": len(nodes),
               "ort_us": round(ort_us, 1) if ort_us else None,
               "ort_fused_activation": silu or None,
               "ort_activation_us": round(silu_us, 1) if silu else None}
        for arm in ("database", "ceiling"):
            row[f"{arm}_us"] = round(float(np.median(kernels[(t.task_name, arm)][2])), 1)
        name = kernel_of[t.task_name]
        # the extra trials and the re-rank may end on the very schedule the database had
        row["same_schedule"] = bool(tvm_ffi.structural_equal(base[name], ceil[name]))
        row["database_over_ort"] = round(row["database_us"] / ort_us, 3) if ort_us else None
        row["ceiling_over_ort"] = round(row["ceiling_us"] / ort_us, 3) if ort_us else None
        row["ceiling_over_database"] = round(row["ceiling_us"] / row["database_us"], 3)
        for arm in ("database", "ceiling", "ort"):
            us = row[f"{arm}_us"]
            row[f"{arm}_gflops"] = round(2 * macs / us / 1e3, 1) if us else None
        rows.append(row)
    out = {**m.header(), "from": str(src), "to": str(dst), "extra": args.extra,
           "design_space": args.design_space, "rerank_top_k": args.rerank,
           "rounds": args.rounds, "ort_runs_per_round":
           args.ort_runs, "tuned": tuned,
           "rerank": {k: rr[k] for k in ("tasks", "changed", "seconds", "per_task")},
           "kernels": rows}
    print(f"{m.spec.name}: {len(chosen)} heaviest tasks, +{args.extra} trials each, "
          f"re-ranked top {args.rerank}; us per call (GFLOP/s)")
    print(f"{'task':40s} calls  trials    database            ceiling             "
          f"ORT (nodes)          ceil/ORT")
    for row, tu in zip(rows, tuned):
        ort = (f"{row['ort_us']:8.1f} ({row['ort_gflops']:5.1f}) x{row['ort_nodes']}"
               if row["ort_us"] else "   no matching node")
        print(f"{row['task']:40s} {row['calls']:5d}  {tu['trials_before']:3d}->{tu['trials_after']:3d}"
              f"  {row['database_us']:8.1f} ({row['database_gflops']:5.1f})"
              f"  {row['ceiling_us']:8.1f} ({row['ceiling_gflops']:5.1f})  {ort}"
              f"  {row['ceiling_over_ort'] or float('nan'):7.3f}", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
