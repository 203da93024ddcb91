"""Issue 33: do transparent huge pages move TVM's ratio to ONNX Runtime?

ResNet-152 reads about 240 MB of weights a call. This VM's kernel gives huge pages only to
memory that asks for them (``/sys/kernel/mm/transparent_hugepage/enabled``: madvise), and
neither runtime asks, so every weight page is 4 KB: 60,000 TLB entries a call, each miss a
two-level walk under the hypervisor. glibc can ask for them for every allocation it maps
(``GLIBC_TUNABLES=glibc.malloc.hugetlb=1``, glibc 2.35+), which both runtimes' CPU
allocators go through. If TVM gains more from that than ORT does, part of its gap is
address translation, and the suite could run every cell that way.

Arms (each a fresh process that loads the suite's predictor from the cache and times batch-1
calls with the suite's ``timed_calls``, as ``../tvm-threadpool-vs-ort-2026-11-27/`` does):
``ort``, ``tvm``, and the same with ``-thp`` (the tunable set). Blocks alternate direction
(ABBA). Each process reports its anonymous huge pages after the calls, so an arm that asked
for them and got none shows it.

    .venv/bin/python experiments/tvm-hugepages-2026-11-28/hugepages.py compare \\
        --model resnet152 --tuning-dir results/experiments/tvm-allocation-2026-11-26/tuning \\
        --reps 4 --json experiments/tvm-hugepages-2026-11-28/runs/resnet152.json
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "experiments" / "tvm-threadpool-vs-ort-2026-11-27"))
sys.path.insert(0, str(REPO / "experiments" / "tvm-threadpool-2026-11-26"))
from pool_vs_ort import _predictor, measure_arm  # noqa: E402  the suite's predictor; an arm's process

THP = {"GLIBC_TUNABLES": "glibc.malloc.hugetlb=1"}
ARMS = {"ort": ("onnxruntime", {}), "tvm": ("tvm", {}),
        "ort-thp": ("onnxruntime", THP), "tvm-thp": ("tvm", THP)}


def _anon_huge_kb() -> int:
    for line in Path("/proc/self/smaps_rollup").read_text().splitlines():
        if line.startswith("AnonHugePages:"):
            return int(line.split()[1])
    return -1


def measure(args) -> None:
    import numpy as np

    from edgebench.measure import timed_calls

    variant = ARMS[args.arm][0]
    pred, spec, meta = _predictor(variant, args)
    x = np.random.RandomState(0).standard_normal((1, *spec.input_size)).astype("float32")
    timed_calls(pred, x, min_count=5, min_s=1.0, max_s=5.0)          # warm-up
    ms = timed_calls(pred, x, min_count=args.calls, min_s=args.seconds, max_s=4 * args.seconds)
    print(json.dumps({"variant": variant, "env": ARMS[args.arm][1],
                      "anon_huge_kb": _anon_huge_kb(), "weights": meta["weights"],
                      "calls": int(ms.size), "p50_ms": float(np.median(ms)),
                      "min_ms": float(ms.min())}))
    pred.close()


def compare(args) -> None:
    import numpy as np

    arms = list(ARMS)
    runs = []
    for rep in range(args.reps):
        for arm in (arms if rep % 2 == 0 else arms[::-1]):
            env = {k: v for k, v in os.environ.items() if k != "GLIBC_TUNABLES"}
            env.update(ARMS[arm][1])
            got = measure_arm(__file__, arm, ["--model", args.model, "--tuning-dir",
                                              args.tuning_dir, "--cache", args.cache,
                                              "--calls", str(args.calls), "--seconds",
                                              str(args.seconds)], env)
            runs.append({"arm": arm, "rep": rep, **got})
            print(f"  rep {rep} {arm:8s} p50 {got['p50_ms']:8.3f} ms  min {got['min_ms']:8.3f} ms"
                  f"  huge pages {got['anon_huge_kb'] / 1024:7.1f} MB", flush=True)

    def p50(arm, rep):
        return next(r["p50_ms"] for r in runs if r["arm"] == arm and r["rep"] == rep)

    ratios = {"tvm/ort": [], "tvm-thp/ort-thp": [], "tvm-thp/tvm": [], "ort-thp/ort": []}
    for rep in range(args.reps):
        for key in ratios:
            a, b = key.split("/")
            ratios[key].append(p50(a, rep) / p50(b, rep))
    summary = {k: {"median": float(np.median(v)), "range": [float(min(v)), float(max(v))],
                   "all": [round(float(x), 4) for x in v]} for k, v in ratios.items()}
    for k, s in summary.items():
        print(f"{args.model:12s} {k:16s} {s['median']:.3f} ({s['range'][0]:.3f}-{s['range'][1]:.3f})",
              flush=True)
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps({"model": args.model, "tuning_dir": args.tuning_dir,
                                               "arms": {a: ARMS[a][1] for a in arms},
                                               "runs": runs, "summary": summary}, indent=1),
                                   encoding="utf-8")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    for name in ("measure", "compare"):
        s = sub.add_parser(name)
        s.add_argument("--model", required=True)
        s.add_argument("--tuning-dir", required=True)
        s.add_argument("--cache", default=str(REPO / "results" / "cache"))
        s.add_argument("--calls", type=int, default=30)
        s.add_argument("--seconds", type=float, default=4.0)
        if name == "measure":
            s.add_argument("--arm", required=True, choices=list(ARMS))
        else:
            s.add_argument("--reps", type=int, default=4, help="blocks of every arm (ABBA)")
            s.add_argument("--json")
    args = p.parse_args()
    {"measure": measure, "compare": compare}[args.cmd](args)


if __name__ == "__main__":
    main()
