"""Fleet overhead: what `python -m edgebench.fleet` adds to a one-device run, as a ratio
against `python -m edgebench.full` running the same cells on the same machine (issue 7).

Both sides are the real commands, timed end to end (process start to exit). The fleet side
starts its own one-node Ray cluster on 127.0.0.1 (local mode), so its figure includes Ray's
start-up and shutdown: that is what a user pays for a one-device fleet run. Rounds alternate
(full, fleet, full, fleet, ...) so drift on a shared machine hits both alike, and the
artifact/data cache is warmed first, so neither side pays for the first export.

The fleet run's run.json also splits its own time; printed per cell: the Ray call's time
minus the worker's own wall_s. That part includes the cell worker's process start and imports,
which edgebench.full pays as well, so it is an upper bound on the per-cell cost of Ray.

    .venv/bin/python benchmarks/fleet_overhead.py [--model mobilenetv2_100] [--rounds 3]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _timed(cmd: list[str]) -> float:
    env = dict(os.environ, HF_HUB_OFFLINE="1", RAY_USAGE_STATS_ENABLED="0")
    t = time.perf_counter()
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - t
    if proc.returncode != 0:
        sys.exit(f"{' '.join(cmd[:4])} ... exited {proc.returncode}:\n{proc.stderr[-3000:]}")
    return wall


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="mobilenetv2_100")
    ap.add_argument("--variants", nargs="+", default=["pytorch", "onnxruntime"])
    ap.add_argument("--tasks", nargs="+", default=["latency", "throughput"])
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    try:
        import ray  # noqa: F401
    except ImportError:
        sys.exit("Ray is not installed: pip install 'edgebench[fleet]'")
    cache = REPO / "results" / "cache"
    with tempfile.TemporaryDirectory() as td:
        td = Path(td)
        cfg = td / "fleet.toml"
        cfg.write_text(f"models = {json.dumps([args.model])}\nvariants = {json.dumps(args.variants)}\n"
                       f"tasks = {json.dumps(args.tasks)}\nweights = \"random\"\n"
                       f"cache_dir = \"{cache}\"\n[devices.here]\n", encoding="utf-8")

        def full(out: Path) -> float:
            return _timed([sys.executable, "-m", "edgebench.full", "--models", args.model,
                           "--variants", *args.variants, "--tasks", *args.tasks, "--weights",
                           "random", "--cache-dir", str(cache), "--out", str(out)])

        def fleet(out: Path) -> float:
            return _timed([sys.executable, "-m", "edgebench.fleet", "--config", str(cfg),
                           "--out", str(out)])

        full(td / "warm")                       # exports, preprocessing, reference logits
        fulls, fleets, per_cell = [], [], []
        for i in range(args.rounds):
            fulls.append(full(td / f"full{i}"))
            fleets.append(fleet(td / f"fleet{i}"))
            meta = json.loads((td / f"fleet{i}" / "run.json").read_text(encoding="utf-8"))
            cells = meta["devices"]["here"]["timings"]["cells"].values()
            extra = [c["call_s"] - c["cell_wall_s"] for c in cells if c.get("cell_wall_s") is not None]
            per_cell.append(statistics.median(extra) if extra else float("nan"))
            print(f"round {i + 1}: full {fulls[-1]:.2f} s, fleet {fleets[-1]:.2f} s, "
                  f"per cell, Ray call - worker wall_s (worker start included) median {per_cell[-1]:.3f} s")
    f, g = statistics.median(fulls), statistics.median(fleets)
    n_cells = len(args.variants) * len(args.tasks)
    print(f"{args.model} {' '.join(args.variants)} x {' '.join(args.tasks)} ({n_cells} cells): "
          f"edgebench.full {f:.2f} s, edgebench.fleet (local one-node Ray) {g:.2f} s, "
          f"ratio {g / f:.3f} (+{g - f:.2f} s); per cell, Ray call - worker wall_s median "
          f"{statistics.median(per_cell):.3f} s")


if __name__ == "__main__":
    main()
