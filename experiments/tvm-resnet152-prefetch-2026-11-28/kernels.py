"""ResNet-152's heaviest tuned kernels alone, with and without the weight prefetch of
``converters/tvm/prefetch/insert.py``: warm (as the tuner's runner times them) and with every
argument but the data flushed from the caches before each call (as the network's kernel
finds its weights). Which of the two does the prefetch change?

    .venv/bin/python experiments/tvm-resnet152-prefetch-2026-11-28/kernels.py \\
        --model resnet152 --tuning-dir DIR [--arms 2048:2 64:3] --json OUT.json
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path[:0] = [str(REPO), str(REPO / "benchmarks")]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", required=True)
    p.add_argument("--tuning-dir", required=True)
    p.add_argument("--arms", nargs="+", default=["2048:2", "64:3"],
                   metavar="DISTANCE:LOCALITY[:tile]",
                   help="as walls.py's --arms; ':tile' places the prefetch outside the "
                   "register tile (prefetch.plan)")
    p.add_argument("--top", type=int, default=4, help="the kernels with the most calls")
    p.add_argument("--rounds", type=int, default=6)
    p.add_argument("--json")
    args = p.parse_args()

    import numpy as np
    import tvm

    from converters.tvm import build, passes
    from converters.tvm.prefetch import add_prefetch
    from tvm_setup import kernel_alone, load

    m = load(args.model, args.tuning_dir)
    applied = build.apply_database(m.lowered, m.target, m.db_dir)
    funcs = {gv.name_hint: f for gv, f in applied.functions_items()}
    tasks = sorted(passes.extract_tasks(m.lowered, m.target), key=lambda t: -int(t.weight))
    rows = []
    for t in tasks[:args.top]:
        name = t.task_name + "_prepacked"
        if name not in funcs:
            continue
        evs = {}
        for arm in ["none", *args.arms]:
            d, loc, where = (arm + "::stream").split(":")[:3]
            f = funcs[name] if arm == "none" else add_prefetch(funcs[name], int(d), int(loc),
                                                               where or "stream")[0]
            lib, tensors = kernel_alone(f, m.target)
            evs[arm] = {
                "warm": lib.mod.time_evaluator("main", tvm.cpu(), number=20, repeat=5),
                "flushed": lib.mod.time_evaluator("main", tvm.cpu(), number=1, repeat=20,
                                                  f_preproc="cache_flush_cpu_non_first_arg"),
                "tensors": tensors}
        got = {a: {"warm": [], "flushed": []} for a in evs}
        for r in range(args.rounds):
            for a in (list(evs) if r % 2 == 0 else list(evs)[::-1]):
                for mode in ("warm", "flushed"):
                    res = evs[a][mode](*evs[a]["tensors"]).results
                    got[a][mode].append(float(np.median(res)) * 1e6)
        row = {"kernel": name, "calls": int(t.weight), "arms": {}}
        for a, v in got.items():
            row["arms"][a] = {mode: round(float(np.median(v[mode])), 1) for mode in v}
        base = row["arms"]["none"]
        print(f"{name:44s} x{row['calls']:3d}  " + "  ".join(
            f"{a}: warm {r['warm']:7.1f} ({r['warm'] / base['warm']:.3f}) flushed "
            f"{r['flushed']:7.1f} ({r['flushed'] / base['flushed']:.3f})"
            for a, r in row["arms"].items()), flush=True)
        rows.append(row)
    if args.json:
        Path(args.json).write_text(json.dumps({**m.header(), "prefetch_arms": args.arms,
                                               "rounds": args.rounds, "kernels": rows},
                                              indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
