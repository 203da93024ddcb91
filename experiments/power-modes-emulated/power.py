"""One line per power mode of a sweep's records (results.jsonl): jtop's mean power beside the
INA3221 files' at the same instants, their difference, p50 and energy per inference. Reads
only the records.

    .venv/bin/python experiments/power-modes-emulated/power.py experiments/power-modes-emulated/sweep1
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("run", type=Path, help="a sweep's run folder (with results.jsonl)")
    run = ap.parse_args().run
    for line in (run / "results.jsonl").read_text(encoding="utf-8").splitlines():
        r = json.loads(line)
        p = r["power_w"]
        c = p["check"]
        print(f'{r["power_mode"]:9} jtop {p["mean"]:.2f} W  ina3221 {c["mean"]:.2f} W  '
              f'{100 * c["rel_diff"]:+.1f} %  p50 {r["latency_ms"]["p50"]:.0f} ms  '
              f'{r["energy_mj_per_sample"]:.0f} mJ/inference')


if __name__ == "__main__":
    main()
