"""TensorRT variant: what can be checked without a GPU.

- version-branch selection (pure functions taking a version string), DLA per version,
- the options, the batch sizes a cell measures, the engine's profiles and the builder
  settings (pure functions of plain data): --trt-max-batch and --trt-dla-core reach them,
- the builder-config calls those settings become (``apply_settings`` against a recorder),
- the builder log's DLA/GPU layer placement and the engine inspector summary (recorded text),
- engine-cache key composition,
- tensorrt-int8: its plan per TensorRT version (flags, no FP16 ONNX), its convert() wiring
  (QDQ source, key, record) with TensorRT, the GPU and the engine build replaced by fakes,
- the FP16 ONNX conversion TensorRT 11 needs, on real exported models, run by ORT CPU,
- available() saying no, with the real reason, on a machine without TensorRT or CUDA,
- --trt-offline-all-accelerators: which devices serve Offline per TensorRT version and DLA
  core count, each DLA engine's settings and key, the batch split on static profiles, and
  convert()/load() wiring with TensorRT, the GPU, the builds and the predictor faked.
Building and running an engine (and CUDA graph capture) needs a GPU and TensorRT and is not
tested here; tests/test_tensorrt_typecheck.py checks the calls against TensorRT's typed API.
"""
from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from converters.tensorrt.onnx_fp16 import to_fp16_onnx
from converters.tensorrt.engine_log import parse_layer_placement, summarize_engine_information
from converters.tensorrt.batches import split_batch
from converters.tensorrt.offline import offline_devices_plan, offline_dla_settings
from converters.tensorrt.plan import (DEFAULT_MAX_BATCH, batch_plan, builder_settings,
                                      dla_batch_check, engine_cache_key, engine_fields,
                                      measured_batches, parse_version, plan_for, search_sizes,
                                      sync_point, timing_cache_path, variant_options)

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


# ------------------------------------------------------------------ DLA per TensorRT version

@pytest.mark.parametrize("version,mode,can", [
    ("8.4.1.5", "auto", False),       # binding-index API only
    ("8.5.2.2", "auto", True),
    ("8.6.2.3", "auto", True),        # JetPack 6.0
    ("10.3.0.30", "auto", True),      # JetPack 6.1/6.2
    ("10.3.0.30", "onnx", False),     # strongly typed DLA: documented from 11.4.1 only
    ("10.7.0", "auto", True),         # "the last 10.x release that supported DLA"
    ("10.8.0", "auto", False),
    ("10.13.3.9", "auto", False),
    ("11.0.0", "auto", False),
    ("11.4.0", "auto", False),        # Windows on ARM only
    ("11.4.1", "auto", True),         # AGX Orin with JetPack 7.2.2+, strongly typed
])
def test_dla_support_per_tensorrt_version(version, mode, can):
    assert (plan_for(version, mode).no_dla == "") is can


# ------------------------------------------------------------------ options and batch sizes

# What the worker passes a cell's spec: the run profile's throughput cap and the profile name.
QUICK = {"max_batch": 16, "profile": "quick"}
PAPER = {"max_batch": 512, "profile": "paper"}
SIZE = (3, 224, 224)


def _settings(run: dict, version: str = "10.3.0.30", precision: str = "fp16", **opts) -> dict:
    both = {**run, **opts}
    o = variant_options(both)
    return builder_settings(o, measured_batches(both), plan_for(version, o["fp16_mode"], precision),
                            SIZE)


def test_variant_options_defaults_and_refusals():
    assert variant_options(None) == {"trt_max_batch": None, "trt_opt_batch": None,
                                     "workspace_mb": None, "fp16_mode": "auto", "dla_core": None,
                                     "gpu_fallback": True, "cuda_graph": False,
                                     "offline_all_accelerators": False}
    o = variant_options({"trt_max_batch": 16, "trt_opt_batch": 4, "trt_fp16_mode": "onnx",
                         "trt_dla_core": 1, "trt_dla_no_gpu_fallback": True,
                         "trt_cuda_graph": True})
    assert (o["trt_max_batch"], o["trt_opt_batch"], o["fp16_mode"]) == (16, 4, "onnx")
    assert (o["dla_core"], o["gpu_fallback"], o["cuda_graph"]) == (1, False, True)
    for bad, match in [({"trt_max_batch": 0}, "--trt-max-batch 0"),
                       ({"trt_opt_batch": "8"}, "--trt-opt-batch '8'"),
                       ({"trt_dla_core": -1}, "--trt-dla-core -1"),
                       ({"trt_dla_core": True}, "--trt-dla-core True"),
                       ({"trt_max_batch": 4, "trt_opt_batch": 8}, "above --trt-max-batch 4"),
                       ({"trt_dla_no_gpu_fallback": True}, "needs --trt-dla-core"),
                       ({"trt_fp16_mode": "fp32"}, "auto, flag or onnx")]:
        with pytest.raises(ValueError, match=match):
            variant_options(bad)


def test_check_options_refuses_before_anything_runs():
    import converters

    conv = converters.get("tensorrt-fp16")
    conv.check_options({"trt_max_batch": 4, "trt_dla_core": 0})
    with pytest.raises(ValueError, match="--trt-opt-batch 8 is above --trt-max-batch 4"):
        conv.check_options({"trt_max_batch": 4, "trt_opt_batch": 8})


def test_measured_batches_follow_the_run_profile():
    m = measured_batches(QUICK)
    assert (m["latency"], m["accuracy"], m["parity"]) == (1, 8, 8)
    assert m["throughput"] == [1, 2, 4, 8, 16] and m["throughput_cap"] == 16
    p = measured_batches(PAPER)
    assert p["accuracy"] == 32 and p["throughput"][-1] == 512
    # The worker's own accuracy batch wins over the profile's table (fleet overrides).
    assert measured_batches({**QUICK, "accuracy_batch": 24})["accuracy"] == 24
    alone = measured_batches(None)
    assert alone["throughput_cap"] == DEFAULT_MAX_BATCH and alone["accuracy"] is None
    assert search_sizes(24) == [1, 2, 4, 8, 16] and search_sizes(1) == [1]


