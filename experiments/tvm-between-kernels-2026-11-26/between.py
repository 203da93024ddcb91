"""How much of a tuned TVM network's time is spent between its kernels, against ORT's time
between its nodes, taken in one process and in alternating rounds.

benchmarks/tvm_profile.py's "outside kernels" is wall p50 minus the sum of kernel medians,
but the two come from different moments, and on this VM they disagree in sign
(experiments/tvm-kernel-ceiling-2026-11-26). Here every round runs, in alternating order:

  tvm        the tuned network, each call timed (perf_counter), no instrument;
  tvm+instr  the same with the Relax VM's instrument: per call, its wall time and the sum of
             its kernels' times (vm.builtin calls are not kernels);
  ort        the suite's ORT session, each call timed;
  ort+prof   a second session with ORT's profiler on: per run, ``model_run``'s time and the
             sum of the node kernel times inside it.

Between kernels (per call, medians over every call of every round):
  TVM: plain wall minus the kernels' sum (part of the instrument's cost falls inside the
       kernels' intervals, so this is a lower bound);
  ORT: plain wall minus the nodes' sum.

    .venv/bin/python experiments/tvm-between-kernels-2026-11-26/between.py \\
        --model efficientnet_b0 --tuning-dir results/experiments/tvm-six-models-2026-11-25/tuning
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


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", required=True)
    p.add_argument("--tuning-dir", required=True)
    p.add_argument("--rounds", type=int, default=8)
    p.add_argument("--calls", type=int, default=30, help="calls per arm per round")
    p.add_argument("--cache-dir", default="results/cache", help="where the ONNX export goes")
    p.add_argument("--json")
    args = p.parse_args()

    import numpy as np
    import onnxruntime as ort
    import tvm
    from tvm.runtime.vm import VirtualMachine

    from converters.onnxruntime.export import export_onnx
    from converters.onnxruntime.session import session_options
    from converters.tvm import build, database, passes, targets
    from edgebench.measure import timed_calls
    from edgebench.models import make_spec, resolve_weights
    from edgebench.util import physical_cores
    from tvm_profile import profiling_session, tvm_kernel_times

    target, _ = targets.resolve_target("host")
    threads = targets.configure_threads(target)
    weights, note = resolve_weights(args.model, "auto", 0)
    spec = make_spec(args.model, weights)
    db = database.db_dir_for(args.tuning_dir, target, spec.name, spec.input_size)
    if not database.database_exists(db):
        p.error(f"no database for {spec.name} in {args.tuning_dir}")
    res = build.build_library(spec.build(), spec.input_size, 1, target, db_dir=db, spec=spec,
                              layout=passes.layout_for(target, db),
                              conv2d=passes.conv2d_for(db))
    vm = VirtualMachine(res["executable"], tvm.cpu(0))
    x = np.random.RandomState(0).standard_normal((1, *spec.input_size)).astype("float32")
    fn, inp = vm["main"], tvm.runtime.tensor(x)

    onnx_path = str(export_onnx(spec, Path(args.cache_dir)).path)
    sess = ort.InferenceSession(onnx_path, session_options(physical_cores()),
                                providers=["CPUExecutionProvider"])
    prof = profiling_session(onnx_path, physical_cores())
    feed = {sess.get_inputs()[0].name: x}

    got = {"tvm": [], "tvm_instr_wall": [], "tvm_kernels": [], "ort": []}
    kernel_calls = 0

    def run_tvm():
        got["tvm"].extend(timed_calls(fn, inp, args.calls, 0.0, 1e6) * 1e3)

    def run_tvm_instr():
        # tvm_profile's instrument, one inference at a time: the kernels' sum per call
        nonlocal kernel_calls
        for _ in range(args.calls):
            t = time.perf_counter_ns()
            per_kernel = tvm_kernel_times(vm, fn, inp, 1)
            got["tvm_instr_wall"].append((time.perf_counter_ns() - t) / 1e3)
            got["tvm_kernels"].append(sum(k["us"] for k in per_kernel.values()))
            kernel_calls = sum(k["calls"] for k in per_kernel.values())

    def run_ort():
        got["ort"].extend(timed_calls(lambda _: sess.run(None, feed), None, args.calls, 0.0,
                                      1e6) * 1e3)

    def run_ort_prof():
        for _ in range(args.calls):
            prof.run(None, feed)

    arms = [run_tvm, run_tvm_instr, run_ort, run_ort_prof]
    for f in arms:                                  # warm-up, not kept
        f()
    for k in got:
        got[k].clear()
    warm_runs = args.calls
    for r in range(args.rounds):
        for f in (arms if r % 2 == 0 else arms[::-1]):
            f()

    with open(prof.end_profiling(), encoding="utf-8") as fh:
        events = json.load(fh)
    runs = sorted((e["ts"], e["ts"] + e["dur"]) for e in events
                  if e.get("cat") == "Session" and e.get("name") == "model_run")[warm_runs:]
    nodes = sorted((e["ts"], e["dur"]) for e in events
                   if e.get("cat") == "Node" and e["name"].endswith("_kernel_time"))
    ort_run_us, ort_nodes_us, ort_node_count = [], [], 0
    i = 0
    for start, end in runs:
        while i < len(nodes) and nodes[i][0] < start:
            i += 1
        total, n = 0.0, 0
        while i < len(nodes) and nodes[i][0] <= end:
            total += nodes[i][1]
            n += 1
            i += 1
        ort_run_us.append(end - start)
        ort_nodes_us.append(total)
        ort_node_count = n

    med = {k: float(np.median(v)) for k, v in got.items()}
    med["ort_prof_run"] = float(np.median(ort_run_us))
    med["ort_nodes"] = float(np.median(ort_nodes_us))
    out = {"model": spec.name, "weights": spec.weights, "weights_note": note,
           "database": str(db), "target": targets.target_dict(target), "tvm_threads": threads,
           **targets.tvm_versions(), "ort_version": ort.__version__,
           "rounds": args.rounds, "calls_per_arm_per_round": args.calls,
           "tvm_kernel_calls_per_inference": kernel_calls,
           "ort_nodes_per_run": ort_node_count,
           "median_us": {k: round(v, 1) for k, v in med.items()},
           "tvm_between_kernels_us": round(med["tvm"] - med["tvm_kernels"], 1),
           "ort_between_nodes_us": round(med["ort"] - med["ort_nodes"], 1),
           "tvm_instrument_cost_us": round(med["tvm_instr_wall"] - med["tvm"], 1),
           "ort_profiler_cost_us": round(med["ort_prof_run"] - med["ort"], 1),
           "tvm_over_ort_wall": round(med["tvm"] / med["ort"], 3),
           "tvm_over_ort_inside": round(med["tvm_kernels"] / med["ort_nodes"], 3)}
    print(f"{spec.name}: medians per call over {args.rounds} rounds x {args.calls} calls (us)")
    print(f"  TVM  wall {med['tvm']:9.1f}  kernels {med['tvm_kernels']:9.1f} "
          f"({kernel_calls} calls)  between {out['tvm_between_kernels_us']:8.1f}  "
          f"instrument costs {out['tvm_instrument_cost_us']:.1f}")
    print(f"  ORT  wall {med['ort']:9.1f}  nodes   {med['ort_nodes']:9.1f} "
          f"({ort_node_count} nodes)  between {out['ort_between_nodes_us']:8.1f}  "
          f"profiler costs {out['ort_profiler_cost_us']:.1f}")
    print(f"  TVM/ORT: wall {out['tvm_over_ort_wall']:.3f}, inside kernels/nodes "
          f"{out['tvm_over_ort_inside']:.3f}", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
