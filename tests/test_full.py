"""End to end through the real CLI: real timm model, real images, real worker processes."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import jsonschema
import pytest

from testlib import REPO, TINY, assert_records_valid, records, run_cli

SCHEMA = json.loads((REPO / "edgebench" / "schema" / "results.schema.json").read_text(encoding="utf-8"))


def power_source_here() -> str | None:
    """The power source a worker started from here finds (None: no sensor, or turned off by
    EDGEBENCH_POWER_SOURCE=none): a Jetson has one, so does a GPU machine (NVML)."""
    from edgebench.telemetry.sources import detect

    src, _ = detect()
    if src is None:
        return None
    src.close()
    return src.name


# Tests about statuses and exit codes, not figures, run the smoke profile's short windows.
SMOKE = ("--profile", "smoke")


@pytest.fixture(scope="module")
def e2e(tmp_path_factory, wnid_folder):
    # A cache of its own: whether the first ONNX cell exports must not depend on test order.
    out = tmp_path_factory.mktemp("run") / "r"
    proc = run_cli("edgebench.full", "--models", TINY, "--variants", "pytorch", "onnxruntime",
                   "--data", str(wnid_folder), "--weights", "random", "--out", str(out),
                   "--cache-dir", str(tmp_path_factory.mktemp("e2e-cache")))
    return proc, out


@pytest.mark.slow
def test_full_run_writes_every_output(e2e):
    proc, out = e2e
    assert proc.returncode == 0, proc.stderr[-3000:]
    recs = records(out)
    assert_records_valid(recs)
    power_here = power_source_here()
    cells = {(r["variant"], r["task"]) for r in recs}
    import torch

    # On a GPU (an Orin too) the reference computes off the CPU and gets a parity cell itself.
    ref_parity = {("pytorch", "parity")} if torch.cuda.is_available() else set()
    assert cells == {("pytorch", t) for t in ("accuracy", "latency", "throughput")} | \
                    {("onnxruntime", t) for t in ("parity", "accuracy", "latency", "throughput")} | \
                    ref_parity
    for r in recs:
        jsonschema.validate(r, SCHEMA)
        assert r["status"] == "ok", r
        assert r["weights"] == "random-seed-0+bn-recalibrated"
        if power_here is None or r["task"] == "parity":          # parity has no timed window
            assert r["power_w"] is None and r["power_reason"]
        else:                                   # an Orin's rails, a GPU's NVML, x86 RAPL
            assert r["power_w"]["source"] == power_here and r["power_w"]["mean"] > 0, r
        assert r["memory_mb"]["peak"] >= r["memory_mb"]["baseline"] > 0
        system = r["memory_mb"]["system"]              # the machine's used memory, beside RSS
        assert system["total"] >= system["peak"] >= system["mean"] > 0
        assert system["over"] == ("whole cell" if r["task"] == "parity" else "timed windows")
    for f in ("run.json", "summary.csv", "report.md", "plots/latency.png", "plots/throughput.png",
              "plots/memory.png"):
        assert (out / f).is_file(), f
    # A zoo model's run computes nothing in its main process before the cells: the fork
    # server is forked from it, on its imports, and every cell above ran from that server.
    server_log = (out / "logs" / "forkserver.log").read_text(encoding="utf-8")
    assert server_log.startswith("edgebench.forkserver: forked from the runner"), server_log
    run = json.loads((out / "run.json").read_text(encoding="utf-8"))
    assert run["variants"]["onnxruntime"]["versions"]["onnxruntime"]
    so = run["variants"]["onnxruntime"]["versions"]["session_options"]
    assert so["graph_optimization_level"] == "ORT_ENABLE_ALL"
    assert so["intra_op_num_threads"] == run["machine"]["cores_physical"]
    assert run["machine"]["cores_physical"] >= 1
    assert run["config"]["torch_device"] == "auto"
    # "auto", settled by the pytorch variant's probe in the interpreter it runs in
    assert run["options"]["torch_device"] == ("cuda" if torch.cuda.is_available() else "cpu")
    budget = run["time_budget"]       # each task's cells, inside the run's wall time
    assert set(budget["tasks_s"]) == {r["task"] for r in recs}
    assert 0 < sum(budget["tasks_s"].values()) <= budget["total_s"]
    assert budget["tasks_s"]["latency"] == pytest.approx(sum(
        r["wall_s"] + r.get("process_s", 0) for r in recs if r["task"] == "latency"), abs=0.2)
    report = (out / "report.md").read_text(encoding="utf-8")
    assert "; latency cells " in report
    assert "Random weights" in report and "random-seed-0" in report
    assert "system mem MB" in report and "peak RSS MB" in report
    header = (out / "summary.csv").read_text(encoding="utf-8").splitlines()[0].split(",")
    assert {"peak_rss_mb", "system_memory_mean_mb", "system_memory_peak_mb",
            "device_memory_peak_mb", "energy_mj_per_sample"} <= set(header)


@pytest.mark.slow
def test_full_run_figures_are_consistent(e2e):
    _, out = e2e
    recs = {(r["variant"], r["task"]): r for r in records(out)}
    par = recs[("onnxruntime", "parity")]
    assert par["top1_agreement"] == 1.0 and par["max_abs_diff"] <= 1e-3 and par["n_images"] == 8
    assert recs[("onnxruntime", "latency")]["equivalent"] is True
    lat = recs[("pytorch", "latency")]
    assert lat["n"] >= 20 and lat["latency_ms"]["min"] <= lat["latency_ms"]["p50"] <= lat["latency_ms"]["max"]
    acc = recs[("pytorch", "accuracy")]
    assert acc["n_images"] == 8 and acc["skipped_images"] == 0 and 0 <= acc["top1"] <= acc["top5"] <= 100
    thr = recs[("onnxruntime", "throughput")]
    sweep = thr["by_batch"]
    assert sweep[0]["batch_size"] == 1 and sweep[0]["rtr"] == 1.0
    assert thr["samples_per_s"] == max(b["samples_per_s"] for b in sweep)
    assert any(b["bsr"] is not None for b in sweep)          # against pytorch's sweep, same run
    ort = recs[("onnxruntime", "latency")]
    assert ort["artifact"].endswith(".onnx") and len(ort["artifact_sha256"]) == 64
    assert ort["variant_meta"]["providers"][0] == "CPUExecutionProvider"
    assert ort["variant_meta"]["graph_optimization_level"] == "ORT_ENABLE_ALL"


@pytest.mark.slow
def test_onnx_export_is_cached_across_cells(e2e):
    _, out = e2e
    ort = [r for r in records(out) if r["variant"] == "onnxruntime"]
    assert [r["artifact_cached"] for r in ort].count(False) == 1   # exported once
    assert len({r["artifact_sha256"] for r in ort}) == 1


@pytest.mark.slow
def test_pytorch_compile_parity_and_compile_time(tmp_path, wnid_folder, cache_dir):
    proc = run_cli("edgebench.parity", "--models", TINY, "--variants", "pytorch-compile",
                   "--data", str(wnid_folder), "--weights", "random", "--out", str(tmp_path / "r"),
                   "--cache-dir", str(cache_dir))
    assert proc.returncode == 0, proc.stderr[-3000:]
    (r,) = records(tmp_path / "r")
    assert_records_valid(tmp_path / "r")
    assert r["status"] == "ok" and r["max_abs_diff"] <= 1e-3 and r["top1_agreement"] == 1.0
    assert r["convert_s"] > 0 and r["variant_meta"]["compile_s"] > 0
    # a parity-only run: its branch warms the parity batch alone (8 images, batch 8), not
    # the latency and throughput shapes the run never calls
    assert r["variant_meta"]["compiled_in"]["warm_batch_sizes"] == [8], r["variant_meta"]
    assert r["batch_size"] == 8          # the record says the batch the pass ran at
    assert "Parity against PyTorch FP32" in proc.stdout and "pytorch-compile" in proc.stdout


@pytest.mark.slow
def test_timeout_is_recorded_and_exit_code_1(tmp_path, cache_dir):
    proc = run_cli("edgebench.full", "--models", TINY, "--variants", "pytorch", "--tasks", "latency",
                   "--cell-timeout", "2", "--weights", "random", "--out", str(tmp_path / "r"),
                   "--cache-dir", str(cache_dir))
    assert proc.returncode == 1, proc.stderr[-2000:]
    (r,) = records(tmp_path / "r")
    assert_records_valid(tmp_path / "r")
    assert r["status"] == "timeout" and "2 s" in r["reason"]
    assert (tmp_path / "r" / "report.md").is_file()           # the run still reports


@pytest.mark.slow
def test_crashing_cell_does_not_stop_the_run(tmp_path, cache_dir):
    proc = run_cli("edgebench.full", "--models", TINY, "--variants", "pytorch", "--tasks", "latency",
                   "accuracy", "--weights", "random", "--out", str(tmp_path / "r"), *SMOKE,
                   "--cache-dir", str(cache_dir), env={"EDGEBENCH_TEST_CRASH": f"{TINY}/pytorch/accuracy"})
    assert proc.returncode == 1
    recs = {r["task"]: r for r in records(tmp_path / "r")}
    assert_records_valid(tmp_path / "r")
    assert recs["accuracy"]["status"] == "failed" and "SIGSEGV" in recs["accuracy"]["reason"]
    assert recs["latency"]["status"] == "ok"


@pytest.mark.slow
def test_sigkill_then_resume_recomputes_no_finished_cell(tmp_path, cache_dir):
    out = tmp_path / "r"
    args = ["--models", TINY, "--variants", "pytorch", "onnxruntime", "--tasks", "latency",
            "accuracy", "--weights", "random", "--out", str(out), "--cache-dir", str(cache_dir),
            *SMOKE]      # two cells left when it is killed: a process each, seconds apiece
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    proc = subprocess.Popen([sys.executable, "-m", "edgebench.full", *args], cwd=REPO, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.time() + 300
    while time.time() < deadline and len(records(out)) < 2:
        time.sleep(0.2)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    before = records(out)
    assert 2 <= len(before) < 4, "the run should have been killed half-way"
    done = {(r["variant"], r["task"]): r["started_at"] for r in before if r["status"] == "ok"}
    res = run_cli("edgebench.full", *args, "--resume")
    assert res.returncode == 0, res.stderr[-2000:]
    after = records(out)
    assert_records_valid(after)
    assert {(r["variant"], r["task"]) for r in after} == {(v, t) for v in ("pytorch", "onnxruntime")
                                                          for t in ("latency", "accuracy")}
    for key, started in done.items():
        again = [r for r in after if (r["variant"], r["task"]) == key]
        assert len(again) == 1 and again[0]["started_at"] == started   # not recomputed
    assert len({r["run_id"] for r in after}) == 1


@pytest.mark.parametrize("args, message", [
    (["--models", "resnet15"], "unknown model 'resnet15'"),
    # 3.3 s each (a whole interpreter): one is the fast lane's representative
    pytest.param(["--variants", "onnxruntme"], "unknown variant 'onnxruntme'", marks=pytest.mark.slow),
    pytest.param(["--data", "/nonexistent/imagenet"], "does not exist", marks=pytest.mark.slow),
    pytest.param(["--weights", "/nonexistent/ckpt.pth"], "--weights", marks=pytest.mark.slow),
    pytest.param(["--python", "jax=/nonexistent/python"], "not an executable interpreter",
                 marks=pytest.mark.slow),
])
def test_usage_errors_exit_2_without_traceback(args, message, tmp_path):
    proc = run_cli("edgebench.full", *args, "--out", str(tmp_path / "r"))
    assert proc.returncode == 2
    assert message in proc.stderr and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


@pytest.mark.slow
def test_variant_runs_in_the_interpreter_given_by_python(tmp_path, cache_dir):
    """--python VARIANT=PATH: that variant's probe and cells run in PATH (here a wrapper
    that logs each call, then runs this interpreter); the other variants do not."""
    marker = tmp_path / "calls.log"
    wrapper = tmp_path / "alt-python"
    # A probe call's request file names the variants it asks about: log it too.
    wrapper.write_text(f'#!/bin/sh\necho "$@" >> "{marker}"\n'
                       f'[ "$3" = "--probe" ] && {{ cat "$4"; echo; }} >> "{marker}"\n'
                       f'exec "{sys.executable}" "$@"\n', encoding="utf-8")
    wrapper.chmod(0o755)
    out = tmp_path / "r"
    proc = run_cli("edgebench.full", "--models", TINY, "--variants", "pytorch", "onnxruntime",
                   "--tasks", "latency", "--weights", "random", *SMOKE, "--python",
                   f"onnxruntime={wrapper}", "--out", str(out), "--cache-dir", str(cache_dir))
    assert proc.returncode == 0, proc.stderr[-3000:]
    calls = marker.read_text(encoding="utf-8").splitlines()
    # One process in that interpreter: its own fork server, which forked the variant's probe
    # (no probe spawned: a spawned one would be a "--probe" call) and its cell (ORT latency).
    assert calls == ["-m edgebench.forkserver"], calls
    run = json.loads((out / "run.json").read_text(encoding="utf-8"))
    assert run["variants"]["onnxruntime"]["ok"] and run["variants"]["pytorch"]["ok"]
    recs = {r["variant"]: r for r in records(out)}
    assert_records_valid(out)
    assert recs["onnxruntime"]["status"] == "ok" and recs["pytorch"]["status"] == "ok"
    assert recs["onnxruntime"]["python"]["version"] == recs["pytorch"]["python"]["version"]


@pytest.mark.slow  # 6.2 s (a whole interpreter); see test_usage_errors_exit_2_without_traceback
def test_unknown_model_suggests_close_names(tmp_path):
    proc = run_cli("edgebench.full", "--models", "resnet15", "--out", str(tmp_path / "r"))
    assert "did you mean" in proc.stderr and "resnet152" in proc.stderr


@pytest.mark.slow  # 6.5 s (a whole interpreter); see test_usage_errors_exit_2_without_traceback
def test_unknown_layout_exits_2_and_lists_layouts(tmp_path):
    (tmp_path / "pics").mkdir()
    (tmp_path / "pics" / "a.txt").write_text("x", encoding="utf-8")
    proc = run_cli("edgebench.full", "--data", str(tmp_path / "pics"), "--out", str(tmp_path / "r"))
    assert proc.returncode == 2 and "accepted layouts" in proc.stderr and "ImageNetV2" in proc.stderr


def test_help_explains_every_option():
    proc = run_cli("edgebench.full", "--help")
    assert proc.returncode == 0
    for flag in ("--models", "--variants", "--tasks", "--data", "--weights", "--profile", "--out",
                 "--resume", "--cell-timeout", "--ort-providers"):
        assert flag in proc.stdout


@pytest.mark.slow
def test_variants_that_cannot_run_here_are_skipped_with_reason_and_exit_0(tmp_path, cache_dir):
    """Two ways, in one run beside PyTorch: TensorRT without TensorRT or a CUDA device, and
    ONNX Runtime asked for an execution provider this onnxruntime lacks."""
    import converters
    import onnxruntime

    av = converters.get("tensorrt-fp16").available({})
    if av.ok or "CUDAExecutionProvider" in onnxruntime.get_available_providers():
        pytest.skip("TensorRT or ONNX Runtime's CUDA provider is present here: this test is for "
                    "machines without")
    proc = run_cli("edgebench.full", "--models", TINY, "--variants", "tensorrt-fp16", "onnxruntime",
                   "pytorch", "--tasks", "latency", "--ort-providers", "CUDAExecutionProvider",
                   "--weights", "random", *SMOKE, "--out", str(tmp_path / "r"),
                   "--cache-dir", str(cache_dir))
    assert proc.returncode == 0, proc.stderr[-2000:]
    recs = {r["variant"]: r for r in records(tmp_path / "r")}
    assert_records_valid(tmp_path / "r")
    assert recs["tensorrt-fp16"]["status"] == "skipped" and recs["tensorrt-fp16"]["reason"] == av.reason
    assert recs["onnxruntime"]["status"] == "skipped"
    assert "CUDAExecutionProvider" in recs["onnxruntime"]["reason"]
    assert recs["pytorch"]["status"] == "ok"


def _cuda_skip() -> str | None:
    import torch

    return None if torch.cuda.is_available() else "no CUDA GPU (torch.cuda.is_available() is False)"


@pytest.mark.skipif(_cuda_skip() is not None, reason=str(_cuda_skip()))
def test_pytorch_on_cuda_is_fp32_not_tf32():
    """cuDNN runs FP32 convolutions in TF32 by default; on an H100 that put mobilenetv2
    0.0079 away from the CPU reference, 5.2e-6 with TF32 off, while the tiny test model
    stays near 1e-6 either way (results/reference-runs/2026-11-23-h100/tf32-check.txt), so
    this uses the real one. The FP32 variants turn TF32 off and say so."""
    import numpy as np
    import torch

    import converters
    from edgebench.models import make_spec

    spec = make_spec("mobilenetv2_100", "random-seed-0", {"torch_device": "cuda"})
    conv = converters.get("pytorch")
    art = conv.convert(spec, Path("."))
    pred = conv.load(art, spec)
    assert art.meta["tf32"] is False
    assert not torch.backends.cudnn.allow_tf32 and not torch.backends.cuda.matmul.allow_tf32
    x = np.random.RandomState(0).standard_normal((4, *spec.input_size)).astype(np.float32)
    with torch.inference_mode():
        want = spec.build()(torch.from_numpy(x)).numpy()
    assert np.abs(pred(x) - want).max() <= 1e-3      # the suite's FP32 parity budget
