"""TVM's per-kernel profile for the ``layers`` task: the Relax VM's instrument hook
(``VirtualMachine.set_instrument``) times every kernel call of the batch's inference, over
``runs`` inferences after a warm-up. TVM 0.27's runtime VM has no ``profile()`` (older
releases' ``VirtualMachine(profile=True)``); where this TVM has it, it is not used either, so
that the figures are the same kind on every version. On a GPU the hook waits for the device
after each kernel (its time is then the kernel's, plus a synchronisation)."""
from __future__ import annotations

import statistics
import time

WARMUP = 3


def kernel_times(vm, call, runs: int, sync=None) -> dict[str, dict]:
    """{kernel: {"ms": median time per inference, "calls": per inference}} over ``runs``
    calls of ``call()``, timed by the VM's instrument hook; ``sync()`` (a GPU's) runs before
    each clock read."""
    per_run: list[dict] = []
    cur: dict = {}
    calls: dict = {}
    start: dict = {}

    def instrument(func, name, before, ret, *args):    # noqa: ARG001 - the VM's signature
        if name.startswith("vm.builtin"):
            return 0
        if sync is not None:
            sync()
        now = time.perf_counter_ns()
        if before:
            start[name] = now
        else:
            cur[name] = cur.get(name, 0) + now - start[name]
            calls[name] = calls.get(name, 0) + 1
        return 0

    vm.set_instrument(instrument)
    try:
        for _ in range(runs):
            cur = {}
            call()
            per_run.append(cur)
    finally:
        vm.set_instrument(None)
    return {name: {"ms": statistics.median(r.get(name, 0) for r in per_run) / 1e6,
                   "calls": calls[name] // runs} for name in per_run[0]}


def profile(predictor, batch, runs: int) -> dict:
    vm, _, _ = predictor._get(int(batch.shape[0]))
    gpu = str(predictor.dev).split(":")[0] != "cpu"
    for _ in range(WARMUP):
        predictor(batch)
    times = kernel_times(vm, lambda: predictor(batch), runs,
                         sync=predictor.dev.sync if gpu else None)
    layers = [{"name": name, "op": "", "where": "GPU" if gpu else "CPU", **t}
              for name, t in times.items()]
    return {"profiler": "TVM Relax VM instrument (set_instrument): time per kernel call",
            "layers": layers, "matching": "op type",
            "notes": ["TVM fuses operators into kernels: a kernel counts as its heaviest "
                      "operator (fused_conv2d_add_relu is a convolution)"]}
