"""TensorRT variant: what can be checked without a GPU.

- version-branch selection (pure functions taking a version string),
- engine-cache key composition,
- the FP16 ONNX conversion TensorRT 11 needs, on real exported models, run by ORT CPU,
- available() saying no, with the real reason, on a machine without TensorRT or CUDA.
Building and running an engine needs a GPU and is not tested here.
"""
from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from converters.tensorrt.onnx_fp16 import to_fp16_onnx
from converters.tensorrt.plan import (DEFAULT_MAX_BATCH, engine_cache_key, parse_version, plan_for,
                                      profile_shapes, timing_cache_path, variant_options)

REPO = Path(__file__).resolve().parents[1]


# ------------------------------------------------------------------ version branches

@pytest.mark.parametrize("version,explicit,fp16_via,io_api,shipped", [
    ("8.4.1.5", True, "builder_flag", "bindings", "JetPack 5.0"),
    ("8.5.2.2", True, "builder_flag", "tensors", "JetPack 5.1"),
    ("8.6.2.3", True, "builder_flag", "tensors", "JetPack 6.0"),     # the paper's TensorRT
    ("10.3.0.30", False, "builder_flag", "tensors", "JetPack 6.1/6.2"),
    ("10.13.3.9", False, "builder_flag", "tensors", ""),
    ("11.0.0", False, "fp16_onnx", "tensors", ""),
    ("11.4.1.2", False, "fp16_onnx", "tensors", ""),
])
def test_plan_for_each_tensorrt_generation(version, explicit, fp16_via, io_api, shipped):
    p = plan_for(version)
    assert p.explicit_batch_flag is explicit
    assert p.fp16_via == fp16_via
    assert p.io_api == io_api
    assert p.shipped_with == shipped
    assert p.strongly_typed_flag is False      # auto never asks for it on 8.x/10.x; 11 implies it


def test_plan_fp16_mode_overrides_and_refusals():
    p = plan_for("10.3.0", "onnx")
    assert p.fp16_via == "fp16_onnx" and p.strongly_typed_flag is True
    assert plan_for("11.1.0", "onnx").strongly_typed_flag is False   # implied, flag not passed
    with pytest.raises(ValueError, match="no BuilderFlag.FP16"):
        plan_for("11.0.0", "flag")
    with pytest.raises(ValueError, match="no strongly typed"):
        plan_for("8.6.2", "onnx")
    with pytest.raises(ValueError, match="older than 8.4"):
        plan_for("8.2.1")
    with pytest.raises(ValueError, match="auto, flag or onnx"):
        plan_for("10.3.0", "fp32")
    with pytest.raises(ValueError):
        parse_version("unknown")
    assert parse_version("10.3") == (10, 3, 0)


def test_profile_shapes():
    assert profile_shapes((3, 224, 224), 8, 64) == ((1, 3, 224, 224), (8, 3, 224, 224),
                                                    (64, 3, 224, 224))
    assert profile_shapes((3, 224, 224), 8, 4)[1] == (4, 3, 224, 224)   # opt clipped to max
    with pytest.raises(ValueError):
        profile_shapes((3, 224, 224), 8, 0)
    assert DEFAULT_MAX_BATCH == 64


def test_variant_options():
    assert variant_options(None) == {"opt_batch": 8, "max_batch": 64, "workspace_mb": None,
                                     "fp16_mode": "auto"}
    o = variant_options({"trt_max_batch": 16, "trt_opt_batch": 4, "trt_fp16_mode": "onnx"})
    assert (o["opt_batch"], o["max_batch"], o["fp16_mode"]) == (4, 16, "onnx")
    assert variant_options({"max_batch": 32, "trt_max_batch": 16})["max_batch"] == 32


# ------------------------------------------------------------------ engine cache key

BASE = dict(spec_key="a1b2c3d4e5f60718", onnx_sha256="ab" * 32, trt_version="10.3.0.30",
            gpu_name="Orin", compute_capability="8.7",
            shapes=((1, 3, 224, 224), (8, 3, 224, 224), (64, 3, 224, 224)), fp16_via="builder_flag")


