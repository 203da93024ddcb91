"""The README's tables, from the records under runs/<model>/:

1. the stem: the kept database's old stem and input transpose (their tuner's bests and
   trials, ``kept-stem.json``, as ``stem_trials.py`` printed them), the new stem's
   (``tune.json``), and the two networks timed in one process (``kept-vs-conv.json``);
2. TVM / ORT per TVM arm (``vs-ort.json``: ``tvm``, pinned worker, TVM's default; and
   ``tvm-nobind``), each TVM run over the mean of its nearest ORT runs, by p50 and by the
   fastest call, median over the arm's runs; TVM's parity (``parity.jsonl``).

    .venv/bin/python experiments/tvm-input-conv-2026-11-28/table.py experiments/tvm-input-conv-2026-11-28/runs
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tvm-six-models-2026-11-27"))
from table import neighbour_ratios  # noqa: E402  the same ratio as the earlier tables


def _arm_ratios(runs: list, arm: str, key: str) -> list:
    """neighbour_ratios for one TVM arm: the other TVM arms left out of the sequence."""
    kept = [dict(r, arm="tvm") if r["arm"] == arm else r for r in runs
            if r["arm"] in ("ort", arm)]
    return neighbour_ratios(kept, key)


def stem_row(d: Path) -> str:
    tune = json.loads((d / "tune.json").read_text(encoding="utf-8"))
    new = [t for t in tune["tuning_per_task"] if t["name"].startswith("fused_conv2d_add")]
    old = json.loads((d / "kept-stem.json").read_text(encoding="utf-8"))
    old_us = sum(t["best_us"] for t in old)
    ab = json.loads((d / "kept-vs-conv.json").read_text(encoding="utf-8"))["databases"]
    parts = " + ".join(f"{t['best_us']:.1f}" for t in old)
    return (f"| {d.name} | {parts} = {old_us:.1f} "
            f"({sum(t['trials'] for t in old)}) | {new[0]['best_us']:.1f} ({new[0]['trials']}) "
            f"| {new[0]['best_us'] / old_us:.3f} | {ab[0]['p50_ms']:.2f} | {ab[1]['p50_ms']:.2f} "
            f"| {ab[1]['p50_vs_first']:.3f} |")


def ort_row(d: Path) -> str:
    parity = [json.loads(line) for line in
              (d / "parity.jsonl").read_text(encoding="utf-8").splitlines() if line]
    tvm = next(r for r in parity if r["variant"] == "tvm" and r["task"] == "parity")
    runs = json.loads((d / "vs-ort.json").read_text(encoding="utf-8"))["runs"]
    cells = []
    for arm in ("tvm", "tvm-nobind"):
        p50 = _arm_ratios(runs, arm, "p50_ms")
        fastest = _arm_ratios(runs, arm, "min_ms")
        cells.append(f"{statistics.median(p50):.3f}x ({min(p50):.3f}-{max(p50):.3f}) "
                     f"| {statistics.median(fastest):.3f}x")
    ort = statistics.median(r["p50_ms"] for r in runs if r["arm"] == "ort")
    return f"| {d.name} | {ort:.2f} | {' | '.join(cells)} | {tvm['max_abs_diff']:.1e} |"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("runs", type=Path, help="the experiment's runs/ folder")
    args = p.parse_args()
    dirs = sorted(d for d in args.runs.iterdir() if (d / "vs-ort.json").exists())
    print("| model | old stem + transpose, us (trials) | new stem, us (trials) | new / old "
          "| kept network p50 (ms) | new network p50 (ms) | new / kept |")
    print("|---|---|---|---|---|---|---|")
    for d in dirs:
        print(stem_row(d))
    print()
    print("| model | ORT p50 (ms) | TVM / ORT p50, pinned (range) | fastest call, pinned "
          "| TVM / ORT p50, unpinned (range) | fastest call, unpinned | TVM parity |")
    print("|---|---|---|---|---|---|---|")
    for d in dirs:
        print(ort_row(d))


if __name__ == "__main__":
    main()
