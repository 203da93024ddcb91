"""PyTorch's per-operator profile (``torch.profiler``) for the ``layers`` task: the batch runs
``runs`` times under the profiler after a warm-up, each call inside a ``record_function``
range; an operator's time is its self time (time in its own code, not in the operators it
calls), so the operators' times add up without counting a call twice.

Eager PyTorch gives each ATen operator (a convolution is ``aten::mkldnn_convolution`` or
``aten::_convolution``, its inputs' shapes tell a depthwise one). torch.compile gives the
operators Inductor leaves to ATen and oneDNN (convolutions, matmuls) by name; the kernels it
generates and fuses itself run as one compiled graph (``CompiledFxGraph``), whose self time
is their sum and counts as ``other``. On a GPU the CUDA time of each operator is used
(``device_time``): the host only launches kernels."""
from __future__ import annotations

import statistics
from collections import defaultdict

WARMUP = 3
RANGE = "edgebench::inference"
_CONV = ("convolution", "conv2d", "mkldnn_convolution", "_convolution_pointwise")


def profile(predictor, batch, runs: int) -> dict:
    from torch.profiler import ProfilerActivity, profile as torch_profile, record_function

    for _ in range(WARMUP):
        predictor(batch)
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if predictor.cuda else [])
    with torch_profile(activities=activities, record_shapes=True) as prof:
        for _ in range(runs):
            with record_function(RANGE):
                predictor(batch)
    gpu = bool(predictor.cuda)
    times: dict = defaultdict(float)
    calls: dict = defaultdict(int)
    depthwise: dict = {}
    for e in prof.key_averages(group_by_input_shape=True):
        if e.key == RANGE:
            continue
        us = (e.self_device_time_total if gpu else e.self_cpu_time_total)
        if us <= 0:
            continue
        shapes = [list(s) for s in (e.input_shapes or [])]
        dw = any(k in e.key for k in _CONV) and _depthwise(shapes)
        key = (e.key, dw)
        times[key] += us
        calls[key] += e.count
        depthwise[key] = dw
    layers = [{"name": name + (" (depthwise)" if dw else ""), "op": name,
               "ms": us / runs / 1e3, "calls": calls[(name, dw)] // max(runs, 1),
               "where": "GPU" if gpu else "CPU", "depthwise": dw}
              for (name, dw), us in times.items()]
    total = sum(x["ms"] for x in layers)
    wrapper = _wrapper_ms(prof, RANGE, runs)
    split = {"latency_split": latency_split(predictor, batch, runs)} if gpu else {}
    return {**split,
            "profiler": "torch.profiler, operator level (self time per ATen operator"
                        + ("; CUDA time)" if gpu else ")"),
            "layers": layers, "matching": "op type",
            # the operators' self times lie inside the calls: never below 0 unless broken
            "unattributed_ms": round(wrapper - total, 4) if wrapper else None,
            "notes": (["torch.compile: Inductor's own fused kernels run inside one compiled "
                       "graph (its self time, type other)"]
                      if any("CompiledFxGraph" in x["op"] or "Torch-Compiled" in x["op"]
                             for x in layers) else [])}


def _depthwise(shapes: list) -> bool:
    """Input [N, C, H, W] and weight [O, 1, kH, kW] with C > 1: one channel per group."""
    if len(shapes) < 2 or len(shapes[0]) != 4 or len(shapes[1]) != 4:
        return False
    x, w = shapes[0], shapes[1]
    return w[1] == 1 and x[1] > 1 and w[0] > 1


def _wrapper_ms(prof, name: str, runs: int) -> float | None:
    """The mean time of one profiled call as a whole (host time), for what the operators
    leave out."""
    for e in prof.key_averages():
        if e.key == name:
            return e.cpu_time_total / max(runs, 1) / 1e3
    return None


def latency_split(predictor, batch, runs: int) -> dict:
    """A GPU call split as trtexec splits it, with CUDA events on the current stream: the
    host-to-device copy, the forward pass (compute) and the device-to-host copy (ms,
    medians); enqueue is the host's time to issue the forward pass."""
    import time

    import torch

    split: dict = defaultdict(list)
    ev = [torch.cuda.Event(enable_timing=True) for _ in range(4)]
    with torch.inference_mode():
        for i in range(WARMUP + runs):
            ev[0].record()
            x = torch.from_numpy(batch).to(predictor.device, non_blocking=True)
            ev[1].record()
            t = time.perf_counter()
            y = predictor.module(x)
            enqueue = (time.perf_counter() - t) * 1e3
            ev[2].record()
            y = y[0] if isinstance(y, (tuple, list)) else y
            y.float().cpu()
            ev[3].record()
            torch.cuda.synchronize()
            if i >= WARMUP:
                split["h2d_ms"].append(ev[0].elapsed_time(ev[1]))
                split["compute_ms"].append(ev[1].elapsed_time(ev[2]))
                split["d2h_ms"].append(ev[2].elapsed_time(ev[3]))
                split["enqueue_ms"].append(enqueue)
    return {k: round(statistics.median(v), 4) for k, v in split.items()}
