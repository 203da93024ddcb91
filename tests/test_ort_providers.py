"""ONNX Runtime on the GPU, checked without one (issue 15, part 3): the provider options and
session config entries come from one pure function (``provider_config``); the refusal of CPU
fallback, and the reasons a cell gets, are exercised on real ORT sessions of the CPU build
(the Azure EP stands in for a GPU EP that takes no node) and on a stand-in ORT module."""
from __future__ import annotations

import types
from pathlib import Path

import numpy as np
import pytest

import converters
from converters.base import Artifact, ModelSpec, SkipVariant
from converters.onnxruntime import (CPU_EP, CUDA_EP, DISABLE_CPU_FALLBACK, INPUT_NAME,
                                    OUTPUT_NAME, RECORD_ASSIGNMENT, TRT_EP, CpuFallbackRefused,
                                    create_session, provider_config, session_options, tf32_note,
                                    trt_cache_dirs, trt_profile)

ort = pytest.importorskip("onnxruntime")
AZURE_EP = "AzureExecutionProvider"


def opts_of(cfg, name: str) -> dict:
    return dict(cfg.providers)[name]


# --------------------------------------------------------------------- the pure function
def test_cuda_fp32_turns_tf32_off_and_refuses_cpu_fallback(tmp_path):
    cfg = provider_config([CUDA_EP, CPU_EP], tmp_path, "fp32")
    # The explicit CPU EP is dropped: ORT rejects it beside disable_cpu_ep_fallback.
    assert cfg.names == [CUDA_EP]
    assert opts_of(cfg, CUDA_EP) == {"use_tf32": "0"}
    assert cfg.session_config == {DISABLE_CPU_FALLBACK: "1", RECORD_ASSIGNMENT: "1"}
    assert DISABLE_CPU_FALLBACK == "session.disable_cpu_ep_fallback"
    assert cfg.env == {}
    assert tf32_note(cfg) == {CUDA_EP: "off (use_tf32=0)"}


def test_tensorrt_ep_gets_fp16_and_its_caches_in_the_cache_dir(tmp_path):
    conv = converters.get("onnxruntime-trt-fp16")
    assert conv.precision == "fp16" and conv._providers({"ort_providers": [CPU_EP]}) == [TRT_EP, CUDA_EP]
    cfg = provider_config(conv._providers({}), tmp_path, conv.precision, engine_key="m-0123",
                          input_shape=(3, 224, 224), max_batch=64, ort_version="1.31.1")
    assert cfg.names == [TRT_EP, CUDA_EP]
    trt = opts_of(cfg, TRT_EP)
    assert trt["trt_fp16_enable"] == "True"          # the Python binding wants True/False
    assert trt["trt_engine_cache_enable"] == "True" and trt["trt_timing_cache_enable"] == "True"
    engines, timing = Path(trt["trt_engine_cache_path"]), Path(trt["trt_timing_cache_path"])
    assert (engines, timing) == trt_cache_dirs(tmp_path, "m-0123", "fp16", "1.31.1")
    for folder in (engines, timing):
        assert folder.is_relative_to(tmp_path)
    assert engines.name == "m-0123-fp16" and timing.name == "timing" and engines.parent == timing.parent
    assert trt["trt_profile_min_shapes"] == f"{INPUT_NAME}:1x3x224x224"
    assert trt["trt_profile_opt_shapes"] == f"{INPUT_NAME}:8x3x224x224"
    assert trt["trt_profile_max_shapes"] == f"{INPUT_NAME}:64x3x224x224"
    assert opts_of(cfg, CUDA_EP) == {}               # nodes TensorRT leaves: CUDA EP, ORT's defaults
    assert cfg.session_config[DISABLE_CPU_FALLBACK] == "1" and cfg.env == {}
    assert not tmp_path.joinpath("ort-trt").exists()  # pure: load() makes the folders


def test_tensorrt_ep_in_the_fp32_variant_stays_fp32_without_tf32(tmp_path):
    cfg = provider_config([TRT_EP, CUDA_EP], tmp_path, "fp32", engine_key="m")
    assert opts_of(cfg, TRT_EP)["trt_fp16_enable"] == "False"
    assert opts_of(cfg, CUDA_EP) == {"use_tf32": "0"}
    # The TensorRT EP has no use_tf32 option; TensorRT honours the variable at build time.
    assert cfg.env == {"NVIDIA_TF32_OVERRIDE": "0"}
    assert tf32_note(cfg)[TRT_EP].startswith("off")
    assert "trt_profile_max_shapes" not in opts_of(cfg, TRT_EP)   # no batch given, no profile
    assert Path(opts_of(cfg, TRT_EP)["trt_engine_cache_path"]).name == "m-fp32"


