"""Does TVM's CPU thread pool cost a tuned network its time between kernels? The network's
wall time under the pool's settings, each arm a process of its own (the pool reads its
environment once, when it starts), arms alternated in ABBA order.

Issue 33 found EfficientNet-B0 spends 1.2-2.6 ms of its 15-17 ms between kernels
(experiments/tvm-between-kernels-2026-11-26), about its whole gap to ONNX Runtime; the
thread pool's start and join per kernel was one suspect. TVM's pool (src/runtime/thread_pool.cc)
runs task 0 of each parallel kernel in the calling thread and hands the rest to workers that
spin TVM_THREAD_POOL_SPIN_COUNT times (300000 by default) before they sleep; TVM_BIND_THREADS
(1 by default) pins them to cores. The arms:

  default   the suite's settings (TVM_NUM_THREADS = the target's cores, pool defaults)
  spin0     TVM_THREAD_POOL_SPIN_COUNT=0: a worker sleeps as soon as its queue is empty, so
            every kernel wakes it (what the between-kernel time becomes when the spin never
            covers the gap)
  spin10x   TVM_THREAD_POOL_SPIN_COUNT=3000000: a worker spins ten times longer
  nobind    TVM_BIND_THREADS=0: no pinning

    .venv/bin/python experiments/tvm-threadpool-2026-11-26/threadpool.py build \\
        --model efficientnet_b0 --tuning-dir results/experiments/tvm-six-models-2026-11-25/tuning
    .venv/bin/python experiments/tvm-threadpool-2026-11-26/threadpool.py compare \\
        --model efficientnet_b0 --json runs/efficientnet_b0.json
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(REPO))

ARMS = {
    "default": {},
    "spin0": {"TVM_THREAD_POOL_SPIN_COUNT": "0"},
    "spin10x": {"TVM_THREAD_POOL_SPIN_COUNT": "3000000"},
    "nobind": {"TVM_BIND_THREADS": "0"},
}
POOL_VARS = ("TVM_THREAD_POOL_SPIN_COUNT", "TVM_BIND_THREADS")


def library_path(work: Path, model: str) -> Path:
    return work / f"{model}.so"


def build(args) -> None:
    """The tuned network built as the suite builds it, exported once for every arm."""
    from converters.tvm import build as tvm_build
    from converters.tvm import database, passes, targets
    from edgebench.models import make_spec, resolve_weights

    target, _ = targets.resolve_target("host")
    weights, note = resolve_weights(args.model, "auto", 0)
    spec = make_spec(args.model, weights)
    db = database.db_dir_for(args.tuning_dir, target, spec.name, spec.input_size)
    if not database.database_exists(db):
        raise SystemExit(f"no database for {spec.name} in {args.tuning_dir}")
    out = library_path(Path(args.work), args.model)
    tvm_build.build_library(spec.build(), spec.input_size, 1, target, db_dir=db, spec=spec,
                            layout=passes.layout_for(target, db), conv2d=passes.conv2d_for(db),
                            out_path=out)
    meta = {"model": args.model, "weights": spec.weights, "weights_note": note,
            "database": str(db), "target": targets.target_dict(target),
            "input_size": list(spec.input_size), **targets.tvm_versions()}
    out.with_suffix(".json").write_text(json.dumps(meta, indent=1), encoding="utf-8")
    print(f"built {out}")


def measure(args) -> None:
    """One arm in this process: the exported network's per-call wall times (ms), as JSON."""
    import numpy as np
    import tvm
    from tvm.runtime.vm import VirtualMachine

    from converters.tvm import targets
    from edgebench.measure import timed_calls

    threads = targets.configure_threads()          # as the suite: TVM_NUM_THREADS = cores
    lib = tvm.runtime.load_module(str(library_path(Path(args.work), args.model)))
    meta = json.loads(library_path(Path(args.work), args.model).with_suffix(".json").read_text())
    vm = VirtualMachine(lib, tvm.cpu(0))
    fn = vm["main"]
    x = tvm.runtime.tensor(np.random.RandomState(0).standard_normal(
        (1, *meta["input_size"])).astype("float32"))
    timed_calls(fn, x, min_count=10, min_s=1.0, max_s=5.0)          # warm-up
    ms = timed_calls(fn, x, min_count=args.calls, min_s=args.seconds, max_s=4 * args.seconds)
    print(json.dumps({"threads": threads, "pool": {k: os.environ.get(k) for k in POOL_VARS},
                      "calls": len(ms), "p50_ms": float(np.median(ms)),
                      "min_ms": float(ms.min())}))


