"""TVM against ONNX Runtime, each run in a process of its own, alternated so that the VM's
drift falls on both; and the table of such runs.

Each arm is a fresh process (TVM's pool reads its environment once, when it starts) that loads
the model as ``edgebench.full`` does (the suite's converters, their cache, the tuned database)
and times batch-1 calls of the predictor (host array in, host logits out) with the suite's
``timed_calls``. The array is 64-byte aligned, as the suite's batches are, so TVM reads it in
place (``--input numpy`` gives it a plain numpy array, which it copies first). Arms run in
blocks, every other block reversed (ABBA), an ORT run beside every TVM run; each TVM run is
divided by the mean p50 of the (one or two) ORT runs nearest to it, so drift between
positions cancels.

  ort          the suite's onnxruntime variant (CPU EP, intra-op threads = physical cores)
  tvm          the suite's tvm variant with the model's tuning database (TVM's pool defaults)
  tvm-nobind   TVM_BIND_THREADS=0: the pool's workers are not pinned to cores
  tvm-spin10x  TVM_THREAD_POOL_SPIN_COUNT=3000000: workers spin ten times longer before sleeping

    .venv/bin/python benchmarks/tvm_vs_ort.py prepare --model mobilenetv2_100 --tuning-dir DIR
    .venv/bin/python benchmarks/tvm_vs_ort.py compare --model mobilenetv2_100 --tuning-dir DIR \\
        --arms ort,tvm --reps 4 --json runs/mobilenetv2_100/vs-ort.json
    .venv/bin/python benchmarks/tvm_vs_ort.py table runs/    # runs/<model>/{parity.jsonl,vs-ort.json}

``experiments/lib.sh``'s ``parity_and_vs_ort`` writes ``parity.jsonl`` (``edgebench.full
--tasks parity`` of both variants) and ``vs-ort.json`` (``compare``) for a model; ``table``
reads them.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

# TVM's thread-pool settings, read from the environment when its pool starts: each arm's
# process gets these and no others
POOL_VARS = ("TVM_THREAD_POOL_SPIN_COUNT", "TVM_BIND_THREADS")
ARMS = {
    "ort": ("onnxruntime", {}),
    "tvm": ("tvm", {}),
    "tvm-nobind": ("tvm", {"TVM_BIND_THREADS": "0"}),
    "tvm-spin10x": ("tvm", {"TVM_THREAD_POOL_SPIN_COUNT": "3000000"}),
}


def _predictor(variant: str, args):
    """The variant's predictor, converted (or taken from the cache) and loaded as a cell does."""
    import converters
    from edgebench.models import make_spec, resolve_weights

    weights, note = resolve_weights(args.model, "auto", 0)
    options = {"tuning_dir": args.tuning_dir} if variant == "tvm" else {}
    spec = make_spec(args.model, weights, options)
    conv = converters.get(variant)
    av = conv.available(options)
    if not av.ok:
        raise SystemExit(f"{variant}: {av.reason}")
    art = conv.convert(spec, Path(args.cache))
    return conv.load(art, spec), spec, {**art.meta, "weights": weights, "weights_note": note}


def prepare(args) -> None:
    """Convert both variants once, so that every arm's process only loads from the cache."""
    for variant in ("onnxruntime", "tvm"):
        pred, _, meta = _predictor(variant, args)
        pred.close()
        tuning = meta.get("tuning", {})
        print(f"{variant}: ready" + (f" (tuning {tuning.get('status')}, {tuning.get('trials')} "
                                     f"trials)" if tuning else ""), flush=True)


def measure(args) -> None:
    """One arm in this process: p50 and minimum of its per-call wall times, as JSON."""
    import numpy as np

    from edgebench.measure import timed_calls

    from edgebench.util import aligned_empty

    variant = ARMS[args.arm][0]
    pred, spec, meta = _predictor(variant, args)
    x = np.random.RandomState(0).standard_normal((1, *spec.input_size)).astype("float32")
    if args.input == "aligned":      # as the suite's batches are
        x_aligned = aligned_empty(x.shape, x.dtype)
        x_aligned[...] = x
        x = x_aligned
    timed_calls(pred, x, min_count=10, min_s=1.0, max_s=5.0)          # warm-up
    ms = timed_calls(pred, x, min_count=args.calls, min_s=args.seconds, max_s=4 * args.seconds)
    tuning = meta.get("tuning") or {}
    print(json.dumps({"variant": variant, "pool": {k: os.environ.get(k) for k in POOL_VARS},
                      # what the predictor runs with: TVM's pool, or ORT's intra-op threads
                      "threads": (pred.meta.get("cpu_threads") if variant == "tvm"
                                  else pred.meta.get("intra_op_num_threads")),
                      "tuning": {k: tuning.get(k) for k in ("status", "trials", "database")},
                      "weights": meta["weights"], "input": args.input, "calls": int(ms.size),
                      "p50_ms": float(np.median(ms)), "min_ms": float(ms.min())}))
    pred.close()


