"""One line per database from kernels_vs_ort.py --ceilings records: both walls and the
matched kernels as GFLOP/s and as shares of the FMA ceiling measured in the same rounds.

    python experiments/tvm-resnet152-roofline-2026-11-28/table.py runs/kernels-*.json
"""
from __future__ import annotations

import json
import sys
from pathlib import Path


def main(paths: list[str]) -> int:
    print("walls: p50 (fastest call); FMA and SGEMM: the ceilings in GFLOP/s, median of the "
          "rounds; then each side's GFLOP/s as a share of the FMA ceiling: the walls' p50 and "
          "fastest call, and the matched kernels")
    print(f"{'database':26s} {'TVM/ORT':>13s} {'TVM ms':>7s} {'ORT ms':>7s} {'FMA':>6s} "
          f"{'SGEMM':>6s} | {'TVM wall':>13s} {'ORT wall':>13s} "
          f"{'TVM warm':>8s} {'TVM cold':>8s} {'TVM net':>8s} {'ORT node':>8s}")
    for p in paths:
        out = json.loads(Path(p).read_text(encoding="utf-8"))
        rf = out.get("roofline")
        if rf is None:
            print(f"{p}: no --ceilings in this record", file=sys.stderr)
            continue
        label = Path(p).stem.removeprefix("kernels-")
        fma = rf["ceilings_gflops"].get("fma", rf["ceilings_gflops"]["gemm"])["p50"]
        gemm = rf["ceilings_gflops"]["gemm"]["p50"]
        w, k = rf["wall_gflops"], rf["matched_kernels_gflops"]
        print(f"{label:26s} {out['wall_p50_ratio']:5.3f} ({out['wall_min_ratio']:5.3f}) "
              f"{out['walls']['tvm']['p50_ms']:7.2f} {out['walls']['ort']['p50_ms']:7.2f} "
              f"{fma:6.1f} {gemm:6.1f} | "
              f"{w['tvm_p50'] / fma:5.3f} ({w['tvm_min'] / fma:5.3f}) "
              f"{w['ort_p50'] / fma:5.3f} ({w['ort_min'] / fma:5.3f}) "
              + " ".join(f"{v / fma:8.3f}" for v in (k["tvm_warm"], k["tvm_cold"],
                                                      k["tvm_network"], k["ort"])))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
