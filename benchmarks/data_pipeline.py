"""Is the data pipeline the bottleneck of the accuracy pass? (issue 2: target ratio >= 0.9)

For each model and variant, in one process and on the same loaded predictor, alternating:
  pass   the accuracy pass exactly as the suite runs it (`measure.run_all`: memory-mapped
         uint8 images -> normalised float32 batch -> predictor -> logits), over the
         preprocessed images, at the accuracy batch size;
  fixed  the throughput task's loop (`measure.timed_calls`) on one fixed batch of that size,
         i.e. the model alone.
ratio = pass samples/s / fixed samples/s (median of rounds): 1.0 means feeding the images
costs nothing. The default data is the bundled sample (16 images), passed over repeatedly
until --seconds; give --data for a larger set.

    .venv/bin/python benchmarks/data_pipeline.py [--models mobilenetv2_100 squeezenet1_1]
        [--variants pytorch onnxruntime] [--batch 8] [--rounds 5]
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def main() -> None:
    import converters
    from edgebench import measure
    from edgebench.data import PreparedData, prepare, resolve_source
    from edgebench.models import data_config, make_spec
    from edgebench.profiles import PROFILES

    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", nargs="+", default=["mobilenetv2_100", "squeezenet1_1", "resnet152"])
    ap.add_argument("--variants", nargs="+", default=["pytorch", "onnxruntime"])
    ap.add_argument("--batch", type=int, default=PROFILES["quick"]["accuracy_batch"])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--seconds", type=float, default=2.0, help="per side and round")
    ap.add_argument("--data", default=None, help="image folder (default: the bundled sample)")
    args = ap.parse_args()
    cache = REPO / "results" / "cache"
    images = resolve_source(args.data)
    print(f"data: {images.name}, {len(images)} images; batch {args.batch}; "
          f"{args.rounds} rounds of {args.seconds:g} s per side")
    for model in args.models:
        cfg = data_config(model)
        data = PreparedData(prepare(images, cfg, cache), cfg["mean"], cfg["std"])
        for variant in args.variants:
            conv = converters.get(variant)
            spec = make_spec(model, "random-seed-0", {"torch_device": "cpu"})
            av = conv.available(spec.options)
            if not av.ok:
                print(f"{model} {variant}: skipped ({av.reason})")
                continue
            pred = conv.load(conv.convert(spec, cache), spec)
            x = data.tiled(args.batch)
            for _ in range(3):
                pred(x)
            passes, fixed = [], []
            for _ in range(args.rounds):
                n, t0 = 0, time.perf_counter()
                while time.perf_counter() - t0 < args.seconds:
                    _, labels, _ = measure.run_all(pred, data, args.batch)
                    n += len(labels)
                passes.append(n / (time.perf_counter() - t0))
                ms = measure.timed_calls(pred, x, 3, args.seconds, 10 * args.seconds)
                fixed.append(args.batch * ms.size / (ms.sum() / 1e3))
            p, f = statistics.median(passes), statistics.median(fixed)
            print(f"{model} {variant}: accuracy pass {p:.1f} img/s, fixed batch {f:.1f} "
                  f"samples/s, ratio {p / f:.3f} (rounds: "
                  f"{' '.join(f'{a / b:.3f}' for a, b in zip(passes, fixed))})", flush=True)
            pred.close()


if __name__ == "__main__":
    np.seterr(all="ignore")
    main()
