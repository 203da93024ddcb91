"""``tensorrt-int8``: the FP16 variant's engine path on the calibrated QDQ model (explicit
quantization); only the source ONNX, its facts and the precision flags differ."""
from __future__ import annotations

from pathlib import Path

from converters import register
from converters.base import Artifact, ModelSpec
from converters.onnxruntime.quantize import Calibrated

from . import TensorRTFP16
from .plan import TrtPlan

@register
class TensorRTINT8(Calibrated, TensorRTFP16):
    """TensorRT INT8 by explicit quantization: the network is parsed from the calibrated QDQ
    ONNX (``converters.onnxruntime.quantize.qdq_model``), so no calibrator runs and no
    calibration cache exists; the precision flags per TensorRT version are ``plan_for``'s
    (plan.py). Everything else (profiles, DLA, caches, predictor) is the FP16 variant's."""

    name = "tensorrt-int8"
    precision = "int8"
    description = ("TensorRT INT8 engine from the calibrated QDQ ONNX (explicit quantization; "
                   "INT8+FP16 builder flags on TensorRT <= 10, strongly typed on 11; DLA as "
                   "tensorrt-fp16)")
    cli_options = ()      # the --trt-* flags come with tensorrt-fp16 (--trt-fp16-mode: ignored)
    # Calibrated: the run prepares the calibration set qdq_model quantizes with
    compares_with = "tensorrt-fp16"     # the report sets INT8 speed beside FP16's
    in_default_run = False      # opt-in, as every INT8 variant (docs/int8.md: the default run's time)

    def versions(self) -> dict:
        out = {k: v for k, v in super().versions().items() if k != "onnxconverter_common"}
        try:
            from converters.onnxruntime.quantize import quantizer_version

            out["quantizer"] = quantizer_version()
        except ImportError:
            out["quantizer"] = None
        return out

    def _source_missing(self, plan: TrtPlan) -> str:
        try:
            import onnx  # noqa: F401
            import onnxruntime.quantization  # noqa: F401
        except ImportError as e:
            return (f"the INT8 QDQ model is made by onnxruntime.quantization and {e}: "
                    "pip install 'edgebench[onnx]'")
        return ""

    def _plan_facts(self, plan: TrtPlan) -> dict:
        outside = ("FP16 or FP32 (BuilderFlag.FP16: TensorRT chooses per layer)"
                   if "FP16" in plan.precision_flags else
                   "FP32 (strongly typed: as the QDQ ONNX types them)")
        return {"quantization": "explicit (QDQ ONNX; no calibrator, no calibration cache)",
                "network_typing": plan.typing,
                "precision_flags": list(plan.precision_flags),
                "layers_outside_qdq": outside}

    def _source_onnx(self, spec: ModelSpec, cache: Path) -> Artifact:
        from converters.onnxruntime.quantize import qdq_model

        return qdq_model(spec, cache)

    def _source_meta(self, spec: ModelSpec, source: Artifact) -> dict:
        out = {"onnx_kind": "int8 QDQ (converters.onnxruntime.quantize.qdq_model)",
               "int8": source.meta.get("int8")}
        mode = (spec.options or {}).get("trt_fp16_mode")
        if mode:
            out["ignored_options"] = {"--trt-fp16-mode": f"{mode}: does not apply to "
                                      "tensorrt-int8 (its precision flags are fixed per "
                                      "TensorRT version)"}
        return out

    def _source_timing(self, source: Artifact) -> dict:
        return {}     # the calibration's time is in meta["int8"]["quantize_s"]
