"""What one kernel call costs TVM's Relax VM, and one node ORT, outside the kernel's own work;
and how much of a tuned network's time that can account for.

Issue 33 asks whether call overhead between kernels is part of TVM's gap to ONNX Runtime.
`../tvm-between-kernels-2026-11-26/` bounded the time between EfficientNet-B0's kernels at
1.2-2.6 ms on the Zen 3 VM, without saying what it is. Two parts here:

``chains``   Chains of N tiny kernels (a 2x64 add, 0.5 KB) that do almost nothing, so a call's
             time is the cost of calling them: N = 1 and N = 101, per-call cost = the
             difference / 100. Arms, in alternating order over the rounds:
               tvm-serial    the Relax VM calling a kernel without a parallel loop (n calls, checked
                             with the VM's instrument);
               tvm-parallel  the same kernel with its outer loop (2) parallel, so every call
                             is a launch and join of TVM's thread pool;
               ort           ORT's CPU EP running N Add nodes (the suite's session options).
``network``  A tuned network from its database: plain calls against calls under the VM's
             instrument (per call: the kernels' sum, the VM builtins' count), alternating
             rounds; and how many of its kernels open a parallel region. The chains' per-call
             costs x those counts give what calling the kernels costs that network.

    .venv/bin/python experiments/tvm-call-overhead-2026-11-27/overhead.py chains --json J
    .venv/bin/python experiments/tvm-call-overhead-2026-11-27/overhead.py network \\
        --model efficientnet_b0 --tuning-dir DIR [--target JSON] --json J
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

SHAPE = (2, 64)
CHAIN_LENGTHS = (1, 101)


def tvm_chain(target, n: int, parallel: bool):
    """A Relax function calling one tiny add kernel n times in a row: (VM function, kernel
    calls per VM call, as the VM's instrument counts them)."""
    import numpy as np
    import tvm
    import tvm.s_tir as s_tir
    from tvm import relax, te
    from tvm.runtime.vm import VirtualMachine

    a = te.placeholder(SHAPE, name="A")
    b = te.compute(SHAPE, lambda i, j: a[i, j] + 1.0, name="B")
    sch = s_tir.Schedule(te.create_prim_func([a, b]))
    if parallel:
        sch.parallel(sch.get_loops(sch.get_sblock("B"))[0])
    kernel = sch.mod["main"].without_attr("global_symbol")
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType(SHAPE, "float32"))
    with bb.function("main", [x]):
        with bb.dataflow():
            gv = bb.add_func(kernel, "add_one")
            y = x
            for _ in range(n):
                y = bb.emit(relax.call_tir(gv, [y], relax.TensorType(SHAPE, "float32")))
            out = bb.emit_output(y)
        bb.emit_func_output(out)
    with tvm.transform.PassContext(opt_level=3):
        vm = VirtualMachine(tvm.compile(bb.get(), target=target), tvm.cpu(0))
    calls = collections.Counter()

    def count(func, sym, before, ret, *args):   # noqa: ARG001 - the VM's signature
        if before:
            calls[sym] += 1
        return 0

    fn = vm["main"]
    vm.set_instrument(count)
    out = fn(tvm.runtime.tensor(np.zeros(SHAPE, "float32"))).numpy()
    vm.set_instrument(None)
    # n separate kernel calls (not fused into one), each of which ran
    assert calls["add_one"] == n and float(out[0, 0]) == n, (calls, out[0, 0])
    return fn, calls["add_one"]


def ort_chain(n: int, threads: int):
    """An ONNX graph of n Add nodes on the same 2x64 tensor, in the suite's ORT CPU session."""
    import numpy as np
    import onnx
    import onnxruntime as ort
    from onnx import TensorProto, helper

    from converters.onnxruntime.session import session_options

    one = helper.make_tensor("one", TensorProto.FLOAT, [1], [1.0])
    nodes = [helper.make_node("Add", [f"t{i}", "one"], [f"t{i + 1}"]) for i in range(n)]
    graph = helper.make_graph(nodes, "chain",
                              [helper.make_tensor_value_info("t0", TensorProto.FLOAT, SHAPE)],
                              [helper.make_tensor_value_info(f"t{n}", TensorProto.FLOAT, SHAPE)],
                              [one])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                              ir_version=8)   # onnx writes a newer IR than ORT 1.31 reads
    onnx.checker.check_model(model)
    sess = ort.InferenceSession(model.SerializeToString(), session_options(threads),
                                providers=["CPUExecutionProvider"])
    x = np.zeros(SHAPE, "float32")
    assert float(sess.run(None, {"t0": x})[0][0, 0]) == n     # not folded away
    return (lambda v: sess.run(None, {"t0": v})), x


