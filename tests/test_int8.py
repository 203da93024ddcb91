"""INT8: the calibration set (never an evaluated image), the QDQ model ONNX Runtime's
quantize_static makes (a real export, real calibration, a real ORT session), the INT8
parity rule and the accuracy cost, the CPU's INT8 instructions, and the CLI's refusals."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from edgebench import metrics
from edgebench.data import DataError, resolve_source
from edgebench.data.calibration import (CALIBRATION_DIR, bundled_calibration, choose,
                                        folder_images, overlap)

REPO = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures"


# ----------------------------------------------------------------------------- calibration set

def test_the_bundled_calibration_set_shares_no_image_with_the_bundled_sample():
    cal, sample = bundled_calibration(), resolve_source(None)
    assert len(cal) == 40 and len(sample) == 16
    assert overlap(cal, sample) == []
    chosen = choose(sample, sample, False, None, None, 128)
    assert len(chosen) == 40 and chosen.root == str(CALIBRATION_DIR.resolve())


def test_a_calibration_folder_holding_an_evaluated_image_is_refused(tmp_path):
    sample = resolve_source(None)
    shutil.copy(sample.paths[3], tmp_path / "renamed-copy.jpg")       # same bytes, other name
    shutil.copy(bundled_calibration().paths[0], tmp_path / "fine.jpg")
    with pytest.raises(DataError, match="overlap the evaluation images: 1 of 2"):
        choose(sample, sample, False, str(tmp_path), None, 128)
    with pytest.raises(DataError, match="overlap"):           # the very same folder
        choose(sample, sample, False, str(REPO / "datasets" / "sample"), None, 128)


def test_with_data_calibration_takes_the_images_the_run_does_not_evaluate():
    everything = resolve_source(None)             # 16 images stand in for a --data set
    evaluated = everything.limit(8)
    cal = choose(evaluated, everything, True, None, None, 128)
    assert len(cal) == 8 and not set(cal.paths) & set(evaluated.paths)
    with pytest.raises(DataError, match="--int8-calib-images 9: only 8"):
        choose(evaluated, everything, True, None, 9, 128)
    with pytest.raises(DataError, match="no images are left"):
        choose(everything, everything, True, None, None, 128)     # paper: all evaluated


def test_a_calibration_folder_without_images_is_refused(tmp_path):
    (tmp_path / "notes.txt").write_text("x", encoding="utf-8")
    with pytest.raises(DataError, match="holds no image files"):
        folder_images(str(tmp_path))


# ----------------------------------------------------------------------------- metrics

def test_int8_parity_rule_is_top1_agreement_and_mean_cosine():
    rng = np.random.default_rng(0)
    ref = rng.normal(size=(20, 10))
    close = ref + rng.normal(scale=0.05, size=ref.shape)
    p = metrics.parity(ref, close)
    ok, why = metrics.parity_verdict(p, "int8", {})
    assert ok and why.startswith("int8: top1_agreement") and p["max_abs_diff"] > 1e-3
    # The arg-max agrees everywhere, but the logits are another model's: refused.
    broken = np.zeros_like(ref)
    broken[np.arange(20), ref.argmax(1)] = 1.0
    broken += rng.normal(scale=0.01, size=ref.shape)
    p = metrics.parity(ref, broken)
    assert p["top1_agreement"] == 1.0
    ok, why = metrics.parity_verdict(p, "int8", {})
    assert not ok and "cosine_mean" in why


def test_int8_cost_applies_mlperfs_99_percent_rule_only_with_real_labels():
    labels = np.arange(100) % 10
    ref = np.eye(10)[labels] * 5.0                          # FP32: all 100 right
    out = ref.copy()
    out[:2] = np.eye(10)[(labels[:2] + 1) % 10] * 5.0       # INT8: 98 right
    cost = metrics.int8_cost(ref, out, labels, True)
    assert cost["fp32_top1"] == 100.0 and cost["int8_top1"] == 98.0
    assert cost["top1_delta"] == -2.0 and cost["top1_agreement"] == 0.98
    assert cost["mlperf_99"] == "fail" and "98.00%" in cost["mlperf_99_reason"]
    out[1] = ref[1]                                          # 99 right: keeps 99%
    assert metrics.int8_cost(ref, out, labels, True)["mlperf_99"] == "pass"
    fake = metrics.int8_cost(ref, out, labels, False, "random weights")
    assert fake["mlperf_99"] is None and fake["mlperf_99_reason"] == "random weights"


# ----------------------------------------------------------------------------- CPU flags

def test_cpu_int8_reads_the_recorded_cpuinfo_of_this_projects_vms():
    from edgebench.sysinfo import cpu_int8

    # /proc/cpuinfo's flags line as recorded on 2026-11-25 on this project's AMD EPYC VM.
    line = (FIXTURES / "cpuinfo-epyc-2026-11-25.txt").read_text(encoding="utf-8")
    got = cpu_int8(line, "x86_64")
    assert got["best"] == "AVX-512 VNNI"
    assert got["flags"] == ["avx512_vnni", "avx_vnni", "avx2"]
    # The same line without the VNNI flags: what the AVX2-only EPYC days show.
    avx2 = line.replace(" avx512_vnni", "").replace(" avx_vnni", "")
    assert cpu_int8(avx2, "x86_64") == {"best": "AVX2 only", "flags": ["avx2"]}
    assert cpu_int8("processor\t: 0\n", "x86_64")["best"] == "none found"
    # An aarch64 machine reads its Features line, never an x86 flags line.
    assert cpu_int8(line, "aarch64")["best"] == "none found"


# ----------------------------------------------------------------------------- the QDQ model

def _tiny_spec(calibration: dict, exclude=None):
    import torch

    from converters.base import ModelSpec

    def build():
        torch.manual_seed(0)
        net = torch.nn.Sequential(
            torch.nn.Conv2d(3, 16, 3, padding=1), torch.nn.BatchNorm2d(16), torch.nn.ReLU(),
            torch.nn.Conv2d(16, 16, 3, padding=1, groups=16), torch.nn.ReLU(),
            torch.nn.Conv2d(16, 32, 1), torch.nn.ReLU(),
            torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(32, 10))
        return net.eval()
    return ModelSpec("tiny-int8-test", "random-seed-0", (3, 32, 32), 10, build,
                     options={"int8_calibration": calibration, "int8_exclude": exclude})


@pytest.fixture(scope="module")
def calibrated(tmp_path_factory):
    from converters.onnxruntime.quantize import calibration_set_hash
    from edgebench.data import prepare

    cache = tmp_path_factory.mktemp("int8cache")
    cfg = {"input_size": (3, 32, 32), "interpolation": "bilinear", "crop_pct": 0.875,
           "crop_mode": "center", "mean": (0.485, 0.456, 0.406), "std": (0.229, 0.224, 0.225)}
    folder = prepare(bundled_calibration().limit(8), cfg, cache)
    evalf = prepare(resolve_source(None), cfg, cache)
    cal = {"folder": str(folder), "mean": list(cfg["mean"]), "std": list(cfg["std"]), "n": 8,
           "method": "minmax", "sha256": calibration_set_hash(str(folder)),
           "source": "bundled-calibration"}
    return cache, cal, evalf, cfg


def test_the_qdq_model_is_symmetric_int8_per_channel_with_fp32_bias_and_runs_in_ort(calibrated):
    import onnx
    import onnxruntime as ort
    from onnx import numpy_helper

    from converters.onnxruntime import export_onnx
    from converters.onnxruntime.quantize import qdq_model
    from edgebench.data import PreparedData

    cache, cal, evalf, cfg = calibrated
    spec = _tiny_spec(cal)
    art = qdq_model(spec, cache)
    m = onnx.load(art.path)
    ops = [n.op_type for n in m.graph.node]
    assert "QuantizeLinear" in ops and "DequantizeLinear" in ops
    inits = {i.name: numpy_helper.to_array(i) for i in m.graph.initializer}
    zps = [inits[n.input[2]] for n in m.graph.node
           if n.op_type in ("QuantizeLinear", "DequantizeLinear") and len(n.input) > 2]
    assert zps and all(z.dtype == np.int8 and not z.any() for z in zps)   # symmetric INT8
    per_channel = [inits[n.input[1]] for n in m.graph.node if n.op_type == "QuantizeLinear"
                   and n.input[0] in inits and inits[n.input[0]].ndim == 4]
    assert per_channel and all(s.ndim == 1 and s.size > 1 for s in per_channel)
    assert not any(v.dtype == np.int32 for v in inits.values())            # bias stays FP32
    meta = art.meta["int8"]
    assert meta["calibration"]["sha256"] == cal["sha256"]
    assert meta["calibration"]["method"] == "minmax" and meta["calibration"]["n"] == 8
    kept = sorted(meta["kept_fp32"]["nodes"].values())
    assert kept == ["depthwise with 16 channels", "few input channels (3): the input image's own conv"]
    assert "Relu" in meta["kept_fp32"]["op_types"]
    # The same images through FP32 and INT8 sessions: close, not equal.
    x = PreparedData(Path(evalf), cfg["mean"], cfg["std"]).batch(0, 16)
    fp32 = ort.InferenceSession(export_onnx(spec, cache).path, providers=["CPUExecutionProvider"])
    int8 = ort.InferenceSession(art.path, providers=["CPUExecutionProvider"])
    a, b = fp32.run(None, {"input": x})[0], int8.run(None, {"input": x})[0]
    p = metrics.parity(a, b)
    assert 0 < p["max_abs_diff"] and p["cosine_min"] > 0.98, p


def test_the_qdq_model_is_cached_by_calibration_and_checked_on_load(calibrated):
    from converters.onnxruntime.quantize import qdq_model

    cache, cal, _, _ = calibrated
    first = qdq_model(_tiny_spec(cal), cache)
    again = qdq_model(_tiny_spec(cal), cache)
    assert again.cached and again.path == first.path
    other = qdq_model(_tiny_spec({**cal, "method": "percentile"}), cache)
    assert other.path != first.path and not other.cached
    excl = qdq_model(_tiny_spec(cal, exclude=["none"]), cache)   # no rule: the stem is INT8
    assert excl.path != first.path and excl.meta["int8"]["kept_fp32"]["nodes"] == {}
    with open(first.path, "r+b") as f:                              # a corrupted cache file
        f.seek(100)
        f.write(b"\x00" * 16)
    rebuilt = qdq_model(_tiny_spec(cal), cache)
    assert not rebuilt.cached and rebuilt.meta.get("cache_rebuilt")


def test_the_cpu_form_folds_relu_into_uint8_activations_from_the_same_calibration(calibrated):
    import onnx
    from onnx import numpy_helper

    from converters.onnxruntime.quantize import qdq_model

    cache, cal, _, _ = calibrated
    trt = qdq_model(_tiny_spec(cal), cache)
    cpu = qdq_model(_tiny_spec(cal), cache, "cpu")
    assert cpu.path != trt.path and cpu.meta["int8"]["form"] == "cpu"
    assert cpu.meta["int8"]["calibration"]["sha256"] == trt.meta["int8"]["calibration"]["sha256"]
    ops = {f: [n.op_type for n in onnx.load(a.path).graph.node] for f, a in
           (("trt", trt), ("cpu", cpu))}
    assert ops["trt"].count("Relu") == 3 and ops["cpu"].count("Relu") < 3   # folded
    m = onnx.load(cpu.path)
    inits = {i.name: numpy_helper.to_array(i) for i in m.graph.initializer}
    act_zp = [inits[n.input[2]] for n in m.graph.node
              if n.op_type == "QuantizeLinear" and n.input[0] not in inits]
    assert act_zp and all(z.dtype == np.uint8 for z in act_zp)


def test_onnxruntime_int8_runs_the_cpu_form_and_tensorrt_int8_the_symmetric_one(calibrated):
    """One calibration, two forms: ORT's CPU provider gets the form that is fast there by
    default, the TensorRT INT8 variants the symmetric one TensorRT consumes (converting it
    needs no GPU); --int8-form tensorrt gives onnxruntime-int8 the symmetric one."""
    import converters

    cache, cal, _, _ = calibrated
    cpu = converters.get("onnxruntime-int8").convert(_tiny_spec(cal), cache)
    trt = converters.get("onnxruntime-trt-int8").convert(_tiny_spec(cal), cache)
    assert cpu.meta["int8"]["form"] == "cpu" and trt.meta["int8"]["form"] == "tensorrt"
    assert cpu.meta["int8"]["calibration"] == trt.meta["int8"]["calibration"]
    spec = _tiny_spec(cal)
    spec.options["int8_form"] = "tensorrt"
    asked = converters.get("onnxruntime-int8").convert(spec, cache)
    assert asked.meta["int8"]["form"] == "tensorrt" and asked.path == trt.path


def test_no_calibration_set_is_a_clear_error(tmp_path):
    from converters.onnxruntime.quantize import CalibrationError, qdq_model

    with pytest.raises(CalibrationError, match="no calibration images were prepared"):
        qdq_model(_tiny_spec(None), tmp_path)


# ----------------------------------------------------------------------------- the command

def _full(*args, timeout=120):
    return subprocess.run([sys.executable, "-m", "edgebench.full", *args], cwd=REPO,
                          capture_output=True, text=True, timeout=timeout)


@pytest.mark.parametrize("args, says", [
    (["--int8-calib-images", "41"], "--int8-calib-images 41: only 40 calibration images"),
    (["--int8-calib-images", "0"], "--int8-calib-images 0: calibrate on at least 1 image"),
    (["--int8-calib-data", str(REPO / "datasets" / "sample")], "overlap the evaluation images"),
    (["--data", str(REPO / "datasets" / "sample"), "--profile", "paper"], "no images are left"),
])
def test_bad_calibration_input_is_a_usage_error(tmp_path, args, says):
    from edgebench.cli import build_parser
    from edgebench.cli_checks import validate
    from edgebench.errors import UsageError

    ns = build_parser().parse_args(["--models", "mobilenetv2_100", "--variants",
                                    "onnxruntime-int8", "--out", str(tmp_path / "run"), *args])
    with pytest.raises(UsageError, match=says.replace("(", r"\(")):
        validate(ns)
    assert not (tmp_path / "run").exists()


def test_calibration_is_only_chosen_when_an_int8_variant_is_planned(tmp_path):
    from edgebench.cli import build_parser
    from edgebench.cli_checks import validate

    ns = build_parser().parse_args(["--models", "mobilenetv2_100", "--variants", "onnxruntime",
                                    "--int8-calib-images", "41"])     # not used: no INT8 here
    assert validate(ns)["calibration"] is None
    ns = build_parser().parse_args(["--models", "mobilenetv2_100", "--variants", "pytorch",
                                    "onnxruntime-int8", "--int8-calib-images", "5"])
    assert len(validate(ns)["calibration"]) == 5


@pytest.mark.slow  # 7.5 s on the 2-core AVX2 VM (2026-11-26)
def test_the_command_exits_2_with_one_line_on_bad_calibration_input(tmp_path):
    r = _full("--models", "mobilenetv2_100", "--variants", "onnxruntime-int8",
              "--out", str(tmp_path / "run"), "--int8-calib-method", "kl")
    assert r.returncode == 2 and "invalid choice: 'kl'" in r.stderr, r.stdout + r.stderr
    r = _full("--models", "mobilenetv2_100", "--variants", "onnxruntime-int8",
              "--out", str(tmp_path / "run"), "--int8-calib-images", "41")
    assert r.returncode == 2, r.stdout + r.stderr
    assert r.stderr.strip().splitlines() == [
        "edgebench: error: --int8-calib-images 41: only 40 calibration images are available "
        f"in the bundled calibration set ({REPO / 'datasets' / 'calibration'})"]
    assert not (tmp_path / "run" / "results.jsonl").exists()


@pytest.mark.slow
def test_an_int8_run_measures_and_records_its_cost(tmp_path):
    out = tmp_path / "run"
    # squeezenet1_1: its INT8 parity passes with random weights (mobilenetv2's does not:
    # experiments/int8-cpu/2026-11-25-parity/, top-1 agreement 0.81)
    r = _full("--profile", "smoke", "--models", "squeezenet1_1", "--variants", "pytorch",
              "onnxruntime-int8", "--tasks", "parity", "latency", "--out", str(out),
              "--cache-dir", str(tmp_path / "cache"), timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    from testlib import assert_records_valid

    assert_records_valid(out / "results.jsonl")        # int8_cost, cosine_mean, cpu_int8
    recs = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    parity = next(x for x in recs if x["variant"] == "onnxruntime-int8" and x["task"] == "parity")
    assert parity["status"] == "ok", parity["reason"]
    assert parity["precision"] == "int8" and parity["criterion"].startswith("int8:")
    assert parity["int8_cost"]["mlperf_99"] is None        # random weights, sample labels
    assert parity["variant_meta"]["int8"]["calibration"]["source"] == "bundled-calibration"
    lat = next(x for x in recs if x["variant"] == "onnxruntime-int8" and x["task"] == "latency")
    assert lat["status"] == "ok" and lat["int8_cost"] == parity["int8_cost"]
    assert lat["device"]["cpu_int8"]["best"]
    run = json.loads((out / "run.json").read_text())
    assert run["models"]["squeezenet1_1"]["int8_calibration"]["n"] == 16   # smoke's count


@pytest.mark.slow
def test_a_model_the_quantizer_cannot_handle_fails_its_cell_with_the_quantizers_message(
        tmp_path):
    """Calibration images of the wrong size (48x48 for a 160x160 model): ONNX Runtime's
    calibration session refuses them inside quantize_static. The INT8 cell is 'failed' with
    that message; the next cell of the run runs."""
    import copy
    import dataclasses

    from converters.onnxruntime.quantize import calibration_set_hash
    from edgebench import runner
    from edgebench.cell import Cell, RunSettings
    from edgebench.data import prepare
    from edgebench.profiles import PROFILES

    from testlib import TINY

    prof = copy.deepcopy(PROFILES["smoke"])
    prof.update(idle_s=0.0)
    settings = RunSettings(run_id="t", profile="smoke", prof=prof, cache_dir=str(tmp_path / "c"),
                           options={"torch_device": "cpu"}, device={"kind": "cpu", "name": "t"})
    with runner.Session(settings, tmp_path / "logs", cell_timeout=300) as s:
        s.probe(["pytorch", "onnxruntime-int8"], {TINY: (3, 160, 160)})
        s.prepare(TINY, resolve_source(None), "random", 0, calibration=bundled_calibration().limit(4))
        good = s.inputs[TINY].calibration
        assert good is not None and good["n"] == 4
        cfg = {"input_size": (3, 48, 48), "interpolation": "bilinear", "crop_pct": 0.875,
               "crop_mode": "center"}
        wrong = prepare(bundled_calibration().limit(4), cfg, tmp_path / "c")
        s.inputs[TINY] = dataclasses.replace(s.inputs[TINY], calibration={
            **good, "folder": str(wrong), "sha256": calibration_set_hash(str(wrong))})
        bad = s.run(Cell(TINY, "onnxruntime-int8", "parity"))
        after = s.run(Cell(TINY, "pytorch", "latency"))
    assert bad["status"] == "failed"
    assert "invalid dimensions" in bad["reason"].lower() or "dimension" in bad["reason"].lower(), \
        bad["reason"]
    assert after["status"] == "ok"
