"""What the fork server's model branch does, n times over: a helper thread runs the
torch.compile'd model (OpenMP + MKL) at the cells' batch sizes, is joined, and the main thread
forks a child that runs the model at batch 1 and 4. A child that has not ended within 20 s is
counted as hung and killed. SETTLE=1 first waits as the model branch does
(edgebench.forkserver._threads_settled) until the process's threads stop changing.

    TORCHINDUCTOR_COMPILE_THREADS=1 TORCHINDUCTOR_CACHE_DIR=/tmp/fac/inductor \\
        .venv/bin/python benchmarks/fork_after_compile_race.py efficientnet_b0 100
    SETTLE=1 TORCHINDUCTOR_COMPILE_THREADS=1 TORCHINDUCTOR_CACHE_DIR=/tmp/fac/inductor \\
        .venv/bin/python benchmarks/fork_after_compile_race.py efficientnet_b0 100
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from fork_after_compile_branch import fork_after  # noqa: E402  (beside this script)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model", help="a timm model, e.g. efficientnet_b0")
    ap.add_argument("n", type=int, help="how many forks")
    args = ap.parse_args()

    import timm
    import torch

    torch.set_num_threads(2)
    model = torch.compile(timm.create_model(args.model, pretrained=False).eval())

    def run(sizes=(1, 16, 2, 4, 8)):
        with torch.no_grad():
            for b in sizes:
                model(torch.randn(b, 3, 224, 224))

    hung, n = 0, args.n
    for _ in range(n):
        pid = fork_after(run, lambda: run((1, 4)), timeout=20)
        if pid is not None:
            hung += 1
            os.kill(pid, 9)
            os.waitpid(pid, 0)
    print(f"{args.model} SETTLE={os.environ.get('SETTLE', '')} hung {hung} of {n}", flush=True)


if __name__ == "__main__":
    main()
