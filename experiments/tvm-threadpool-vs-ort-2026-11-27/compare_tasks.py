"""Each task's best kernel time in two tuning summaries of the same model (edgebench.tune
--summary), newer over older: were the 2026-11-27 databases worse than 2026-11-25's at the same
budget, code and seed, and in every task or a few?

    .venv/bin/python experiments/tvm-threadpool-vs-ort-2026-11-27/compare_tasks.py \\
        experiments/tvm-six-models-2026-11-25/runs/mobilenetv2_100/tune-512.json \\
        experiments/tvm-threadpool-vs-ort-2026-11-27/runs/tune-mobilenetv2_100.json
"""
from __future__ import annotations

import json
import statistics
import sys


def per_task(path: str) -> tuple[dict, dict]:
    summary = json.load(open(path, encoding="utf-8"))
    return summary["tuning"], {t["name"]: t for t in summary["tuning_per_task"]}


def main(old_path: str, new_path: str) -> None:
    (old_s, old), (new_s, new) = per_task(old_path), per_task(new_path)
    ratios = []
    for name in sorted(old, key=lambda n: -old[n]["best_us"] * old[n]["weight"]):
        a, b = old[name], new.get(name)
        if not b or not a["best_us"] or not b["best_us"]:
            print(f"{name:44s} only in one summary")
            continue
        ratios.append(b["best_us"] / a["best_us"])
        print(f"{name:44s} x{a['weight']}  {a['best_us']:8.1f} us ({a['trials']:2d} trials)  "
              f"{b['best_us']:8.1f} us ({b['trials']:2d})  new/old {ratios[-1]:.2f}")
    print(f"tasks {len(ratios)}: new/old median {statistics.median(ratios):.2f}, "
          f"range {min(ratios):.2f}-{max(ratios):.2f}, slower in "
          f"{sum(r > 1 for r in ratios)}; estimate {old_s['estimate_ms']} -> "
          f"{new_s['estimate_ms']} ms, tuning {old_s['tuning_s']} -> {new_s['tuning_s']} s")


if __name__ == "__main__":
    main(*sys.argv[1:3])