def measure_arm(script, arm: str, argv: list, env: dict) -> dict:
    """``script measure --arm ARM *argv`` in a process of its own with ``env``: the JSON of
    its last output line (exits with the arm's stderr where it failed)."""
    proc = subprocess.run([sys.executable, str(script), "measure", "--arm", arm, *argv],
                          capture_output=True, text=True, env=env, cwd=REPO, timeout=900)
    if proc.returncode != 0:
        raise SystemExit(f"{arm}: exit {proc.returncode}\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def compare(args) -> None:
    import numpy as np

    arms = args.arms.split(",")
    if "ort" not in arms:
        raise SystemExit("--arms must include ort: every TVM run is divided by its ORT neighbours")
    # Every TVM run next to an ORT run: blocks ort, A, ort, B, ort, C, every other one
    # reversed (C, ort, B, ort, A, ort), so each TVM run has an ORT neighbour on one side at
    # least.
    block = [a for t in arms if t != "ort" for a in ("ort", t)]
    order = []
    for rep in range(args.reps):
        order += block if rep % 2 == 0 else block[::-1]
    runs = []
    for i, arm in enumerate(order):
        env = {k: v for k, v in os.environ.items() if k not in POOL_VARS}
        env.update(ARMS[arm][1])
        got = measure_arm(__file__, arm, ["--model", args.model, "--tuning-dir",
                                          args.tuning_dir, "--cache", args.cache, "--calls",
                                          str(args.calls), "--seconds", str(args.seconds),
                                          "--input", args.input], env)
        runs.append({"arm": arm, "position": i, **got})
        print(f"  {i:2d} {arm:12s} p50 {got['p50_ms']:8.3f} ms  min {got['min_ms']:8.3f} ms  "
              f"({got['calls']} calls)", flush=True)
    orts = [r for r in runs if r["arm"] == "ort"]
    ratios = {a: [] for a in arms if a != "ort"}
    for r in runs:
        if r["arm"] != "ort":
            gap = min(abs(d["position"] - r["position"]) for d in orts)
            near = [d for d in orts if abs(d["position"] - r["position"]) == gap]
            ratios[r["arm"]].append(r["p50_ms"] / float(np.mean([d["p50_ms"] for d in near])))
    summary = {a: {"p50_ms_median": float(np.median([r["p50_ms"] for r in runs if r["arm"] == a])),
                   "runs": sum(r["arm"] == a for r in runs)} for a in arms}
    for a, v in ratios.items():
        summary[a]["ratio_to_ort_median"] = float(np.median(v))
        summary[a]["ratio_to_ort_range"] = [float(min(v)), float(max(v))]
        summary[a]["ratio_to_ort_all"] = [round(float(x), 4) for x in v]
    for a, s in summary.items():
        extra = (f"  x{s['ratio_to_ort_median']:.3f} of ORT "
                 f"({s['ratio_to_ort_range'][0]:.3f}-{s['ratio_to_ort_range'][1]:.3f})"
                 if "ratio_to_ort_median" in s else "")
        print(f"{args.model:28s} {a:12s} p50 {s['p50_ms_median']:8.3f} ms{extra}", flush=True)
    if args.json:
        out = {"model": args.model, "tuning_dir": args.tuning_dir,
               "arms": {a: {"variant": ARMS[a][0], "env": ARMS[a][1]} for a in arms},
               "order": order, "runs": runs, "summary": summary}
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(out, indent=1), encoding="utf-8")


def neighbour_ratios(runs: list, key: str) -> list:
    """Every TVM run's `key` over the mean of the ORT runs nearest to it in the sequence."""
    import statistics

    orts = [r for r in runs if r["arm"] == "ort"]
    out = []
    for r in runs:
        if r["arm"] != "tvm":
            continue
        gap = min(abs(o["position"] - r["position"]) for o in orts)
        near = [o[key] for o in orts if abs(o["position"] - r["position"]) == gap]
        out.append(r[key] / statistics.mean(near))
    return out