def test_trt_max_batch_4_reaches_the_builder_settings():
    # The check. Before, the worker's profile cap ("max_batch": 16) silently won.
    s = _settings(QUICK, trt_max_batch=4)
    assert s["profiles"] == [{"min": [1, *SIZE], "opt": [4, *SIZE], "max": [4, *SIZE]}]
    b = s["batches"]
    assert (b["max_batch"], b["max_batch_from"]) == (4, "--trt-max-batch")
    assert b["run_batch_sizes"] == [1, 2, 4]          # the throughput search cannot go beyond
    assert any("search stops at 4" in n for n in b["notes"])
    assert any("accuracy/parity batch 8 is above the engine's max batch 4: they run at batch 4"
               in n for n in b["notes"])
    assert any("opt batch 8 (default 8) lowered to the max batch 4" in n for n in b["notes"])


def test_max_batch_defaults_to_the_run_profiles_throughput_cap():
    q = _settings(QUICK)
    assert q["profiles"][0]["max"][0] == 16 and q["profiles"][0]["opt"][0] == 8
    assert q["batches"]["run_batch_sizes"] is None    # any size 1..16, step-downs included
    assert "throughput max_batch (16)" in q["batches"]["max_batch_from"]
    p = _settings(PAPER)
    assert [p["profiles"][0][k][0] for k in ("min", "opt", "max")] == [1, 8, 512]
    # Above the cap: the engine covers more than the search asks for; nothing is limited.
    above = _settings(QUICK, trt_max_batch=64, trt_opt_batch=32)["batches"]
    assert (above["max_batch"], above["opt_batch"], above["run_batch_sizes"]) == (64, 32, None)
    # An accuracy batch above the search cap raises the max so accuracy runs at its batch.
    acc = _settings({**QUICK, "accuracy_batch": 32})["batches"]
    assert acc["max_batch"] == 32 and "raised to the accuracy batch 32" in acc["max_batch_from"]


@pytest.mark.parametrize("run", [QUICK, PAPER, {**QUICK, "accuracy_batch": 24}])
@pytest.mark.parametrize("opts", [{}, {"trt_max_batch": 4}, {"trt_max_batch": 6},
                                  {"trt_max_batch": 1000}, {"trt_dla_core": 0},
                                  {"trt_dla_core": 1, "trt_max_batch": 6}])
def test_profiles_cover_every_batch_size_the_cell_runs(run, opts):
    s = _settings(run, **opts)
    b, m = s["batches"], measured_batches(run)
    covered = [(p["min"][0], p["max"][0]) for p in s["profiles"]]
    for p in s["profiles"]:                       # TensorRT: min <= opt <= max, same C, H, W
        assert p["min"][0] <= p["opt"][0] <= p["max"][0] and p["min"][1:] == list(SIZE)
    runs = b["run_batch_sizes"] or range(1, b["max_batch"] + 1)
    for size in runs:                             # what the predictor offers, the engine has
        assert any(lo <= size <= hi for lo, hi in covered), (size, covered)
    for size in b["measured"]:                    # what the cell wants: covered or noted
        if size <= b["max_batch"]:
            assert any(lo <= size <= hi for lo, hi in covered), (size, covered)
        else:
            assert b["notes"]
    assert b["measured"] == sorted({1, m["accuracy"], *m["throughput"]})


def test_trt_dla_core_0_reaches_the_builder_settings():
    # The check: DLA core, DLA as default device, GPU fallback, FP16 (DLA needs it).
    s = _settings(QUICK, trt_dla_core=0)
    assert (s["default_device_type"], s["dla_core"], s["gpu_fallback"]) == ("DLA", 0, True)
    assert s["builder_flags"] == ["FP16", "GPU_FALLBACK"] and s["network_flags"] == []
    # DLA has no dynamic shapes: one static profile per measured batch size.
    assert [(p["min"][0], p["opt"][0], p["max"][0]) for p in s["profiles"]] == \
        [(b, b, b) for b in (1, 2, 4, 8, 16)]
    assert s["batches"]["run_batch_sizes"] == [1, 2, 4, 8, 16] and not s["batches"]["dynamic"]
    capped = _settings(QUICK, trt_dla_core=1, trt_max_batch=6, trt_opt_batch=2)
    assert capped["dla_core"] == 1
    assert [p["max"][0] for p in capped["profiles"]] == [1, 2, 4, 6]
    assert any("--trt-opt-batch 2 not used" in n for n in capped["batches"]["notes"])
    strict = _settings(QUICK, trt_dla_core=0, trt_dla_no_gpu_fallback=True)
    assert strict["builder_flags"] == ["FP16"] and strict["gpu_fallback"] is False
    jp60 = _settings(QUICK, version="8.6.2.3", trt_dla_core=0)   # JetPack 6.0
    assert jp60["network_flags"] == ["EXPLICIT_BATCH"] and jp60["builder_flags"][0] == "FP16"
    jp722 = _settings(QUICK, version="11.4.1", trt_dla_core=0)   # strongly typed: no FP16 flag
    assert jp722["builder_flags"] == ["GPU_FALLBACK"] and jp722["default_device_type"] == "DLA"
    gpu = _settings(QUICK)
    assert (gpu["default_device_type"], gpu["dla_core"], gpu["gpu_fallback"]) == ("GPU", None, None)
    assert gpu["builder_flags"] == ["FP16"] and gpu["profiling_verbosity"] == "DETAILED"


def test_dla_refusals():
    with pytest.raises(ValueError, match="DLA runs FP16 or INT8 networks only"):
        builder_settings(variant_options({"trt_dla_core": 0}), measured_batches(QUICK),
                         plan_for("10.3.0"), SIZE, precision="fp32")
    with pytest.raises(ValueError, match="10.7 was the last"):
        _settings(QUICK, version="10.13.3.9", trt_dla_core=0)
    with pytest.raises(ValueError, match="takes FP16 from BuilderFlag.FP16"):
        _settings(QUICK, version="10.3.0", trt_dla_core=0, trt_fp16_mode="onnx")
    assert dla_batch_check([1, 2, 4096], 4096, gpu_fallback=False) == ""
    assert "run on the GPU" in dla_batch_check([8, 8192], 4096, gpu_fallback=True)
    with pytest.raises(ValueError, match=r"\[8192\] exceed the DLA's max batch 4096"):
        dla_batch_check([8, 8192], 4096, gpu_fallback=False)


