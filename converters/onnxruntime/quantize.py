"""The calibrated INT8 model every INT8 variant runs: a QDQ ONNX (explicit quantization) made
from the FP32 ONNX export by ONNX Runtime's ``quantize_static`` (``qdq_model``).

Why this quantizer: it is the one NVIDIA's Model Optimizer itself drives for ONNX INT8 PTQ
(``modelopt.onnx.quantization`` calls ``onnxruntime.quantization.quantize_static`` with the
settings in ``QDQ_SETTINGS``), it is already installed wherever ONNX Runtime is (CPU, the
Jetson wheel, aarch64), and its QDQ output is the form TensorRT 10 consumes (implicit
calibrators are deprecated since 10.1) and ONNX Runtime runs with real INT8 kernels.
``nvidia-modelopt`` would add a CUDA-only dependency to the CPU install for the same call.

The QDQ form: activations and weights symmetric INT8 (zero point 0), weights per output
channel, biases left FP32 (TensorRT quantizes them itself). Which ops are quantized is
``QUANTIZED_OPS``; every other op (Softmax, LayerNormalization, GELU, Relu, Clip ...)
stays FP32, and ``auto_exclusions`` keeps some quantizable nodes FP32 by rule. Both are
recorded per model with their reasons (``meta["int8"]["kept_fp32"]``).

Cached under ``<cache>/int8/<model>-<key>.qdq.onnx``, sealed and sha256-checked on load; the
key holds the model and weights, the FP32 ONNX's sha256, the calibration set's hash, the
method, the image count, the exclusions and the quantizer's (ORT's) version.
"""
from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np

from converters.base import Artifact, ModelSpec
from edgebench.cache_integrity import reuse, seal

from .export import INPUT_NAME, export_onnx

CALIB_METHODS = ("entropy", "minmax", "percentile")
DEFAULT_CALIB_METHOD = "entropy"       # TensorRT's own calibrator (EntropyCalibrator2) and
                                       # Model Optimizer's ONNX INT8 default
# Ops whose inputs (and weights) are quantized: the compute ops, and the residual Add and the
# pools between them, so that a block stays INT8 end to end (TensorRT fuses Q/DQ around them;
# without Add, ONNX Runtime's CPU kept each residual branch's last Conv in FP32: seen in a
# prototype, not recorded; docs/int8.md#the-quantized-model-convertersonnxruntimequantizepy).
QUANTIZED_OPS = ("Conv", "ConvTranspose", "Gemm", "MatMul", "Add", "MaxPool",
                 "GlobalAveragePool", "AveragePool")
# The settings NVIDIA's Model Optimizer passes to quantize_static for TensorRT.
QDQ_EXTRA_OPTIONS = {
    "ActivationSymmetric": True,
    "WeightSymmetric": True,
    "QuantizeBias": False,            # biases stay FP32
    "AddQDQPairToWeight": True,       # weights stay FP32 behind a Q/DQ pair (TensorRT folds it)
    "DedicatedQDQPair": False,
    "QDQOpTypePerChannelSupportToAxis": {"Conv": 0, "ConvTranspose": 1},
}
CALIB_BATCH = 4
# Images per calibration step. quantize_static keeps every intermediate tensor of every image
# it calibrates on until it builds the histograms: 40 images of resnet152 took 10.6 GB. With
# ``CalibStridedMinMax`` it calibrates in steps of this many images and merges the
# histograms (min/max and entropy alike), so memory no longer grows with the image count.
CALIB_STEP = 4


class CalibrationError(ValueError):
    """Calibration cannot be done as asked (no images, too many asked)."""


def quantizer_version() -> str:
    import onnxruntime as ort

    return f"onnxruntime.quantization {ort.__version__}"


def settings_record(form: str = "tensorrt") -> dict:
    """The quantizer settings as the record states them."""
    cpu = form == "cpu"
    return {"quantizer": "onnxruntime.quantization.quantize_static", "format": "QDQ",
            "activations": ("uint8 asymmetric per tensor (Relu/Clip folded)" if cpu
                            else "int8 symmetric per tensor"),
            "weights": "int8 symmetric per channel", "bias": "fp32",
            "quantized_ops": [*QUANTIZED_OPS, *(["Relu", "Clip"] if cpu else [])],
            "extra_options": {**QDQ_EXTRA_OPTIONS, **({"ActivationSymmetric": False} if cpu else {})}}


