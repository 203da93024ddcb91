"""INT8's two forms on ONNX Runtime's CPU provider: the same calibration in two forms, timed
beside FP32 in one process, arms alternated (ABBA), to show why the shared QDQ model is slow
there:

- ``trt``: edgebench's INT8 model (``converters.onnxruntime.quantize``): symmetric INT8
  activations, the form TensorRT consumes;
- ``cpu``: ONNX Runtime's own CPU recommendation from the same calibration: unsigned INT8
  activations with a zero point (asymmetric) and Relu/Clip in the op list, which lets the
  quantizer fold each Relu/Clip into its producer's output range (QDQRemovableActivation
  removes them only for asymmetric activations).

For each it prints p50 at batch 1 and the node counts of ONNX Runtime's optimized graph (which
kernels it picked: QLinearConv, QGemm, QLinearAdd against FP32 Conv, Relu, Transpose).

    .venv/bin/python benchmarks/int8_forms.py resnet152 vgg16 mobilenetv2_100

Uses the run cache (results/cache) for the FP32 export and calibration images: run
``benchmarks/int8_vs_fp32.py`` (or any run with onnxruntime-int8) first.
"""
from __future__ import annotations

import collections
import glob
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
CACHE = Path(os.environ.get("CACHE", REPO / "results" / "cache"))


def _latest(pattern: str) -> str:
    files = [f for f in glob.glob(str(CACHE / pattern)) if ".part." not in f]
    if not files:
        raise SystemExit(f"nothing matches {CACHE / pattern}: run an onnxruntime-int8 cell first")
    return max(files, key=os.path.getmtime)


def _cpu_form(fp32: str, cal: dict, out: str) -> None:
    from onnxruntime.quantization import QuantFormat, QuantType, quantize_static

    from converters.onnxruntime.quantize import (QDQ_EXTRA_OPTIONS, QUANTIZED_OPS, _method,
                                                 _Reader, auto_exclusions)

    quantize_static(fp32, out, _Reader(cal["folder"], cal["mean"], cal["std"], int(cal["n"])),
                    quant_format=QuantFormat.QDQ, per_channel=True,
                    op_types_to_quantize=[*QUANTIZED_OPS, "Relu", "Clip"],
                    activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8,
                    nodes_to_exclude=list(auto_exclusions(fp32)),
                    calibrate_method=_method(cal["method"]),
                    extra_options={**QDQ_EXTRA_OPTIONS, "ActivationSymmetric": False})


def _ops(sess_path: str, ort) -> dict:
    import onnx

    with tempfile.TemporaryDirectory() as td:
        so = ort.SessionOptions()
        so.optimized_model_filepath = str(Path(td) / "opt.onnx")
        ort.InferenceSession(sess_path, so, providers=["CPUExecutionProvider"])
        g = onnx.load(so.optimized_model_filepath).graph
    keep = ("QLinearConv", "QGemm", "QLinearAdd", "QLinearGlobalAveragePool", "Conv", "FusedConv",
            "Relu", "Clip", "Transpose", "QuantizeLinear", "DequantizeLinear", "Add", "MatMul",
            "MatMulInteger", "QLinearMatMul")
    c = collections.Counter(n.op_type for n in g.node)
    return {k: c[k] for k in keep if c[k]}


def _p50(sess, x, n=15) -> float:
    for _ in range(3):
        sess.run(None, {"input": x})
    ts = []
    for _ in range(n):
        t = time.perf_counter()
        sess.run(None, {"input": x})
        ts.append(time.perf_counter() - t)
    return float(np.median(ts) * 1000)


def main(models: list[str]) -> None:
    import onnxruntime as ort

    from edgebench.sysinfo import cpu_int8

    print(json.dumps({"cpu_int8": cpu_int8(), "onnxruntime": ort.__version__}))
    for model in models:
        fp32 = _latest(f"onnx/{model}-*.onnx")
        # The newest TensorRT-form QDQ model of this model (a cpu-form one says "form": "cpu").
        cands = sorted((f for f in glob.glob(str(CACHE / "int8" / f"{model}-*.qdq.onnx"))
                        if json.loads(Path(f).with_suffix(".json").read_text(encoding="utf-8"))
                        .get("form", "tensorrt") == "tensorrt"), key=os.path.getmtime)
        if not cands:
            raise SystemExit(f"{model}: no TensorRT-form QDQ model in {CACHE / 'int8'}")
        trt = cands[-1]
        meta = json.loads(Path(trt).with_suffix(".json").read_text(encoding="utf-8"))
        cal_rec = meta["calibration"]
        folders = [d for d in glob.glob(str(CACHE / "data" / "*"))
                   if (Path(d) / "images.npy.sha256").is_file()
                   and cal_rec["sha256"] in (Path(d) / "images.npy.sha256").read_text()]
        if not folders:
            raise SystemExit(f"{model}: the calibration images of {trt} are not in the cache")
        from edgebench.models import data_config

        cfg = data_config(model)
        cal = {"folder": folders[0], "mean": cfg["mean"], "std": cfg["std"], "n": cal_rec["n"],
               "method": cal_rec["method"]}
        cpu = str(Path(tempfile.gettempdir()) / f"edgebench-int8-cpu-form-{model}.onnx")
        if not os.path.exists(cpu):
            _cpu_form(fp32, cal, cpu)
        so = ort.SessionOptions()
        so.intra_op_num_threads = os.cpu_count() or 1
        sessions = {name: ort.InferenceSession(p, so, providers=["CPUExecutionProvider"])
                    for name, p in (("fp32", fp32), ("trt", trt), ("cpu", cpu))}
        x = np.random.default_rng(0).normal(size=(1, *cfg["input_size"])).astype(np.float32)
        times = collections.defaultdict(list)
        for order in (("fp32", "trt", "cpu"), ("cpu", "trt", "fp32"),
                      ("fp32", "trt", "cpu"), ("cpu", "trt", "fp32")):
            for name in order:
                times[name].append(_p50(sessions[name], x))
        med = {k: float(np.median(v)) for k, v in times.items()}
        print(json.dumps({"model": model, "p50_ms": {k: round(v, 2) for k, v in med.items()},
                          "ratio_vs_fp32": {k: round(med[k] / med["fp32"], 3) for k in ("trt", "cpu")},
                          "ops": {k: _ops(p, ort) for k, p in (("trt", trt), ("cpu", cpu))}}))


if __name__ == "__main__":
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("models", nargs="*", default=["resnet152", "vgg16", "mobilenetv2_100"],
                    help="models whose FP32 export and INT8 model are in the run cache "
                         "(CACHE, default results/cache); one JSON line each")
    main(ap.parse_args().models)
