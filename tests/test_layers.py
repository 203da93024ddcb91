"""The layers task (edgebench.layers): each runtime's own profiler on real sessions, the
operator types, the check against the latency p50, the report's side-by-side section, and
the command's handling of bad input and failing profilers."""
from __future__ import annotations

import json

import numpy as np
import pytest

from testlib import TINY, assert_records_valid, run_cli

# ----------------------------------------------------------------------------- operator types


@pytest.mark.parametrize("name, op, kind", [
    ("/features/features.0/Conv", "Conv", "conv"),
    ("/layer1/conv1/Relu", "Relu", "elementwise"),          # the op decides, not the path
    ("n", "QLinearConv", "conv"),
    ("n", "DequantizeLinear", "data movement"),            # not "linear": a matmul
    ("n", "QLinearAdd", "elementwise"),
    ("n", "QLinearGlobalAveragePool", "pool"),
    ("n", "Gemm", "matmul/gemm"),
    ("n", "Transpose", "data movement"),
    ("fused_conv2d_add_relu", "", "conv"),                 # TVM: a fused kernel is its conv
    ("fused_matmul_add", "", "matmul/gemm"),
    ("layout_transform", "", "data movement"),
    ("aten::mkldnn_convolution", "aten::mkldnn_convolution", "conv"),
    ("aten::native_batch_norm", "aten::native_batch_norm", "norm"),
    ("aten::clamp", "aten::clamp", "elementwise"),
    ("aten::addmm", "aten::addmm", "matmul/gemm"),
    ("convolution.3", "convolution", "conv"),                # XLA
    ("broadcast_multiply_fusion", "fusion(broadcast, multiply)", "elementwise"),
    ("x", "fusion(add, convolution, maximum)", "conv"),
    ("Reformatting CopyNode for Input Tensor 0", "Reformat", "data movement"),  # TensorRT
    ("x", "PointWiseV2", "elementwise"),
    ("x", "CudaDepthwiseConvolution", "depthwise"),
    ("Myelin", "", "other"),
])
def test_each_runtimes_operator_names_map_to_one_type(name, op, kind):
    from edgebench.layer_types import op_type

    assert op_type(name, op) == kind


def test_a_depthwise_convolution_is_its_own_type():
    from edgebench.layer_types import op_type

    assert op_type("c", "Conv", depthwise=True) == "depthwise"
    assert op_type("r", "Relu", depthwise=True) == "elementwise"   # only a convolution


# ----------------------------------------------------------------------------- summary

def test_the_total_is_checked_against_the_latency_p50_and_flagged_past_15_percent():
    from edgebench.layers import summarize

    prof = {"profiler": "p", "layers": [{"name": "a", "op": "Conv", "ms": 0.6},
                                        {"name": "b", "op": "Relu", "ms": 0.2}]}
    ok = summarize(prof, 0.85)["against_latency"]
    assert ok["reliable"] is True and ok["ratio"] == pytest.approx(0.8 / 0.85, abs=1e-4)
    off = summarize(prof, 1.0)["against_latency"]           # 0.8 / 1.0: 20% off
    assert off["reliable"] is False and "read its shares" in off["note"]
    none = summarize(prof, None)["against_latency"]
    assert none["reliable"] is None and "add the latency task" in none["note"]


def test_an_int8_profile_counts_the_layers_that_stayed_fp32_apart_from_quantize_dequantize():
    from edgebench.layers import summarize

    layers = [{"name": "c", "op": "QLinearConv", "ms": 1.0, "precision": "int8"},
              {"name": "r", "op": "Relu", "ms": 0.3, "precision": "fp32"},
              {"name": "t", "op": "Transpose", "ms": 0.2, "precision": "fp32"},
              {"name": "q", "op": "QuantizeLinear", "ms": 0.1, "precision": "fp32",
               "qdq": True},
              {"name": "d", "op": "DequantizeLinear", "ms": 0.1, "precision": "int8",
               "qdq": True}]
    s = summarize({"profiler": "p", "layers": layers}, None, "int8")
    red = s["reduced_precision"]
    assert (red["fp32_layers"], red["fp32_ms"]) == (2, 0.5)
    assert red["fp32_ops"] == {"Relu": 1, "Transpose": 1}
    assert (red["quantize_dequantize_layers"], red["quantize_dequantize_ms"]) == (2, 0.2)
    assert s["by_type_ms"]["conv"] == 1.0 and s["layers"][0]["name"] == "c"   # slowest first


# ----------------------------------------------------------------------------- real profilers