def model_row(model_dir: Path) -> dict:
    """One model's figures from its parity.jsonl and vs-ort.json: the TVM database it ran with
    (variant_meta.tuning of the parity record), TVM's parity, and TVM / ORT run by run
    (neighbour_ratios), by p50 and by the fastest call, median over the TVM runs."""
    import statistics

    parity = [json.loads(line) for line in
              (model_dir / "parity.jsonl").read_text(encoding="utf-8").splitlines() if line]
    tvm = next(r for r in parity if r["variant"] == "tvm" and r["task"] == "parity")
    tuning = tvm["variant_meta"].get("tuning") or {}
    runs = json.loads((model_dir / "vs-ort.json").read_text(encoding="utf-8"))["runs"]
    p50 = neighbour_ratios(runs, "p50_ms")
    fastest = neighbour_ratios(runs, "min_ms")
    return {"model": model_dir.name, "status": tvm["status"], "tuning": tuning,
            "max_abs_diff": tvm.get("max_abs_diff"),
            "tvm_p50_ms": statistics.median(r["p50_ms"] for r in runs if r["arm"] == "tvm"),
            "ort_p50_ms": statistics.median(r["p50_ms"] for r in runs if r["arm"] == "ort"),
            "ratio_p50": statistics.median(p50), "ratio_p50_range": (min(p50), max(p50)),
            "ratio_min": statistics.median(fastest), "tvm_runs": len(p50)}


def table(args) -> None:
    """A markdown table, one row per model folder under RUNS that holds a vs-ort.json."""
    print("| model | database (trials, tuning time, estimate) | TVM p50 (ms) | ORT p50 (ms) "
          "| TVM / ORT p50 (range) | TVM / ORT fastest call | TVM parity max abs diff |")
    print("|---|---|---|---|---|---|---|")
    for d in sorted(p for p in Path(args.runs).iterdir() if (p / "vs-ort.json").exists()):
        r = model_row(d)
        t = r["tuning"]
        db = (f"{t.get('trials')} trials, {t.get('tuning_s', 0) / 60:.1f} min, "
              f"{t.get('tuner_estimate_ms')} ms" if t.get("status") == "tuned" else "untuned")
        lo, hi = r["ratio_p50_range"]
        print(f"| {r['model']} | {db} | {r['tvm_p50_ms']:.2f} | {r['ort_p50_ms']:.2f} "
              f"| {r['ratio_p50']:.3f}x ({lo:.3f}-{hi:.3f}) | {r['ratio_min']:.3f}x "
              f"| {r['max_abs_diff']:.1e} |")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    helps = {"prepare": "convert both variants once (each arm's process then loads from the cache)",
             "measure": "one arm in this process: its p50 and fastest call, as JSON",
             "compare": "the arms alternated, each run in a process of its own"}
    for name in ("prepare", "measure", "compare"):
        s = sub.add_parser(name, help=helps[name])
        s.add_argument("--model", required=True)
        s.add_argument("--tuning-dir", required=True)
        s.add_argument("--cache", default=str(REPO / "results" / "cache"),
                       help="the suite's artifact cache (default results/cache)")
        if name != "prepare":
            s.add_argument("--calls", type=int, default=100)
            s.add_argument("--seconds", type=float, default=4.0)
            s.add_argument("--input", choices=["aligned", "numpy"], default="aligned",
                           help="the batch: aligned (default), 64-byte aligned as the suite's "
                                "batches are (TVM reads it in place); numpy, a plain numpy "
                                "array (TVM copies it first)")
        if name == "measure":
            s.add_argument("--arm", required=True, choices=list(ARMS))
        if name == "compare":
            s.add_argument("--arms", default=",".join(ARMS))
            s.add_argument("--reps", type=int, default=4, help="blocks of every arm (ABBA)")
            s.add_argument("--json")
    t = sub.add_parser("table", help="the table of compare's records, one row per model")
    t.add_argument("runs", type=Path, help="a folder of <model>/ folders, each with parity.jsonl "
                   "and vs-ort.json")
    args = p.parse_args()
    {"prepare": prepare, "measure": measure, "compare": compare, "table": table}[args.cmd](args)


if __name__ == "__main__":
    main()
