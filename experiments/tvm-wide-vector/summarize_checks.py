"""Print TVM / ORT batch-1 latency and TVM parity from the check runs' results.jsonl.

    python experiments/tvm-wide-vector/summarize_checks.py [RUNS_DIR]   # default: runs/ here
"""
import glob
import json
import sys
from pathlib import Path

runs = sys.argv[1] if len(sys.argv) > 1 else str(Path(__file__).resolve().parent / "runs")
for f in sorted(glob.glob(runs + "/check-*/results.jsonl")):
    lat, parity, model = {}, None, None
    for ln in open(f, encoding="utf-8"):
        d = json.loads(ln)
        model = d["model"]
        if d["task"] == "latency" and d["status"] == "ok":
            lat[d["variant"]] = d["latency_ms"]
        if d["task"] == "parity" and d["variant"] == "tvm":
            parity = d.get("max_abs_diff")
    t, o = lat.get("tvm"), lat.get("onnxruntime")
    if t and o:
        print(f"{f.split('/')[-2]:28s} {model:16s} TVM p50 {t['p50']:.2f} (min {t['min']:.2f}) "
              f"ORT p50 {o['p50']:.2f} (min {o['min']:.2f})  TVM/ORT p50 {t['p50'] / o['p50']:.2f}x"
              f"  parity {parity:.3g}")