def test_batch_plan_is_what_builder_settings_records():
    opts = variant_options({"trt_max_batch": 4})
    assert batch_plan(opts, measured_batches(QUICK), dla=False) == \
        _settings(QUICK, trt_max_batch=4)["batches"]


def test_the_throughput_search_stops_at_trt_max_batch_and_says_so():
    # measure.throughput, unchanged, with a CPU stand-in that enforces only the batch sizes
    # the TensorRT predictor would offer (no device, no timing asserted).
    from converters.base import Predictor
    from edgebench import measure
    from edgebench.profiles import PROFILES
    from edgebench.telemetry.monitor import Monitor

    offered = _settings(QUICK, trt_max_batch=4)["batches"]["run_batch_sizes"]

    class SizesOnly(Predictor):
        batch_sizes = offered

        def __call__(self, x):
            assert x.shape[0] in self.batch_sizes
            return np.zeros((x.shape[0], 10), np.float32)

    class Data:
        def tiled(self, n):
            return np.zeros((n, *SIZE), np.float32)

    prof = {**PROFILES["quick"], "throughput": {**PROFILES["quick"]["throughput"],
                                                "min_s": 0.01, "min_iters": 2, "min_gain": 0.0}}
    mon = Monitor(interval_s=0.05, power=None).start()
    try:
        status, fields, _ = measure.throughput(SizesOnly(), Data(), prof, mon)
    finally:
        mon.stop()
    assert status == "ok" and [r["batch_size"] for r in fields["by_batch"]] == [1, 2, 4]
    assert "largest batch size the variant was built for (4)" in fields["stop_reason"]
    assert measure.fit_batch(SizesOnly(), PROFILES["quick"]["accuracy_batch"]) == 4


# ------------------------------------------------------------------ settings -> builder config

def _recorder(monkeypatch) -> tuple[type, type, list]:
    """A recorder in place of TensorRT's builder/config objects (no device, nothing built):
    (Builder, Config, calls) with a fake ``tensorrt`` module whose enums are their names."""
    import types

    class Enum:
        def __init__(self, kind):
            self.kind = kind

        def __getattr__(self, name):
            return f"{self.kind}.{name}"

    fake = types.ModuleType("tensorrt")
    fake.BuilderFlag = Enum("BuilderFlag")
    fake.MemoryPoolType = Enum("MemoryPoolType")
    fake.ProfilingVerbosity = Enum("ProfilingVerbosity")
    fake.DeviceType = Enum("DeviceType")
    fake.Dims = tuple
    fake.NetworkDefinitionCreationFlag = types.SimpleNamespace(EXPLICIT_BATCH=0, STRONGLY_TYPED=1)
    monkeypatch.setitem(sys.modules, "tensorrt", fake)

    calls: list = []

    class Profile:
        def set_shape(self, name, lo, opt, hi):
            calls.append(("set_shape", name, lo, opt, hi))

    class Builder:
        def create_optimization_profile(self):
            return Profile()

    class Config:
        def set_flag(self, flag):
            calls.append(("set_flag", flag))

        def set_memory_pool_limit(self, pool, size):
            calls.append(("set_memory_pool_limit", pool, size))

        def add_optimization_profile(self, profile):
            calls.append(("add_optimization_profile",))

    return Builder, Config, calls


def test_apply_settings_makes_these_builder_config_calls(monkeypatch):
    # The calls and attribute sets apply_settings makes for --trt-dla-core 0 --trt-max-batch 4.
    from converters.tensorrt.build import apply_settings, network_flags

    Builder, Config, calls = _recorder(monkeypatch)
    s = _settings(QUICK, version="8.6.2.3", trt_dla_core=0, trt_max_batch=4, trt_workspace_mb=256)
    config = Config()
    apply_settings(Builder(), config, "input", s)
    assert config.DLA_core == 0 and config.default_device_type == "DeviceType.DLA"
    assert config.profiling_verbosity == "ProfilingVerbosity.DETAILED"
    assert ("set_flag", "BuilderFlag.FP16") in calls and ("set_flag", "BuilderFlag.GPU_FALLBACK") in calls
    assert ("set_memory_pool_limit", "MemoryPoolType.WORKSPACE", 256 << 20) in calls
    shapes = [c[2:] for c in calls if c[0] == "set_shape"]
    assert shapes == [((b, *SIZE),) * 3 for b in (1, 2, 4)]
    assert calls.count(("add_optimization_profile",)) == 3
    assert network_flags(s["network_flags"]) == 1 << 0           # EXPLICIT_BATCH on 8.6
    gpu = Config()
    apply_settings(Builder(), gpu, "input", _settings(QUICK))
    assert not hasattr(gpu, "DLA_core") and not hasattr(gpu, "default_device_type")


# ------------------------------------------------------------------ what the engine did

# TensorRT 8.x builder log (INFO), as printed for a CNN on DLA with GPU fallback.
LOG_8X = ["Tensor DataType is determined at build time for tensors not marked as input or output.",
          "---------- Layers Running on DLA ----------",
          "[DlaLayer] {ForeignNode[/cnn/cnn.0/Conv.../cnn/cnn.11/Relu]}",
          "[DlaLayer] {ForeignNode[/linear/Gemm]}",
          "---------- Layers Running on GPU ----------",
          "[GpuLayer] POOLING: /pool/GlobalAveragePool",
          "[GpuLayer] SHUFFLE: reshape_after_/linear/Gemm",
          "[MemUsageChange] Init cuBLAS/cuBLASLt: CPU +0, GPU +0, now: CPU 0, GPU 0 (MiB)",
          "[GpuLayer] not a placement line: after the section"]
# Older releases (TensorRT 7, e.g. through DeepStream): one message per list.
LOG_7 = ["--------------- Layers running on DLA: ", "",
         "--------------- Layers running on GPU: ",
         "conv1 + activation_1/Relu, block_1a_conv_1 + activation_2/Relu, conv2d_bbox, "]


