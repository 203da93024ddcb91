"""INT8 against FP32 on ONNX Runtime's CPU provider: p50 latency (batch 1) and best throughput
of ``onnxruntime-int8`` beside ``onnxruntime`` for the six study models, measured by the
suite's own tasks (``edgebench.full --tasks latency throughput``) in the same run.

This VM's speed drifts by tens of percent within minutes, so the arms alternate: round 1 runs
each model's FP32 cells then its INT8 cells, round 2 the INT8 cells first (per model: A B B A),
and so on; the ratio is the median over rounds of INT8/FP32 within a round. Each round's run
folder (results.jsonl, run.json) is kept under --out, and the table goes to --out/summary.md.

    .venv/bin/python benchmarks/int8_vs_fp32.py --out experiments/int8-cpu/2026-11-25
    .venv/bin/python benchmarks/int8_vs_fp32.py --models resnet152 vgg16 --rounds 4 --out /tmp/i8

Nothing is asserted: it prints figures (tests never assert timings).
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from edgebench.models import SEED_MODELS  # noqa: E402

FP32, INT8 = "onnxruntime", "onnxruntime-int8"


def _records(run: Path) -> list[dict]:
    return [json.loads(x) for x in (run / "results.jsonl").read_text(encoding="utf-8").splitlines()
            if x.strip()]


def _figures(recs: list[dict], model: str, variant: str) -> tuple[float | None, float | None]:
    p50 = best = None
    for r in recs:
        if r["model"] != model or r["variant"] != variant or r["status"] not in ("ok", "partial"):
            continue
        if r["task"] == "latency":
            p50 = r["latency_ms"]["p50"]
        if r["task"] == "throughput":
            best = r["samples_per_s"]
    return p50, best


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", nargs="+", default=SEED_MODELS)
    ap.add_argument("--rounds", type=int, default=2, help="alternating rounds (even: ABBA)")
    ap.add_argument("--profile", default="quick")
    ap.add_argument("--out", required=True, help="folder for each round's run and summary.md")
    ap.add_argument("--cache-dir", default=str(REPO / "results" / "cache"))
    args, extra = ap.parse_known_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    runs = []
    for i in range(args.rounds):
        order = [FP32, INT8] if i % 2 == 0 else [INT8, FP32]
        run = out / f"round{i + 1}-{order[0]}-first"
        if not (run / "run.json").is_file() or not (run / "results.jsonl").is_file():
            cmd = [sys.executable, "-m", "edgebench.full", "--models", *args.models,
                   "--variants", *order, "--tasks", "latency", "throughput", "--profile",
                   args.profile, "--out", str(run), "--cache-dir", args.cache_dir, *extra]
            print("+", " ".join(cmd[1:]), flush=True)
            rc = subprocess.run(cmd, cwd=REPO).returncode
            if rc not in (0, 1):
                print(f"round {i + 1}: edgebench.full exited {rc}", file=sys.stderr)
                return rc
        runs.append(run)
    device = json.loads((runs[0] / "run.json").read_text(encoding="utf-8"))["device"]
    rows = []
    for m in args.models:
        lat, thr, a, b = [], [], [], []
        for run in runs:
            recs = _records(run)
            (p32, t32), (p8, t8) = _figures(recs, m, FP32), _figures(recs, m, INT8)
            if p32 and p8:
                lat.append(p8 / p32)
                a.append(p32)
                b.append(p8)
            if t32 and t8:
                thr.append(t8 / t32)
        med = (lambda xs: statistics.median(xs) if xs else None)
        rows.append((m, med(a), med(b), med(lat), min(lat) if lat else None, med(thr)))
    cpu = device.get("cpu_int8", {})
    lines = [f"CPU: {device.get('name')} ({device.get('cores_physical')} cores); INT8 "
             f"instructions: {cpu.get('best')} (flags: {', '.join(cpu.get('flags', []))})",
             f"{len(runs)} rounds, arms alternated (ABBA); profile {args.profile}; ratios are "
             "INT8 / FP32 within a round, median (and min) over rounds", "",
             "| model | FP32 p50 ms | INT8 p50 ms | p50 ratio (median) | p50 ratio (min) | "
             "best samples/s ratio |", "|---|---|---|---|---|---|"]

    def f(v, nd=2):
        return "–" if v is None else f"{v:.{nd}f}"

    for m, a, b, r, rmin, t in rows:
        lines.append(f"| {m} | {f(a)} | {f(b)} | {f(r, 3)} | {f(rmin, 3)} | {f(t, 3)} |")
    text = "\n".join(lines) + "\n"
    (out / "summary.md").write_text(text, encoding="utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
