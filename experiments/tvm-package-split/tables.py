"""The before/after table of run.sh: per model and arm, TVM's batch-1 p50 over ONNX Runtime's
within each run (the ABBA rounds), their median, the after/before ratio of those medians,
and TVM's parity in every run. Reads only the kept run records.

    python experiments/tvm-package-split/tables.py experiments/tvm-package-split/runs
"""
from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path


def cells(run: Path) -> dict:
    out = {}
    for line in (run / "results.jsonl").read_text(encoding="utf-8").splitlines():
        if line.strip():
            r = json.loads(line)
            out[(r["variant"], r["task"])] = r
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("runs", type=Path, help="run.sh's runs/ folder")
    runs = ap.parse_args().runs
    rows, medians = [], {}
    for folder in sorted(runs.glob("*-*/*/results.jsonl")):
        arm_round, model = folder.parent.parent.name, folder.parent.name
        arm = arm_round.split("-")[0]
        c = cells(folder.parent)
        tvm, ort = c.get(("tvm", "latency"), {}), c.get(("onnxruntime", "latency"), {})
        par = c.get(("tvm", "parity"), {})
        if tvm.get("latency_ms") and ort.get("latency_ms"):
            ratio = tvm["latency_ms"]["p50"] / ort["latency_ms"]["p50"]
            medians.setdefault((model, arm), []).append(ratio)
            figs = f"{tvm['latency_ms']['p50']:.3f} | {ort['latency_ms']['p50']:.3f} | {ratio:.3f}"
        else:
            figs = f"{tvm.get('status', '-')} | {ort.get('status', '-')} | -"
        rows.append(f"| {model} | {arm_round} | {figs} | {par.get('status', '-')} "
                    f"max_abs_diff {par.get('max_abs_diff', float('nan')):.2e}, "
                    f"top1 {par.get('top1_agreement', float('nan'))} |")
    print("| model | arm-round | TVM p50 ms | ORT p50 ms | TVM/ORT | TVM parity |")
    print("|---|---|---|---|---|---|")
    print("\n".join(rows))
    print("\n| model | TVM/ORT before (median) | after (median) | after/before |")
    print("|---|---|---|---|")
    for model in sorted({m for m, _ in medians}):
        b, a = medians.get((model, "before")), medians.get((model, "after"))
        if a and b:
            mb, ma = statistics.median(b), statistics.median(a)
            print(f"| {model} | {mb:.3f} | {ma:.3f} | {ma / mb:.3f} |")


if __name__ == "__main__":
    main()
