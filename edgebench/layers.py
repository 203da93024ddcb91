"""The ``layers`` task: where one inference's time goes, layer by layer, as the variant's own
runtime profiles it (``Converter.profile_layers``: ONNX Runtime's profiler, TVM's VM
instrument, ``torch.profiler``, ``jax.profiler``, TensorRT's ``IProfiler``), at batch 1 on
the first image of the run's data.

The record holds every layer (the slowest ``KEEP``), each with one of the operator types of
``edgebench.layer_types``, the time per type, how many layers ran where (CPU, GPU, DLA, an
ONNX Runtime EP), for a reduced-precision variant how many layers stayed FP32 and their time,
and the profile's total set against the variant's own p50 from its latency cell in the same
run: a profile more than ``UNRELIABLE`` off that p50 is flagged (a profiler that adds its own
cost per layer, or misses time between layers, is not a measurement of the p50).

It runs in a cell of its own, after the latency cell: profiling never touches the latency
task's figures."""
from __future__ import annotations

import time
from collections import Counter

from .layer_types import TYPES, op_type

UNRELIABLE = 0.15          # |profile total / latency p50 - 1| above this: flagged
KEEP = 400                 # layers kept in the record, slowest first


def run(cell, conv, artifact, spec, predictor, data, prof: dict):
    """The cell's (status, fields, reason)."""
    runs = int(prof.get("layers", {}).get("runs", 20))
    batch = data.batch(0, 1)
    t = time.perf_counter()
    profile = conv.profile_layers(artifact, spec, predictor, batch, runs)
    fields = summarize(profile, cell.latency_p50_ms, conv.precision)
    fields["layers_profile_s"] = round(time.perf_counter() - t, 3)
    fields["layers_runs"] = runs
    return "ok", fields, ""


def summarize(profile: dict, latency_p50_ms: float | None, precision: str = "fp32") -> dict:
    """The record's fields from a runtime's profile (``Converter.profile_layers``)."""
    layers = []
    for layer in profile["layers"]:
        kind = op_type(layer.get("name", ""), layer.get("op", ""), bool(layer.get("depthwise")))
        layers.append({**layer, "ms": round(float(layer["ms"]), 5), "type": kind})
    layers.sort(key=lambda x: -x["ms"])
    total = sum(x["ms"] for x in layers)
    by_type = {k: round(sum(x["ms"] for x in layers if x["type"] == k), 5) for k in TYPES}
    out = {"profiler": profile["profiler"], "layer_count": len(layers),
           "profile_total_ms": round(total, 4),
           "by_type_ms": {k: v for k, v in by_type.items() if v > 0},
           "placement": dict(Counter(x.get("where") or "unknown" for x in layers)),
           "matching": profile.get("matching", "op type"),
           "layers": layers[:KEEP], "notes": list(profile.get("notes", []))}
    if len(layers) > KEEP:
        out["notes"].append(f"{len(layers) - KEEP} faster layers left out of the record")
    for key in ("unattributed_ms", "latency_split", "onnx_nodes_by_provider"):
        if key in profile:
            out[key] = profile[key]
    if "latency_split" not in out and not any(_on_gpu(x.get("where", "")) for x in layers):
        out["latency_split"] = {"skipped": "computes on the CPU: no host-device copies to split"}
    out["against_latency"] = against_latency(total, latency_p50_ms)
    if precision != "fp32":
        out["reduced_precision"] = stayed_fp32(layers, precision)
    if "form" in profile:                 # an INT8 variant: the form it ran, and the others
        out["form"] = profile["form"]
        out["other_forms"] = {
            form: {**summarize(p, p["latency_p50_ms"], precision), "form": form,
                   "latency_p50_ms_measured_here": p["latency_p50_ms"]}
            for form, p in profile.get("other_forms", {}).items()}
    return out


def _on_gpu(where: str) -> bool:
    return any(w in where.upper() for w in ("GPU", "CUDA", "TENSORRT", "DLA"))


def against_latency(total_ms: float, p50_ms: float | None) -> dict:
    """The profile's total over the latency cell's p50, and whether to trust the profile."""
    if not p50_ms:
        return {"latency_p50_ms": None, "ratio": None, "reliable": None,
                "note": "not checked: no latency figure for this variant in this run "
                        "(add the latency task)"}
    ratio = total_ms / p50_ms
    ok = abs(ratio - 1) <= UNRELIABLE
    note = "" if ok else (f"the profile's total is {ratio:.2f}x the latency p50 (more than "
                          f"{UNRELIABLE:.0%} off): read its shares, not its milliseconds")
    return {"latency_p50_ms": p50_ms, "ratio": round(ratio, 4), "reliable": ok, "note": note}


def stayed_fp32(layers: list, precision: str) -> dict:
    """In a reduced-precision variant, the layers that ran in FP32 (not the quantize and
    dequantize layers between precisions, which the runtime's profile marks ``qdq``, counted
    apart) and their time."""
    known = [x for x in layers if x.get("precision")]
    if not known:
        return {"precision": precision, "fp32_layers": None,
                "note": "this runtime's profile does not give each layer's precision"}
    qdq = [x for x in known if x.get("qdq")]
    fp32 = [x for x in known if x["precision"] == "fp32" and not x.get("qdq")]
    return {"precision": precision, "layers_with_precision": len(known),
            "fp32_layers": len(fp32), "fp32_ms": round(sum(x["ms"] for x in fp32), 4),
            "fp32_ops": dict(Counter(x.get("op") or x["type"] for x in fp32)),
            "quantize_dequantize_layers": len(qdq),
            "quantize_dequantize_ms": round(sum(x["ms"] for x in qdq), 4)}
