"""Does quantizing SiLU (Sigmoid x Mul) and the squeeze-excite gates help INT8 on ONNX Runtime's
CPU provider? The per-layer profile of onnxruntime-int8's CPU form shows EfficientNet-B0's
Sigmoid and Mul nodes staying FP32 between a DequantizeLinear and a QuantizeLinear (docs/
layers.md). This builds, from the same FP32 export and calibration images, the CPU form as
edgebench makes it and the same with each Sigmoid and each Mul fed by a Sigmoid quantized too
(ONNX Runtime fuses them into QLinearSigmoid and QLinearMul), then in one process, arms
alternated (A B B A, twice): p50 at batch 1 of FP32 and both INT8 models, and each INT8
model's parity against FP32 on the run cache's calibration images (top-1 agreement, the
lowest cosine of the logits).

    .venv/bin/python benchmarks/int8_silu.py efficientnet_b0

Uses the run cache (CACHE, default results/cache): run an onnxruntime-int8 cell of the model
first. Prints one JSON line per model; nothing is asserted.
"""
from __future__ import annotations

import argparse
import collections
import json
import sys
import tempfile
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))
sys.path.insert(0, str(REPO))
from int8_forms import CACHE, _latest, _p50  # noqa: E402


def silu_nodes(fp32: str) -> tuple[list[str], list[str]]:
    """(Sigmoid nodes, Mul nodes one of whose inputs a Sigmoid makes) of the ONNX file."""
    import onnx

    g = onnx.load(fp32, load_external_data=False).graph
    made_by = {o: n for n in g.node for o in n.output}
    sig = [n.name for n in g.node if n.op_type == "Sigmoid"]
    mul = [n.name for n in g.node if n.op_type == "Mul" and any(
        made_by.get(i) is not None and made_by[i].op_type == "Sigmoid" for i in n.input)]
    return sig, mul


def main(models: list[str]) -> None:
    import onnx
    import onnxruntime as ort
    from onnxruntime.quantization import QuantFormat, quantize_static

    from converters.onnxruntime.quantize import _method, _Reader, auto_exclusions, form_settings
    from edgebench.data import PreparedData
    from edgebench.models import data_config

    for model in models:
        fp32 = _latest(f"onnx/{model}-*.onnx")
        cpu = max((f for f in CACHE.glob(f"int8/{model}-*.qdq.onnx")
                   if json.loads(f.with_suffix(".json").read_text(encoding="utf-8"))
                   .get("form") == "cpu"), key=lambda f: f.stat().st_mtime)
        cal_rec = json.loads(cpu.with_suffix(".json").read_text(encoding="utf-8"))["calibration"]
        folder = next(d for d in (CACHE / "data").iterdir()
                      if (d / "images.npy.sha256").is_file()
                      and cal_rec["sha256"] in (d / "images.npy.sha256").read_text())
        cfg = data_config(model)
        sig, mul = silu_nodes(fp32)
        all_mul = [n.name for n in onnx.load(fp32, load_external_data=False).graph.node
                   if n.op_type == "Mul"]
        fs = form_settings("cpu")
        silu = str(Path(tempfile.gettempdir()) / f"edgebench-int8-silu-{model}.onnx")
        reader = _Reader(str(folder), cfg["mean"], cfg["std"], int(cal_rec["n"]))
        quantize_static(fp32, silu, reader, quant_format=QuantFormat.QDQ, per_channel=True,
                        op_types_to_quantize=[*fs["op_types_to_quantize"], "Sigmoid", "Mul"],
                        activation_type=fs["activation_type"], weight_type=fs["weight_type"],
                        nodes_to_exclude=[*auto_exclusions(fp32),
                                          *(m for m in all_mul if m not in mul)],
                        calibrate_method=_method(cal_rec["method"]),
                        extra_options={**fs["extra_options"], "CalibStridedMinMax": 4})
        so = ort.SessionOptions()
        sessions = {k: ort.InferenceSession(p, so, providers=["CPUExecutionProvider"])
                    for k, p in (("fp32", fp32), ("cpu", str(cpu)), ("silu", silu))}
        data = PreparedData(folder, cfg["mean"], cfg["std"])
        xs = data.batch(0, min(16, len(data))).astype(np.float32)
        ref = sessions["fp32"].run(None, {"input": xs})[0]
        parity = {}
        for k in ("cpu", "silu"):
            y = sessions[k].run(None, {"input": xs})[0]
            cos = (y * ref).sum(1) / (np.linalg.norm(y, axis=1) * np.linalg.norm(ref, axis=1))
            parity[k] = {"top1_agreement": float((y.argmax(1) == ref.argmax(1)).mean()),
                         "cosine_min": round(float(cos.min()), 5)}
        x = xs[:1]
        times = collections.defaultdict(list)
        for order in (("fp32", "cpu", "silu"), ("silu", "cpu", "fp32")) * 2:
            for k in order:
                times[k].append(_p50(sessions[k], x))
        med = {k: float(np.median(v)) for k, v in times.items()}
        print(json.dumps({"model": model, "sigmoid_nodes": len(sig), "silu_mul_nodes": len(mul),
                          "p50_ms": {k: round(v, 3) for k, v in med.items()},
                          "ratio_vs_fp32": {k: round(med[k] / med["fp32"], 3)
                                            for k in ("cpu", "silu")},
                          "silu_over_cpu": round(med["silu"] / med["cpu"], 3),
                          "parity_vs_fp32": parity}))


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("models", nargs="*", default=["efficientnet_b0"],
                    help="models whose FP32 export and CPU-form INT8 model are in the run cache")
    main(ap.parse_args().models)