def _tiny_module():
    import torch

    torch.manual_seed(0)
    return torch.nn.Sequential(
        torch.nn.Conv2d(3, 16, 3, padding=1), torch.nn.ReLU(),
        torch.nn.Conv2d(16, 16, 3, padding=1, groups=16), torch.nn.ReLU(),
        torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(16, 10)).eval()


def _spec():
    from converters.base import ModelSpec

    return ModelSpec("tiny-layers-test", "random-seed-0", (3, 32, 32), 10, _tiny_module,
                     options={})


X = np.random.default_rng(0).standard_normal((1, 3, 32, 32)).astype(np.float32)


def test_onnx_runtime_profiles_every_node_with_its_provider_precision_and_depthwise(tmp_path):
    import converters
    from edgebench.layers import summarize

    conv, spec = converters.get("onnxruntime"), _spec()
    art = conv.convert(spec, tmp_path)
    pred = conv.load(art, spec)
    prof = conv.profile_layers(art, spec, pred, X, 5)
    assert prof["matching"] == "onnx node name" and prof["layers"]
    assert {x["where"] for x in prof["layers"]} == {"CPUExecutionProvider"}
    assert {x["precision"] for x in prof["layers"]} == {"fp32"}
    convs = [x for x in prof["layers"] if x["op"] in ("Conv", "FusedConv")]
    assert len(convs) == 2 and sum(bool(x.get("depthwise")) for x in convs) == 1
    s = summarize(prof, None)
    assert {"conv", "depthwise", "matmul/gemm"} <= set(s["by_type_ms"])
    # the IO-binding split GPU variants get, through the same ORT calls with CPU tensors
    from converters.onnxruntime.layers import latency_split

    split = latency_split(pred, X, 3, device="cpu")
    assert set(split) == {"h2d_ms", "compute_ms", "d2h_ms"} and split["compute_ms"] > 0
    assert s["latency_split"] == {"skipped": "computes on the CPU: no host-device copies to split"}
    # the cell's own session was not the profiled one: it runs on, unprofiled
    assert not pred.sess.get_session_options().enable_profiling
    np.testing.assert_allclose(pred(X), spec.build()(__import__("torch").from_numpy(X))
                               .detach().numpy(), atol=1e-4)


def test_the_parser_reads_a_recorded_onnx_runtime_profile():
    """Two events as ORT 1.31 writes them (recorded from a real session; thread stats and
    memory fields trimmed): a Conv fused with its Relu in NCHWc, and a Gemm."""
    from converters.onnxruntime.layers import node_times

    events = [
        {"cat": "Session", "name": "model_run", "dur": 900},
        {"cat": "Node", "name": "/features/features.2/Relu_output_0_nchwc_kernel_time", "dur": 292,
         "args": {"op_name": "Conv", "provider": "CPUExecutionProvider",
                  "input_type_shape": [{"float": [1, 3, 64, 64]}, {"float": [16, 3, 3, 3]},
                                       {"float": [16]}]}},
        {"cat": "Node", "name": "/features/features.2/Relu_output_0_nchwc_kernel_time", "dur": 46,
         "args": {"op_name": "Conv", "provider": "CPUExecutionProvider",
                  "input_type_shape": [{"float": [1, 3, 64, 64]}, {"float": [16, 3, 3, 3]},
                                       {"float": [16]}]}},
        {"cat": "Node", "name": "/head/Gemm_kernel_time", "dur": 8,
         "args": {"op_name": "Gemm", "provider": "CPUExecutionProvider",
                  "input_type_shape": [{"float": [1, 64]}, {"float": [5]}]}},
        {"cat": "Node", "name": "/head/Gemm_fence_before", "dur": 0, "args": {}},
    ]
    events.append({"cat": "Node", "name": "concat_kernel_time", "dur": 5, "args": {
        "op_name": "QLinearConcat", "provider": "CPUExecutionProvider",
        "input_type_shape": [{"float": []}, {"uint8": []}, {"uint8": [1, 64, 8, 8]},
                             {"float": []}, {"uint8": []}],
        "output_type_shape": [{"uint8": [1, 64, 8, 8]}]}})
    events.append({"cat": "Node", "name": "dq_kernel_time", "dur": 2, "args": {
        "op_name": "DequantizeLinear", "provider": "CPUExecutionProvider",
        "input_type_shape": [{"uint8": [1, 64]}, {"float": []}, {"uint8": []}],
        "output_type_shape": [{"float": [1, 64]}]}})
    got = {x["name"]: x for x in node_times(events, runs=1)}
    assert got.pop("concat")["precision"] == "int8"            # its first input is a scale
    assert got.pop("dq").get("qdq") and not got["/head/Gemm"].get("qdq")
    assert set(got) == {"/features/features.2/Relu_output_0_nchwc", "/head/Gemm"}
    assert got["/features/features.2/Relu_output_0_nchwc"]["ms"] == 0.046     # the last run
    assert not got["/features/features.2/Relu_output_0_nchwc"].get("depthwise")
    assert got["/head/Gemm"]["op"] == "Gemm" and got["/head/Gemm"]["precision"] == "fp32"