def test_engine_key_is_stable():
    assert engine_cache_key(**BASE) == engine_cache_key(**dict(BASE))
    assert len(engine_cache_key(**BASE)) == 16


@pytest.mark.parametrize("field,other", [
    ("spec_key", "ffffffffffffffff"),
    ("onnx_sha256", "cd" * 32),
    ("trt_version", "8.6.2.3"),
    ("gpu_name", "NVIDIA H100 80GB HBM3"),
    ("compute_capability", "9.0"),
    ("shapes", ((1, 3, 224, 224), (8, 3, 224, 224), (128, 3, 224, 224))),
    ("fp16_via", "fp16_onnx"),
])
def test_engine_key_changes_with_every_input(field, other):
    assert engine_cache_key(**{**BASE, field: other}) != engine_cache_key(**BASE)


def test_timing_cache_is_per_tensorrt_and_gpu(tmp_path):
    a = timing_cache_path(tmp_path, "10.3.0.30", "Orin", "8.7")
    assert a.name == "timing-10.3.0.30-orin-sm87.cache"
    assert timing_cache_path(tmp_path, "8.6.2.3", "Orin", "8.7") != a
    assert timing_cache_path(tmp_path, "10.3.0.30", "Orin (nvgpu)", "8.7") != a


# ------------------------------------------------------------------ FP16 ONNX conversion

def _check_fp16(onnx_path: str, fp16_path: str, x: np.ndarray, min_cos: float = 0.999):
    import onnx
    import onnxruntime as ort
    from onnx import TensorProto

    meta = to_fp16_onnx(onnx_path, fp16_path)
    m32, m16 = onnx.load(onnx_path), onnx.load(fp16_path)
    floats32 = [t for t in m32.graph.initializer if t.data_type == TensorProto.FLOAT]
    assert floats32, "the FP32 model should have float weights"
    kinds16 = {t.data_type for t in m16.graph.initializer}
    assert TensorProto.FLOAT not in kinds16 and TensorProto.FLOAT16 in kinds16
    assert sum(t.data_type == TensorProto.FLOAT16 for t in m16.graph.initializer) == len(floats32)
    for vi in list(m16.graph.input) + list(m16.graph.output):   # I/O stay float32
        assert vi.type.tensor_type.elem_type == TensorProto.FLOAT
    assert any(n.op_type == "Cast" for n in m16.graph.node)
    assert "keep_io_types=True" in meta["fp16_converter"]
    so = ort.SessionOptions()
    so.intra_op_num_threads = 2
    y32 = ort.InferenceSession(onnx_path, so, providers=["CPUExecutionProvider"]).run(None, {m32.graph.input[0].name: x})[0]
    y16 = ort.InferenceSession(fp16_path, so, providers=["CPUExecutionProvider"]).run(None, {m16.graph.input[0].name: x})[0]
    assert y16.dtype == np.float32 and y16.shape == y32.shape
    cos = (y32 * y16).sum(1) / (np.linalg.norm(y32, axis=1) * np.linalg.norm(y16, axis=1))
    assert cos.min() > min_cos
    assert np.abs(y32 - y16).max() < 0.02 * np.abs(y32).max()
    return y32, y16


def test_fp16_conversion_of_the_real_export(tmp_path):
    # The lead's exporter (dynamo, dynamic batch), on torchvision SqueezeNet 1.1 with seeded
    # random weights: a real conv net exported exactly as the tensorrt variant will see it.
    torch = pytest.importorskip("torch")
    torchvision = pytest.importorskip("torchvision")
    from converters.base import ModelSpec
    from converters.onnxruntime import export_onnx

    def build():
        torch.manual_seed(0)
        return torchvision.models.squeezenet1_1(weights=None).eval()

    spec = ModelSpec(name="squeezenet1_1", weights="random-seed-0", input_size=(3, 224, 224),
                     num_classes=1000, build=build, source="torchvision")
    art = export_onnx(spec, tmp_path)
    x = np.random.default_rng(0).standard_normal((3, 3, 224, 224)).astype(np.float32)
    y32, y16 = _check_fp16(art.path, str(tmp_path / "sq_fp16.onnx"), x)
    assert (y32.argmax(1) == y16.argmax(1)).all()


