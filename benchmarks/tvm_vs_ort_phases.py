"""Do a VM's slow phases show in a reference timed in the same process? On a shared 2-vCPU VM
a whole process of either runtime can run about 1.45x slower than the others, and a sequence's
TVM / ORT ratio then depends on which arm's runs the slow phases fall on. Here each arm's
process (as benchmarks/tvm_vs_ort.py measures it: the suite's predictor from the cache, batch
1, aligned input) also times three references before it loads the predictor and after its
timed calls:

  compute_ms  an L1-resident multiply loop on each CPU in turn (the probe the tuner
              kept until it was retired: it missed these phases)
  memory_ms   one 64 MiB copy
  pair_ms     a float32 384x384 matmul, 200 times, on both cores (numpy's BLAS threads): the
              two vCPUs working together

If a reference moves with the runs' p50 (the rank correlation ``report`` prints), a run can
say it ran in a slow phase.

    .venv/bin/python benchmarks/tvm_vs_ort_phases.py compare \\
        --model mobilenetv2_100 --tuning-dir DIR --reps 8 --json phases/mobilenetv2_100.json
    .venv/bin/python benchmarks/tvm_vs_ort_phases.py report phases/mobilenetv2_100.json
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))
from tvm_vs_ort import ARMS, POOL_VARS, _predictor, measure_arm  # noqa: E402

PAIR_N, PAIR_CALLS = 384, 200
COMPUTE_FLOATS, COMPUTE_LOOPS = 4096, 4000      # 16 KiB per array: in L1 on any CPU
MEMORY_BYTES = 64 << 20
REPEATS = 3
MAX_CPUS = 16                                   # bounds the probe's cost on big machines


class Probe:
    """Times the references; keeps the buffers between calls (no allocation in the timing)."""

    def __init__(self):
        import numpy as np

        self._a = np.random.default_rng(0).random(COMPUTE_FLOATS, dtype=np.float32)
        self._c = np.empty_like(self._a)
        self._src = np.ones(MEMORY_BYTES // 4, dtype=np.float32)
        self._dst = np.empty_like(self._src)
        self.cpus = sorted(os.sched_getaffinity(0))[:MAX_CPUS]

    def _compute_ms(self) -> float:
        import numpy as np

        runs = []
        for _ in range(REPEATS):
            t = time.perf_counter()
            for _ in range(COMPUTE_LOOPS):
                np.multiply(self._a, self._a, out=self._c)
            runs.append((time.perf_counter() - t) * 1e3)
        return statistics.median(runs)

    def _memory_ms(self) -> float:
        import numpy as np

        runs = []
        for _ in range(REPEATS):
            t = time.perf_counter()
            np.copyto(self._dst, self._src)
            runs.append((time.perf_counter() - t) * 1e3)
        return statistics.median(runs)

    def sample(self) -> dict:
        """{"compute_ms": [per CPU, in self.cpus' order], "memory_ms": x}."""
        allowed = os.sched_getaffinity(0)
        compute = []
        try:
            for cpu in self.cpus:
                os.sched_setaffinity(0, {cpu})
                compute.append(round(self._compute_ms(), 3))
        finally:
            os.sched_setaffinity(0, allowed)
        return {"compute_ms": compute, "memory_ms": round(self._memory_ms(), 3)}



def references(probe, a) -> dict:
    import numpy as np

    t = time.perf_counter()
    for _ in range(PAIR_CALLS):
        np.matmul(a, a)
    pair = (time.perf_counter() - t) * 1e3
    return {**probe.sample(), "pair_ms": round(pair, 3)}


def measure(args) -> None:
    import numpy as np

    from edgebench.measure import timed_calls
    from edgebench.util import aligned_empty

    probe = Probe()
    a = np.random.default_rng(0).random((PAIR_N, PAIR_N), dtype=np.float32)
    before = references(probe, a)
    variant = ARMS[args.arm][0]
    pred, spec, _ = _predictor(variant, args)
    x = aligned_empty((1, *spec.input_size), np.float32)
    x[...] = np.random.RandomState(0).standard_normal(x.shape)
    timed_calls(pred, x, min_count=10, min_s=1.0, max_s=5.0)          # warm-up
    ms = timed_calls(pred, x, min_count=args.calls, min_s=args.seconds, max_s=4 * args.seconds)
    after = references(probe, a)
    pred.close()
    print(json.dumps({"variant": variant, "calls": int(ms.size), "p50_ms": float(np.median(ms)),
                      "min_ms": float(ms.min()), "before": before, "after": after}))


def compare(args) -> None:
    order = []
    for rep in range(args.reps):
        order += ["ort", "tvm"] if rep % 2 == 0 else ["tvm", "ort"]
    runs = []
    for i, arm in enumerate(order):
        env = {k: v for k, v in os.environ.items() if k not in POOL_VARS}
        got = measure_arm(__file__, arm, ["--model", args.model, "--tuning-dir", args.tuning_dir,
                                          "--cache", args.cache, "--calls", str(args.calls),
                                          "--seconds", str(args.seconds)], env)
        runs.append({"arm": arm, "position": i, **got})
        b, e = got["before"], got["after"]
        print(f"  {i:2d} {arm:4s} p50 {got['p50_ms']:8.3f} min {got['min_ms']:8.3f} ms | "
              f"compute {b['compute_ms']} -> {e['compute_ms']}  memory {b['memory_ms']} -> "
              f"{e['memory_ms']}  pair {b['pair_ms']} -> {e['pair_ms']}", flush=True)
    report(runs)
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps({"model": args.model, "tuning_dir": args.tuning_dir,
                                               "order": order, "runs": runs}, indent=1),
                                   encoding="utf-8")


def report(runs: list) -> None:
    """Per arm: each reference, timed before, after, and the mean of the two, against the
    run's p50, as the rank correlation (Spearman's) over the arm's runs."""
    from scipy.stats import spearmanr

    def spearman(x, y):
        return float(spearmanr(x, y).statistic)

    refs = {"compute_ms": lambda s: max(s["compute_ms"]), "memory_ms": lambda s: s["memory_ms"],
            "pair_ms": lambda s: s["pair_ms"]}
    for arm in ("ort", "tvm"):
        mine = [r for r in runs if r["arm"] == arm]
        p50 = [r["p50_ms"] for r in mine]
        cells = []
        for name, f in refs.items():
            rho = [spearman([pick(f(r["before"]), f(r["after"])) for r in mine], p50)
                   for pick in (lambda b, a: b, lambda b, a: a, lambda b, a: (b + a) / 2)]
            cells.append(f"{name} rho before {rho[0]:+.2f} after {rho[1]:+.2f} "
                         f"mean {rho[2]:+.2f}")
        print(f"{arm}: p50 {min(p50):.3f}-{max(p50):.3f} ms over {len(p50)} runs; "
              + "; ".join(cells))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    rep = sub.add_parser("report", help="the correlations again, from a compare's --json")
    rep.add_argument("json")
    for name in ("measure", "compare"):
        s = sub.add_parser(name, help="one arm in this process, as JSON" if name == "measure"
                           else "both arms alternated, each run in a process of its own")
        s.add_argument("--model", required=True)
        s.add_argument("--tuning-dir", required=True)
        s.add_argument("--cache", default=str(REPO / "results" / "cache"))
        s.add_argument("--calls", type=int, default=100)
        s.add_argument("--seconds", type=float, default=4.0)
        if name == "measure":
            s.add_argument("--arm", required=True, choices=("ort", "tvm"))
        else:
            s.add_argument("--reps", type=int, default=8, help="blocks of both arms (ABBA)")
            s.add_argument("--json")
    args = p.parse_args()
    if args.cmd == "report":
        report(json.loads(Path(args.json).read_text(encoding="utf-8"))["runs"])
        return
    {"measure": measure, "compare": compare}[args.cmd](args)


if __name__ == "__main__":
    main()
