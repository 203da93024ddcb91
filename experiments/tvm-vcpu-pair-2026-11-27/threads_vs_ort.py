"""Issue 33: does TVM lose to ONNX Runtime when this VM's two vCPUs do not run as two cores?

The same TVM database read 1.06x ORT's p50 on 2026-11-25, 1.40x early on 11-27 and 1.85x a few
hours later (MobileNetV2, every TVM run beside an ORT run), while ORT's own p50 moved far
less. A quick probe found the VM's two vCPUs sometimes share one core's worth of time: a
single-threaded matmul loop pinned to each vCPU ran 20 ms alone and 39 ms with the other
vCPU busy, and 25 ms a few seconds later. A parallel kernel in TVM splits its loop into one
static chunk per thread and joins at its end, so it waits for the slower vCPU; ORT's
thread pool hands out smaller blocks to whichever thread is free (MLAS's parallel loops).
If that is where TVM loses, TVM's gain from its second thread should fall (and ORT's
less) when the probe says the pair is contended.

Each arm is a fresh process loading the model as edgebench.full does (the suite's converters,
their cache, the tuned database) and timing batch-1 calls with the suite's ``timed_calls``:

  ort2  ort1    ONNX Runtime, 2 and 1 intra-op threads
  tvm2  tvm1    TVM, TVM_NUM_THREADS 2 and 1 (the pool's other settings: TVM's defaults)
  probe         the vCPU pair: a single-threaded 256x256 float32 matmul loop pinned to each
                vCPU alone, then on both at once; ``pair`` = both / alone (1.0: two
                independent cores; 2.0: one core's worth of time between them)

Blocks of probe, ort2, tvm2, ort1, tvm1, every other block reversed.

    .venv/bin/python experiments/tvm-vcpu-pair-2026-11-27/threads_vs_ort.py compare \\
        --model mobilenetv2_100 --tuning-dir results/experiments/tvm-six-models-2026-11-25/tuning \\
        --json experiments/tvm-vcpu-pair-2026-11-27/runs/mobilenetv2_100.json
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

ARMS = {"ort2": ("onnxruntime", 2), "ort1": ("onnxruntime", 1),
        "tvm2": ("tvm", 2), "tvm1": ("tvm", 1)}
# One thread per BLAS call in the probe: the loop itself is the load on its vCPU.
ONE_THREAD = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def measure(args) -> None:
    """One arm in this process: p50 and fastest of its per-call wall times, as JSON."""
    import numpy as np

    import converters
    from edgebench.measure import timed_calls
    from edgebench.models import make_spec, resolve_weights

    variant, threads = ARMS[args.arm]
    weights, _ = resolve_weights(args.model, "auto", 0)
    options = ({"tuning_dir": args.tuning_dir} if variant == "tvm" else {"ort_threads": threads})
    spec = make_spec(args.model, weights, options)
    conv = converters.get(variant)
    pred = conv.load(conv.convert(spec, Path(args.cache)), spec)
    x = np.random.RandomState(0).standard_normal((1, *spec.input_size)).astype("float32")
    timed_calls(pred, x, min_count=10, min_s=1.0, max_s=5.0)          # warm-up
    ms = timed_calls(pred, x, min_count=args.calls, min_s=args.seconds, max_s=4 * args.seconds)
    print(json.dumps({"variant": variant, "threads": (pred.meta.get("cpu_threads")
                                                      if variant == "tvm" else
                                                      pred.meta.get("intra_op_num_threads")),
                      "calls": int(ms.size), "p50_ms": float(np.median(ms)),
                      "min_ms": float(ms.min())}))
    pred.close()


def spin(args) -> None:
    """The probe's load: this process pinned to one vCPU, the median time of 50 matmuls."""
    import numpy as np

    os.sched_setaffinity(0, {args.cpu})
    a = np.random.rand(256, 256).astype(np.float32)
    for _ in range(20):
        a @ a
    ts = []
    for _ in range(args.loops):
        t = time.perf_counter()
        for _ in range(50):
            a @ a
        ts.append(time.perf_counter() - t)
    print(json.dumps({"cpu": args.cpu, "median_ms": statistics.median(ts) * 1e3}))


def probe(loops: int) -> dict:
    """Each vCPU alone, then both at once: how much the pair slows each other."""
    env = {**os.environ, **ONE_THREAD}

    def start(cpu):
        return subprocess.Popen([sys.executable, __file__, "spin", "--cpu", str(cpu),
                                 "--loops", str(loops)], stdout=subprocess.PIPE, text=True,
                                env=env)

    def result(proc):
        out, _ = proc.communicate(timeout=300)
        return json.loads(out.strip().splitlines()[-1])["median_ms"]

    alone = [result(start(cpu)) for cpu in (0, 1)]
    both = [result(p) for p in [start(cpu) for cpu in (0, 1)]]
    return {"alone_ms": alone, "both_ms": both, "pair": statistics.mean(both) / statistics.mean(alone)}


