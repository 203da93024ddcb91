"""The README's tables from the records under runs/: each chain arm's per-call cost, and for
each network its calls priced at the chains' costs (a serial kernel at tvm-serial's, one with
a parallel loop at tvm-parallel's) beside its plain wall and instrumented kernels' sum.

    .venv/bin/python experiments/tvm-call-overhead-2026-11-27/table.py experiments/tvm-call-overhead-2026-11-27/runs
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("runs", type=Path)
    args = p.parse_args()
    for name in ("chains.json", "chains-spin0.json"):
        f = args.runs / name
        if not f.exists():
            continue
        arms = json.loads(f.read_text(encoding="utf-8"))["arms"]
        print(f"{name}: " + ", ".join(f"{a} {v['per_call_us_median']:.3f} us per call "
                                      f"({min(v['per_call_us']):.3f}-{max(v['per_call_us']):.3f})"
                                      for a, v in arms.items()))
    arms = json.loads((args.runs / "chains.json").read_text(encoding="utf-8"))["arms"]
    serial = arms["tvm-serial"]["per_call_us_median"]
    parallel = arms["tvm-parallel"]["per_call_us_median"]
    print("| model | kernels per call (with a parallel loop) | VM builtins per call | calls x chain "
          "cost | plain wall | kernels' sum under the instrument | plain - kernels' sum |")
    print("|---|---|---|---|---|---|---|")
    for f in sorted(args.runs.glob("*.json")):
        if f.name.startswith("chains"):
            continue
        r = json.loads(f.read_text(encoding="utf-8"))
        calls = r["per_call"]
        kernels, par = calls["kernels"], calls["parallel kernels"]
        builtins = sum(v for k, v in calls.items() if k.startswith("vm.builtin"))
        cost_ms = ((kernels - par) * serial + par * parallel) / 1e3
        print(f"| {r['model']} | {kernels} ({par}) | {builtins} | {cost_ms:.3f} ms "
              f"({100 * cost_ms / r['plain_ms']:.1f} %) | {r['plain_ms']:.3f} ms | "
              f"{r['instr_kernels_ms']:.3f} ms | {r['plain_minus_instr_kernels_ms']:+.3f} ms |")


if __name__ == "__main__":
    main()
