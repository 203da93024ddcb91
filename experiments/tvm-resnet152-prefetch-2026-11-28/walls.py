"""ResNet-152's tuned TVM network with software prefetch of its conv weights
(``converters/tvm/prefetch/insert.py``) at several distances, beside the same network without
it and ORT's session, in one process, their calls alternated in rounds. The outputs must
equal the network's without prefetch bit for bit (a prefetch only moves data between caches).

    .venv/bin/python experiments/tvm-resnet152-prefetch-2026-11-28/walls.py \\
        --model resnet152 --tuning-dir DIR [--arms 1024:2 4096:2] --json OUT.json
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path[:0] = [str(REPO), str(REPO / "benchmarks")]


def anon_huge_mib() -> int:
    """This process's anonymous memory in 2 MiB pages (GLIBC_TUNABLES=glibc.malloc.hugetlb=1)."""
    for line in Path("/proc/self/smaps_rollup").read_text().splitlines():
        if line.startswith("AnonHugePages:"):
            return int(line.split()[1]) // 1024
    return 0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", required=True)
    p.add_argument("--tuning-dir", required=True)
    p.add_argument("--arms", nargs="+", default=["1024:2", "4096:2", "16384:2"],
                   metavar="DISTANCE:LOCALITY[:tile]",
                   help="one network per pair: how far ahead to prefetch, in float32 elements "
                   "(16 a cache line), and the hint (3: prefetcht0, 2: t1, 1: t2, 0: nta), "
                   "with ':tile' placed outside the register tile (prefetch.plan); "
                   "'rebuild': the network without prefetch compiled again (a control for "
                   "what building several networks in one process does)")
    p.add_argument("--select", metavar="KERNELS_JSON",
                   help="kernels.py's record: each arm prefetches only in the kernels whose "
                   "flushed time that arm cut by --gain or more there (warm not 1 %% slower); "
                   "arms it did not measure prefetch nowhere")
    p.add_argument("--gain", type=float, default=0.02)
    p.add_argument("--rounds", type=int, default=12)
    p.add_argument("--calls", type=int, default=15, help="calls per arm per round")
    p.add_argument("--cache-dir", default="results/cache", help="where the ONNX export goes")
    p.add_argument("--json")
    args = p.parse_args()

    import numpy as np
    import onnxruntime as ort
    import tvm
    from tvm.runtime.vm import VirtualMachine

    from converters.tvm import build
    from converters.tvm.prefetch import add_prefetch
    from tvm_setup import alternate, load, ort_arm, p50_table

    chosen: dict = {}       # arm -> kernels it prefetches in, with --select
    if args.select:
        for row in json.loads(Path(args.select).read_text())["kernels"]:
            none = row["arms"]["none"]
            for arm, r in row["arms"].items():
                if (arm != "none" and r["flushed"] <= (1 - args.gain) * none["flushed"]
                        and r["warm"] <= 1.01 * none["warm"]):
                    chosen.setdefault(arm, set()).add(row["kernel"])
    m = load(args.model, args.tuning_dir)
    applied = build.apply_database(m.lowered, m.target, m.db_dir)
    x = np.random.RandomState(0).standard_normal((1, *m.spec.input_size)).astype("float32")
    tx = tvm.runtime.tensor(x)
    arms, kernels, outputs = {}, {}, {}
    for arm in [None, *args.arms]:
        d, loc, where = ((arm or "") + "::stream").split(":")[:3]
        name = ("tvm" if arm is None else "tvm-rebuilt" if arm == "rebuild"
                else f"tvm-prefetch-{d}-t{loc}" + ("-tile" if where == "tile" else ""))
        mod, count = applied, 0
        if arm not in (None, "rebuild"):
            mod = applied.clone()
            for gv, f in applied.functions_items():
                if isinstance(f, tvm.tirx.PrimFunc) and (
                        not args.select or gv.name_hint in chosen.get(arm, ())):
                    g, n = add_prefetch(f, int(d), int(loc), where or "stream")
                    if n:
                        mod.update_func(gv, g)
                        count += 1
        vm = VirtualMachine(build.compile_module(mod, m.target), tvm.cpu(0))
        fn = vm["main"]
        arms[name] = (lambda _, fn=fn: fn(tx))
        kernels[name] = count
        out = fn(tx)
        outputs[name] = (out[0] if isinstance(out, (list, tuple)) else out).numpy()
        print(f"[prefetch] built {name}: {count} kernels with prefetch", file=sys.stderr,
              flush=True)
    identical = {k: bool(np.array_equal(v, outputs["tvm"])) for k, v in outputs.items()}
    arms["ort"] = ort_arm(m.spec, x, args.cache_dir)
    times = alternate(arms, args.rounds, args.calls, "prefetch")
    out = {**m.header(), "prefetch_arms": args.arms,
           "selected": {a: sorted(k) for a, k in chosen.items()} if args.select else None,
           "rounds": args.rounds, "calls_per_round": args.calls, "onnxruntime": ort.__version__,
           "glibc_tunables": os.environ.get("GLIBC_TUNABLES", ""),
           "anon_huge_pages_mib": anon_huge_mib(),
           "kernels_with_prefetch": kernels, "identical_to_tvm": identical,
           "arms": p50_table(times)}
    for a, row in out["arms"].items():
        print(f"{a:22s} p50 {row['p50_ms']:8.2f}  min {row['min_ms']:8.2f} ms  "
              f"/tvm {row['vs_tvm_p50']:.3f}  /ort {row['vs_ort_p50']:.3f}"
              + ("" if a == "ort" else f"  identical {identical[a]}  kernels {kernels[a]}"))
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