def test_layer_placement_from_the_builder_log():
    p = parse_layer_placement(LOG_8X)
    assert p == {"dla_layers": 2, "dla": ["{ForeignNode[/cnn/cnn.0/Conv.../cnn/cnn.11/Relu]}",
                                          "{ForeignNode[/linear/Gemm]}"],
                 "gpu_layers": 2, "gpu": ["POOLING: /pool/GlobalAveragePool",
                                          "SHUFFLE: reshape_after_/linear/Gemm"]}
    old = parse_layer_placement(LOG_7)
    assert old["dla_layers"] == 0 and old["gpu"] == ["conv1 + activation_1/Relu",
                                                    "block_1a_conv_1 + activation_2/Relu",
                                                    "conv2d_bbox"]
    assert parse_layer_placement(["[MemUsageChange] Init CUDA", "Loaded engine"]) is None
    many = ["---------- Layers Running on GPU ----------"] + [f"[GpuLayer] L{i}" for i in range(100)]
    assert parse_layer_placement(many)["gpu_layers"] == 100
    assert len(parse_layer_placement(many)["gpu"]) == 40


def test_engine_inspector_summary():
    names_only = json.dumps({"Layers": ["conv1 + relu1", "pool", "fc"], "Bindings": ["x", "y"]})
    assert summarize_engine_information(names_only) == {"layers": 3}
    detailed = json.dumps({"Layers": [{"Name": "a", "LayerType": "CaskConvolution"},
                                      {"Name": "b", "LayerType": "CaskConvolution"},
                                      {"Name": "c", "LayerType": "Reformat"}], "Bindings": []})
    assert summarize_engine_information(detailed) == {
        "layers": 3, "layer_types": {"CaskConvolution": 2, "Reformat": 1}}


def test_sync_point_is_stated():
    assert sync_point("tensors", False).startswith(
        "cudaStreamSynchronize (torch.cuda.Stream.synchronize) once per call, after "
        "execute_async_v3 and the device-to-host copy")
    assert "after the CUDA graph launch (captured execute_async_v3)" in sync_point("tensors", True)
    assert "execute_async_v2" in sync_point("bindings", False)

# ------------------------------------------------------------------ engine cache key

def _build(**opts) -> dict:
    return engine_fields(builder_settings(variant_options(opts), measured_batches(QUICK),
                                          plan_for("10.3.0.30"), (3, 224, 224)))


BASE = dict(spec_key="a1b2c3d4e5f60718", onnx_sha256="ab" * 32, trt_version="10.3.0.30",
            gpu_name="Orin", compute_capability="8.7", build=_build(), fp16_via="builder_flag")


def test_engine_key_is_stable():
    assert engine_cache_key(**BASE) == engine_cache_key(**dict(BASE))
    assert len(engine_cache_key(**BASE)) == 16
    # Run-time choices do not change the engine: the same engine serves them.
    assert _build(trt_cuda_graph=True) == _build()