def compare(args) -> None:
    if len(os.sched_getaffinity(0)) < 2:
        raise SystemExit("the probe needs two CPUs")
    block = ["probe", "ort2", "tvm2", "ort1", "tvm1"]
    order = []
    for rep in range(args.reps):
        order += block if rep % 2 == 0 else block[::-1]
    runs = []
    for i, arm in enumerate(order):
        if arm == "probe":
            got = probe(args.probe_loops)
            print(f"  {i:2d} probe  alone {got['alone_ms'][0]:6.2f} {got['alone_ms'][1]:6.2f} ms"
                  f"  both {got['both_ms'][0]:6.2f} {got['both_ms'][1]:6.2f} ms"
                  f"  pair {got['pair']:.2f}", flush=True)
        else:
            env = {k: v for k, v in os.environ.items() if k != "TVM_NUM_THREADS"}
            if ARMS[arm][0] == "tvm":
                env["TVM_NUM_THREADS"] = str(ARMS[arm][1])
            proc = subprocess.run([sys.executable, __file__, "measure", "--arm", arm,
                                   "--model", args.model, "--tuning-dir", args.tuning_dir,
                                   "--cache", args.cache, "--calls", str(args.calls),
                                   "--seconds", str(args.seconds)],
                                  capture_output=True, text=True, env=env, cwd=REPO, timeout=900)
            if proc.returncode != 0:
                raise SystemExit(f"{arm}: exit {proc.returncode}\n{proc.stderr[-3000:]}")
            got = json.loads(proc.stdout.strip().splitlines()[-1])
            print(f"  {i:2d} {arm:5s}  p50 {got['p50_ms']:8.3f} ms  min {got['min_ms']:8.3f} ms"
                  f"  ({got['calls']} calls, {got['threads']} threads)", flush=True)
        runs.append({"arm": arm, "position": i, **got})
    summary = summarize(runs)
    for k, v in summary.items():
        print(f"{args.model}  {k}: {v}", flush=True)
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps({"model": args.model, "tuning_dir": args.tuning_dir,
                                               "order": order, "runs": runs, "summary": summary},
                                              indent=1), encoding="utf-8")


def summarize(runs: list) -> dict:
    """Per block: the probe's pair figure beside TVM's and ORT's gain from a second thread
    (p50 with 2 threads / p50 with 1) and TVM / ORT at 2 threads."""
    blocks = []
    for b in range(0, len(runs), 5):
        arm = {r["arm"]: r for r in runs[b:b + 5]}
        blocks.append({"pair": round(arm["probe"]["pair"], 3),
                       "tvm_2_over_1": round(arm["tvm2"]["p50_ms"] / arm["tvm1"]["p50_ms"], 3),
                       "ort_2_over_1": round(arm["ort2"]["p50_ms"] / arm["ort1"]["p50_ms"], 3),
                       "tvm_over_ort_2": round(arm["tvm2"]["p50_ms"] / arm["ort2"]["p50_ms"], 3),
                       "tvm_over_ort_1": round(arm["tvm1"]["p50_ms"] / arm["ort1"]["p50_ms"], 3)})
    med = {k: round(statistics.median(b[k] for b in blocks), 3) for k in blocks[0]}
    return {"blocks": blocks, "median": med}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("spin")
    s.add_argument("--cpu", type=int, required=True)
    s.add_argument("--loops", type=int, default=20)
    for name in ("measure", "compare"):
        s = sub.add_parser(name)
        s.add_argument("--model", required=True)
        s.add_argument("--tuning-dir", required=True)
        s.add_argument("--cache", default=str(REPO / "results" / "cache"),
                       help="the suite's artifact cache (default results/cache)")
        s.add_argument("--calls", type=int, default=100)
        s.add_argument("--seconds", type=float, default=4.0)
        if name == "measure":
            s.add_argument("--arm", required=True, choices=list(ARMS))
        else:
            s.add_argument("--reps", type=int, default=6, help="blocks of every arm (ABBA)")
            s.add_argument("--probe-loops", type=int, default=20)
            s.add_argument("--json")
    args = p.parse_args()
    {"spin": spin, "measure": measure, "compare": compare}[args.cmd](args)


if __name__ == "__main__":
    main()
