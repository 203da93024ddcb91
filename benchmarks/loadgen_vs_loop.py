"""Does edgebench's own measuring agree with MLPerf's LoadGen? In one process, on the same
predictor and images, alternating in ABBA order over rounds (this VM's speed drifts by tens
of percent within minutes):

- latency: edgebench's loop (``measure.timed_calls``, batch 1, the 90th percentile) against
  LoadGen's SingleStream (its 90th percentile);
- throughput: edgebench's timed batches at batch B (samples/s over the window) against
  LoadGen's Offline at the same batch;
- LoadGen's own cost per query: SingleStream on a predictor that answers at once.

Prints, per model and variant, the median (and spread) of the ratios LoadGen / edgebench, and
writes every figure to --out as JSON lines.

    .venv/bin/python benchmarks/loadgen_vs_loop.py --out experiments/loadgen-vs-loop/2026-11-25
    .venv/bin/python benchmarks/loadgen_vs_loop.py --models mobilenetv2_100 --variants onnxruntime

Nothing is asserted: it prints figures (tests never assert timings).
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def _loop_p90(predictor, x, seconds: float, count: int) -> float:
    from edgebench.measure import timed_calls

    ms = timed_calls(predictor, x, count, seconds, seconds * 4)
    return float(np.percentile(ms, 90))


def _loop_sps(predictor, x, seconds: float) -> float:
    n, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        predictor(x)
        n += len(x)
    return n / (time.perf_counter() - t0)


def _loadgen(lg, predictor, data, scenario: str, batch: int, seconds: float, count: int,
             expected: float, folder: Path) -> dict:
    from edgebench.mlperf import mllog
    from edgebench.mlperf.harness import SampleLibrary, SystemUnderTest, start

    lib = SampleLibrary(data, len(data))
    ts = lg.TestSettings()
    ts.scenario = getattr(lg.TestScenario, scenario)
    ts.mode = lg.TestMode.PerformanceOnly
    ts.min_duration_ms, ts.min_query_count = int(seconds * 1000), count
    ts.single_stream_expected_latency_ns = int(expected * 1e6)
    ts.offline_expected_qps = float(expected)
    start(lg, SystemUnderTest(lg, predictor, lib, batch), lib, ts, folder, len(data))
    values, _ = mllog.read(folder / "mlperf_log_detail.txt")
    return mllog.summarize(scenario, values) | {"mean_ns": values.get("result_mean_latency_ns")}


class _Instant:
    batch_sizes = None

    def __call__(self, x):
        return x.reshape(len(x), -1)[:, :10]


def main(argv=None) -> int:
    import mlperf_loadgen as lg

    import converters
    from edgebench.data import PreparedData, prepare, resolve_source
    from edgebench.models import SEED_MODELS, data_config, make_spec, random_weights
    from edgebench.sysinfo import cpu_model

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", nargs="+", default=SEED_MODELS)
    ap.add_argument("--variants", nargs="+", default=["pytorch", "onnxruntime"])
    ap.add_argument("--rounds", type=int, default=2, help="ABBA rounds (each: A B B A)")
    ap.add_argument("--seconds", type=float, default=4.0, help="each arm's window")
    ap.add_argument("--batch", type=int, default=8, help="the throughput/Offline batch")
    ap.add_argument("--out", required=True)
    ap.add_argument("--cache-dir", default=str(REPO / "results" / "cache"))
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    lines = out / "figures.jsonl"
    logs = Path(tempfile.mkdtemp(prefix="edgebench-lg-"))
    cache = Path(args.cache_dir)
    sample = resolve_source(None)

    def emit(obj):
        with open(lines, "a", encoding="utf-8") as f:
            f.write(json.dumps(obj) + "\n")

    emit({"cpu": cpu_model(), "loadgen": lg.__name__, "rounds": args.rounds,
          "seconds": args.seconds, "batch": args.batch})
    # LoadGen's own cost: SingleStream on a predictor that answers at once.
    data0 = PreparedData(prepare(sample, data_config("mobilenetv2_100"), cache),
                         (0.485, 0.456, 0.406), (0.229, 0.224, 0.225))
    null = _loadgen(lg, _Instant(), data0, "SingleStream", 1, 2.0, 1000, 0.01, logs / "null")
    loop_null = _loop_p90(_Instant(), data0.batch(0, 1), 2.0, 1000)
    emit({"null_predictor": {"loadgen_p90_ms": null["value"], "loadgen_mean_ns": null["mean_ns"],
                             "loop_p90_ms": loop_null}})
    print(f"LoadGen's cost per SingleStream query (null predictor): p90 {null['value']:.4f} ms, "
          f"mean {null['mean_ns'] / 1e3:.1f} us; edgebench's loop: p90 {loop_null:.4f} ms")
    table = []
    for model in args.models:
        cfg = data_config(model)
        data = PreparedData(prepare(sample, cfg, cache), cfg["mean"], cfg["std"])
        for variant in args.variants:
            conv = converters.get(variant)
            spec = make_spec(model, random_weights(model, 0),
                             {"max_batch": 16, "accuracy_batch": 8})
            predictor = conv.load(conv.convert(spec, cache), spec)
            x1, xb = data.batch(0, 1), data.tiled(args.batch)
            for _ in range(3):
                predictor(x1)
                predictor(xb)
            lat, thr = [], []
            for r in range(args.rounds):
                for arm in ("loop", "loadgen", "loadgen", "loop"):
                    tag = f"{model}-{variant}-{r}-{arm}-{time.monotonic_ns()}"
                    if arm == "loop":
                        p90 = _loop_p90(predictor, x1, args.seconds, 20)
                        sps = _loop_sps(predictor, xb, args.seconds)
                    else:
                        ss = _loadgen(lg, predictor, data, "SingleStream", 1, args.seconds, 20,
                                      p90 if lat else 10.0, logs / f"{tag}-ss")
                        off = _loadgen(lg, predictor, data, "Offline", args.batch, args.seconds,
                                       1, sps if thr else 10.0, logs / f"{tag}-off")
                        p90, sps = ss["value"], off["value"]
                    lat.append((arm, p90))
                    thr.append((arm, sps))
                    emit({"model": model, "variant": variant, "round": r, "arm": arm,
                          "p90_ms": p90, "samples_per_s": sps})
            predictor.close()

            def ratios(pairs):
                # per round: mean of the two LoadGen arms / mean of the two loop arms
                out_r = []
                for r in range(args.rounds):
                    chunk = pairs[4 * r:4 * r + 4]
                    a = statistics.mean(v for k, v in chunk if k == "loop")
                    b = statistics.mean(v for k, v in chunk if k == "loadgen")
                    out_r.append(b / a)
                return out_r
            rl, rt = ratios(lat), ratios(thr)
            table.append((model, variant, statistics.median(rl), min(rl), max(rl),
                          statistics.median(rt), min(rt), max(rt)))
            emit({"model": model, "variant": variant, "latency_ratio_by_round": rl,
                  "throughput_ratio_by_round": rt})
            print(f"{model:30s} {variant:12s} SingleStream/loop p90 x{table[-1][2]:.3f} "
                  f"[{table[-1][3]:.3f}, {table[-1][4]:.3f}]   Offline/loop samples/s "
                  f"x{table[-1][5]:.3f} [{table[-1][6]:.3f}, {table[-1][7]:.3f}]", flush=True)
    md = ["| model | variant | SingleStream p90 / loop p90 (median, [min, max]) | "
          "Offline / loop samples/s (median, [min, max]) |", "|---|---|---|---|"]
    md += [f"| {m} | {v} | {a:.3f} [{b:.3f}, {c:.3f}] | {d:.3f} [{e:.3f}, {f:.3f}] |"
           for m, v, a, b, c, d, e, f in table]
    (out / "summary.md").write_text(
        f"CPU: {cpu_model()}; {args.rounds} ABBA rounds, {args.seconds:g} s windows, Offline and "
        f"loop throughput at batch {args.batch}.\n\nLoadGen's cost per SingleStream query with a "
        f"null predictor: p90 {null['value']:.4f} ms (edgebench's loop: {loop_null:.4f} ms).\n\n"
        + "\n".join(md) + "\n", encoding="utf-8")
    print((out / "summary.md").read_text(encoding="utf-8"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
