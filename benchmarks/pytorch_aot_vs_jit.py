"""AOTInductor against torch.compile (JIT) and eager on one timm model: export it with a
symbolic batch (1..64), compile and package it with ``aoti_compile_and_package`` (cold unless
the package is already in WORK), load the package, check it against eager, then time AOT, JIT
(``torch.compile``, default mode) and eager at batch 1 and 8: the best of 5 repeats of 5 calls,
seeded random weights. Prints the export, compile and load times, the first calls' times at
batch 1, 8, 16, 1, the max difference against eager, and seconds per call per arm.

    TORCHINDUCTOR_CACHE_DIR=$(mktemp -d) .venv/bin/python benchmarks/pytorch_aot_vs_jit.py mobilenetv2_100
"""
from __future__ import annotations

import argparse
import os
import time


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model", help="a timm model name, e.g. mobilenetv2_100")
    ap.add_argument("--work", default="/tmp/exp", help="where the package goes (default /tmp/exp; "
                    "inductor's cache too, unless TORCHINDUCTOR_CACHE_DIR is set)")
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", os.path.join(args.work, "inductor-aoti"))
    import timeit

    import timm
    import torch

    name = args.model
    pkg = os.path.join(args.work, f"{name}.pt2")
    m = timm.create_model(name, pretrained=False).eval()
    x = torch.randn(2, 3, 224, 224)
    if not os.path.exists(pkg):
        t = time.perf_counter()
        with torch.inference_mode():
            ep = torch.export.export(m, (x,), dynamic_shapes={"x": {0: torch.export.Dim("batch", min=1, max=64)}})
        t1 = time.perf_counter()
        torch._inductor.aoti_compile_and_package(ep, package_path=pkg)
        print("export", round(t1 - t, 2), "compile", round(time.perf_counter() - t1, 2), flush=True)
    t = time.perf_counter()
    f = torch._inductor.aoti_load_package(pkg)
    print("load", round(time.perf_counter() - t, 2))
    with torch.inference_mode():
        for b in (1, 8, 16, 1):
            t = time.perf_counter()
            f(torch.zeros(b, 3, 224, 224))
            print(b, round(time.perf_counter() - t, 3), end="; ")
        ref = m(x)
        print("maxdiff", (f(x) - ref).abs().max().item())
        for b in (1, 8):
            xb = torch.randn(b, 3, 224, 224)
            c = torch.compile(m)
            c(xb)
            c(xb)
            print(f"b{b} aoti", min(timeit.repeat(lambda: f(xb), number=5, repeat=5)) / 5,
                  "jit", min(timeit.repeat(lambda: c(xb), number=5, repeat=5)) / 5,
                  "eager", min(timeit.repeat(lambda: m(xb), number=5, repeat=5)) / 5)


if __name__ == "__main__":
    main()
