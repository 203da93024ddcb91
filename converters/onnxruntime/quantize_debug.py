"""Which layers of a QDQ model drift most from FP32: the per-layer table the report shows for
an INT8 model that loses accuracy, the way Polygraphy compares layer outputs.

ONNX Runtime's ``quantization.qdq_loss_debug`` does the work: both models are rewritten to
output every intermediate tensor, run on the same images, and each quantized tensor is
matched with its FP32 twin. Two signal-to-quantization-noise ratios per tensor (dB, lower is
worse):
- ``sqnr_vs_fp32_db`` (ORT's ``xmodel_err``): the QDQ model's tensor against the FP32 model's,
  so the error accumulated from the input up to this layer;
- ``sqnr_local_db`` (``qdq_err``): the tensor before its QuantizeLinear against after its
  DequantizeLinear, the error this one quantization step adds.
Each row names the node that produces the tensor: ``--int8-exclude NODE`` keeps it FP32.
"""
from __future__ import annotations

import math
import tempfile
from pathlib import Path

import numpy as np

from .export import INPUT_NAME


class _Batches:
    def __init__(self, batches: list[np.ndarray]):
        self.batches = list(batches)
        self._it = iter(self.batches)

    def get_next(self):
        x = next(self._it, None)
        return None if x is None else {INPUT_NAME: x}

    def rewind(self):
        self._it = iter(self.batches)

    def __iter__(self):          # collect_activations iterates the reader (ORT 1.31)
        self.rewind()
        return iter(self.get_next, None)


def _db(x) -> float | None:
    v = float(x)
    return None if math.isnan(v) else (round(v, 2) if math.isfinite(v) else 999.0)


def layer_drift(fp32_path: str, qdq_path: str, images: np.ndarray, top: int = 12,
                batch: int = 4) -> dict:
    """The ``top`` quantized tensors whose values drift most from FP32 on ``images`` (NCHW
    float32), worst first, with the producing node and op type."""
    import onnx
    from onnxruntime.quantization.qdq_loss_debug import (collect_activations,
                                                         compute_activation_error,
                                                         create_activation_matching,
                                                         modify_model_output_intermediate_tensors)

    batches = [np.ascontiguousarray(images[i:i + batch], dtype=np.float32)
               for i in range(0, len(images), batch)]
    with tempfile.TemporaryDirectory(prefix="edgebench-drift-") as tmp:
        aug_f, aug_q = str(Path(tmp) / "f.onnx"), str(Path(tmp) / "q.onnx")
        modify_model_output_intermediate_tensors(fp32_path, aug_f)
        modify_model_output_intermediate_tensors(qdq_path, aug_q)
        providers = ["CPUExecutionProvider"]
        float_act = collect_activations(aug_f, _Batches(batches), execution_providers=providers)
        qdq_act = collect_activations(aug_q, _Batches(batches), execution_providers=providers)
    errors = compute_activation_error(create_activation_matching(qdq_act, float_act))
    producer = {}
    for node in onnx.load(fp32_path, load_external_data=False).graph.node:
        for out in node.output:
            producer[out] = (node.name, node.op_type)
    rows = []
    for tensor, err in errors.items():
        if "xmodel_err" not in err:
            continue
        node, op = producer.get(tensor, ("", ""))
        rows.append({"tensor": tensor, "node": node, "op_type": op,
                     "sqnr_vs_fp32_db": _db(err["xmodel_err"]),
                     "sqnr_local_db": _db(err.get("qdq_err", float("nan")))})
    rows.sort(key=lambda r: (r["sqnr_vs_fp32_db"] is None, r["sqnr_vs_fp32_db"] or 0.0))
    return {"method": "onnxruntime.quantization.qdq_loss_debug (SQNR, dB: lower drifts more)",
            "n_images": int(len(images)), "tensors_compared": len(rows), "worst": rows[:top]}