def test_trt_profile_covers_every_measured_batch():
    assert trt_profile((3, 160, 160), 4) == {"trt_profile_min_shapes": "input:1x3x160x160",
                                             "trt_profile_opt_shapes": "input:4x3x160x160",
                                             "trt_profile_max_shapes": "input:4x3x160x160"}
    assert trt_profile((3, 8, 8), 512, opt_batch=32)["trt_profile_opt_shapes"] == "input:32x3x8x8"
    with pytest.raises(ValueError):
        trt_profile((3, 8, 8), 0)


def test_cpu_only_sets_no_session_config(tmp_path):
    cfg = provider_config([CPU_EP], tmp_path, "fp32")
    assert cfg.providers == [(CPU_EP, {})] and cfg.session_config == {} and cfg.env == {}
    assert tf32_note(cfg) == {}


def test_allowing_cpu_fallback_keeps_the_cpu_ep_and_still_records_placement(tmp_path):
    cfg = provider_config([CUDA_EP, CPU_EP], tmp_path, "fp32", allow_cpu_fallback=True)
    assert cfg.names == [CUDA_EP, CPU_EP]
    assert cfg.session_config == {RECORD_ASSIGNMENT: "1"}
    assert opts_of(cfg, CUDA_EP) == {"use_tf32": "0"}


def test_provider_config_refuses_what_it_cannot_mean(tmp_path):
    with pytest.raises(ValueError):
        provider_config([], tmp_path)
    with pytest.raises(ValueError, match="'fp32', 'fp16' or 'int8', not 'int4'"):
        provider_config([CUDA_EP], tmp_path, "int4")


def test_the_trt_int8_variant_asks_the_tensorrt_ep_for_int8_with_fp16_beside_it(tmp_path):
    cfg = provider_config([TRT_EP, CUDA_EP], tmp_path, "int8", engine_key="m.qdq",
                          input_shape=(3, 224, 224), max_batch=16)
    trt = dict(cfg.providers)[TRT_EP]
    assert trt["trt_int8_enable"] == "True" and trt["trt_fp16_enable"] == "True"
    assert "trt_int8_calibration_table_name" not in trt       # explicit (QDQ): no table
    assert Path(trt["trt_engine_cache_path"]).name.endswith("-int8")
    fp16 = dict(provider_config([TRT_EP, CUDA_EP], tmp_path, "fp16").providers)[TRT_EP]
    assert "trt_int8_enable" not in fp16


