"""Every kernel of a tuned TVM network beside ONNX Runtime's node for the same operator, and
both networks' walls, in one process: where a model's remaining gap to ORT sits.

Issue 33 leaves ResNet-152 at 1.055x ORT's p50 on the Zen 4, its fastest call at 1.050x.
The per-kernel profile of 2026-11-27 (benchmarks/tvm_profile.py, both runtimes under their
instruments) put TVM's convs at 0.95x ORT's, which does not fit the walls. Here nothing is
instrumented on TVM's side:

  TVM   each task's kernel as the network calls it (``<task>_prepacked`` where the weight is
        re-laid out ahead), built alone and timed as the tuner's runner times a candidate
        (time_evaluator, TuneConfig's number, repeat, min_repeat_ms); a task's share of a
        call is its calls x that time;
  ORT   the whole network with its profiler on; a node's time is its median over the runs;
        nodes are matched to TVM's tasks by operator shape (``ceiling.shape_key``), and the
        ones no task matches are summed by op type;
  walls the TVM network (Relax VM, unpinned worker) and a plain ORT session (no profiler),
        ``--inferences`` calls each per round: their medians and fastest calls.

Rounds alternate the order of the arms (ABBA). Both sides get one thread per physical core.
With ``--ceilings`` every round also measures the machine's FMA and SGEMM ceilings
(``../tvm-resnet152-roofline-2026-11-28/ceilings.py``) and every row gets its MFLOP and
GFLOP/s, so each side's speed reads as a share of what the cores can do.

    .venv/bin/python experiments/tvm-resnet152-zen4-2026-11-28/kernels_vs_ort.py \\
        --model resnet152 --tuning-dir results/experiments/tvm-input-conv-2026-11-28/resnet152/tuning \\
        --json out.json
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))
sys.path.insert(0, str(REPO / "experiments" / "tvm-kernel-ceiling-2026-11-26"))


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", required=True)
    p.add_argument("--tuning-dir", required=True)
    p.add_argument("--rounds", type=int, default=8)
    p.add_argument("--ort-runs", type=int, default=10, help="profiled ORT inferences per round")
    p.add_argument("--inferences", type=int, default=10,
                   help="network calls per arm and round (walls, and the instrumented one)")
    p.add_argument("--cold-repeat", type=int, default=10, help="cold calls per kernel and round")
    p.add_argument("--cache-dir", default="results/cache", help="where the ONNX export goes")
    p.add_argument("--ceilings", metavar="DIR",
                   help="also measure the machine's FMA and SGEMM ceilings in every round "
                   "(../tvm-resnet152-roofline-2026-11-28/ceilings.py; the FMA loop is built "
                   "in DIR) and give every kernel's GFLOP/s")
    p.add_argument("--json")
    args = p.parse_args()

    import numpy as np
    import onnxruntime as ort
    import tvm

    from ceiling import ort_profile, ort_silu_us, shape_key
    from converters.onnxruntime.export import export_onnx
    from converters.onnxruntime.session import session_options
    from converters.tvm import passes
    from converters.tvm.scheduler import task_flops
    from converters.tvm.tuning import TuneConfig
    from edgebench.util import aligned_empty, physical_cores
    from tvm_profile import tvm_kernel_times
    from tvm_setup import kernel_alone, load, tuned_network

    m = load(args.model, args.tuning_dir)
    tasks = passes.extract_tasks(m.lowered, m.target)
    _, funcs, vm = tuned_network(m)
    threads = physical_cores()
    cfg = TuneConfig()

    kernels = []            # one dict per task's kernel
    for t in tasks:
        name = next((n for n in (t.task_name + "_prepacked", t.task_name) if n in funcs), None)
        if name is None:
            print(f"[kernels] {t.task_name}: not in the built network, left out",
                  file=sys.stderr)
            continue
        lib, tensors = kernel_alone(funcs[name], m.target)
        kernels.append({
            "task": t, "name": name, "lib": lib, "tensors": tensors, "warm": [], "cold": [],
            "network": [],
            # as the tuner's runner times a candidate
            "warm_ev": lib.mod.time_evaluator("main", tvm.cpu(), number=cfg.number,
                                              repeat=cfg.repeat,
                                              min_repeat_ms=cfg.min_repeat_ms),
            # every argument but the data flushed from the caches before each call, as the
            # network's kernel finds its weights: each layer's are read once per inference
            "cold_ev": lib.mod.time_evaluator("main", tvm.cpu(), number=1,
                                              repeat=args.cold_repeat,
                                              f_preproc="cache_flush_cpu_non_first_arg")})
    print(f"[kernels] {len(kernels)} of {len(tasks)} tasks built alone", file=sys.stderr,
          flush=True)

    ceiling: dict = {}      # "fma"/"gemm" -> GFLOP/s samples, with --ceilings
    if args.ceilings:
        sys.path.insert(0, str(REPO / "experiments" / "tvm-resnet152-roofline-2026-11-28"))
        from ceilings import GemmProbe, build_fma_peak, fma_gflops

        fma_exe = build_fma_peak(Path(args.ceilings))
        gemm = GemmProbe(GEMM_N, threads)
        ceiling = {"gemm": []} if fma_exe is None else {"fma": [], "gemm": []}

    onnx_path = str(export_onnx(m.spec, Path(args.cache_dir)).path)
    x = aligned_empty((1, *m.spec.input_size), np.float32)
    x[...] = np.random.RandomState(0).standard_normal(x.shape)
    ort_run, ort_read = ort_profile(onnx_path, x, threads)
    plain = ort.InferenceSession(onnx_path, session_options(threads),
                                 providers=["CPUExecutionProvider"])
    feed = {plain.get_inputs()[0].name: x}
    tx = tvm.runtime.from_dlpack(x)
    fn = vm["main"]
    walls: dict = {"tvm": [], "ort": []}

    def wall(arm):
        call = (lambda: fn(tx)) if arm == "tvm" else (lambda: plain.run(None, feed))
        for _ in range(args.inferences):
            t0 = time.perf_counter()
            call()
            walls[arm].append((time.perf_counter() - t0) * 1e3)

    def alone(mode, order):
        for k in order:
            ev = k[f"{mode}_ev"]
            res = ev(*k["tensors"]).results
            k[mode].append(float(np.mean(res) if mode == "warm" else np.median(res)) * 1e6)

    def network():
        got = tvm_kernel_times(vm, fn, tx, args.inferences)
        for k in kernels:
            row = got.get(k["name"])
            if row:
                k["network"].append(row["us"] / row["calls"])

    warm = 5
    for _ in range(warm):
        ort_run()
        fn(tx)
        plain.run(None, feed)
    arms = ["warm", "ort-profiled", "tvm-wall", "cold", "network", "ort-wall"]
    if ceiling:
        arms += ["ceilings"]
    for r in range(args.rounds):
        order = kernels if r % 2 == 0 else kernels[::-1]
        for arm in (arms if r % 2 == 0 else arms[::-1]):
            if arm in ("warm", "cold"):
                alone(arm, order)
            elif arm == "network":
                network()
            elif arm == "ceilings":
                if "fma" in ceiling:
                    ceiling["fma"].append(fma_gflops(fma_exe, threads))
                ceiling["gemm"] += gemm.gflops()
            elif arm == "ort-profiled":
                for _ in range(args.ort_runs):
                    ort_run()
            else:
                wall(arm.split("-")[0])
        print(f"[kernels] round {r + 1}/{args.rounds}", file=sys.stderr, flush=True)
    ort_by_key, ort_nodes = ort_read(warm)

    rows, matched_keys = [], set()
    for k in kernels:
        t = k["task"]
        key = shape_key(t.dispatched[0], t.task_name)
        nodes = ort_by_key.get(key, []) if key else []
        ort_us = float(np.median([np.median(d) for d in nodes])) if nodes else None
        silu_us, silu = ort_silu_us(t.task_name, key, ort_by_key) if key else (0.0, "")
        if ort_us is not None:
            ort_us += silu_us
            matched_keys.add(key)
        row = {"task": t.task_name, "kernel": k["name"], "calls": int(t.weight),
               "mflop": round(task_flops(t) / 1e6, 3),
               "shape_key": list(key) if key else None, "ort_nodes": len(nodes),
               "ort_us": round(ort_us, 1) if ort_us else None,
               "ort_fused_activation": silu or None}
        for mode in ("warm", "cold", "network"):
            row[f"{mode}_us"] = round(float(np.median(k[mode])), 1) if k[mode] else None
        for mode in ("warm", "cold", "network"):
            us = row[f"{mode}_us"]
            row[f"{mode}_over_ort"] = round(us / ort_us, 3) if ort_us and us else None
        rows.append(row)
    # one ORT time per matched shape, counted once however many tasks share the shape
    ort_matched_ms = sum(len(ort_by_key[key]) * float(np.median(
        [np.median(d) for d in ort_by_key[key]])) for key in matched_keys) / 1e3
    unmatched: dict = {}    # ORT's nodes no task matched, per call by op (reorders, pools, ...)
    for op, key, durs in ort_nodes.values():
        if key is None or key not in matched_keys:
            unmatched[op] = unmatched.get(op, 0.0) + float(np.median(durs)) / 1e3

    def stats(v):
        return {"p50_ms": round(float(np.median(v)), 3), "min_ms": round(float(np.min(v)), 3),
                "n": len(v)}

    def per_call_ms(mode, only=None):
        return round(sum(r["calls"] * r[f"{mode}_us"] for r in rows
                         if r[f"{mode}_us"] and (only is None or bool(r["ort_us"]) == only))
                     / 1e3, 3)

    out = {**m.header(), "rounds": args.rounds, "ort_runs_per_round": args.ort_runs,
           "inferences_per_round": args.inferences, "cold_repeat": args.cold_repeat,
           "runner": {"number": cfg.number, "repeat": cfg.repeat,
                      "min_repeat_ms": cfg.min_repeat_ms},
           "threads": threads, "walls": {arm: stats(v) for arm, v in walls.items()},
           "wall_p50_ratio": round(float(np.median(walls["tvm"]) / np.median(walls["ort"])), 3),
           "wall_min_ratio": round(float(np.min(walls["tvm"]) / np.min(walls["ort"])), 3),
           "tvm_sum_ms": {mode: {"all": per_call_ms(mode), "matched": per_call_ms(mode, True),
                                 "unmatched": per_call_ms(mode, False)}
                          for mode in ("warm", "cold", "network")},
           "ort_sum_ms": {"matched": round(ort_matched_ms, 3),
                          "unmatched_by_op": {k: round(v, 3) for k, v in
                                              sorted(unmatched.items(), key=lambda kv: -kv[1])},
                          "all": round(ort_matched_ms + sum(unmatched.values()), 3)},
           "kernels": sorted(rows, key=lambda r: -r["calls"] * (r["network_us"] or 0))}
    if ceiling:
        out["roofline"] = roofline(out, rows, ceiling)
    report(out)
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    return 0


GEMM_N = 512    # fits the caches: MLAS's best case on the Zen 4 (1024: 0.89x, 2048: 0.84x)


def roofline(out: dict, rows: list, ceiling: dict) -> dict:
    """GFLOP/s of each side beside the machine's ceilings: the network's flops over its wall,
    and the matched kernels' flops over their time."""
    import numpy as np

    flops = sum(r["calls"] * r["mflop"] for r in rows) * 1e6
    matched = [r for r in rows if r["ort_us"]]
    mflops = sum(r["calls"] * r["mflop"] for r in matched) * 1e6

    def rate(ms):
        return round(flops / (ms / 1e3) / 1e9, 1)

    def matched_rate(key):
        s = sum(r["calls"] * r[key] for r in matched) / 1e6
        return round(mflops / s / 1e9, 1) if s else None

    ceil = {k: {"p50": round(float(np.median(v)), 1), "max": round(float(np.max(v)), 1),
                "min": round(float(np.min(v)), 1), "n": len(v)} for k, v in ceiling.items()}
    for r in rows:
        for key, us in (("tvm_network", r["network_us"]), ("ort", r["ort_us"])):
            r[f"{key}_gflops"] = round(r["mflop"] / us * 1e3, 1) if us and r["mflop"] else None
    return {
        "gflop_per_inference": round(flops / 1e9, 3),
        "ceilings_gflops": ceil,
        "wall_gflops": {"tvm_p50": rate(out["walls"]["tvm"]["p50_ms"]),
                        "ort_p50": rate(out["walls"]["ort"]["p50_ms"]),
                        "tvm_min": rate(out["walls"]["tvm"]["min_ms"]),
                        "ort_min": rate(out["walls"]["ort"]["min_ms"])},
        "matched_kernels_gflops": {"tvm_warm": matched_rate("warm_us"),
                                   "tvm_cold": matched_rate("cold_us"),
                                   "tvm_network": matched_rate("network_us"),
                                   "ort": matched_rate("ort_us")},
    }


