"""TVM across models: untuned, tuned and ONNX Runtime batch-1 latency, and tuning time.

For each model this runs the suite's own commands (so every figure is in a run record):

1. untuned TVM: ``edgebench.full --variants tvm --tasks latency --tvm-untuned`` with an empty
   tuning directory;
2. for each trial budget (``--budgets``, ascending): ``edgebench.tune --trials B`` (a resumed
   tuning session tops the database up to B records), then ``edgebench.full --variants tvm
   onnxruntime --tasks parity latency`` with that database: the TVM/ORT ratio is taken
   within one run.

Then it prints one table: untuned p50, tuned p50 per budget, ORT p50, TVM/ORT, tuning time.
Several budgets for one model show where more trials stop paying off.

    python benchmarks/tvm_models.py                                  # the six, 512 trials
    python benchmarks/tvm_models.py --models mobilenetv2_100 --budgets 128 256 512 1024
    python benchmarks/tvm_models.py --report results/bench-tvm       # table only, no runs

Long: on 2 cores, 512 trials take 10-25 min per model and untuned VGG16/Swin-T take seconds
per call. Results go under ``--out`` (one run directory per model and budget); a rerun skips
what is already there.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from edgebench import store  # noqa: E402 - after the path set-up
SIX = ["mobilenetv2_100", "squeezenet1_1", "efficientnet_b0", "resnet152", "vgg16",
       "swin_tiny_patch4_window7_224"]


def _run(cmd: list, log: Path) -> int:
    log.parent.mkdir(parents=True, exist_ok=True)
    print("$", " ".join(cmd), flush=True)
    t = time.perf_counter()
    with open(log, "w", encoding="utf-8") as f:
        rc = subprocess.call(cmd, cwd=REPO, stdout=f, stderr=subprocess.STDOUT,
                             env=dict(os.environ, PYTHONPATH=str(REPO)))
    print(f"  rc {rc} in {time.perf_counter() - t:.0f} s (log: {log})", flush=True)
    return rc


def _records(run_dir: Path) -> list:
    return store.read(run_dir / "results.jsonl")


def _done(run_dir: Path) -> bool:
    """The run got as far as its latency cell (a rerun of this script skips it)."""
    return any(r["task"] == "latency" for r in _records(run_dir))


def bench_model(model: str, args) -> None:
    out = Path(args.out) / model
    py = sys.executable
    common = ["--models", model, "--weights", args.weights, "--cache-dir", args.cache_dir]
    if not args.skip_untuned:
        run = out / "untuned"
        if not _done(run):
            _run([py, "-m", "edgebench.full", *common, "--variants", "tvm", "--tasks",
                  "latency", "--tvm-untuned", "--tuning-dir", str(out / "no-tuning"),
                  "--out", str(run)], out / "untuned.log")
    for b in sorted(args.budgets):
        run = out / f"tuned-{b}"
        if _done(run):
            continue
        _run([py, "-m", "edgebench.tune", "--model", model, "--trials", str(b),
              "--tuning-dir", args.tuning_dir, "--weights", args.weights, "--no-progress",
              "--summary", str(out / f"tune-{b}.json")], out / f"tune-{b}.log")
        _run([py, "-m", "edgebench.full", *common, "--variants", "tvm", "onnxruntime",
              "--tasks", "parity", "latency", "--tuning-dir", args.tuning_dir,
              "--out", str(run)], out / f"tuned-{b}.log")


def _p50(rec) -> str:
    if rec is None:
        return "-"
    lat = rec.get("latency_ms") or {}
    if rec["status"] == "partial" and lat.get("p50") is not None:   # slow: few calls fit
        return f"{lat['p50']:.0f} (n={rec.get('n')}, partial)"
    if rec["status"] != "ok":
        return f"{rec['status']}: {rec.get('reason', '')[:60]}"
    return f"{lat['p50']:.2f}"


def _ratio(run: Path, model: str) -> str:
    """TVM / ORT p50 (and by the fastest call) of one run directory's records."""
    recs = _records(run)
    tvm = store.find(recs, model, "tvm", "latency")
    ort = store.find(recs, model, "onnxruntime", "latency")
    if tvm and ort and tvm["status"] == ort["status"] == "ok":
        lt, lo = tvm["latency_ms"], ort["latency_ms"]
        return f"{lt['p50'] / lo['p50']:.2f}x ({lt['min'] / lo['min']:.2f}x)"
    return "-"