def test_fp16_conversion_of_a_transformer_block(tmp_path):
    # LayerNorm, attention softmax, GELU, dynamic batch: the Swin/ViT op mix in small.
    torch = pytest.importorskip("torch")

    class Tiny(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = torch.nn.Conv2d(3, 32, 8, 8)
            self.block = torch.nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0,
                                                          activation="gelu", batch_first=True)
            self.norm = torch.nn.LayerNorm(32)
            self.head = torch.nn.Linear(32, 10)

        def forward(self, x):
            t = self.embed(x).flatten(2).transpose(1, 2)
            return self.head(self.norm(self.block(t)).mean(1))

    torch.manual_seed(0)
    model = Tiny().eval()
    path = tmp_path / "tiny.onnx"
    batch = torch.export.Dim("batch", min=1, max=64)
    torch.onnx.export(model, (torch.randn(2, 3, 32, 32),), str(path), dynamo=True,
                      opset_version=18, dynamic_shapes={"x": {0: batch}}, external_data=False)
    x = np.random.default_rng(1).standard_normal((5, 3, 32, 32)).astype(np.float32)
    _check_fp16(str(path), str(tmp_path / "tiny_fp16.onnx"), x)


def test_fp16_conversion_keeps_values_up_to_fp16_max(tmp_path):
    # onnxconverter-common clamps to 1e4 by default; FP16 holds up to 65504, so we pass that.
    import onnx
    import onnxruntime as ort
    from onnx import TensorProto, helper, numpy_helper

    w = np.array([[3.0e4, 1.0e-9, 2.5]], dtype=np.float32)
    graph = helper.make_graph(
        [helper.make_node("Mul", ["x", "w"], ["y"])], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, 3])],
        [numpy_helper.from_array(w, "w")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)], ir_version=10)
    src, dst = tmp_path / "m.onnx", tmp_path / "m16.onnx"
    onnx.save(model, str(src))
    meta = to_fp16_onnx(str(src), str(dst))
    w16 = numpy_helper.to_array(onnx.load(str(dst)).graph.initializer[0])
    assert w16.dtype == np.float16
    assert float(w16[0, 0]) == 30000.0          # not clamped to 1e4
    assert w16[0, 1] == np.float16(1e-7)        # flushed up to 1e-7 (an FP16 subnormal), counted
    assert meta["fp16_values_flushed_to_1e-7"] >= 1
    y = ort.InferenceSession(str(dst), providers=["CPUExecutionProvider"]).run(
        None, {"x": np.ones((2, 3), np.float32)})[0]
    assert y.dtype == np.float32 and y[0, 0] == 30000.0


# ------------------------------------------------------------------ availability, registry

def test_available_says_no_with_the_real_reason():
    import converters

    conv = converters.get("tensorrt-fp16")
    assert conv.precision == "fp16"
    av = conv.available({})
    if importlib.util.find_spec("tensorrt") is None:
        assert not av.ok and "No module named 'tensorrt'" in av.reason
    else:
        import torch

        if torch.cuda.is_available():
            pytest.skip("TensorRT and a CUDA device are present: the not-ok path cannot be checked")
        assert not av.ok and "no CUDA device" in av.reason


def test_listing_the_registry_does_not_import_tensorrt_or_torch():
    code = ("import sys, converters; converters.names(); "
            "print('tensorrt' in sys.modules, 'onnxconverter_common' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["False", "False"]


def test_trt_module_is_nvidias_top_level_tensorrt(monkeypatch):
    # The variant is the package converters.tensorrt; its absolute ``import tensorrt`` must
    # reach NVIDIA's module, never the package itself.
    import types

    from converters.tensorrt.build import trt_module

    fake = types.ModuleType("tensorrt")
    fake.__version__ = "10.3.0.30"
    monkeypatch.setitem(sys.modules, "tensorrt", fake)
    assert trt_module() is fake
    monkeypatch.setitem(sys.modules, "tensorrt", None)   # what a missing module looks like
    with pytest.raises(ImportError, match="tensorrt"):
        trt_module()

