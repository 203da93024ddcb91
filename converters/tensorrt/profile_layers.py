"""TensorRT's per-layer profile for the ``layers`` task, as ``trtexec --dumpProfile
--exportLayerInfo`` gives it: an ``IProfiler`` on the execution context reports each layer's
time after every enqueue, and the engine inspector (``get_engine_information``,
``LayerInformationFormat.JSON``) says what each layer is: its type, output precision, tactic,
and whether it runs on a DLA core or the GPU.

The call is split as trtexec splits it, timed with CUDA events on the predictor's stream:
host-to-device copy, compute (the enqueue's GPU time) and device-to-host copy; ``enqueue`` is
the host's time inside ``execute_async_v3``. Profiling runs without the CUDA graph (a replayed
graph reports no layer times)."""
from __future__ import annotations

import json
import statistics
import time
from collections import defaultdict

WARMUP = 3
_PRECISION = (("int8", "int8"), ("fp16", "fp16"), ("half", "fp16"), ("fp32", "fp32"),
              ("float", "fp32"), ("fp8", "fp8"), ("int4", "int4"), ("bf16", "bf16"))


def precision_of(fmt: str) -> str:
    low = fmt.lower()
    return next((p for word, p in _PRECISION if word in low), "")


def layer_info(text: str, dla: bool = False) -> dict[str, dict]:
    """{layer name: {"op", "precision", "tactic", "where", "depthwise"}} from the inspector's
    JSON. Names only (an engine built without ProfilingVerbosity.DETAILED): empty entries."""
    info = json.loads(text)
    out: dict[str, dict] = {}
    for layer in info.get("Layers", []) if isinstance(info, dict) else []:
        if not isinstance(layer, dict):
            out[str(layer)] = {}
            continue
        kind = str(layer.get("LayerType", ""))
        outputs = layer.get("Outputs") or [{}]
        name = str(layer.get("Name", ""))
        on_dla = "dla" in kind.lower() or (dla and "ForeignNode" in name)
        groups, maps = layer.get("Groups", 1), layer.get("OutMaps")
        out[name] = {"op": kind, "precision": precision_of(str(outputs[0].get("Format/Datatype", ""))),
                     "tactic": layer.get("TacticName") or layer.get("TacticValue") or "",
                     "where": "DLA" if on_dla else "GPU",
                     "qdq": layer.get("Origin") == "QDQ",
                     "depthwise": "depthwise" in kind.lower() or (groups > 1 and groups == maps)}
    return out


def profile(predictor, batch, runs: int) -> dict:
    import tensorrt as trt

    torch = predictor.torch

    class LayerTimes(trt.IProfiler):
        def __init__(self):
            trt.IProfiler.__init__(self)
            self.ms: dict = defaultdict(list)

        def report_layer_time(self, layer_name, ms):
            self.ms[layer_name].append(ms)

    n = int(batch.shape[0])
    shape = (n, *predictor.max_shape[1:])
    stream = predictor.stream
    events = [torch.cuda.Event(enable_timing=True) for _ in range(4)]
    split = defaultdict(list)
    times = LayerTimes()

    def call(profiled: bool):
        np_in = predictor.h_in_np[:n]
        np_in[...] = batch
        with torch.cuda.stream(stream):
            events[0].record(stream)
            predictor.d_in[:n].copy_(predictor.h_in[:n], non_blocking=True)
            events[1].record(stream)
            predictor._prepare(shape)
            t = time.perf_counter()
            predictor._enqueue()
            enqueue_ms = (time.perf_counter() - t) * 1e3
            events[2].record(stream)
            predictor.h_out[:n].copy_(predictor.d_out[:n], non_blocking=True)
            events[3].record(stream)
        stream.synchronize()
        if profiled:
            split["h2d_ms"].append(events[0].elapsed_time(events[1]))
            split["compute_ms"].append(events[1].elapsed_time(events[2]))
            split["d2h_ms"].append(events[2].elapsed_time(events[3]))
            split["enqueue_ms"].append(enqueue_ms)

    for _ in range(WARMUP):
        call(False)
    predictor.context.profiler = times
    try:
        for _ in range(runs):
            call(True)
    finally:
        predictor.context.profiler = None
    inspector = predictor.engine.create_engine_inspector()
    info = layer_info(inspector.get_engine_information(trt.LayerInformationFormat.JSON),
                      dla=predictor.dla_core is not None)
    layers = []
    for name, ms in times.ms.items():
        about = info.get(name, {})
        layers.append({"name": name, "op": about.get("op", ""), "ms": statistics.median(ms[-runs:]),
                       "calls": 1, "where": about.get("where", "GPU"),
                       "precision": about.get("precision", ""), "tactic": about.get("tactic", ""),
                       "depthwise": bool(about.get("depthwise")),
                       "qdq": bool(about.get("qdq"))})
    return {"profiler": "TensorRT IProfiler (per-layer GPU time) with the engine inspector's "
                        "layer information",
            "layers": layers, "matching": "onnx node name",
            "latency_split": {k: round(statistics.median(v), 4) for k, v in split.items()},
            "notes": ["TensorRT fuses ONNX nodes into one layer (names joined with ' + '); "
                      "reformat layers are its own layout and precision changes"]}