def chains(args) -> dict:
    import numpy as np
    import tvm

    from converters.tvm import targets
    from edgebench.measure import timed_calls
    from edgebench.util import physical_cores

    target, _ = targets.resolve_target(args.target)
    threads = targets.configure_threads(target)
    ort_threads = physical_cores()
    x_tvm = tvm.runtime.tensor(np.zeros(SHAPE, "float32"))
    arms = {}
    for n in CHAIN_LENGTHS:
        for name, parallel in (("tvm-serial", False), ("tvm-parallel", True)):
            fn, calls = tvm_chain(target, n, parallel)
            arms[(name, n)] = (fn, x_tvm, calls)
        fn, x = ort_chain(n, ort_threads)
        arms[("ort", n)] = (fn, x, n)
    order = list(arms)
    p50 = collections.defaultdict(list)
    for r in range(args.rounds):
        for key in (order if r % 2 == 0 else order[::-1]):
            fn, x, _ = arms[key]
            timed_calls(fn, x, 50, 0.0, 1e6)            # warm-up: the pool's workers awake
            us = timed_calls(fn, x, args.calls, 0.0, 1e6) * 1e3
            p50[key].append(float(np.median(us)))
    out = {"rounds": args.rounds, "calls_per_round": args.calls, "shape": list(SHAPE),
           "target": targets.target_dict(target), "tvm_threads": threads,
           "ort_intra_op_threads": ort_threads, **targets.tvm_versions(),
           # TVM's pool reads it at start: 0 makes every launch wake a sleeping worker
           "TVM_THREAD_POOL_SPIN_COUNT": os.environ.get("TVM_THREAD_POOL_SPIN_COUNT"),
           "arms": {}}
    lo, hi = CHAIN_LENGTHS
    for name in ("tvm-serial", "tvm-parallel", "ort"):
        a, b = p50[(name, lo)], p50[(name, hi)]
        per = [(y - x_) / (hi - lo) for x_, y in zip(a, b)]    # round by round
        out["arms"][name] = {
            "kernel_calls": {str(lo): arms[(name, lo)][2], str(hi): arms[(name, hi)][2]},
            f"p50_us_n{lo}": [round(v, 3) for v in a], f"p50_us_n{hi}": [round(v, 3) for v in b],
            "per_call_us": [round(v, 4) for v in per],
            "per_call_us_median": round(float(np.median(per)), 4)}
        print(f"{name:13s} N={lo}: {np.median(a):8.3f} us  N={hi}: {np.median(b):8.3f} us  "
              f"per kernel call {np.median(per):.3f} us (rounds {min(per):.3f}-{max(per):.3f})",
              flush=True)
    return out


def parallel_kernels(funcs: dict) -> dict:
    """{kernel name: True when its body has a parallel loop} (the printed TIR: TVM 0.27's
    Python API has no statement visitor)."""
    return {name: "T.parallel(" in f.script() for name, f in funcs.items()
            if type(f).__name__ == "PrimFunc"}


def network(args) -> dict:
    import numpy as np

    from edgebench.measure import timed_calls
    from tvm_setup import load, network_input, tuned_network

    m = load(args.model, args.tuning_dir, target=args.target)
    _, funcs, vm = tuned_network(m)
    fn, x = vm["main"], network_input(m)
    for _ in range(10):
        fn(x)
    parallel = parallel_kernels(funcs)
    events: list = []

    def instrument(func, sym, before, ret, *a):   # noqa: ARG001 - the VM's signature
        events.append((time.perf_counter_ns(), sym, before))
        return 0

    got = collections.defaultdict(list)
    counts: collections.Counter = collections.Counter()
    for r in range(args.rounds):
        for arm in (("plain", "instr") if r % 2 == 0 else ("instr", "plain")):
            if arm == "plain":
                got["plain_ms"].extend(timed_calls(fn, x, args.calls, 0.0, 1e6))
                continue
            vm.set_instrument(instrument)
            try:
                for _ in range(args.calls):
                    events.clear()
                    t0 = time.perf_counter_ns()
                    fn(x)
                    t1 = time.perf_counter_ns()
                    kernels_ns, start, counts = 0, 0, collections.Counter()
                    for t, sym, before in events:
                        if before:
                            start = t
                        elif sym.startswith("vm.builtin"):
                            counts[sym] += 1
                        else:
                            kernels_ns += t - start
                            counts["kernels"] += 1
                            counts["parallel kernels"] += bool(parallel.get(sym))
                    got["instr_wall_ms"].append((t1 - t0) / 1e6)
                    got["instr_kernels_ms"].append(kernels_ns / 1e6)
            finally:
                vm.set_instrument(None)
    med = {k: float(np.median(v)) for k, v in got.items()}
    out = {**m.header(), "rounds": args.rounds, "calls_per_round": args.calls,
           "per_call": dict(counts), **{k: round(v, 4) for k, v in med.items()},
           "plain_minus_instr_kernels_ms": round(med["plain_ms"] - med["instr_kernels_ms"], 4)}
    print(f"{m.spec.name}: plain {med['plain_ms']:.3f} ms; under the instrument "
          f"{med['instr_wall_ms']:.3f} ms, kernels' sum {med['instr_kernels_ms']:.3f} ms; "
          f"plain - kernels {out['plain_minus_instr_kernels_ms']:+.3f} ms; per call "
          f"{counts['kernels']} kernels ({counts['parallel kernels']} with a parallel loop), "
          f"{sum(v for k, v in counts.items() if k.startswith('vm.builtin'))} VM builtins",
          flush=True)
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("part", choices=("chains", "network"))
    p.add_argument("--model")
    p.add_argument("--tuning-dir")
    p.add_argument("--target", default="host",
                   help="TVM target (a database tuned for another CPU of this ISA can be run "
                        "by naming its target, e.g. '{\"kind\": \"llvm\", \"mcpu\": \"znver3\", "
                        "\"num-cores\": 2}')")
    p.add_argument("--rounds", type=int, default=8)
    p.add_argument("--calls", type=int, help="calls per arm per round (chains 2000, "
                                             "network 30)")
    p.add_argument("--json")
    args = p.parse_args()
    if args.part == "network" and not (args.model and args.tuning_dir):
        p.error("network needs --model and --tuning-dir")
    args.calls = args.calls or (2000 if args.part == "chains" else 30)
    out = chains(args) if args.part == "chains" else network(args)
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