@pytest.mark.parametrize("field,other", [
    ("spec_key", "ffffffffffffffff"),
    ("onnx_sha256", "cd" * 32),
    ("trt_version", "8.6.2.3"),
    ("gpu_name", "NVIDIA H100 80GB HBM3"),
    ("compute_capability", "9.0"),
    ("build", _build(trt_max_batch=128)),
    ("build", _build(trt_opt_batch=4)),
    ("build", _build(trt_dla_core=0)),
    ("build", _build(trt_dla_core=1)),
    ("build", _build(trt_dla_core=0, trt_dla_no_gpu_fallback=True)),
    ("build", _build(trt_workspace_mb=512)),
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


# ------------------------------------------------------------------ tensorrt-int8

# TensorRT version -> (network flags, builder flags on the GPU, builder flags with
# --trt-dla-core 0, or the refusal's words where that TensorRT has no DLA).
INT8_FLAGS = {
    "8.4.1.5": (["EXPLICIT_BATCH"], ["INT8", "FP16"], "DLA needs TensorRT 8.5+"),
    "8.6.2.3": (["EXPLICIT_BATCH"], ["INT8", "FP16"], ["INT8", "FP16", "GPU_FALLBACK"]),
    "10.3.0.30": ([], ["INT8", "FP16"], ["INT8", "FP16", "GPU_FALLBACK"]),
    "10.13.3.9": ([], ["INT8", "FP16"], "10.7 was the last"),
    "11.0.0": ([], [], "no DLA in this TensorRT"),
    "11.4.1": ([], [], ["GPU_FALLBACK"]),       # strongly typed DLA (JetPack 7.2.2+)
}


@pytest.mark.parametrize("version", list(INT8_FLAGS))
def test_int8_builder_flags_per_tensorrt_version(version):
    net, gpu_flags, dla = INT8_FLAGS[version]
    p = plan_for(version, precision="int8")
    assert (p.precision, p.network_source) == ("int8", "qdq_onnx")
    assert p.fp16_via != "fp16_onnx" and p.strongly_typed_flag is False   # no FP16 ONNX route
    assert p.typing == ("strong" if version.startswith("11.") else "weak")
    s = _settings(QUICK, version=version, precision="int8")
    assert (s["network_flags"], s["builder_flags"]) == (net, gpu_flags)
    assert s["default_device_type"] == "GPU" and s["dla_core"] is None
    if isinstance(dla, str):
        with pytest.raises(ValueError, match=dla):
            _settings(QUICK, version=version, precision="int8", trt_dla_core=0)
        return
    d = _settings(QUICK, version=version, precision="int8", trt_dla_core=0)
    assert (d["network_flags"], d["builder_flags"]) == (net, dla)
    assert (d["default_device_type"], d["dla_core"], d["gpu_fallback"]) == ("DLA", 0, True)
    # DLA: the FP16 variant's static profiles, one per measured batch size.
    assert [(q["min"][0], q["opt"][0], q["max"][0]) for q in d["profiles"]] == \
        [(b, b, b) for b in (1, 2, 4, 8, 16)]
    strict = _settings(QUICK, version=version, precision="int8", trt_dla_core=0,
                       trt_dla_no_gpu_fallback=True)
    assert strict["builder_flags"] == [f for f in dla if f != "GPU_FALLBACK"]


def test_int8_ignores_trt_fp16_mode_and_fp16_plans_are_unchanged():
    for version in ("8.6.2.3", "10.3.0.30", "11.1.0"):
        auto = plan_for(version, "auto", "int8")
        assert plan_for(version, "onnx", "int8") == auto == plan_for(version, "flag", "int8")
    # The refusals FP16 has do not reach INT8 (its flags are fixed per version).
    assert plan_for("11.0.0", "flag", "int8").precision_flags == ()
    assert plan_for("8.6.2.3", "onnx", "int8").precision_flags == ("INT8", "FP16")
    # FP16 keeps its routes: the FP32 export with the flag, or the FP16 ONNX, never INT8.
    assert (plan_for("10.3.0").precision_flags, plan_for("10.3.0").network_source) == \
        (("FP16",), "onnx")
    assert (plan_for("11.0.0").precision_flags, plan_for("11.0.0").network_source) == \
        ((), "fp16_onnx")
    assert plan_for("10.3.0", "onnx").network_source == "fp16_onnx"
    with pytest.raises(ValueError, match="no TensorRT plan for precision 'fp32'"):
        plan_for("10.3.0", precision="fp32")


def test_apply_settings_sets_int8_and_fp16_for_a_qdq_network(monkeypatch):
    from converters.tensorrt.build import apply_settings, network_flags

    Builder, Config, calls = _recorder(monkeypatch)
    apply_settings(Builder(), Config(), "input", _settings(QUICK, version="8.6.2.3",
                                                           precision="int8", trt_dla_core=0))
    assert [c[1] for c in calls if c[0] == "set_flag"] == \
        ["BuilderFlag.INT8", "BuilderFlag.FP16", "BuilderFlag.GPU_FALLBACK"]
    calls.clear()
    s11 = _settings(QUICK, version="11.1.0", precision="int8")
    apply_settings(Builder(), Config(), "input", s11)
    assert [c for c in calls if c[0] == "set_flag"] == []     # strongly typed: no flags
    assert network_flags(s11["network_flags"]) == 0


def _int8_build(version: str = "10.3.0.30") -> dict:
    o = variant_options(QUICK)
    return engine_fields(builder_settings(o, measured_batches(QUICK),
                                          plan_for(version, precision="int8"), SIZE))


def test_int8_engine_key_follows_the_qdq_model():
    int8 = {**BASE, "build": _int8_build(), "precision": "int8"}
    assert engine_cache_key(**{**int8, "onnx_sha256": "ef" * 32}) != engine_cache_key(**int8)
    # Same file hash and flags: still not the FP16 engine's key (strongly typed 11: no flags).
    assert engine_cache_key(**int8) != engine_cache_key(**{**int8, "precision": "fp16"})
    b11 = _int8_build("11.1.0")
    assert b11["builder_flags"] == [] and b11 == _build_v("11.1.0")
    assert engine_cache_key(**{**BASE, "build": b11, "fp16_via": "none", "precision": "int8"}) != \
        engine_cache_key(**{**BASE, "build": b11, "fp16_via": "none"})
    # FP16 engines keep the keys they had before INT8 existed (no rebuild of cached engines).
    assert engine_cache_key(**BASE) == "e71426afd4a61b35"


def _build_v(version: str) -> dict:
    return engine_fields(builder_settings(variant_options(QUICK), measured_batches(QUICK),
                                          plan_for(version), SIZE))


class _FakeTrt:
    def __init__(self, version: str):
        self.__version__ = version


def _int8_convert(monkeypatch, tmp_path, version: str, qdq_bytes: bytes, **options):
    """tensorrt-int8's convert() with TensorRT, the GPU, the QDQ model and the engine build
    replaced by fakes: what it parses, how it keys the engine and what it records."""
    import converters
    import converters.onnxruntime.quantize as quantize
    import converters.tensorrt as pkg
    from converters.base import Artifact, ModelSpec

    qdq = tmp_path / f"qdq-{len(qdq_bytes)}.onnx"
    qdq.write_bytes(qdq_bytes)
    int8_meta = {"calibration": {"sha256": "c" * 64, "method": "entropy", "n": 16}}
    built: list = []

    def fake_qdq(spec, cache):
        return Artifact("int8", path=str(qdq), meta={"int8": int8_meta})

    def fake_build(source, settings, timing_cache):
        built.append((source, settings))
        return b"engine-" + qdq_bytes, {"build_s": 0.0, "builder": engine_fields(settings)}

    def no_fp16(*a, **k):
        raise AssertionError("the FP16 ONNX conversion ran for INT8")

    def no_export(*a, **k):
        raise AssertionError("the FP32 export was parsed instead of the QDQ model")

    monkeypatch.setattr(quantize, "qdq_model", fake_qdq)
    monkeypatch.setattr(pkg, "trt_module", lambda: _FakeTrt(version))
    monkeypatch.setattr(pkg, "device_identity", lambda: ("Orin", "8.7"))
    monkeypatch.setattr(pkg, "build_engine", fake_build)
    monkeypatch.setattr(pkg, "to_fp16_onnx", no_fp16)
    monkeypatch.setattr("converters.onnxruntime.export_onnx", no_export)
    spec = ModelSpec(name="m", weights="random-seed-0", input_size=SIZE, num_classes=10,
                     build=lambda: None, options={**QUICK, **options})
    art = converters.get("tensorrt-int8").convert(spec, tmp_path / "cache")
    return art, built, int8_meta


@pytest.mark.parametrize("version,flags", [("8.6.2.3", ["INT8", "FP16"]),
                                           ("10.3.0.30", ["INT8", "FP16"]), ("11.1.0", [])])
def test_int8_convert_parses_the_qdq_model(monkeypatch, tmp_path, version, flags):
    import hashlib

    art, built, int8_meta = _int8_convert(monkeypatch, tmp_path, version, b"qdq-A",
                                          trt_fp16_mode="onnx")
    [(source, settings)] = built
    assert source == str(tmp_path / "qdq-5.onnx")               # the QDQ file, as is
    assert settings["builder_flags"] == flags
    m = art.meta
    assert m["onnx_sha256"] == hashlib.sha256(b"qdq-A").hexdigest()
    assert m["int8"] == int8_meta and m["precision_flags"] == settings["builder_flags"]
    assert m["network_typing"] == ("strong" if version.startswith("11.") else "weak")
    assert "--trt-fp16-mode" in m["ignored_options"] and "fp16_convert_s" not in m
    assert Path(art.path).name == f"m-int8-{m['engine_key']}.engine" and not art.cached
    assert Path(art.path).read_bytes() == b"engine-qdq-A"


def test_int8_engine_is_reused_until_the_qdq_model_changes(monkeypatch, tmp_path):
    a, _, _ = _int8_convert(monkeypatch, tmp_path, "10.3.0.30", b"qdq-A")
    again, built, _ = _int8_convert(monkeypatch, tmp_path, "10.3.0.30", b"qdq-A")
    assert again.cached and built == [] and again.meta["engine_key"] == a.meta["engine_key"]
    other, built, _ = _int8_convert(monkeypatch, tmp_path, "10.3.0.30", b"qdq-BB")
    assert not other.cached and len(built) == 1
    assert other.meta["engine_key"] != a.meta["engine_key"]


# ------------------------------------------------------------------ availability, registry

@pytest.mark.parametrize("name,precision", [("tensorrt-fp16", "fp16"), ("tensorrt-int8", "int8")])
def test_available_says_no_with_the_real_reason(name, precision):
    import converters

    conv = converters.get(name)
    assert conv.precision == precision
    av = conv.available({})
    spec = importlib.util.find_spec("tensorrt")
    if spec is None:
        assert not av.ok and "No module named 'tensorrt'" in av.reason
    elif spec.origin in (None, "namespace"):      # only type stubs (tensorrt-stubs): no module
        assert not av.ok and "is not NVIDIA's TensorRT" in av.reason
    else:
        import torch

        if torch.cuda.is_available():
            pytest.skip("TensorRT and a CUDA device are present: the not-ok path cannot be checked")
        assert not av.ok and "no CUDA device" in av.reason


def test_tensorrt_int8_is_registered_next_to_fp16():
    import converters
    from converters.tensorrt import TensorRTFP16, TensorRTINT8
    from edgebench.cli import build_parser

    conv = converters.get("tensorrt-int8")
    assert type(conv) is TensorRTINT8 and isinstance(conv, TensorRTFP16)
    assert (conv.precision, conv.cli_options, conv.needs_calibration) == ("int8", (), True)
    # INT8 is opt-in, like every INT8 variant (the default run keeps its time: docs/int8.md)
    assert "tensorrt-int8" not in converters.default_names() and not conv.in_default_run
    assert "tensorrt-fp16" in converters.default_names()
    conv.check_options({"trt_dla_core": 0})
    with pytest.raises(ValueError, match="needs --trt-dla-core"):
        conv.check_options({"trt_dla_no_gpu_fallback": True})
    # The fp16 variant's flags serve both; the help says --trt-fp16-mode is not int8's.
    parser = build_parser()
    args = parser.parse_args(["--variants", "tensorrt-int8", "--trt-dla-core", "1"])
    assert args.trt_dla_core == 1
    help_text = parser.format_help()
    assert help_text.count("\n  --trt-dla-core N") == 1          # declared once, by fp16
    assert "tensorrt-int8 ignores it" in " ".join(help_text.split())


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
    fake.Builder = object
    monkeypatch.setitem(sys.modules, "tensorrt", fake)
    assert trt_module() is fake
    monkeypatch.setitem(sys.modules, "tensorrt", None)   # what a missing module looks like
    with pytest.raises(ImportError, match="tensorrt"):
        trt_module()
    # tensorrt-stubs installs a folder of .pyi files, imported as an empty namespace package.
    stubs = types.ModuleType("tensorrt")
    stubs.__path__ = ["/venv/site-packages/tensorrt"]
    monkeypatch.setitem(sys.modules, "tensorrt", stubs)
    with pytest.raises(ImportError, match="not NVIDIA's TensorRT"):
        trt_module()



# ------------------------------------------------------------------ Offline on every accelerator

ALL = {"trt_offline_all_accelerators": True}
GPU = [("gpu", None)]
GPU_2DLA = [("gpu", None), ("dla0", 0), ("dla1", 1)]


@pytest.mark.parametrize("n_dla,version,options,precision,devices,reason", [
    (2, "10.3.0.30", ALL, "fp16", GPU_2DLA, ""),                  # AGX Orin, JetPack 6.1/6.2
    (2, "8.6.2.3", ALL, "fp16", GPU_2DLA, ""),                    # JetPack 6.0
    (2, "8.5.2.2", ALL, "int8", GPU_2DLA, ""),                    # MLPerf v3.1's TensorRT
    (2, "11.4.1", ALL, "fp16", GPU_2DLA, ""),                     # JetPack 7.2.2+
    (1, "10.3.0.30", ALL, "fp16", [("gpu", None), ("dla0", 0)], ""),
    (0, "10.3.0.30", ALL, "fp16", GPU, "0 DLA cores"),            # no DLA on this device
    (2, "10.13.3.9", ALL, "fp16", GPU, "10.7 was the last"),      # no DLA in this TensorRT
    (2, "11.1.0", ALL, "int8", GPU, "11.0 to 11.4.0 have none"),
    (2, "8.4.1.5", ALL, "fp16", GPU, "DLA needs TensorRT 8.5+"),
    (2, "10.3.0.30", {**ALL, "trt_fp16_mode": "onnx"}, "fp16", GPU, "takes FP16 from BuilderFlag"),
    (2, "10.3.0.30", {}, "fp16", GPU, "--trt-offline-all-accelerators not given"),
])
def test_offline_devices_plan(n_dla, version, options, precision, devices, reason):
    got = offline_devices_plan(n_dla, version, options, precision)
    assert got.devices == devices
    assert (reason in got.reason) if reason else got.reason == ""
    names, why = got                                  # unpacks as (devices, reason)
    assert names == devices and why == got.reason


def test_offline_dla_engines_are_the_dla_path_with_their_own_keys():
    run = {**QUICK, **ALL}
    o = variant_options(run)
    plan = plan_for("10.3.0.30")
    m = measured_batches(run)
    per_core = {k: offline_dla_settings(o, m, plan, SIZE, k) for k in (0, 1)}
    for k, s in per_core.items():
        # What --trt-dla-core k builds: DLA default device, GPU fallback, static profiles.
        assert s == _settings(QUICK, trt_dla_core=k)
        assert (s["default_device_type"], s["dla_core"], s["gpu_fallback"]) == ("DLA", k, True)
        assert s["builder_flags"] == ["FP16", "GPU_FALLBACK"]
        assert all(p["min"] == p["opt"] == p["max"] for p in s["profiles"])
    # The GPU engine is the one built without the option: its key does not change.
    gpu = builder_settings(o, m, plan, SIZE)
    assert engine_fields(gpu) == engine_fields(_settings(QUICK))
    keys = {name: engine_cache_key(**{**BASE, "build": engine_fields(s)})
            for name, s in [("gpu", gpu), ("dla0", per_core[0]), ("dla1", per_core[1])]}
    assert len(set(keys.values())) == 3
    # --mlperf-offline-batch adds a static profile at that batch (its own engine, own key).
    at12 = offline_dla_settings(o, m, plan, SIZE, 0, offline_batch=12)
    assert [p["max"][0] for p in at12["profiles"]] == [1, 2, 4, 8, 12, 16]
    assert at12["batches"]["run_batch_sizes"] == [1, 2, 4, 8, 12, 16]
    assert engine_fields(at12) != engine_fields(per_core[0])
    above = offline_dla_settings(o, m, plan, SIZE, 1, offline_batch=40)
    assert [p["max"][0] for p in above["profiles"]] == [1, 2, 4, 8, 16]
    assert any("Offline batch 40 is above the engine's max batch 16" in n
               for n in above["batches"]["notes"])
    # INT8 on 11.4.1 (strongly typed): no precision flags, GPU fallback only.
    int8 = offline_dla_settings(o, m, plan_for("11.4.1", precision="int8"), SIZE, 1,
                                precision="int8")
    assert int8["builder_flags"] == ["GPU_FALLBACK"] and int8["dla_core"] == 1


def test_split_batch_on_static_profiles():
    sizes = [1, 2, 4, 8, 16]
    assert split_batch(8, sizes) == [8]
    assert split_batch(12, sizes) == [8, 4]
    assert split_batch(31, sizes) == [16, 8, 4, 2, 1]
    assert split_batch(40, sizes) == [16, 16, 8]          # above the engine's max
    assert split_batch(40, [1, 2, 4, 8, 16, 24]) == [24, 16]
    assert sum(split_batch(511, [1, 2, 4, 8, 16, 32, 64, 128, 256])) == 511
    with pytest.raises(ValueError, match="cannot be made"):
        split_batch(3, [2, 4])
    with pytest.raises(ValueError, match=">= 1"):
        split_batch(0, sizes)


def test_offline_option_parses_and_refuses_trt_dla_core():
    import converters
    from edgebench.cli import build_parser

    parser = build_parser()
    args = parser.parse_args(["--variants", "tensorrt-int8", "--trt-offline-all-accelerators"])
    assert args.trt_offline_all_accelerators is True
    assert parser.parse_args(["--variants", "tensorrt-fp16"]).trt_offline_all_accelerators is False
    help_text = " ".join(parser.format_help().split())
    assert help_text.count("--trt-offline-all-accelerators ") == 1     # declared once, by fp16
    assert "mlperf.device_shares" in help_text
    assert variant_options(ALL)["offline_all_accelerators"] is True
    for name in ("tensorrt-fp16", "tensorrt-int8"):
        conv = converters.get(name)
        conv.check_options(ALL)
        with pytest.raises(ValueError) as e:
            conv.check_options({**ALL, "trt_dla_core": 0})
        assert "--trt-offline-all-accelerators" in str(e.value)
        assert "--trt-dla-core 0" in str(e.value)


class _FakeTrtPredictor:
    """Stands in for TrtPredictor in load(): what it was given, and static sizes for DLA."""

    fail_core: int | None = None

    def __init__(self, data, plan, meta, run):
        if run["dla_core"] is not None and run["dla_core"] == self.fail_core:
            from converters.base import OutOfMemory

            raise OutOfMemory("create_execution_context failed (device memory?)")
        self.data, self.run = data, run
        self.batch_sizes = [1, 2, 4, 8, 16] if run["dla_core"] is not None else run["batch_sizes"]
        self.meta = dict(meta, engine_layers={"layers": 3})
        if run.get("split_batches"):
            self.meta["split_batches"] = "pieces"


def _offline_convert(monkeypatch, tmp_path, version: str, n_dla: int, fail_build_core=None,
                     **options):
    """tensorrt-fp16's convert() and load() with --trt-offline-all-accelerators, with
    TensorRT, the GPU, the export, the builds and the predictor replaced by fakes."""
    import converters
    import converters.tensorrt as pkg
    import converters.tensorrt.predictor as pred
    from converters.base import Artifact, ModelSpec

    onnx = tmp_path / "m.onnx"
    onnx.write_bytes(b"fp32-onnx")
    built: list = []

    def fake_build(source, settings, timing_cache):
        if settings["dla_core"] is not None and settings["dla_core"] == fail_build_core:
            raise ValueError("the DLA cannot take this engine")
        built.append(settings)
        dev = "gpu" if settings["dla_core"] is None else f"dla{settings['dla_core']}"
        return f"engine-{dev}".encode(), {"build_s": 1.5, "builder": engine_fields(settings),
                                          "trt_profiles": settings["profiles"],
                                          "dla": {"core": settings["dla_core"]}}

    monkeypatch.setattr("converters.onnxruntime.export_onnx",
                        lambda spec, cache: Artifact("onnx", path=str(onnx), meta={}))
    monkeypatch.setattr(pkg, "trt_module", lambda: _FakeTrt(version))
    monkeypatch.setattr(pkg, "device_identity", lambda: ("Orin", "8.7"))
    from converters.tensorrt import offline

    monkeypatch.setattr(offline, "dla_core_count", lambda: n_dla)
    monkeypatch.setattr(pkg, "build_engine", fake_build)
    monkeypatch.setattr(pred, "TrtPredictor", _FakeTrtPredictor)
    spec = ModelSpec(name="m", weights="random-seed-0", input_size=SIZE, num_classes=10,
                     build=lambda: None, options={**QUICK, **ALL, **options})
    conv = converters.get("tensorrt-fp16")
    art = conv.convert(spec, tmp_path / "cache")
    return conv, spec, art, built


def test_offline_all_accelerators_convert_and_load(monkeypatch, tmp_path):
    conv, spec, art, built = _offline_convert(monkeypatch, tmp_path, "10.3.0.30", 2)
    assert [s["dla_core"] for s in built] == [None, 0, 1]
    assert built[0] == _settings(QUICK)                    # the GPU engine as without the option
    assert built[1]["gpu_fallback"] is True and built[2]["default_device_type"] == "DLA"
    off = art.meta["offline_accelerators"]
    assert off["devices"] == off["planned"] == ["gpu", "dla0", "dla1"]
    assert off["gpu_only_because"] is None and off["not_used"] == {}
    keys = {art.meta["engine_key"], off["engines"]["dla0"]["engine_key"],
            off["engines"]["dla1"]["engine_key"]}
    assert len(keys) == 3
    for name, core in (("dla0", 0), ("dla1", 1)):
        e = off["engines"][name]
        assert e["dla_core"] == core and Path(e["path"]).read_bytes() == f"engine-{name}".encode()
        assert Path(e["path"]).name == f"m-{e['engine_key']}.engine" and not e["cached"]
    # Not in the GPU engine's .json: a run without the option reuses that engine as it was.
    sidecar = json.loads(Path(art.path).with_suffix(".json").read_text(encoding="utf-8"))
    assert "offline_accelerators" not in sidecar
    p = conv.load(art, spec)
    assert list(p.offline_devices) == ["gpu", "dla0", "dla1"] and p.offline_devices["gpu"] is p
    assert p.data == b"engine-gpu" and p.run["dla_core"] is None and "split_batches" not in p.run
    for name, core in (("dla0", 0), ("dla1", 1)):
        d = p.offline_devices[name]
        assert d.data == f"engine-{name}".encode()           # read back, sha256 checked
        assert d.run == {"batch_sizes": None, "cuda_graph": False, "dla_core": core,
                         "split_batches": True}
    rec = p.meta["offline_accelerators"]
    assert rec["devices"] == ["gpu", "dla0", "dla1"]
    assert rec["engine_keys"] == {"gpu": art.meta["engine_key"],
                                  "dla0": off["engines"]["dla0"]["engine_key"],
                                  "dla1": off["engines"]["dla1"]["engine_key"]}
    assert rec["engines"]["dla1"]["batch_sizes"] == [1, 2, 4, 8, 16]
    # A second run reuses all three engines.
    _, _, again, rebuilt = _offline_convert(monkeypatch, tmp_path, "10.3.0.30", 2)
    assert rebuilt == [] and again.cached
    assert all(e["cached"] for e in again.meta["offline_accelerators"]["engines"].values())
    assert again.meta["offline_accelerators"]["engines"]["dla0"]["engine_key"] == \
        off["engines"]["dla0"]["engine_key"]


@pytest.mark.parametrize("version,n_dla,why", [("10.13.3.9", 2, "10.7 was the last"),
                                              ("10.3.0.30", 0, "0 DLA cores")])
def test_offline_all_accelerators_without_dla_serves_from_the_gpu(monkeypatch, tmp_path,
                                                                   version, n_dla, why):
    conv, spec, art, built = _offline_convert(monkeypatch, tmp_path, version, n_dla)
    assert [s["dla_core"] for s in built] == [None]
    off = art.meta["offline_accelerators"]
    assert off["devices"] == ["gpu"] and why in off["gpu_only_because"]
    p = conv.load(art, spec)
    assert p.offline_devices == {"gpu": p}
    assert why in p.meta["offline_accelerators"]["gpu_only_because"]


def test_offline_dla_engine_that_cannot_build_or_load_is_left_out(monkeypatch, tmp_path):
    conv, spec, art, built = _offline_convert(monkeypatch, tmp_path, "10.3.0.30", 2,
                                              fail_build_core=1)
    off = art.meta["offline_accelerators"]
    assert off["devices"] == ["gpu", "dla0"] and off["planned"] == ["gpu", "dla0", "dla1"]
    assert "the DLA cannot take this engine" in off["not_used"]["dla1"]
    monkeypatch.setattr(_FakeTrtPredictor, "fail_core", 0)
    p = conv.load(art, spec)
    assert list(p.offline_devices) == ["gpu"]
    assert "load: OutOfMemory" in p.meta["offline_accelerators"]["not_used"]["dla0"]
    assert p.meta["offline_accelerators"]["devices"] == ["gpu"]


def test_dla_predictor_splits_a_batch_its_profiles_lack_and_closes_with_the_gpu_one():
    from converters.tensorrt.predictor import TrtPredictor

    calls: list = []

    def fake_call(batch):
        calls.append(len(batch))
        return batch[:, :2, 0, 0].copy()            # stand-in logits, row i from sample i

    dla = TrtPredictor.__new__(TrtPredictor)
    dla.split_batches, dla.batch_sizes = True, [1, 2, 4, 8, 16]
    dla._call = fake_call
    x = np.arange(12 * 3 * 2 * 2, dtype=np.float32).reshape(12, 3, 2, 2)
    out = dla(x)
    assert calls == [8, 4] and np.array_equal(out, x[:, :2, 0, 0])
    calls.clear()
    dla(x[:8])
    assert calls == [8]
    gpu = TrtPredictor.__new__(TrtPredictor)       # dynamic profile: never split
    gpu.split_batches, gpu.batch_sizes, gpu._call = False, None, fake_call
    calls.clear()
    gpu(x)
    assert calls == [12]

    closed: list = []

    class _Torch:
        class cuda:                                     # noqa: N801 - torch.cuda's shape
            @staticmethod
            def empty_cache():
                closed.append("empty_cache")

    class _Other:
        def close(self):
            closed.append("dla")

    gpu.torch = _Torch
    gpu.offline_devices = {"gpu": gpu, "dla0": _Other(), "dla1": _Other()}
    gpu.close()
    assert closed == ["dla", "dla", "empty_cache"] and not hasattr(gpu, "offline_devices")


def test_the_variants_compute_on_the_gpu_or_a_dla():
    # The report's "variants computed on" reads this (TensorRT need not be installed).
    import converters

    for name in ("tensorrt-fp16", "tensorrt-int8"):
        assert converters.get(name).compute_device({}) == "cuda"
        assert converters.get(name).compute_device({"trt_dla_core": 1}) == "dla"
