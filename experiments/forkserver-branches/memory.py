"""Each cell's resident memory at its start and at its peak, before -> after, from the two
runs' records (before/results.jsonl and after/results.jsonl: memory_mb). Reads only them.

    .venv/bin/python experiments/forkserver-branches/memory.py experiments/forkserver-branches
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folder", type=Path, help="the folder with before/ and after/")
    exp = ap.parse_args().folder
    rows: dict = {}
    for side in ("before", "after"):
        for line in (exp / side / "results.jsonl").read_text(encoding="utf-8").splitlines():
            r = json.loads(line)
            rows.setdefault((r["variant"], r["task"]), {})[side] = r["memory_mb"]
    print(f"{'cell':28} {'RSS at start, MB':>22} {'peak RSS, MB':>22}")
    for (v, t), m in rows.items():
        b, a = m["before"], m["after"]
        print(f"{v + ' ' + t:28} {b['process_start']:>8.1f} -> {a['process_start']:>8.1f} "
              f"{b['peak']:>10.1f} -> {a['peak']:>8.1f}")


if __name__ == "__main__":
    main()
