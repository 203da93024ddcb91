"""The other bound: a tuned network's wall time against the sum of its kernels timed alone
(calls x each kernel's time alone), in one process, alternating rounds. No instrument runs
while either is timed, so neither carries its cost. wall - sum is the time between kernels
plus whatever the network costs the kernels themselves (cold caches): an upper bound where
between.py gives a lower one.

    .venv/bin/python experiments/tvm-between-kernels-2026-11-26/alone_sum.py \\
        --model efficientnet_b0 --tuning-dir results/experiments/tvm-six-models-2026-11-25/tuning
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", required=True)
    p.add_argument("--tuning-dir", required=True)
    p.add_argument("--rounds", type=int, default=6)
    p.add_argument("--calls", type=int, default=40, help="network calls per round")
    p.add_argument("--json")
    args = p.parse_args()

    import numpy as np

    from edgebench.measure import timed_calls
    from tvm_profile import tvm_kernel_times
    from tvm_setup import load, network_input, timed_alone, tuned_network

    m = load(args.model, args.tuning_dir)
    _, funcs, vm = tuned_network(m)
    fn, x = vm["main"], network_input(m)
    for _ in range(5):
        fn(x)
    called = tvm_kernel_times(vm, fn, x, 3)          # which kernels, how many calls each
    alone, missing = {}, []
    for name, info in called.items():
        if name not in funcs or type(funcs[name]).__name__ != "PrimFunc":
            missing.append(name)
            continue
        alone[name] = (*timed_alone(funcs[name], m.target), info["calls"])
    wall, sums = [], []
    for r in range(args.rounds):
        for arm in (("net", "alone") if r % 2 == 0 else ("alone", "net")):
            if arm == "net":
                wall.extend(timed_calls(fn, x, args.calls, 0.0, 1e6) * 1e3)
            else:
                sums.append(sum(float(np.mean(ev(*ts).results)) * 1e6 * calls
                                for ev, ts, calls in alone.values()))
    w, s = float(np.median(wall)), float(np.median(sums))
    calls = sum(c for _, _, c in alone.values())
    out = {**m.header(), "rounds": args.rounds, "network_calls_per_round": args.calls,
           "kernels_timed": len(alone), "kernel_calls": calls, "not_timed": missing,
           "wall_us": round(w, 1), "sum_alone_us": round(s, 1),
           "wall_minus_sum_us": round(w - s, 1),
           "per_kernel_call_us": round((w - s) / calls, 2) if calls else None}
    print(f"{m.spec.name}: wall {w / 1e3:.3f} ms, kernels alone x calls {s / 1e3:.3f} ms "
          f"({len(alone)} kernels, {calls} calls), wall - sum {(w - s) / 1e3:.3f} ms "
          f"({out['per_kernel_call_us']} us per kernel call); not timed: {missing or 'none'}",
          flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