def test_torch_profiler_gives_operators_by_self_time_and_tells_the_depthwise_conv():
    from converters.pytorch import TorchPredictor

    prof = TorchPredictor(_tiny_module(), "cpu", {}).profile_layers(X, 5)
    convs = [x for x in prof["layers"] if "conv" in x["op"]]
    assert any(x["depthwise"] for x in convs) and any(not x["depthwise"] for x in convs)
    assert {x["where"] for x in prof["layers"]} == {"CPU"}
    assert "latency_split" not in prof                 # no copies on the CPU
    # self times partition the call: their sum is no more than the calls' own time
    assert sum(x["ms"] for x in prof["layers"]) > 0 and prof["unattributed_ms"] >= 0, prof


def test_torch_self_times_match_key_averages():
    """Self times read from the raw events (fast) are torch's own key_averages() figures."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    from converters import torch_layers

    module = _tiny_module()
    with torch.inference_mode(), profile(activities=[ProfilerActivity.CPU],
                                         record_shapes=True) as prof:
        for _ in range(3):
            with torch.profiler.record_function(torch_layers.RANGE):
                module(torch.from_numpy(X))
    times, calls, wrapper_us = torch_layers._cpu_self_times(prof)
    ours: dict = {}
    for (name, _dw), us in times.items():
        ours[name] = ours.get(name, 0.0) + us
    theirs = {e.key: e for e in prof.key_averages()}
    assert wrapper_us == pytest.approx(theirs.pop(torch_layers.RANGE).cpu_time_total)
    assert set(ours) == set(theirs)
    for name, e in theirs.items():
        assert ours[name] == pytest.approx(e.self_cpu_time_total, abs=1e-3), name
        assert sum(c for (n, _), c in calls.items() if n == name) == e.count, name
    assert any(dw for (_n, dw) in times)          # the tiny net has a depthwise conv


def test_jax_profile_reads_xla_events_and_the_compiled_hlo():
    import flax.linen as nn
    import jax

    from converters.jax_flax.predictor import JaxPredictor
    from converters.jax_flax.profile_layers import hlo_ops

    class Tiny(nn.Module):
        @nn.compact
        def __call__(self, x):
            x = nn.relu(nn.Conv(16, (3, 3))(x))
            x = nn.relu(nn.Conv(16, (3, 3), feature_group_count=16)(x))
            return nn.Dense(10)(x.mean(axis=(1, 2)))

    params = Tiny().init(jax.random.PRNGKey(0), np.zeros((1, 32, 32, 3), np.float32))["params"]
    pred = JaxPredictor(Tiny(), params)
    prof = pred.profile_layers(X, 3)
    assert prof["layers"] and {x["where"] for x in prof["layers"]} == {"CPU"}
    ops = hlo_ops(pred._executables[X.shape].as_text())
    assert sum(dw for _, dw in ops.values()) >= 1         # feature_group_count=16
    assert any("convolution" in what for what, _ in ops.values())
    named = [x for x in prof["layers"] if x["op"]]
    assert named, [x["name"] for x in prof["layers"]]    # events matched to instructions


def test_jax_an_asynchronous_instruction_spans_to_its_end_mark_and_overlaps_share_time():
    """XLA's CPU executor: ``conv`` hands its work over (event 0-10) and is done at its
    ``end: conv`` mark (t=100); ``add`` runs from 50 to 70 meanwhile; ``dot`` follows alone.
    The times add up to the wall time covered (0-130), overlaps shared evenly."""
    from types import SimpleNamespace as NS

    from converters.jax_flax.profile_layers import op_times

    def ev(name, start, dur, op=None):
        stats = [("hlo_op", op), ("run_id", 7)] if op else [("_c", 1)]
        return NS(name=name, start_ns=start, duration_ns=dur, stats=stats)

    line = NS(name="tf_XLAEigen", events=[ev("conv.1", 0, 10, "conv.1"),
                                          ev("add.2", 50, 20, "add.2"),
                                          ev("end: conv.1", 99, 1),
                                          ev("dot.3", 100, 30, "dot.3")])
    per_run, calls = op_times(NS(planes=[NS(lines=[line])]))
    assert per_run == {7: {"conv.1": 90.0, "add.2": 10.0, "dot.3": 30.0}}
    assert calls == {"conv.1": 1, "add.2": 1, "dot.3": 1}


def test_tensorrt_layer_information_gives_type_precision_tactic_and_placement():
    """The inspector's JSON (LayerInformationFormat.JSON with ProfilingVerbosity.DETAILED),
    in the fields TensorRT 10 writes (Name, LayerType, Outputs' Format/Datatype, Groups,
    OutMaps, TacticName, Origin)."""
    from converters.tensorrt.profile_layers import layer_info

    text = json.dumps({"Layers": [
        {"Name": "QuantizeLinear_2", "LayerType": "Reformat", "Origin": "QDQ",
         "Outputs": [{"Format/Datatype": "Four wide channel vectorized row major Int8 format"}]},
        {"Name": "w + QuantizeLinear_8 + Conv_12 + PWN(Clip_16)", "LayerType": "CaskConvolution",
         "Groups": 1, "OutMaps": 32, "TacticName": "sm80_xmma_fprop_implicit_gemm_i8i8",
         "Outputs": [{"Format/Datatype": "Thirty-two wide channel vectorized row major Int8 format"}]},
        {"Name": "w2 + Conv_29", "LayerType": "CudaDepthwiseConvolution", "Groups": 32,
         "OutMaps": 32, "Outputs": [{"Format/Datatype": "Channel major FP16 format"}]},
        {"Name": "{ForeignNode[Conv_40...Relu_90]}", "LayerType": "DLA",
         "Outputs": [{"Format/Datatype": "Row major linear FP16 format"}]}]})
    info = layer_info(text, dla=True)
    assert info["QuantizeLinear_2"]["precision"] == "int8" and info["QuantizeLinear_2"]["qdq"]
    conv = info["w + QuantizeLinear_8 + Conv_12 + PWN(Clip_16)"]
    assert conv["tactic"].startswith("sm80") and conv["where"] == "GPU" and not conv["depthwise"]
    assert not conv["qdq"]
    assert info["w2 + Conv_29"]["depthwise"] and info["w2 + Conv_29"]["precision"] == "fp16"
    assert info["{ForeignNode[Conv_40...Relu_90]}"]["where"] == "DLA"
    assert layer_info(json.dumps({"Layers": ["a + b", "c"]})) == {"a + b": {}, "c": {}}


# ----------------------------------------------------------------------------- the command

@pytest.mark.parametrize("value", ["0", "-3", "ten"])
def test_a_bad_layers_top_value_is_a_usage_error(tmp_path, value):
    proc = run_cli("edgebench.full", "--models", TINY, "--variants", "onnxruntime", "--tasks",
                   "layers", "--layers-top", value, "--out", str(tmp_path / "o"), timeout=120)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "--layers-top" in proc.stderr and not (tmp_path / "o").exists()


def test_the_paper_profile_adds_the_layers_task_and_the_others_do_not():
    from edgebench.cli import build_parser
    from edgebench.cli_checks import resolve_tasks

    for profile, want in (("paper", True), ("quick", False), ("smoke", False)):
        args = build_parser().parse_args(["--profile", profile])
        resolve_tasks(args)
        assert ("layers" in args.tasks) is want, (profile, args.tasks)
    args = build_parser().parse_args(["--profile", "paper", "--tasks", "latency"])
    resolve_tasks(args)
    assert args.tasks == ["latency"]                    # given tasks are kept as given


@pytest.mark.slow
def test_a_run_profiles_every_cpu_runtime_side_by_side_and_a_crashed_profile_stays_alone(
        tmp_path, cache_dir):
    """JAX's profiler runs on a real jit above; here the other runtimes in the suite's cells,
    and PyTorch's layers cell killed by a real SIGSEGV."""
    out = tmp_path / "run"
    proc = run_cli("edgebench.full", "--models", TINY, "--variants", "pytorch", "onnxruntime",
                   "onnxruntime-int8", "tvm", "--tvm-untuned", "--tasks", "latency",
                   "layers", "--profile", "smoke", "--layers-top", "3", "--int8-both-forms",
                   "--out", str(out),
                   "--cache-dir", str(cache_dir), timeout=900,
                   env={"EDGEBENCH_TEST_CRASH": f"{TINY}/pytorch/layers"})
    assert proc.returncode == 1, proc.stderr[-3000:]          # the crashed cell
    recs = assert_records_valid(out)
    by = {(r["variant"], r["task"]): r for r in recs}
    assert by[("pytorch", "layers")]["status"] == "failed"
    assert by[("pytorch", "latency")]["status"] == "ok"       # its latency cell is untouched
    for v in ("onnxruntime", "onnxruntime-int8", "tvm"):
        r = by[(v, "layers")]
        assert r["status"] == "ok", (v, r["reason"])
        assert r["against_latency"]["latency_p50_ms"] == by[(v, "latency")]["latency_ms"]["p50"]
        assert r["against_latency"]["ratio"] > 0 and r["layer_count"] > 0
        assert sum(r["by_type_ms"].values()) == pytest.approx(r["profile_total_ms"], rel=1e-3)
    int8 = by[("onnxruntime-int8", "layers")]
    assert int8["reduced_precision"]["fp32_layers"] is not None
    assert by[("onnxruntime-int8", "latency")]["variant_meta"]["int8"]["form"] == "cpu"
    # the symmetric (TensorRT) form of the same calibration, profiled beside it in its cell
    assert int8["form"] == "cpu" and set(int8["other_forms"]) == {"tensorrt"}
    other = int8["other_forms"]["tensorrt"]
    assert other["against_latency"]["ratio"] > 0 and other["reduced_precision"]["fp32_layers"] >= 0
    assert other["latency_p50_ms_measured_here"] > 0
    report = (out / "report.md").read_text(encoding="utf-8")
    assert "## Where the time goes: per-layer profiles" in report
    assert "Top 3 layers of tvm:" in report and "Top 4 layers" not in report
    assert "onnxruntime-int8 (cpu form)" in report and "onnxruntime-int8 (tensorrt form)" in report
    assert f"{TINY} / pytorch: layers failed" in report
    assert (out / "plots" / f"layers_{TINY}.png").is_file()


