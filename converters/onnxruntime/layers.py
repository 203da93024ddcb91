"""ONNX Runtime's own per-node profile (``SessionOptions.enable_profiling``): a session made as
the variant's, with the profiler on, runs the batch ``runs`` times after a warm-up; each
node's ``*_kernel_time`` events give its time and the execution provider that ran it.

Behind the CUDA EP a node's time is the host's time to launch its kernels (ORT's profiler
does not wait for the GPU); a TensorRT EP subgraph is one node (``TRTKernel_graph_*``) whose
time includes its whole engine. The placement of every node comes from the session's graph
assignment (``session.record_ep_graph_assignment_info``) where this onnxruntime has it."""
from __future__ import annotations

import collections
import json
import statistics
from pathlib import Path

WARMUP = 3
_KERNEL = "_kernel_time"
QDQ_OPS = ("QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear")


_PRECISION = {"float": "fp32", "float16": "fp16", "bfloat16": "bf16", "uint8": "int8",
              "int8": "int8", "int32": "int32", "int64": "int64"}


def node_times(events: list, runs: int) -> list[dict]:
    """Per node: the median of its last ``runs`` kernel times (ms), its op type, the
    provider that ran it, its precision (``_precision``) and whether it is a depthwise
    convolution, from the events of ORT's profile JSON (trace events ``{"cat": "Node",
    "name": "<node>_kernel_time", "dur": us, "args": {"op_name", "provider",
    "input_type_shape"}}``). ORT renames the nodes it fuses or re-lays out
    (``..._nchwc``), so the node's own shapes, not the ONNX file, tell a depthwise one."""
    durs: dict = collections.defaultdict(list)
    info: dict = {}
    for e in events:
        if e.get("cat") != "Node" or not str(e.get("name", "")).endswith(_KERNEL):
            continue
        name = e["name"][:-len(_KERNEL)]
        durs[name].append(float(e.get("dur", 0)))
        info[name] = e.get("args") or {}
    out = []
    for name, d in durs.items():
        args = info[name]
        inputs = [next(iter(t.items())) for t in args.get("input_type_shape") or [] if t]
        outputs = [next(iter(t.items())) for t in args.get("output_type_shape") or [] if t]
        layer = {"name": name, "op": args.get("op_name", ""), "where": args.get("provider", ""),
                 "ms": statistics.median(d[-runs:]) / 1e3, "calls": 1}
        precision = _precision([t for t, _ in inputs + outputs])
        if precision:
            layer["precision"] = precision
        if _depthwise(layer["op"], [shape for _, shape in inputs]):
            layer["depthwise"] = True
        if layer["op"] in QDQ_OPS:
            layer["qdq"] = True
        out.append(layer)
    return out


def _precision(types: list[str]) -> str:
    """int8 where any tensor of the node is 8-bit (QLinearConcat's first inputs are its
    float scales; a QGemm may write float), else its float width; "" without types."""
    if {"uint8", "int8"} & set(types):
        return "int8"
    floats = [t for t in types if t in ("float", "float16", "bfloat16")]
    return _PRECISION[floats[0]] if floats else (_PRECISION.get(types[0], "") if types else "")


def _depthwise(op: str, shapes: list) -> bool:
    """A convolution whose weight [O, I/groups, kH, kW] has one input channel per group
    while its input has several."""
    w_at = {"Conv": 1, "FusedConv": 1, "ConvInteger": 1, "QLinearConv": 3}.get(op)
    if w_at is None or len(shapes) <= w_at:
        return False
    x, w = shapes[0], shapes[w_at]       # x may be NCHWc-blocked (5-D)
    return len(w) == 4 and w[1] == 1 and w[0] > 1 and not (len(x) == 4 and x[1] == 1)


def profile(predictor, batch, runs: int) -> dict:
    """The profile of ``predictor``, whose session was made with the profiler on."""
    for _ in range(WARMUP):
        predictor(batch)
    for _ in range(runs):
        predictor(batch)
    trace = predictor.sess.end_profiling()
    try:
        events = json.loads(Path(trace).read_text(encoding="utf-8"))
    finally:
        Path(trace).unlink(missing_ok=True)
    layers = node_times(events, runs)
    notes = []
    split = {"latency_split": latency_split(predictor, batch, runs)} \
        if predictor.device == "cuda" else {}
    if any(layer["where"] == "CUDAExecutionProvider" for layer in layers):
        notes.append("CUDA EP nodes: the host's time to launch each node's kernels (ORT's "
                     "profiler does not wait for the GPU)")
    # Behind a GPU EP, where ORT placed each node of the ONNX graph (a TensorRT EP subgraph
    # is one profiled node but many ONNX nodes): the session's graph assignment.
    placed = predictor.meta.get("nodes_by_provider")
    if placed:
        split["onnx_nodes_by_provider"] = dict(placed)
    return {**split,
            "profiler": "onnxruntime SessionOptions.enable_profiling (per-node kernel time)",
            "layers": layers, "notes": notes, "matching": "onnx node name"}


def latency_split(predictor, batch, runs: int, device: str = "cuda") -> dict:
    """A GPU call through the IO binding, split where ORT's API lets the host see it: the
    input's host-to-device copy (``OrtValue.ortvalue_from_numpy`` to CUDA), the run
    (``run_with_iobinding``, which returns when the outputs are ready) and the outputs'
    device-to-host copy (``copy_outputs_to_cpu``); ms, medians, host clock. ``device``:
    where the binding puts the tensors (the CPU too, where the same calls run here)."""
    import time

    from .export import INPUT_NAME

    ort, sess = predictor.ort, predictor.sess
    b = sess.io_binding()
    split: dict = collections.defaultdict(list)
    for i in range(WARMUP + runs):
        t0 = time.perf_counter()
        x = ort.OrtValue.ortvalue_from_numpy(batch, device, 0)
        t1 = time.perf_counter()
        b.clear_binding_inputs()
        b.clear_binding_outputs()
        b.bind_ortvalue_input(INPUT_NAME, x)
        for name in predictor.out_names:
            b.bind_output(name, device)
        sess.run_with_iobinding(b)
        t2 = time.perf_counter()
        b.copy_outputs_to_cpu()
        t3 = time.perf_counter()
        if i >= WARMUP:
            for key, a, z in (("h2d_ms", t0, t1), ("compute_ms", t1, t2), ("d2h_ms", t2, t3)):
                split[key].append((z - a) * 1e3)
    return {k: round(statistics.median(v), 4) for k, v in split.items()}


def other_form_profile(load, profile_layers, batch, runs: int) -> dict:
    """An INT8 form the cell does not run: its p50 (``load()``: an unprofiled session,
    timed as the latency task times, in a short window) and its per-node profile
    (``profile_layers()``)."""
    import numpy as np

    from edgebench.measure import timed_calls

    plain = load()
    try:
        timed_calls(plain, batch, min_count=WARMUP, min_s=0.0, max_s=5.0)
        p50 = float(np.median(timed_calls(plain, batch, min_count=max(runs, 10), min_s=1.0,
                                          max_s=10.0)))
    finally:
        plain.close()
    return {**profile_layers(), "latency_p50_ms": round(p50, 4)}