class _Reader:
    """ONNX Runtime's CalibrationDataReader over a prepared (preprocessed uint8) folder; with
    ``set_range`` (images start..end), quantize_static calibrates step by step."""

    def __init__(self, folder: str, mean, std, n: int, batch: int = CALIB_BATCH):
        from edgebench.data import PreparedData

        self.data = PreparedData(Path(folder), mean, std)
        self.n = min(n, len(self.data))
        self.batch = batch
        self._it = None
        self.set_range(0, self.n)

    def __len__(self) -> int:
        return self.n

    def set_range(self, start_index: int, end_index: int) -> None:
        end = min(end_index, self.n)
        self._it = (self.data.batch(s, min(self.batch, end - s))
                    for s in range(start_index, end, self.batch))

    def rewind(self) -> None:
        self.set_range(0, self.n)

    def get_next(self):
        x = next(self._it, None)
        return None if x is None else {INPUT_NAME: np.ascontiguousarray(x, dtype=np.float32)}


def calib_step(n: int, most: int = CALIB_STEP) -> int:
    """The largest step <= ``most`` that divides ``n`` (quantize_static requires it)."""
    return next(s for s in range(min(most, n), 0, -1) if n % s == 0)


def _method(name: str):
    from onnxruntime.quantization import CalibrationMethod

    return {"entropy": CalibrationMethod.Entropy, "minmax": CalibrationMethod.MinMax,
            "percentile": CalibrationMethod.Percentile}[name]


def auto_exclusions(model_path: str) -> dict[str, str]:
    """Quantizable nodes kept FP32 by rule, each with its reason:
    - a convolution over few input channels (the stem's 3-channel RGB conv): INT8 saves
      almost nothing there and quantizes the image itself, the usual first-layer rule;
    - depthwise convolutions with few channels (<= 16) per the same reasoning: per-tensor
      activation scales fit them badly (EfficientNet/MobileNet's known PTQ loss).
    """
    import onnx

    m = onnx.load(model_path, load_external_data=False)
    inits = {i.name: i for i in m.graph.initializer}
    out: dict[str, str] = {}
    for node in m.graph.node:
        if node.op_type != "Conv" or len(node.input) < 2 or node.input[1] not in inits:
            continue
        w = inits[node.input[1]]
        dims = list(w.dims)                    # (out, in/group, kh, kw)
        group = next((a.i for a in node.attribute if a.name == "group"), 1)
        cin = dims[1] * group
        if cin <= 4:
            out[node.name] = f"few input channels ({cin}): the input image's own conv"
        elif group > 1 and group == cin and cin <= 16:
            out[node.name] = f"depthwise with {cin} channels"
    return out


def kept_fp32(model_path: str, excluded: dict[str, str]) -> dict:
    """What stays FP32 and why: op types outside ``QUANTIZED_OPS`` (counted) and the nodes
    excluded by rule or by the user."""
    import onnx

    m = onnx.load(model_path, load_external_data=False)
    other: dict[str, int] = {}
    for node in m.graph.node:
        if node.op_type not in QUANTIZED_OPS:
            other[node.op_type] = other.get(node.op_type, 0) + 1
    return {"op_types": {op: {"nodes": n, "reason": "op type not quantized (only "
                              f"{', '.join(QUANTIZED_OPS)} are)"} for op, n in sorted(other.items())},
            "nodes": excluded}


def calibration_of(spec: ModelSpec) -> dict:
    """The calibration set this run prepared for the model (``spec.options``), or an error."""
    cal = spec.options.get("int8_calibration")
    if not cal or not cal.get("folder"):
        raise CalibrationError("no calibration images were prepared for this model (the run "
                               "prepares them when an INT8 variant is planned)")
    return cal


FORMS = ("tensorrt", "cpu")


def form_settings(form: str) -> dict:
    """quantize_static's arguments for a form of the QDQ model.
    - ``tensorrt`` (the TensorRT INT8 variants'): symmetric INT8 activations, the form
      TensorRT consumes; a Relu/Clip stays FP32 between a DequantizeLinear and a
      QuantizeLinear (ORT's quantizer removes it only for asymmetric activations).
    - ``cpu`` (onnxruntime-int8's default): ONNX Runtime's own x86/ARM
      recommendation from the same calibration: unsigned INT8 activations with a zero point
      (U8S8) and Relu/Clip folded into their producer's output range, so ONNX Runtime's
      CPU provider runs each block in QLinearConv without FP32 round trips
      (docs/int8.md#speed-on-the-cpu-two-forms-of-one-calibration: the TensorRT form was slower
      than FP32 for the small models)."""
    from onnxruntime.quantization import QuantType

    if form == "cpu":
        return {"op_types_to_quantize": [*QUANTIZED_OPS, "Relu", "Clip"],
                "activation_type": QuantType.QUInt8, "weight_type": QuantType.QInt8,
                "extra_options": {**QDQ_EXTRA_OPTIONS, "ActivationSymmetric": False}}
    return {"op_types_to_quantize": list(QUANTIZED_OPS), "activation_type": QuantType.QInt8,
            "weight_type": QuantType.QInt8, "extra_options": dict(QDQ_EXTRA_OPTIONS)}


