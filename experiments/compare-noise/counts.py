"""The counts run.sh prints from one of its folders (reads only the two comparisons' records,
aa/compare.csv and ab/compare.csv): per comparison and variant the cells called changed, the
A/A false-alarm rate, the spread of the A2/A1 p50 ratios, and the smallest threshold that
would have kept the A/A at one flagged cell in ten or fewer.

    .venv/bin/python experiments/compare-noise/counts.py results/experiments/compare-noise/STAMP 5
"""
from __future__ import annotations

import argparse
import csv
from collections import Counter
from pathlib import Path


def rows(d: Path, name: str) -> list[dict]:
    with open(d / name / "compare.csv", newline="", encoding="utf-8") as f:
        return [r for r in csv.DictReader(f) if r["section"] == "performance"]


def need(r: dict) -> float:
    """The smallest threshold at which this cell is no longer called changed (log-symmetric
    rule: the whole CI beyond 1+t or 1/(1+t)); the point ratio where there is no CI."""
    lo, hi = ((float(r["ci95_low"]), float(r["ci95_high"])) if r["ci95_low"]
              else (float(r["ratio"]),) * 2)
    return max(lo - 1, 1 / hi - 1, 0.0)


def show(name: str, rs: list[dict]) -> int:
    c = Counter(r["verdict"] for r in rs)
    changed = c["slower"] + c["faster"]
    print(f"  {name}: {len(rs)} cells, {changed} called changed "
          f"({c['slower']} slower, {c['faster']} faster), {c['no significant change']} no change; "
          f"no CI: {sum(1 for r in rs if not r['ci95_low'])}")
    return changed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folder", type=Path, help="one run.sh folder (with aa/ and ab/)")
    ap.add_argument("threshold", type=float, help="the threshold the comparisons used, in %%")
    args = ap.parse_args()
    aa, ab = rows(args.folder, "aa"), rows(args.folder, "ab")
    print(f"\nthreshold {args.threshold:g}%")
    print("A/A (A1 vs A2, same command):")
    changed = show("all", aa)
    for v in sorted({r["variant"] for r in aa}):
        show(v, [r for r in aa if r["variant"] == v])
    print(f"  false-alarm rate: {changed}/{len(aa)} = {changed / max(len(aa), 1):.0%} (target <= 10%)")
    ratios = sorted(float(r["ratio"]) for r in aa if r["task"] == "latency")
    if ratios:
        print(f"  A2/A1 p50 latency ratios: min {ratios[0]:.3f}, median "
              f"{ratios[len(ratios) // 2]:.3f}, max {ratios[-1]:.3f}")
    needs = sorted((need(r) for r in aa), reverse=True)
    k = len(needs) // 10                    # at most one cell in ten may stay flagged
    if needs:
        print(f"  smallest threshold with <= 10% A/A cells flagged: {100 * needs[k]:.1f}% "
              f"(largest per-cell need {100 * needs[0]:.1f}%)")
    print("A/B (A1 vs B = --ort-threads 1):")
    for v in sorted({r["variant"] for r in ab}):
        show(v, [r for r in ab if r["variant"] == v])
    ort = [r for r in ab if r["variant"] == "onnxruntime"]
    if ort:
        print(f"  onnxruntime cells called slower: {sum(r['verdict'] == 'slower' for r in ort)}"
              f"/{len(ort)} (the change; pytorch cells should show none)")


if __name__ == "__main__":
    main()
