"""One task's kernel from several tuning databases, alone and warm, beside MLAS's conv of the
same shape, in one process.

Each database's best record for TASK is applied and the kernel built alone (as the network
calls it: its weights prepacked where the database says so), then timed as the tuner's runner
times a candidate. MLAS's conv is the shape's single-Conv ORT model (../tvm-zen5-gaps-
2026-11-29/ort_alone.py), called back to back, its conv node's median under ORT's profiler.
Rounds alternate the order of the arms (ABBA); each arm's figure is the median over rounds.

    .venv/bin/python experiments/tvm-multi-vector-2026-11-29/task_alone.py --model resnet152 \\
        --task fused_conv2d16_add9_relu71 --tuning-dirs 1024:DIR1 multi:DIR2 --json out.json
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))
sys.path.insert(0, str(REPO / "experiments" / "tvm-kernel-ceiling-2026-11-26"))
sys.path.insert(0, str(REPO / "experiments" / "tvm-zen5-gaps-2026-11-29"))
sys.path.insert(0, str(REPO / "experiments" / "tvm-one-flush-2026-11-29"))


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", required=True)
    p.add_argument("--task", required=True, help="the task's name, as the tuner names it")
    p.add_argument("--tuning-dirs", nargs="+", required=True, metavar="LABEL:DIR")
    p.add_argument("--rounds", type=int, default=8)
    p.add_argument("--calls", type=int, default=20, help="MLAS calls per round")
    p.add_argument("--cache-dir", default="results/cache", help="where the ONNX export goes")
    p.add_argument("--json")
    args = p.parse_args()

    import numpy as np

    from ceiling import shape_key
    from converters.onnxruntime.export import export_onnx
    from converters.tvm import build, passes
    from edgebench.util import physical_cores
    from one_flush import matching_tasks
    from ort_alone import conv_call_us, conv_models
    from tvm_setup import load, timed_alone

    arms, key, header = {}, None, None
    for item in args.tuning_dirs:
        label, _, d = item.partition(":")
        m = load(args.model, d)
        task = next((t for t in passes.extract_tasks(m.lowered, m.target)
                     if t.task_name == args.task), None)
        if task is None:
            raise SystemExit(f"no task {args.task} in {args.model}'s build from {d}")
        key = shape_key(task.dispatched[0], task.task_name)
        funcs = {gv.name_hint: f for gv, f in
                 build.apply_database(m.lowered, m.target, m.db_dir).functions_items()}
        name = next(n for n in (args.task + "_prepacked", args.task) if n in funcs)
        ev, tensors = timed_alone(funcs[name], m.target)
        arms[label] = {"database": str(m.db_dir), "run": lambda ev=ev, ts=tensors: float(
            np.mean(ev(*ts).results)) * 1e6, "us": []}
        header = header or m.header()

    threads = physical_cores()
    mlas = None
    if key and key[0] == "conv":
        onnx_path = str(export_onnx(m.spec, Path(args.cache_dir)).path)
        by_key = {tuple(key): [args.task]}
        mlas = next((c for c in conv_models(onnx_path, Path(tempfile.mkdtemp()))
                     if matching_tasks(tuple(c["key"]), by_key)), None)
    if mlas:
        x = np.random.RandomState(0).standard_normal(mlas["input"]).astype(np.float32)

        def run_mlas():
            # a session of its own each round: one ORT session open at a time
            return conv_call_us(mlas["path"], x, threads, args.calls)[0]

        arms["mlas"] = {"database": None, "run": run_mlas, "us": []}

    labels = list(arms)
    for r in range(args.rounds):
        for label in (labels if r % 2 == 0 else labels[::-1]):
            arms[label]["us"].append(arms[label]["run"]())
        print(f"[task-alone] round {r + 1}/{args.rounds}", file=sys.stderr, flush=True)

    base = labels[0]
    # The fastest round too: MLAS's rounds ran either at its speed or at twice it (440 or
    # 870 us on the 14x14 conv, 2026-11-29), as in ort_alone.py with two sessions open.
    rows = {label: {"database": a["database"], "us": round(float(np.median(a["us"])), 1),
                    "fastest_round_us": round(float(np.min(a["us"])), 1),
                    "rounds_us": [round(v, 1) for v in a["us"]]} for label, a in arms.items()}
    for label in rows:
        rows[label]["over_first"] = round(rows[label]["us"] / rows[base]["us"], 3)
        if "mlas" in rows:
            rows[label]["over_mlas"] = round(rows[label]["us"] / rows["mlas"]["us"], 3)
    out = {**header, "database": None, "task": args.task,
           "shape_key": list(key) if key else None, "threads": threads,
           "rounds": args.rounds, "arms": rows}
    print(f"{args.model} {args.task} {tuple(key) if key else ''}, {args.rounds} rounds, warm")
    for label, row in rows.items():
        print(f"{label:16} {row['us']:8.1f} us (fastest round {row['fastest_round_us']:.1f})  "
              f"x{row['over_first']:.3f} of {base}"
              + (f"  x{row['over_mlas']:.3f} of MLAS" if "over_mlas" in row else ""))
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
