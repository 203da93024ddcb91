"""Where the default run's time goes: runs `python -m edgebench.full` (the embedded default,
or the arguments given after --) as one timed process, then prints the run's own time budget
(run.json "time_budget") and the cells' wall time per variant and status.

    .venv/bin/python benchmarks/default_run.py                     # warm caches (results/cache)
    .venv/bin/python benchmarks/default_run.py --cold              # a fresh cache folder: what a new clone pays
    .venv/bin/python benchmarks/default_run.py --report RUN_DIR    # the breakdown of an existing run
    .venv/bin/python benchmarks/default_run.py -- --isolation spawn    # extra edgebench.full arguments

Nothing is asserted: it prints figures (tests never assert timings).
"""
from __future__ import annotations

import argparse
import collections
import datetime as dt
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def breakdown(run_dir: Path, process_s: float | None = None) -> None:
    meta = json.loads((run_dir / "run.json").read_text(encoding="utf-8"))
    text = (run_dir / "results.jsonl").read_text(encoding="utf-8")
    recs = [json.loads(ln) for ln in text.splitlines() if ln.strip()]
    if process_s is not None:
        print(f"whole process (timed here): {process_s:.1f} s = {process_s / 60:.2f} min")
    b = meta.get("time_budget")
    if b:
        print("run.json time_budget:")
        for k, v in b.items():
            if isinstance(v, dict):     # tasks_s: each task's cells
                v = ", ".join(f"{t} {s:.1f}" for t, s in v.items())
                print(f"  {k:14s} {v}")
                continue
            share = f" ({100 * v / b['total_s']:.0f}%)" if k.endswith("_s") and k != "total_s" else ""
            print(f"  {k:14s} {v:8.1f}{share}")
    else:
        first, last = meta.get("created_at"), meta.get("finished_at")
        if first and last:
            span = dt.datetime.fromisoformat(last) - dt.datetime.fromisoformat(first)
            print(f"no time_budget in run.json (an older run); created_at -> finished_at: "
                  f"{span.total_seconds():.0f} s")
    per = collections.defaultdict(lambda: [0, 0.0])
    for r in recs:
        per[(r["variant"], r["status"])][0] += 1
        per[(r["variant"], r["status"])][1] += r.get("wall_s") or 0.0
    print("cells (variant, status): count, sum of wall_s, sum of convert_s")
    for (v, s), (n, w) in sorted(per.items()):
        conv = sum(r.get("convert_s") or 0.0 for r in recs if r["variant"] == v and r["status"] == s)
        print(f"  {v:16s} {s:8s} {n:4d} {w:8.1f} s {conv:8.1f} s")
    print(f"  total wall_s {sum(r.get('wall_s') or 0.0 for r in recs):.1f} s over {len(recs)} records")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--cold", action="store_true", help="use a new, empty --cache-dir")
    p.add_argument("--out", default=None, help="run directory (default: a temporary one)")
    p.add_argument("--report", default=None, metavar="RUN_DIR", help="only print RUN_DIR's breakdown")
    p.add_argument("extra", nargs="*", help="after --: more edgebench.full arguments")
    args = p.parse_args(argv)
    if args.report:
        breakdown(Path(args.report))
        return 0
    with tempfile.TemporaryDirectory(prefix="edgebench-default-") as td:
        out = Path(args.out or Path(td) / "run")
        cmd = [sys.executable, "-m", "edgebench.full", "--out", str(out), *args.extra]
        if args.cold:
            cmd += ["--cache-dir", str(Path(td) / "cache")]
        print("$", " ".join(cmd), flush=True)
        t = time.perf_counter()
        rc = subprocess.run(cmd, cwd=REPO).returncode
        took = time.perf_counter() - t
        print(f"exit code {rc}")
        breakdown(out, took)
    return 0


if __name__ == "__main__":
    sys.exit(main())
