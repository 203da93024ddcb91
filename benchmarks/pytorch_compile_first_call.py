"""Does the first batch-1 call through pytorch-compile's predictor compile the graph again? An
A/B of where convert's batch-1 call is made: arm ``old`` calls the compiled module on a tensor
made outside inference mode (the predictor's batches are made inside it, and dynamo guards on
the dispatch key set, so the predictor's first batch-1 call then compiles the graph again,
from inductor's FX-graph cache: tracing and loading); arm ``new`` calls it through the
predictor, as convert does.

Each (model, arm) runs in a fresh interpreter with a fresh inductor cache; the arms alternate
so that drift in the machine's speed falls on both. Prints one line per run, then the ratio
new/old of (convert + first predictor call) per model.

    .venv/bin/python benchmarks/pytorch_compile_first_call.py [MODEL ...]
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

CHILD = r'''
import json, sys, time
import numpy as np, torch
from converters.pytorch import TorchPredictor
from edgebench.model_branch import graphs_compiled
from edgebench.models import make_spec
name, arm = sys.argv[1], sys.argv[2]
spec = make_spec(name, "random-seed-0")
model = spec.build()
t0 = time.perf_counter()
compiled = torch.compile(model, backend="inductor")
if arm == "old":
    x = torch.zeros((1, *spec.input_size))
    with torch.inference_mode():
        compiled(x)
else:
    TorchPredictor(compiled, "cpu", {})(np.zeros((1, *spec.input_size), dtype=np.float32))
t1 = time.perf_counter()
g1 = graphs_compiled()
TorchPredictor(compiled, "cpu", {})(np.ones((1, *spec.input_size), dtype=np.float32))
t2 = time.perf_counter()
print(json.dumps({"model": name, "arm": arm, "compile_s": round(t1 - t0, 2),
                  "first_call_s": round(t2 - t1, 2), "total_s": round(t2 - t0, 2),
                  "graphs_after_compile": g1, "graphs_after_first_call": graphs_compiled()}))
'''


def run(name: str, arm: str) -> dict:
    with tempfile.TemporaryDirectory() as cache:
        env = {"TORCHINDUCTOR_CACHE_DIR": cache, "PATH": "/usr/bin:/bin"}
        out = subprocess.run([sys.executable, "-c", CHILD, name, arm], capture_output=True,
                             text=True, env=env, check=True, cwd=REPO)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(models: list[str]) -> None:
    rows = []
    for name in models:
        for arm in ("old", "new", "old", "new"):
            rows.append(run(name, arm))
            print(json.dumps(rows[-1]), flush=True)
    for name in models:
        tot = {a: sum(r["total_s"] for r in rows if r["model"] == name and r["arm"] == a)
               for a in ("old", "new")}
        print(f"{name}: convert + first batch-1 call, new/old = {tot['new'] / tot['old']:.3f} "
              f"(old {tot['old'] / 2:.1f} s, new {tot['new'] / 2:.1f} s, mean of 2)")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("models", nargs="*", default=["mobilenetv2_100", "efficientnet_b0", "resnet152"])
    models = ap.parse_args().models
    t = time.perf_counter()
    main(models)
    print(f"whole experiment {time.perf_counter() - t:.0f} s")