def qdq_model(spec: ModelSpec, cache: Path, form: str = "tensorrt") -> Artifact:
    """The calibrated QDQ INT8 ONNX of ``spec``, from the FP32 export; cached and sealed."""
    if form not in FORMS:
        raise CalibrationError(f"unknown INT8 form {form!r} ({', '.join(FORMS)})")
    cal = calibration_of(spec)
    method = cal.get("method") or DEFAULT_CALIB_METHOD
    if method not in CALIB_METHODS:
        raise CalibrationError(f"unknown calibration method {method!r} ({', '.join(CALIB_METHODS)})")
    fp32 = export_onnx(spec, cache)
    fp32_sha = fp32.sha256() or ""
    user_excl = [n for n in (spec.options.get("int8_exclude") or []) if n not in ("auto", "none")]
    rules = "none" not in (spec.options.get("int8_exclude") or [])
    key = spec.key("qdq", fp32_sha, cal["sha256"], method, cal["n"], calib_step(int(cal["n"])),
                   rules, sorted(user_excl),
                   quantizer_version(), json.dumps(QDQ_EXTRA_OPTIONS, sort_keys=True),
                   QUANTIZED_OPS, *([form] if form != "tensorrt" else []))
    folder = Path(cache) / "int8"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{spec.slug}-{key}.qdq.onnx"
    meta_path = path.with_suffix(".json")
    hit, rebuilt = reuse(path, executed=False, also=[meta_path], read=lambda: Artifact(
        "int8", path=str(path), cached=True,
        meta={"int8": json.loads(meta_path.read_text(encoding="utf-8"))}))
    if hit:
        return hit
    excluded = auto_exclusions(fp32.path) if rules else {}
    for n in user_excl:
        excluded[n] = "excluded by --int8-exclude"
    t = time.perf_counter()
    from onnxruntime.quantization import QuantFormat, quantize_static

    tmp = path.with_suffix(".part.onnx")
    reader = _Reader(cal["folder"], cal["mean"], cal["std"], int(cal["n"]))
    fs = form_settings(form)
    quantize_static(fp32.path, str(tmp), reader, quant_format=QuantFormat.QDQ,
                    op_types_to_quantize=fs["op_types_to_quantize"], per_channel=True,
                    activation_type=fs["activation_type"], weight_type=fs["weight_type"],
                    nodes_to_exclude=list(excluded), calibrate_method=_method(method),
                    extra_options={**fs["extra_options"],
                                   "CalibStridedMinMax": calib_step(len(reader))})
    quantize_s = time.perf_counter() - t
    tmp.replace(path)
    seal(path)
    meta = {**settings_record(form), "quantizer_version": quantizer_version(), "form": form,
            "calibration": {k: cal[k] for k in ("n", "method", "sha256", "source", "files_sha256")
                            if k in cal} | {"method": method},
            "kept_fp32": kept_fp32(fp32.path, excluded), "fp32_onnx": fp32.path,
            "fp32_onnx_sha256": fp32_sha, "quantize_s": round(quantize_s, 3), "key": key}
    meta_path.write_text(json.dumps(meta, indent=1), encoding="utf-8")
    out = {"int8": meta}
    if rebuilt:
        out["cache_rebuilt"] = rebuilt
    return Artifact("int8", path=str(path), convert_s=quantize_s + fp32.convert_s, meta=out)


class Calibrated:
    """Mixin of the variants that quantize with ``qdq_model`` (ONNX Runtime's and TensorRT's
    INT8): they need the run's calibration set, and say what it was."""

    needs_calibration = True

    def calibration_facts(self, folder: str, options: dict) -> dict:
        return {"method": options.get("int8_calib_method") or DEFAULT_CALIB_METHOD,
                "sha256": calibration_set_hash(folder)}


def calibration_set_hash(folder: str) -> str:
    """The calibration set's hash: the sha256 of its preprocessed uint8 images (what the
    calibrator saw: the images and the model's preprocessing)."""
    from edgebench.cache_integrity import digest

    return digest(str(Path(folder) / "images.npy"))
