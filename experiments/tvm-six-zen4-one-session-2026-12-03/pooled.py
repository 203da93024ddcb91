"""The six TVM / ORT ratios over every pass of this experiment: each TVM run over the mean of
its nearest ORT runs in its own pass (benchmarks/tvm_vs_ort.py's rule, as its ``table``),
pooled per model, by p50 and by the fastest call, with how many runs were at or under 1.0x.
Reads only the records under runs/.

    .venv/bin/python experiments/tvm-six-zen4-one-session-2026-12-03/pooled.py
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1] / "benchmarks"))
from tvm_vs_ort import neighbour_ratios  # noqa: E402

STUDY_ORDER = ("resnet152", "mobilenetv2_100", "squeezenet1_1", "efficientnet_b0", "vgg16",
               "swin_tiny_patch4_window7_224")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("runs", type=Path, nargs="?", default=HERE / "runs",
                    help="a folder of passes, each a folder of <model>/vs-ort.json (default: "
                         "this experiment's runs/)")
    runs = ap.parse_args().runs
    passes = sorted(p for p in runs.iterdir() if p.is_dir())
    print(f"passes: {', '.join(p.name for p in passes)}")
    print("| model | TVM runs | TVM / ORT p50, median (range) | runs at or under 1.0x "
          "| TVM / ORT fastest call, median | per pass (p50 median) |")
    print("|---|---|---|---|---|---|")
    for model in STUDY_ORDER:
        p50, fastest, per_pass = [], [], []
        for p in passes:
            f = p / model / "vs-ort.json"
            if not f.exists():
                continue
            runs = json.loads(f.read_text(encoding="utf-8"))["runs"]
            r = neighbour_ratios(runs, "p50_ms")
            p50 += r
            fastest += neighbour_ratios(runs, "min_ms")
            per_pass.append(f"{p.name} {statistics.median(r):.3f}x")
        if not p50:
            continue
        print(f"| {model} | {len(p50)} | {statistics.median(p50):.3f}x ({min(p50):.3f}-"
              f"{max(p50):.3f}) | {sum(x <= 1.0 for x in p50)} of {len(p50)} "
              f"| {statistics.median(fastest):.3f}x | {', '.join(per_pass)} |")


if __name__ == "__main__":
    main()
