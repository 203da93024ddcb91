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
    times, calls, wrapper_us = (_device_self_times if gpu else _cpu_self_times)(prof)
    layers = [{"name": name + (" (depthwise)" if dw else ""), "op": name,
               "ms": us / runs / 1e3, "calls": calls[(name, dw)] // max(runs, 1),
               "where": "GPU" if gpu else "CPU", "depthwise": dw}
              for (name, dw), us in times.items() if us > 0]
    total = sum(x["ms"] for x in layers)
    # The mean time of one profiled call as a whole (host time), for what the operators
    # leave out.
    wrapper = wrapper_us / max(runs, 1) / 1e3 if wrapper_us else None
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


def _depthwise_conv(name: str, shapes) -> bool:
    """A convolution operator whose inputs (``shapes()``, read only for a convolution: it
    costs a call per event) say depthwise."""
    return any(k in name for k in _CONV) and _depthwise([list(x) for x in shapes()])


def _depthwise(shapes: list) -> bool:
    """Input [N, C, H, W] and weight [O, 1, kH, kW] with C > 1: one channel per group."""
    if len(shapes) < 2 or len(shapes[0]) != 4 or len(shapes[1]) != 4:
        return False
    x, w = shapes[0], shapes[1]
    return w[1] == 1 and x[1] > 1 and w[0] > 1


def _cpu_self_times(prof) -> tuple[dict, dict, float]:
    """Self time (µs) and calls per (operator, depthwise), and the profiled calls' total.

    Read from the profiler's raw events: an operator's self time is its duration less its
    direct children's, children found by nesting on their thread. torch's own
    ``key_averages()`` gives the same figures (``test_torch_self_times_match_key_averages``)
    but builds a Python object per event first, seconds for a few tens of calls of a small
    CNN, growing with the calls profiled."""
    from torch._C._autograd import DeviceType

    threads: dict = defaultdict(list)
    for e in prof.profiler.kineto_results.events():
        if e.device_type() == DeviceType.CPU:
            threads[e.start_thread_id()].append((e.start_ns(), -e.duration_ns(), e))
    times: dict = defaultdict(float)
    calls: dict = defaultdict(int)
    wrapper_ns = 0
    for rows in threads.values():
        rows.sort(key=lambda r: (r[0], r[1]))    # a parent before the children it holds
        stack: list = []                          # (end, key) of the open enclosing events
        for start, minus_dur, e in rows:
            name, dur = e.name(), -minus_dur
            while stack and stack[-1][0] <= start:
                stack.pop()
            # an operator nested in one of its own name is its re-dispatch: one call
            redispatch = bool(stack) and stack[-1][1][0] == name
            if stack:
                times[stack[-1][1]] -= dur * 1e-3
            if name == RANGE:
                wrapper_ns += dur
                key = (name, False)
            else:
                key = (name, _depthwise_conv(name, e.shapes))
            times[key] += dur * 1e-3
            calls[key] += not redispatch
            stack.append((start + dur, key))
    times.pop((RANGE, False), None)
    return times, calls, wrapper_ns * 1e-3


def _device_self_times(prof) -> tuple[dict, dict, float | None]:
    """On a GPU: CUDA self time per (operator, depthwise), through torch's
    ``key_averages`` (it ties each kernel to the operator that launched it)."""
    times: dict = defaultdict(float)
    calls: dict = defaultdict(int)
    wrapper = None
    for e in prof.key_averages(group_by_input_shape=True):
        if e.key == RANGE:
            wrapper = e.cpu_time_total
            continue
        key = (e.key, _depthwise_conv(e.key, lambda e=e: e.input_shapes or []))
        times[key] += e.self_device_time_total
        calls[key] += e.count
    return times, calls, wrapper


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