def report(root: Path, before: Path | None = None) -> str:
    """The table of one results folder; ``before``: another such folder whose ratio at the
    same budget is shown beside (an earlier run of the same study)."""
    extra = " before |" if before else ""
    rows = ["| model | untuned TVM p50 (ms) | trials (tuning time) | tuned TVM p50 (ms) "
            "| ORT p50 (ms) | TVM / ORT p50 (by min) |" + extra + " tuner estimate (ms) "
            "| TVM parity max abs diff |",
            "|---|---|---|---|---|---|---|---|" + ("---|" if before else "")]
    for mdir in sorted(p for p in root.iterdir() if p.is_dir()):
        untuned = store.find(_records(mdir / "untuned"), mdir.name, "tvm", "latency")
        runs = sorted((int(p.name.split("-")[1]), p) for p in mdir.glob("tuned-*") if p.is_dir())
        if not runs:
            rows.append(f"| {mdir.name} | {_p50(untuned)} | - | - | - | - |"
                        + (" - |" if before else "") + " - | - |")
        for i, (b, run) in enumerate(runs):
            recs = _records(run)
            tvm = store.find(recs, mdir.name, "tvm", "latency")
            ort = store.find(recs, mdir.name, "onnxruntime", "latency")
            par = store.find(recs, mdir.name, "tvm", "parity")
            tun = ((tvm or {}).get("variant_meta") or {}).get("tuning") or {}
            ratio = _ratio(run, mdir.name)
            if before:
                ratio += f" | {_ratio(before / mdir.name / run.name, mdir.name)}"
            diff = (par or {}).get("max_abs_diff")
            diff = f"{diff:.2g}" if isinstance(diff, float) else (par or {}).get("status", "-")
            est = tun.get("tuner_estimate_ms")
            if est is None and tun:   # some kernels kept TVM's default schedule
                est = f"- ({tun.get('tasks_tuned')}/{tun.get('tasks_total')} tasks tuned)"
            rows.append(
                f"| {mdir.name if i == 0 else ''} | {_p50(untuned) if i == 0 else ''} "
                f"| {tun.get('trials', '-')} ({(tun.get('tuning_s') or 0) / 60:.1f} min) "
                f"| {_p50(tvm)} | {_p50(ort)} | {ratio} | {est} "
                f"| {diff} |")
    return "\n".join(rows)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog=__doc__.split("\n\n", 1)[1])
    p.add_argument("--models", nargs="+", default=SIX)
    p.add_argument("--budgets", nargs="+", type=int, default=[512],
                   help="total trial budgets to measure at, ascending (default 512)")
    p.add_argument("--tuning-dir", default="results/tuning")
    p.add_argument("--out", default="results/bench-tvm")
    p.add_argument("--cache-dir", default="results/cache")
    p.add_argument("--weights", default="auto")
    p.add_argument("--skip-untuned", action="store_true", help="no untuned TVM run")
    p.add_argument("--report", metavar="DIR", help="print the table of DIR and exit")
    p.add_argument("--before", metavar="DIR", help="with --report: also the TVM / ORT ratio "
                   "at the same budget from this earlier results folder")
    args = p.parse_args(argv)
    if args.report:
        print(report(Path(args.report), Path(args.before) if args.before else None))
        return 0
    for m in args.models:
        bench_model(m, args)
    print(report(Path(args.out)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
