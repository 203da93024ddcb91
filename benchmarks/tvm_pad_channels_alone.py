"""One conv padded to whole vectors, alone: SqueezeNet 1.1's classifier conv (1x1, 512 -> C at
13x13, NHWC, + bias + ReLU) tuned alone with C = 1000 (16 floats do not divide it: the design
space tiles at 8 on AVX-512) and C = 1008 (16), at the same trial budget, with the suite's
tuner (converters.tvm.tuning.tune: the suite's lowering and design space, output channels
kept as given). Writes each width's conv task and its best time, and 1008 / 1000.

    .venv/bin/python benchmarks/tvm_pad_channels_alone.py --trials 128 \\
        --work results/experiments/NAME/head --json head-alone.json
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--trials", type=int, default=128)
    p.add_argument("--work", required=True, help="where the two databases go (git-ignored)")
    p.add_argument("--json", required=True)
    args = p.parse_args(argv)

    import torch

    from converters.tvm import targets, tuning

    target, _ = targets.resolve_target("host")
    threads = targets.configure_threads(target)
    out = {"target": targets.target_dict(target), "tvm_threads": threads,
           "trials": args.trials, **targets.tvm_versions(), "arms": {}}
    for channels in (1000, 1008):
        torch.manual_seed(0)
        net = torch.nn.Sequential(torch.nn.Conv2d(512, channels, 1), torch.nn.ReLU()).eval()
        # --out-channels keep: this measures the two widths themselves
        cfg = tuning.TuneConfig(trials=args.trials, layout="NHWC", reuse=False, seed=0,
                                out_channels="keep")
        t = time.time()
        res = tuning.tune(net, (512, 13, 13), 1, target,
                          Path(args.work) / f"c{channels}-t{args.trials}", cfg)
        conv = [r for r in res["per_task"] if "conv2d" in r["name"]]
        out["arms"][str(channels)] = {"conv_task": conv, "design_space": res.get("design_space"),
                                      "wall_s": round(time.time() - t, 1)}
        print(f"{channels} channels: {conv[0]['trials']} trials, best {conv[0]['best_us']} us "
              f"({res.get('design_space')})", flush=True)
    a, b = (out["arms"][k]["conv_task"][0]["best_us"] for k in ("1000", "1008"))
    out["best_1008_over_1000"] = round(b / a, 3)
    print(f"1008 / 1000: {out['best_1008_over_1000']}")
    Path(args.json).write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
