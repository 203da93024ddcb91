"""The model branch's life, n times: from a parent that has imported torch, timm and inductor
(as the fork server's variant branch has), fork a "branch"; in it a helper thread compiles the
model with torch.compile and runs it at the cells' batch sizes; the helper is joined; then the
branch forks a "cell" that runs the model at batch 1 and 4. A cell not done within 30 s is
counted as hung (its stack, by py-spy where installed, goes to hung-<pid>.txt) and killed.
SETTLE=1 waits first as the fork server does (edgebench.forkserver._threads_settled).
COLD=1 gives each branch an empty inductor cache (a run's first compile of the model).

    TORCHINDUCTOR_COMPILE_THREADS=1 TORCHINDUCTOR_CACHE_DIR=/tmp/fac/inductor \\
        .venv/bin/python benchmarks/fork_after_compile_branch.py efficientnet_b0 15
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from edgebench.forkserver import _threads_settled  # noqa: E402

torch = timm = None                 # imported by main, before any fork: the parent holds them


def run(model, sizes):
    with torch.no_grad():
        for b in sizes:
            model(torch.randn(b, 3, 224, 224))


def fork_after(prepare, cell, timeout: float) -> int | None:
    """What the model branch does: ``prepare`` in a helper thread, joined (SETTLE=1: then wait
    until the threads settle), then fork a child that runs ``cell``. None when the child ended
    within ``timeout`` s, else its pid (still running: the caller inspects and kills it)."""
    helper = threading.Thread(target=prepare)
    helper.start()
    helper.join()
    if os.environ.get("SETTLE"):
        _threads_settled()
    pid = os.fork()
    if pid == 0:
        cell()
        os._exit(0)
    deadline = time.time() + timeout
    while time.time() < deadline:
        if os.waitpid(pid, os.WNOHANG)[0]:
            return None
        time.sleep(0.05)
    return pid


def branch(name: str) -> int:
    """In the forked branch: 0 when its cell ended, 1 when the cell hung."""
    holder = {}
    if os.environ.get("COLD"):          # a cache of its own: compile from nothing, as a new run
        import tempfile
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = tempfile.mkdtemp(prefix="fac-inductor-")

    def prepare():
        holder["m"] = torch.compile(timm.create_model(name, pretrained=False).eval())
        run(holder["m"], (1, 16, 2, 4, 8))

    pid = fork_after(prepare, lambda: run(holder["m"], (1, 4)), timeout=30)
    if pid is None:
        return 0
    spy = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
    if Path(spy).exists():
        with open(f"hung-{pid}.txt", "w", encoding="utf-8") as f:
            subprocess.run([spy, "dump", "--native", "--pid", str(pid)], stdout=f, stderr=f,
                           check=False)
    os.kill(pid, 9)
    os.waitpid(pid, 0)
    return 1


def main() -> None:
    global timm, torch
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model", help="a timm model, e.g. efficientnet_b0")
    ap.add_argument("n", type=int, help="how many branches (each forks one cell)")
    args = ap.parse_args()
    name, n = args.model, args.n
    import timm
    import torch
    import torch._dynamo  # noqa: F401  (what the fork server's variant branch has imported)
    import torch._inductor  # noqa: F401
    hung, failed = 0, 0
    for _ in range(n):
        pid = os.fork()
        if pid == 0:
            code = 2                    # the branch failed: neither ended nor hung
            try:
                code = branch(name)
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        hung += os.WEXITSTATUS(status) == 1
        failed += os.WEXITSTATUS(status) not in (0, 1)
    print(f"{name} SETTLE={os.environ.get('SETTLE', '')} COLD={os.environ.get('COLD', '')} "
          f"hung {hung} of {n} (failed: {failed})", flush=True)


if __name__ == "__main__":
    main()