def compare(args) -> None:
    """The arms alternated ABBA (default first and last in each block), each a fresh process."""
    import numpy as np

    arms = args.arms.split(",")
    order = []
    for rep in range(args.reps):
        block = arms if rep % 2 == 0 else arms[::-1]
        order += block
    runs = []
    for i, arm in enumerate(order):
        env = {k: v for k, v in os.environ.items() if k not in POOL_VARS}
        env.update(ARMS[arm])
        proc = subprocess.run([sys.executable, __file__, "measure", "--model", args.model,
                               "--work", args.work, "--calls", str(args.calls),
                               "--seconds", str(args.seconds)],
                              capture_output=True, text=True, env=env, cwd=REPO, timeout=600)
        if proc.returncode != 0:
            raise SystemExit(f"{arm}: exit {proc.returncode}\n{proc.stderr[-3000:]}")
        got = json.loads(proc.stdout.strip().splitlines()[-1])
        runs.append({"arm": arm, "position": i, **got})
        print(f"  {i:2d} {arm:8s} p50 {got['p50_ms']:8.3f} ms  min {got['min_ms']:8.3f} ms  "
              f"({got['calls']} calls, {got['threads']['threads']} threads)", flush=True)
    by_arm = {a: [r["p50_ms"] for r in runs if r["arm"] == a] for a in arms}
    # Each arm against the default runs next to it: the mean of the two neighbours' p50s
    # (or the one neighbour at the ends), so that drift between positions cancels.
    ratios = {a: [] for a in arms if a != "default"}
    defaults = [r for r in runs if r["arm"] == "default"]
    for r in runs:
        if r["arm"] == "default":
            continue
        near = sorted(defaults, key=lambda d: abs(d["position"] - r["position"]))[:2]
        ratios[r["arm"]].append(r["p50_ms"] / float(np.mean([d["p50_ms"] for d in near])))
    summary = {a: {"p50_ms_median": float(np.median(v)), "runs": len(v)} for a, v in by_arm.items()}
    for a, v in ratios.items():
        summary[a]["ratio_to_default_median"] = float(np.median(v))
        summary[a]["ratio_to_default_range"] = [float(min(v)), float(max(v))]
    meta = json.loads(library_path(Path(args.work), args.model).with_suffix(".json").read_text())
    out = {"model": args.model, "build": meta, "arms": {a: ARMS[a] for a in arms},
           "order": order, "runs": runs, "summary": summary}
    for a, s in summary.items():
        extra = (f"  x{s['ratio_to_default_median']:.3f} of default "
                 f"({s['ratio_to_default_range'][0]:.3f}-{s['ratio_to_default_range'][1]:.3f})"
                 if "ratio_to_default_median" in s else "")
        print(f"{args.model:28s} {a:8s} p50 {s['p50_ms_median']:8.3f} ms{extra}")
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(out, indent=1), encoding="utf-8")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    for name in ("build", "measure", "compare"):
        s = sub.add_parser(name)
        s.add_argument("--model", required=True)
        s.add_argument("--work", default=str(REPO / "results" / "experiments" / "tvm-threadpool-2026-11-26"),
                       help="where the exported networks go (git-ignored)")
        if name == "build":
            s.add_argument("--tuning-dir", required=True)
        else:
            s.add_argument("--calls", type=int, default=100)
            s.add_argument("--seconds", type=float, default=4.0)
        if name == "compare":
            s.add_argument("--arms", default=",".join(ARMS))
            s.add_argument("--reps", type=int, default=4, help="blocks of every arm (ABBA)")
            s.add_argument("--json")
    args = p.parse_args()
    {"build": build, "measure": measure, "compare": compare}[args.cmd](args)


if __name__ == "__main__":
    main()