def test_the_report_sets_variants_and_int8_forms_side_by_side(tmp_path):
    from edgebench import report_layers
    from edgebench.layers import summarize

    def rec(variant, layers, p50, precision="fp32", **extra):
        s = summarize({"profiler": "p", "layers": layers, "matching": "onnx node name",
                       **extra}, p50, precision)
        return {"model": "m", "variant": variant, "task": "layers", "status": "ok", **s}

    fp32 = rec("onnxruntime", [{"name": "conv1", "op": "Conv", "ms": 1.0, "precision": "fp32"},
                               {"name": "relu1", "op": "Relu", "ms": 0.2, "precision": "fp32"}],
               1.25)
    other = {"profiler": "p", "matching": "onnx node name", "latency_p50_ms": 2.5, "layers": [
        {"name": "conv1", "op": "QLinearConv", "ms": 0.5, "precision": "int8"},
        {"name": "relu1", "op": "Relu", "ms": 0.9, "precision": "fp32"},
        {"name": "t1", "op": "Transpose", "ms": 0.4, "precision": "fp32"}]}
    int8 = rec("onnxruntime-int8", [{"name": "conv1", "op": "QLinearConv", "ms": 0.4,
                                     "precision": "int8"}], 0.41, "int8",
               form="cpu", other_forms={"tensorrt": other})
    failed = {"model": "m", "variant": "jax", "task": "layers", "status": "failed",
              "reason": "RuntimeError: no events"}
    records = [fp32, int8, failed]
    plots = report_layers.plot(records, tmp_path)
    assert plots == ["layers_m.png"] and (tmp_path / "layers_m.png").is_file()
    text = "\n".join(report_layers.section(records, {"config": {"layers_top": 2}}, plots))
    assert "| operator type | onnxruntime | onnxruntime-int8 (cpu form) | onnxruntime-int8 " \
           "(tensorrt form) |" in text
    assert "![layers_m.png](plots/layers_m.png)" in text
    assert "| onnxruntime-int8 (tensorrt form) | int8 | 2 (1.300 (72%))" in text  # Relu, Transpose
    assert "| total / p50 | 0.96 | 0.976 | 0.72 **unreliable** |" in text       # 1.8 / 2.5
    assert "Matched by ONNX node name" in text and "Top 2 layers of onnxruntime:" in text
    assert "m / jax: layers failed: RuntimeError: no events" in text
    assert report_layers.section([{**failed, "task": "latency"}], {}) == []   # no layers cell