# ------------------------------------------------------------- real sessions, CPU build
@pytest.fixture(scope="module")
def tiny_onnx(tmp_path_factory) -> Path:
    """conv0 -> relu0 -> pool0 -> flat0 -> fc0, dynamic batch, in <cache>/onnx/ as
    export_onnx lays it out."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.standard_normal((4, 3, 3, 3)).astype(np.float32), "W")
    g = numpy_helper.from_array(rng.standard_normal((5, 4)).astype(np.float32), "G")
    nodes = [helper.make_node("Conv", [INPUT_NAME, "W"], ["c"], name="conv0", pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["r"], name="relu0"),
             helper.make_node("GlobalAveragePool", ["r"], ["p"], name="pool0"),
             helper.make_node("Flatten", ["p"], ["f"], name="flat0"),
             helper.make_node("Gemm", ["f", "G"], [OUTPUT_NAME], name="fc0", transB=1)]
    graph = helper.make_graph(
        nodes, "tiny", [helper.make_tensor_value_info(INPUT_NAME, TensorProto.FLOAT, ["N", 3, 8, 8])],
        [helper.make_tensor_value_info(OUTPUT_NAME, TensorProto.FLOAT, ["N", 5])], [w, g])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 9
    onnx.checker.check_model(model)
    path = tmp_path_factory.mktemp("cache") / "onnx" / "tiny-0123.onnx"
    path.parent.mkdir()
    onnx.save(model, str(path))
    return path


def spec(**options) -> ModelSpec:
    return ModelSpec("tiny", "random-seed-0", (3, 8, 8), 5, build=lambda: None,
                     options={"ort_threads": 1, **options})


def load(path: Path, **options):
    return converters.get("onnxruntime").load(Artifact("onnx", path=str(path)), spec(**options))


def test_ort_rejects_the_refusal_beside_an_explicit_cpu_ep(tiny_onnx):
    # Why provider_config never sets the entry for a CPU session: ORT refuses the pair.
    so = ort.SessionOptions()
    so.add_session_config_entry(DISABLE_CPU_FALLBACK, "1")
    with pytest.raises(Exception, match="Conflicting session configuration"):
        ort.InferenceSession(str(tiny_onnx), so, providers=[CPU_EP], enable_fallback=0)


def test_cpu_session_runs_and_records_its_options(tiny_onnx):
    pred = load(tiny_onnx, ort_providers=[CPU_EP])
    out = pred(np.ones((2, 3, 8, 8), np.float32))
    assert out.shape == (2, 5) and np.isfinite(out).all()
    meta = pred.meta
    assert meta["providers"] == [CPU_EP] and meta["provider_options"] == {CPU_EP: {}}
    assert meta["io_binding"] is False and meta["intra_op_num_threads"] == 1
    assert "session_config" not in meta and "cpu_fallback" not in meta


@pytest.mark.skipif(AZURE_EP not in ort.get_available_providers(), reason="no Azure EP here")
def test_refused_fallback_fails_the_cell_with_the_nodes_named(tiny_onnx):
    # The Azure EP takes no node of this model: all five would run on the CPU EP behind its
    # name, as nodes a CUDA/TensorRT EP lacks a kernel for would.
    with pytest.raises(CpuFallbackRefused) as e:
        load(tiny_onnx, ort_providers=[AZURE_EP, CPU_EP])
    why = str(e.value)
    assert "\n" not in why and len(why) < 500               # one line: the record's reason
    assert DISABLE_CPU_FALLBACK in why and "5 of 5 nodes" in why and "--ort-allow-cpu-fallback" in why
    assert "conv0 (Conv)" in why and "fc0 (Gemm)" in why and "Conv x1" in why


@pytest.mark.skipif(AZURE_EP not in ort.get_available_providers(), reason="no Azure EP here")
def test_allowed_fallback_still_fails_when_the_first_ep_runs_nothing(tiny_onnx):
    with pytest.raises(RuntimeError, match=f"{AZURE_EP} runs none of the model's 5 nodes"):
        load(tiny_onnx, ort_providers=[AZURE_EP], ort_allow_cpu_fallback=True)


@pytest.mark.skipif(CUDA_EP in ort.get_available_providers(), reason="this build has CUDA")
def test_gpu_variants_are_unavailable_on_a_cpu_build():
    av = converters.get("onnxruntime").available({"ort_providers": [CUDA_EP]})
    assert not av.ok and CUDA_EP in av.reason
    trt = converters.get("onnxruntime-trt-fp16").available({})
    assert not trt.ok and TRT_EP in trt.reason
    cpu = converters.get("onnxruntime").available({})
    assert cpu.ok and cpu.versions["providers"] == [CPU_EP] and cpu.versions["session_config"] == {}


# ------------------------------------------------- ORT's errors, from a stand-in module
class _Opts:
    def __init__(self):
        self.entries = {}

    def add_session_config_entry(self, key, value):
        self.entries[key] = value


def fake_ort(first_error: str, diag_providers=None):
    """An ORT whose first session fails with ``first_error``; a second (diagnostic) session
    registers ``diag_providers``."""
    calls = []

    class Session:
        def __init__(self, path, sess_options=None, providers=None, enable_fallback=1):
            calls.append({"providers": providers, "enable_fallback": enable_fallback,
                          "config": dict(getattr(sess_options, "entries", {}))})
            if len(calls) == 1:
                raise RuntimeError(first_error)
            self.providers = diag_providers

        def get_providers(self):
            return self.providers

    return types.SimpleNamespace(__version__="9.9.9", InferenceSession=Session,
                                 SessionOptions=ort.SessionOptions,
                                 GraphOptimizationLevel=ort.GraphOptimizationLevel,
                                 ExecutionMode=ort.ExecutionMode), calls


REFUSAL = ("[ONNXRuntimeError] : 1 : FAIL : This session contains graph nodes that are assigned "
           "to the default CPU EP, but fallback to CPU EP has been explicitly disabled by the user.")


def test_a_gpu_ep_that_did_not_load_makes_the_cell_skipped(tmp_path, monkeypatch):
    # onnxruntime-gpu without its CUDA libraries: ORT leaves the EP out with a log line, every
    # node lands on the CPU, and the refusal is the first thing the cell sees.
    import converters.onnxruntime.session as mod      # where _explain_refusal looks it up

    monkeypatch.setattr(mod, "session_options", lambda threads=None: _Opts())
    fake, calls = fake_ort(REFUSAL, diag_providers=[CPU_EP])
    cfg = provider_config([CUDA_EP], tmp_path)
    with pytest.raises(SkipVariant, match=f"{CUDA_EP} did not load here"):
        create_session(fake, "m.onnx", _Opts(), cfg)
    assert [c["enable_fallback"] for c in calls] == [0, 0]   # ORT's Python retry on CPU: off
    assert calls[0]["config"][DISABLE_CPU_FALLBACK] == "1"
    assert calls[1]["providers"] == [(CUDA_EP, {"use_tf32": "0"}), (CPU_EP, {})]
    assert calls[1]["config"] == {RECORD_ASSIGNMENT: "1"}


def test_an_onnxruntime_without_use_tf32_gets_a_clear_reason(tmp_path):
    fake, _ = fake_ort('[ONNXRuntimeError] : 1 : FAIL : Unknown provider option: "use_tf32".')
    with pytest.raises(RuntimeError, match=r"onnxruntime 9\.9\.9 does not know a provider option.*use_tf32"):
        create_session(fake, "m.onnx", _Opts(), provider_config([CUDA_EP], tmp_path))


def test_other_session_errors_pass_through(tmp_path):
    fake, calls = fake_ort("[ONNXRuntimeError] : 7 : INVALID_PROTOBUF : bad model")
    with pytest.raises(RuntimeError, match="INVALID_PROTOBUF"):
        create_session(fake, "m.onnx", session_options(1), provider_config([CPU_EP], tmp_path))
    assert len(calls) == 1


# Recorded on an H100 with onnxruntime-gpu 1.31.1 and no TensorRT (run.sh in that folder).
H100_PROBE = (Path(__file__).resolve().parents[1] / "experiments" / "ort-cuda-h100-2026-11-26"
              / "runs" / "2-after-fixes" / "probe.jsonl")


def test_tensorrt_ep_without_tensorrt_libraries_makes_the_cell_skipped(tmp_path):
    # onnxruntime-gpu lists the TensorRT EP whether TensorRT is installed or not; without
    # libnvinfer the session raises (it does not leave the EP out), and that run's cells
    # were recorded as failed. The message is the real one from that machine.
    import json

    cases = [json.loads(line) for line in H100_PROBE.read_text(encoding="utf-8").splitlines()]
    trt = next(c for c in cases if c["providers"][0] == TRT_EP)
    assert TRT_EP in trt["result"]["available"] and "libnvinfer" in " ".join(trt["log"])
    fake, calls = fake_ort(trt["result"]["error"])
    with pytest.raises(SkipVariant, match=r"TensorRT execution provider is in this onnxruntime "
                                          r"build \(9\.9\.9\) but TensorRT's libraries did not load"):
        create_session(fake, "m.onnx", _Opts(), provider_config([TRT_EP, CUDA_EP], tmp_path, "fp16"))
    assert len(calls) == 1


# --------------------------------------------------------- where each variant computes
def test_the_ort_variants_say_where_they_compute():
    # The report's "variants computed on" and the reference's own parity cell read this:
    # the CUDA EP run of 2026-11-26 on an H100 said "cpu" for every ORT cell.
    assert converters.get("onnxruntime").compute_device({"ort_providers": [CUDA_EP]}) == "cuda"
    assert converters.get("onnxruntime").compute_device({"ort_providers": [CPU_EP]}) == "cpu"
    assert converters.get("onnxruntime-trt-fp16").compute_device({}) == "cuda"
    assert converters.get("onnxruntime-int8").compute_device({}) == "cpu"
    expected = "cuda" if CUDA_EP in ort.get_available_providers() else "cpu"
    assert converters.get("onnxruntime").compute_device({}) == expected


def test_a_missing_backend_keeps_its_reason_in_the_probe(monkeypatch):
    # compute_device imports the backend; where it is not installed the probe must still say
    # available()'s reason (not fail on an ImportError) and call the device "cpu".
    import sys

    from edgebench.worker import compute_device

    monkeypatch.setitem(sys.modules, "onnxruntime", None)      # import raises ImportError
    conv = converters.get("onnxruntime")
    with pytest.raises(ImportError):
        conv.compute_device({})
    assert compute_device(conv, {}) == "cpu"
    av = conv.available({})
    assert not av.ok and "onnxruntime not installed" in av.reason
