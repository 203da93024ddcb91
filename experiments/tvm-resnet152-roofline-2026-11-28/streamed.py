"""Why do TVM's convs run slower inside ResNet-152 than alone with their weights flushed?

kernels_vs_ort.py --ceilings puts TVM's kernels at 98.9 % of the FMA ceiling alone and warm,
97.2 % alone with every argument but the data flushed from the caches before each call (how
the tuner's cold runner times a candidate), and 94.9 % in the network, where ORT's nodes for
the same convs run at 98.9 %. What the network adds to the cold case, for a task's kernel
(the ``_prepacked`` function the network calls), in one process, arms alternated (ABBA):

  loop-warm  the same arguments every call (the Python loop every arm but cold and network
             uses, so its per-call cost cancels);
  cold       time_evaluator with ``cache_flush_cpu_non_first_arg`` before each call (the
             tuner's cold runner);
  streamed   every call on its own copy of every argument but the data (weights, bias,
             residual, output), enough copies to span twice the last-level cache, so each
             call reads its weights from memory as a network's layer does, with the
             hardware's prefetchers and translations in their real state, not after a flush;
  chained    as streamed, and each call's data is the output of the call before (for a
             kernel whose output has its input's shape): the data come from both cores'
             caches as the previous layer left them. Weights scaled by sqrt(2 / fan-in) so
             the values stay finite through the chain;
  network    the task's kernel inside the whole network (the VM's instrument, as
             kernels_vs_ort.py).

    .venv/bin/python experiments/tvm-resnet152-roofline-2026-11-28/streamed.py \\
        --model resnet152 --tuning-dir DB --json out.json
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

LLC_BYTES = 32 << 20      # the Zen 4 VM's L3 (lscpu); the copies span twice it


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", required=True)
    p.add_argument("--tuning-dir", required=True)
    p.add_argument("--top", type=int, default=4, help="tasks, by calls x network time")
    p.add_argument("--rounds", type=int, default=8)
    p.add_argument("--calls", type=int, default=40, help="calls per arm and round")
    p.add_argument("--json")
    args = p.parse_args()

    import numpy as np
    import tvm

    from converters.tvm import passes
    from converters.tvm.tuning import TuneConfig
    from tvm_profile import tvm_kernel_times
    from tvm_setup import kernel_alone, load, tuned_network

    m = load(args.model, args.tuning_dir)
    tasks = passes.extract_tasks(m.lowered, m.target)
    _, funcs, vm = tuned_network(m)
    x = tvm.runtime.tensor(np.random.RandomState(0).standard_normal(
        (1, *m.spec.input_size)).astype("float32"), tvm.cpu())
    fn = vm["main"]
    fn(x)
    first = tvm_kernel_times(vm, fn, x, 3)
    named = [(t, next((n for n in (t.task_name + "_prepacked", t.task_name) if n in funcs),
                      None)) for t in tasks]
    named = sorted([(t, n) for t, n in named if n and n in first],
                   key=lambda tn: -first[tn[1]]["us"])[:args.top]
    cfg = TuneConfig()
    kernels = []
    for t, name in named:
        lib, tensors = kernel_alone(funcs[name], m.target)
        f = lib.mod["main"]
        data, rest = tensors[0], tensors[1:]
        nbytes = sum(a.numpy().nbytes for a in rest)
        copies = max(2, -(-2 * LLC_BYTES // nbytes))
        out_shape = tuple(rest[-1].shape)
        chain = out_shape == tuple(data.shape)
        co = out_shape[-1]
        sets = []
        for c in range(copies):
            rng = np.random.default_rng(c + 1)
            arrs = [rng.standard_normal(a.shape).astype(a.dtype) for a in rest]
            w = arrs[0]                             # the weight, in whatever layout it was packed
            arrs[0] = w * np.float32(np.sqrt(2.0 / (w.size // co)))
            sets.append([tvm.runtime.tensor(a, tvm.cpu()) for a in arrs])
        kernels.append({
            "task": t.task_name, "name": name, "calls": int(t.weight), "f": f, "data": data,
            "rest": rest, "sets": sets, "chain": chain, "copies": copies,
            "mb_per_call": round(nbytes / 2**20, 2),
            "cold_ev": lib.mod.time_evaluator("main", tvm.cpu(), number=1,
                                              repeat=args.calls,
                                              f_preproc="cache_flush_cpu_non_first_arg"),
            "us": {a: [] for a in ("loop-warm", "cold", "streamed", "chained", "network")}})
        print(f"[streamed] {name}: {copies} copies of {nbytes / 2**20:.2f} MB, chain {chain}",
              file=sys.stderr, flush=True)

    def loop(k, arm):
        f, n = k["f"], args.calls
        sets = k["sets"]
        if arm == "loop-warm":
            a = [k["data"], *k["rest"]]
            f(*a)
            t0 = time.perf_counter()
            for _ in range(n):
                f(*a)
        elif arm == "streamed":
            t0 = time.perf_counter()
            for i in range(n):
                f(k["data"], *sets[i % len(sets)])
        else:                                        # chained
            d = k["data"]
            t0 = time.perf_counter()
            for i in range(n):
                s = sets[i % len(sets)]
                f(d, *s)
                d = s[-1]
        return (time.perf_counter() - t0) / n * 1e6

    arms = ["loop-warm", "cold", "streamed", "chained", "network"]
    for r in range(args.rounds):
        for arm in (arms if r % 2 == 0 else arms[::-1]):
            if arm == "network":
                got = tvm_kernel_times(vm, fn, x, 5)
                for k in kernels:
                    k["us"]["network"].append(got[k["name"]]["us"] / got[k["name"]]["calls"])
                continue
            for k in (kernels if r % 2 == 0 else kernels[::-1]):
                if arm == "cold":
                    k["us"]["cold"].append(float(np.median(k["cold_ev"](k["data"], *k["rest"])
                                                           .results)) * 1e6)
                elif arm != "chained" or k["chain"]:
                    k["us"][arm].append(loop(k, arm))
        print(f"[streamed] round {r + 1}/{args.rounds}", file=sys.stderr, flush=True)

    rows = []
    print(f"{'kernel':44s} calls  MB  {'loop-warm':>9s} {'cold':>7s} {'streamed':>8s} "
          f"{'chained':>7s} {'network':>7s}   (us, median of {args.rounds} rounds)")
    for k in kernels:
        med = {a: round(float(np.median(v)), 1) if v else None for a, v in k["us"].items()}
        rows.append({"task": k["task"], "kernel": k["name"], "calls": k["calls"],
                     "mb_per_call": k["mb_per_call"], "copies": k["copies"], "us": med,
                     "samples": {a: [round(x, 1) for x in v] for a, v in k["us"].items()}})
        print(f"{k['name'][:44]:44s} {k['calls']:5d} {k['mb_per_call']:4.1f} "
              + " ".join(f"{med[a] if med[a] else '-':>{w}}" for a, w in
                         (("loop-warm", 9), ("cold", 7), ("streamed", 8), ("chained", 7),
                          ("network", 7))))
    if args.json:
        Path(args.json).write_text(json.dumps({**m.header(), "rounds": args.rounds,
                                               "calls": args.calls, "llc_bytes": LLC_BYTES,
                                               "runner": {"number": cfg.number},
                                               "kernels": rows}, indent=1) + "\n",
                                   encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
