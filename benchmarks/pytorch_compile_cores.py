"""How many of the machine's cores torch.compile keeps busy while it compiles a model at
every batch shape the default run's cells use ([1, 8, 2, 4, 16], edgebench.model_branch):
wall time against CPU time of this process and of inductor's compile workers. A ratio near
1 means the compile is bound by one Python thread, so a second core would only help by
running a second compile beside it.

    TORCHINDUCTOR_CACHE_DIR=$(mktemp -d) .venv/bin/python benchmarks/pytorch_compile_cores.py MODEL
(an empty TORCHINDUCTOR_CACHE_DIR for a cold compile)
"""
from __future__ import annotations

import argparse
import json
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def cpu_s() -> tuple[float, float]:
    me, kids = (resource.getrusage(w) for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
    return me.ru_utime + me.ru_stime, kids.ru_utime + kids.ru_stime


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model", help="a study model, e.g. resnet152")
    name = ap.parse_args().model

    import numpy as np
    import torch

    from converters.pytorch import TorchPredictor
    from edgebench.model_branch import graphs_compiled
    from edgebench.models import make_spec

    spec = make_spec(name, "random-seed-0")
    model = spec.build()
    self0, kids0 = cpu_s()
    t0 = time.perf_counter()
    pred = TorchPredictor(torch.compile(model, backend="inductor"), "cpu", {})
    for b in (1, 8, 2, 4, 16):
        pred(np.zeros((b, *spec.input_size), dtype=np.float32))
    wall = time.perf_counter() - t0
    # Reap inductor's compile workers: a child's CPU time is counted once it has been waited for.
    from torch._inductor.async_compile import shutdown_compile_workers

    shutdown_compile_workers()
    self1, kids1 = cpu_s()
    cpu_self, cpu_kids = self1 - self0, kids1 - kids0
    print(json.dumps({"model": spec.name, "graphs": graphs_compiled(), "wall_s": round(wall, 1),
                      "cpu_self_s": round(cpu_self, 1), "cpu_compile_workers_s": round(cpu_kids, 1),
                      "cores_busy": round((cpu_self + cpu_kids) / wall, 2)}))


if __name__ == "__main__":
    main()