def report(out: dict) -> None:
    w, s, o = out["walls"], out["tvm_sum_ms"], out["ort_sum_ms"]
    print(f"{out['model']}: walls TVM p50 {w['tvm']['p50_ms']} ms (min {w['tvm']['min_ms']}), "
          f"ORT p50 {w['ort']['p50_ms']} ms (min {w['ort']['min_ms']}): "
          f"{out['wall_p50_ratio']}x p50, {out['wall_min_ratio']}x min")
    print("TVM kernels, calls x time per inference: "
          + ", ".join(f"{mode} {s[mode]['all']} ms (matched {s[mode]['matched']})"
                      for mode in ("warm", "cold", "network")))
    print(f"ORT nodes (profiler): {o['all']} ms (matched {o['matched']}; the rest by op "
          f"{o['unmatched_by_op']})")
    print(f"{'task':40s} calls  warm us  cold us  net us   ORT us (n)   warm/ORT cold/ORT "
          f"net/ORT  net ms  ORT ms")
    for r in out["kernels"]:
        def ratio(mode):
            v = r[f"{mode}_over_ort"]
            return f"{v:8.3f}" if v else f"{'':8s}"
        ort = f"{r['ort_us']:8.1f} ({r['ort_nodes']:2d})" if r["ort_us"] else f"{'':13s}"
        net = r["network_us"] or 0
        print(f"{r['task'][:40]:40s} {r['calls']:5d} {r['warm_us']:8.1f} {r['cold_us']:8.1f} "
              f"{net:7.1f} {ort} {ratio('warm')} {ratio('cold')} {ratio('network')}"
              f"  {r['calls'] * net / 1e3:6.2f}  "
              f"{r['ort_nodes'] * r['ort_us'] / 1e3 if r['ort_us'] else 0:6.2f}")
    if "roofline" in out:
        rf = out["roofline"]
        c = rf["ceilings_gflops"]
        print(f"{rf['gflop_per_inference']} GFLOP an inference; ceilings (GFLOP/s, median of "
              "the rounds): " + ", ".join(f"{k} {v['p50']} ({v['min']}-{v['max']})"
                                          for k, v in c.items()))
        top = c.get("fma", c["gemm"])["p50"]
        print("walls, GFLOP/s (share of the top ceiling): " + ", ".join(
            f"{k} {v} ({v / top:.3f})" for k, v in rf["wall_gflops"].items()))
        print("matched kernels, GFLOP/s: " + ", ".join(
            f"{k} {v} ({v / top:.3f})" for k, v in rf["matched_kernels_gflops"].items() if v))
        print(f"{'task':40s} calls  MFLOP   TVM net GFLOP/s   ORT GFLOP/s")
        for r in out["kernels"]:
            if r["mflop"] and r["calls"] * (r["network_us"] or 0) >= 500:   # 0.5 ms+ a call
                ort = f"{r['ort_gflops']:13.1f}" if r["ort_gflops"] else f"{'':13s}"
                print(f"{r['task'][:40]:40s} {r['calls']:5d} {r['mflop']:7.1f} "
                      f"{r['tvm_network_gflops'] or 0:17.1f} {ort}")


if __name__ == "__main__":
    sys.exit(main())
