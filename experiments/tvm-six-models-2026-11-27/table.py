"""The README's table, from the records under runs/<model>/: the TVM database each model ran
with (variant_meta.tuning of the parity record), TVM's parity against PyTorch, and TVM / ORT
taken run by run from pool_vs_ort.py's alternated runs (each TVM run over the mean of its
nearest ORT runs), by p50 and by the fastest call, median over the TVM runs.

    .venv/bin/python experiments/tvm-six-models-2026-11-27/table.py experiments/tvm-six-models-2026-11-27/runs
"""
from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path


def neighbour_ratios(runs: list, key: str) -> list:
    """Every TVM run's `key` over the mean of the ORT runs nearest to it in the sequence."""
    orts = [r for r in runs if r["arm"] == "ort"]
    out = []
    for r in runs:
        if r["arm"] != "tvm":
            continue
        gap = min(abs(o["position"] - r["position"]) for o in orts)
        near = [o[key] for o in orts if abs(o["position"] - r["position"]) == gap]
        out.append(r[key] / statistics.mean(near))
    return out


def row(model_dir: Path) -> dict:
    parity = [json.loads(line) for line in
              (model_dir / "parity.jsonl").read_text(encoding="utf-8").splitlines() if line]
    tvm = next(r for r in parity if r["variant"] == "tvm" and r["task"] == "parity")
    tuning = tvm["variant_meta"].get("tuning") or {}
    runs = json.loads((model_dir / "vs-ort.json").read_text(encoding="utf-8"))["runs"]
    p50 = neighbour_ratios(runs, "p50_ms")
    fastest = neighbour_ratios(runs, "min_ms")
    return {"model": model_dir.name, "status": tvm["status"], "tuning": tuning,
            "max_abs_diff": tvm.get("max_abs_diff"),
            "tvm_p50_ms": statistics.median(r["p50_ms"] for r in runs if r["arm"] == "tvm"),
            "ort_p50_ms": statistics.median(r["p50_ms"] for r in runs if r["arm"] == "ort"),
            "ratio_p50": statistics.median(p50), "ratio_p50_range": (min(p50), max(p50)),
            "ratio_min": statistics.median(fastest), "tvm_runs": len(p50)}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("runs", type=Path, help="the experiment's runs/ folder")
    args = p.parse_args()
    print("| model | database (trials, tuning time, estimate) | TVM p50 (ms) | ORT p50 (ms) "
          "| TVM / ORT p50 (range) | TVM / ORT fastest call | TVM parity max abs diff |")
    print("|---|---|---|---|---|---|---|")
    for d in sorted(p for p in args.runs.iterdir() if (p / "vs-ort.json").exists()):
        r = row(d)
        t = r["tuning"]
        db = (f"{t.get('trials')} trials, {t.get('tuning_s', 0) / 60:.1f} min, "
              f"{t.get('tuner_estimate_ms')} ms" if t.get("status") == "tuned" else "untuned")
        lo, hi = r["ratio_p50_range"]
        print(f"| {r['model']} | {db} | {r['tvm_p50_ms']:.2f} | {r['ort_p50_ms']:.2f} "
              f"| {r['ratio_p50']:.3f}x ({lo:.3f}-{hi:.3f}) | {r['ratio_min']:.3f}x "
              f"| {r['max_abs_diff']:.1e} |")


if __name__ == "__main__":
    main()
