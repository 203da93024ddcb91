"""MLPerf scenarios through the real LoadGen (mlperf_loadgen 6.0.17): the detail-log reader
on LoadGen's recorded logs, the SUT and the multi-accelerator Offline scheduler under real
LoadGen runs with null predictors, the audit.config guard, predictor errors, option checks,
and accuracy mode's top-1 against the accuracy task's in one real run."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

lg = pytest.importorskip("mlperf_loadgen", reason="mlcommons-loadgen is not installed "
                                                  "(pip install -e . pins it)")

from edgebench.mlperf import mllog, settings  # noqa: E402
from edgebench.mlperf.harness import (SampleLibrary, SystemUnderTest,  # noqa: E402
                                      accuracy_top1, start)
from edgebench.mlperf.multi import MultiDeviceSUT  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
LOGS = Path(__file__).resolve().parent / "fixtures" / "loadgen"


# ----------------------------------------------------------------------------- the detail log

def test_singlestream_figures_and_verdict_come_from_the_mllog_lines():
    values, errors = mllog.read(LOGS / "singlestream-detail.txt")
    got = mllog.summarize("SingleStream", values)
    assert errors == []
    assert got["validity"] == "VALID" and got["invalid_because"] == []
    assert got["loadgen_version"] == "6.0.17 @ d6147c7eb7"
    assert got["value"] == round(values["result_90.00_percentile_latency_ns"] / 1e6, 4)
    assert got["early_stopping_p90_ms"] == round(values["early_stopping_latency_ss"] / 1e6, 4)
    assert got["early_stopping_p90_ms"] >= got["value"]          # an upper estimate
    assert got["scenario"] == "SingleStream" and got["query_count"] > 16


def test_an_invalid_multistream_run_says_which_rule_failed():
    values, _ = mllog.read(LOGS / "multistream-detail.txt")
    got = mllog.summarize("MultiStream", values)
    assert got["validity"] == "INVALID"
    assert got["invalid_because"] and got["invalid_because"][0].startswith("early stopping not met")
    assert "662 queries" in got["invalid_because"][0]
    assert got["value"] == round(values["result_99.00_percentile_per_query_latency_ns"] / 1e6, 4)
    assert got["samples_per_query"] == 8


def test_the_progress_line_of_a_scenario_record_gives_its_metric():
    # before, every scenario record's line read "convert 0.0 s"
    from edgebench.report import one_line

    lines = {}
    for scenario, log in (("SingleStream", "singlestream"), ("MultiStream", "multistream"),
                          ("Offline", "offline")):
        values, _ = mllog.read(LOGS / f"{log}-detail.txt")
        got = mllog.summarize(scenario, values)
        lines[scenario] = one_line({"task": log, "status": "ok", "mlperf": got})
        assert lines[scenario].startswith(f"{scenario}: {got['metric']} ")
        assert "convert" not in lines[scenario]
    assert lines["MultiStream"].endswith(" ms") and lines["Offline"].endswith(" samples/s")


def test_offline_reports_samples_per_second():
    values, _ = mllog.read(LOGS / "offline-detail.txt")
    got = mllog.summarize("Offline", values)
    assert got["unit"] == "samples/s" and got["value"] == round(values["result_samples_per_second"], 4)


# ----------------------------------------------------------------------------- real LoadGen runs

class _Data:
    """Sixteen tiny 'images' whose class is their index mod 4."""

    def __init__(self, n=16):
        self.labels = np.arange(n) % 4

    def __len__(self):
        return len(self.labels)

    def batch(self, start, size):
        x = np.zeros((size, 4), dtype=np.float32)
        x[np.arange(size), self.labels[start:start + size]] = 1.0
        return x


class _Null:
    """Answers at once (logits = the input) and counts what it saw."""

    batch_sizes = None

    def __init__(self, delay_s=0.0, fail_after=None):
        self.delay_s, self.fail_after, self.seen = delay_s, fail_after, 0

    def __call__(self, x):
        if self.fail_after is not None and self.seen >= self.fail_after:
            raise RuntimeError("predictor exploded")
        self.seen += len(x)
        if self.delay_s:
            time.sleep(self.delay_s)
        return x


def _settings(scenario: str, qps: float = 2000.0, min_ms: int = 200):
    ts = lg.TestSettings()
    ts.scenario = getattr(lg.TestScenario, scenario)
    ts.mode = lg.TestMode.PerformanceOnly
    ts.min_duration_ms, ts.min_query_count = min_ms, 1
    ts.offline_expected_qps = qps
    ts.single_stream_expected_latency_ns = 100_000
    return ts


def test_offline_on_three_devices_issues_every_sample_once_and_records_each_share(tmp_path):
    data = _Data()
    lib = SampleLibrary(data, len(data))
    devices = {"gpu": _Null(0.0005), "dla0": _Null(0.002), "dla1": _Null(0.002)}
    sut = MultiDeviceSUT(lg, devices, lib, batch=4)
    seen_ids: list[int] = []
    done = threading.Lock()
    original = sut._complete

    def complete(chunk, top1):
        with done:
            seen_ids.extend(q.id for q in chunk)
        original(chunk, top1)
    sut._complete = complete
    try:
        start(lg, sut, lib, _settings("Offline"), tmp_path / "off", len(data))
        sut.wait()
    finally:
        sut.close()
    values, errors = mllog.read(tmp_path / "off" / "mlperf_log_detail.txt")
    issued = values["generated_query_count"] * values["generated_samples_per_query"]
    assert not errors and values["result_validity"] in ("VALID", "INVALID")
    assert len(seen_ids) == len(set(seen_ids)) == sut.samples == issued   # each sample once
    shares = sut.share_record()
    assert sum(s["samples"] for s in shares.values()) == sut.samples
    assert all(s["samples"] > 0 for s in shares.values()), shares    # every device served
    assert shares["gpu"]["samples"] > shares["dla0"]["samples"]      # the fast one takes more


def test_a_predictor_error_inside_loadgen_ends_the_test_and_is_raised(tmp_path):
    data = _Data()
    lib = SampleLibrary(data, len(data))
    sut = SystemUnderTest(lg, _Null(fail_after=5), lib, batch=1)
    with pytest.raises(RuntimeError, match="predictor exploded"):
        start(lg, sut, lib, _settings("SingleStream", min_ms=100), tmp_path / "ss", len(data))
    assert sut.samples == 5


def test_a_stray_audit_config_in_the_working_directory_changes_nothing(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "audit.config").write_text("*.*.min_query_count = 123456\n", encoding="utf-8")
    data = _Data()
    lib = SampleLibrary(data, len(data))
    sut = SystemUnderTest(lg, _Null(), lib, batch=1)
    start(lg, sut, lib, _settings("SingleStream", min_ms=100), tmp_path / "cell", len(data))
    values, _ = mllog.read(tmp_path / "cell" / "mlperf_log_detail.txt")
    assert values["effective_min_query_count"] == 1          # ours, not the stray file's
    (tmp_path / "cell2").mkdir()
    shutil.copy(tmp_path / "audit.config", tmp_path / "cell2" / "audit.config")
    with pytest.raises(RuntimeError, match="audit.config exists"):
        start(lg, sut, lib, _settings("SingleStream"), tmp_path / "cell2", len(data))


def test_accuracy_mode_answers_are_each_samples_top1(tmp_path):
    data = _Data()
    lib = SampleLibrary(data, len(data))
    ts = _settings("Offline")
    ts.mode = lg.TestMode.AccuracyOnly
    sut = SystemUnderTest(lg, _Null(), lib, batch=8)
    start(lg, sut, lib, ts, tmp_path / "acc", len(data))
    got = accuracy_top1(tmp_path / "acc" / "mlperf_log_accuracy.json", data.labels)
    assert got == {"n_images": 16, "n_labelled": 16, "top1": 100.0}
    wrong = accuracy_top1(tmp_path / "acc" / "mlperf_log_accuracy.json", (data.labels + 1) % 4)
    assert wrong["top1"] == 0.0


# ----------------------------------------------------------------------------- settings, options

def test_offline_without_a_throughput_cell_runs_at_the_accuracy_tasks_batch():
    # the accuracy task's batch is the predictor's pass batch (a TVM build's tuned size)
    from edgebench.mlperf.task import _batch
    from edgebench.profiles import PROFILES
    from testlib import FakePredictor

    prof = PROFILES["quick"]
    assert _batch("offline", FakePredictor(), prof, {}, {}) == (
        8, "batch 8 (no throughput cell in this run: the accuracy batch)")
    assert _batch("offline", FakePredictor(tuned_batch_sizes=[1]), prof, {}, {}) == (
        1, "batch 1 (no throughput cell in this run: the accuracy batch)")
    assert _batch("offline", FakePredictor(tuned_batch_sizes=[1]), prof,
                  {"best_batch": 4}, {})[0] == 4      # a measured best batch still rules


def test_multistream_queries_run_at_a_size_the_predictor_is_tuned_for():
    from edgebench.mlperf.task import _batch
    from edgebench.profiles import PROFILES
    from testlib import FakePredictor

    prof = PROFILES["quick"]
    assert _batch("multistream", FakePredictor(), prof, {}, {}) == (
        8, "the query's 8 samples as one batch")
    assert _batch("multistream", FakePredictor(batch_sizes=[1, 4]), prof, {}, {}) == (
        4, "the predictor runs no batch 8: the query in batches of 4")
    # a TVM build tuned at batch 1 would compile batch 8 with untuned kernels
    assert _batch("multistream", FakePredictor(tuned_batch_sizes=[1]), prof, {}, {}) == (
        1, "the predictor is tuned for no batch 8 (it would run one with untuned kernels): "
           "the query in batches of 1")
    assert _batch("multistream", FakePredictor(tuned_batch_sizes=[1, 8]), prof, {}, {})[0] == 8


def test_paper_settings_are_mlperfs_own_and_short_ones_say_they_are_not_valid():
    seed = {"latency_p90_ms": 2.0, "samples_per_s": 500.0, "best_batch": 8}
    ts, used, why = settings.build(lg, "offline", "paper", "resnet50", seed, {})
    assert (ts.min_duration_ms, ts.min_query_count) == (600_000, 24_576) and why == ""
    ts, used, _ = settings.build(lg, "multistream", "paper", "resnet152", seed, {})
    assert ts.min_query_count == 662 and ts.multi_stream_samples_per_query == 8
    assert used["expected"]["multistream_latency_ms"] == 16.0          # 8 x p90, no batch-8 row
    ts, used, why = settings.build(lg, "singlestream", "quick", "resnet50", seed, {})
    assert ts.min_duration_ms == 10_000 and "not MLPerf-valid" in why
    assert ts.single_stream_expected_latency_ns == 2_000_000 and ts.offline_expected_qps == 500.0
    assert "latency_p90_ms" in used["expected"]["seeded_from"]


def test_the_cap_of_a_short_profile_makes_room_for_the_queries_asked_for():
    """Smoke's 10 s cap against 8 s calls (squeezenet under QEMU): 4 queries asked get a cap
    of twice 4 x the expected latency; without --mlperf-min-queries the cap stays."""
    seed = {"latency_p90_ms": 8000.0, "batch8_latency_ms": 30000.0, "samples_per_s": 0.2}
    ts, used, _ = settings.build(lg, "singlestream", "smoke", "squeezenet1_1", seed, {})
    assert ts.max_duration_ms == 10_000 and "max_duration_from" not in used
    opts = {"mlperf_min_queries": 4, "mlperf_min_duration": 1.0}
    ts, used, _ = settings.build(lg, "singlestream", "smoke", "squeezenet1_1", seed, opts)
    assert (ts.min_query_count, ts.max_duration_ms) == (4, 64_000) == \
        (used["min_query_count"], used["max_duration_ms"])
    assert used["max_duration_from"].startswith("--mlperf-min-queries")
    ts, _, _ = settings.build(lg, "multistream", "smoke", "squeezenet1_1", seed, opts)
    assert ts.max_duration_ms == 240_000                      # the batch-8 row's 30 s
    ts, _, _ = settings.build(lg, "offline", "smoke", "squeezenet1_1", seed, opts)
    assert ts.max_duration_ms == 20_000                       # one query: its own QPS sizes it
    fast = {"latency_p90_ms": 2.0}                            # room enough already
    ts, used, _ = settings.build(lg, "singlestream", "smoke", "squeezenet1_1", fast, opts)
    assert ts.max_duration_ms == 10_000 and "max_duration_from" not in used


@pytest.mark.parametrize("opts, says", [
    ({"mlperf_offline_batch": 0}, "--mlperf-offline-batch 0: must be an integer >= 1"),
    ({"mlperf_min_queries": -3}, "--mlperf-min-queries -3"),
    ({"mlperf_min_duration": 0.0}, "--mlperf-min-duration 0"),
    ({"mlperf_offline_qps": -1.0}, "--mlperf-offline-qps -1"),
])
def test_out_of_range_loadgen_options_are_refused(opts, says):
    with pytest.raises(ValueError, match=says):
        settings.check_options(opts)


def test_an_unknown_scenario_or_a_bad_option_exits_2_with_one_line(tmp_path):
    r = subprocess.run([sys.executable, "-m", "edgebench.full", "--models", "mobilenetv2_100",
                        "--tasks", "singlestream", "--mlperf-offline-batch", "0",
                        "--out", str(tmp_path / "r")], cwd=REPO, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 2 and r.stderr.strip().splitlines() == [
        "edgebench: error: --mlperf-offline-batch 0: must be an integer >= 1"], r.stderr
    from edgebench.cli import build_parser

    with pytest.raises(SystemExit) as e:
        build_parser().parse_args(["--tasks", "serverstream"])
    assert e.value.code == 2


# ----------------------------------------------------------------------------- a real run

@pytest.mark.slow
def test_loadgen_accuracy_top1_equals_the_accuracy_tasks_on_the_same_images(tmp_path):
    """A labelled set made so that top-1 is neither 0 nor 100: the sample's images filed
    under the class the model predicts for even images and another class for odd ones."""
    import torch
    from timm.data import ImageNetInfo

    from edgebench.data import PreparedData, prepare, resolve_source
    from edgebench.models import build_model, data_config, random_weights

    from testlib import TINY

    cfg = data_config(TINY)
    sample = resolve_source(None)
    folder = prepare(sample, cfg, tmp_path / "prep")
    x = torch.from_numpy(PreparedData(folder, cfg["mean"], cfg["std"]).batch(0, len(sample)))
    with torch.no_grad():
        pred = build_model(TINY, random_weights(TINY, 0))(x).argmax(1).numpy()
    wnids = ImageNetInfo().label_names()
    data = tmp_path / "val"
    for i, path in enumerate(sample.paths):
        cls = pred[i] if i % 2 == 0 else (pred[i] + 1) % 1000
        (data / wnids[cls]).mkdir(parents=True, exist_ok=True)
        shutil.copy(path, data / wnids[cls] / f"{i:02d}-{Path(path).name}")
    out = tmp_path / "run"
    r = subprocess.run([sys.executable, "-m", "edgebench.full", "--models", TINY, "--variants",
                        "pytorch", "--tasks", "accuracy", "offline", "--profile", "smoke",
                        "--data", str(data), "--mlperf-accuracy", "--out", str(out),
                        "--cache-dir", str(tmp_path / "cache")], cwd=REPO, capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    from testlib import assert_records_valid

    assert_records_valid(out / "results.jsonl")          # the schema knows the scenario tasks
    recs = {x["task"]: x for x in map(json.loads, (out / "results.jsonl").read_text().splitlines())}
    acc, off = recs["accuracy"], recs["offline"]
    assert acc["status"] == "ok" and off["status"] == "ok", (acc["reason"], off["reason"])
    lg_acc = off["mlperf"]["accuracy"]
    assert lg_acc["n_images"] == acc["n_images"] == 16
    assert 0 < acc["top1"] < 100
    assert lg_acc["top1"] == acc["top1"]                 # exactly
    assert Path(lg_acc["accuracy_json"]).is_file()
    assert off["mlperf"]["loadgen_version"].startswith("6.0.17")
    assert Path(off["mlperf"]["logs"]["detail"]).is_file()
