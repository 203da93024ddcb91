"""A tuned TVM network as the build makes it with its database's prefetch choice
(``edgebench.tune --prefetch``, prefetch/choice.py) and without it, beside ORT's session, in
one process, their calls alternated in rounds (ABBA). ``--warm-slack`` adds a network per
rule: the same measurements picked again under that warm slack (``choice.repick``; "none":
flushed time alone). The outputs must be bit-identical.

    .venv/bin/python experiments/tvm-prefetch-choice-2026-11-28/walls.py \\
        --model resnet152 --tuning-dir DIR --json OUT.json
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
    p.add_argument("--warm-slack", nargs="*", default=[], metavar="SLACK",
                   help="also a network with the kernels picked again under each warm slack "
                   "(a fraction, or 'none')")
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
    from converters.tvm.prefetch import choice
    from tvm_setup import alternate, load, ort_arm, p50_table

    m = load(args.model, args.tuning_dir)
    x = np.random.RandomState(0).standard_normal((1, *m.spec.input_size)).astype("float32")
    tx = tvm.runtime.tensor(x)
    arms, outputs, report, applied = {}, {}, {}, {}
    plain = build.apply_database(m.lowered, m.target, m.db_dir, prefetch=False)
    kept = choice.load(m.db_dir)
    networks = {"tvm": plain, "tvm-prefetch": build.apply_database(
        m.lowered, m.target, m.db_dir, report=report)}
    applied["tvm-prefetch"] = report.get("prefetch")
    for slack in args.warm_slack:
        rule = choice.repick(kept, None if slack == "none" else float(slack))
        name = f"tvm-prefetch-warm-{slack}"
        networks[name], applied[name] = choice.apply_choice(plain, rule)
        applied[name]["kernels"] = sorted(r["kernel"] for r in rule["per_kernel"]
                                          if r["picked"])
    for name, mod in networks.items():
        fn = VirtualMachine(build.compile_module(mod, m.target), tvm.cpu(0))["main"]
        arms[name] = (lambda _, fn=fn: fn(tx))
        out = fn(tx)
        outputs[name] = (out[0] if isinstance(out, (list, tuple)) else out).numpy()
        print(f"[choice] built {name}", file=sys.stderr, flush=True)
    arms["ort"] = ort_arm(m.spec, x, args.cache_dir)
    times = alternate(arms, args.rounds, args.calls, "choice")
    out = {**m.header(), "rounds": args.rounds, "calls_per_round": args.calls,
           "onnxruntime": ort.__version__,
           "prefetch_choice": choice.summary(kept) if kept else None,
           "prefetch_applied": applied,
           "identical": {a: bool(np.array_equal(outputs["tvm"], v)) for a, v in outputs.items()},
           "arms": p50_table(times)}
    for a, row in out["arms"].items():
        print(f"{a:26s} p50 {row['p50_ms']:8.2f}  min {row['min_ms']:8.2f} ms  "
              f"/tvm {row['vs_tvm_p50']:.3f}  /ort {row['vs_ort_p50']:.3f}")
    print(f"prefetch applied: {out['prefetch_applied']}; outputs identical: {out['identical']}")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
