"""Metric definitions on hand-checked numbers."""
from __future__ import annotations

import numpy as np
import pytest

from edgebench import metrics
from edgebench.telemetry import maths


def test_latency_summary_percentiles_and_ci():
    ms = np.arange(1, 101, dtype=float)     # 1..100 ms
    s = metrics.latency_summary(ms)
    assert s["min"] == 1 and s["max"] == 100 and s["mean"] == pytest.approx(50.5)
    assert s["p50"] == pytest.approx(50.5) and s["p99"] == pytest.approx(99.01)
    assert s["ci95_low"] < s["p50"] < s["ci95_high"]
    assert 40 < s["ci95_low"] and s["ci95_high"] < 61


def test_parity_figures():
    ref = np.array([[1.0, 2.0, 3.0, 0.0, -1.0, 5.0, -3.0], [0.5, 0.1, 0.2, 0.3, 0.4, 0.0, -1.0]])
    out = ref.copy()
    out[1, 0] = -2.0    # image 2: arg-max moves from class 0 to class 4; top-5 set changes
    p = metrics.parity(ref, out)
    assert p["top1_agreement"] == 0.5
    assert p["top5_agreement"] == 0.5
    assert p["max_abs_diff"] == pytest.approx(2.5)
    assert p["mean_abs_diff"] == pytest.approx(2.5 / 14)
    assert p["cosine_min"] < 1.0 and p["ref_distinct_classes"] == 2
    assert p["ref_logit_absmax"] == 5.0 and p["max_rel_diff"] == pytest.approx(2.5 / 5.0)
    th = {"fp32_atol": 1e-3, "fp32_min_top1": 1.0, "reduced_min_top1": 0.5, "reduced_min_top5": 0.5}
    assert metrics.parity_verdict(p, "fp32", th)[0] is False
    assert metrics.parity_verdict(p, "fp16", th)[0] is True
    same = metrics.parity(ref, ref + 1e-4)
    assert metrics.parity_verdict(same, "fp32", th)[0] is True


def test_parity_rejects_nan_and_shape_mismatch():
    ref = np.ones((2, 5))
    bad = ref.copy()
    bad[0, 0] = np.nan
    th = {"fp32_atol": 1.0, "fp32_min_top1": 0.0, "reduced_min_top1": 0, "reduced_min_top5": 0}
    assert metrics.parity_verdict(metrics.parity(ref, bad), "fp16", th)[0] is False
    with pytest.raises(ValueError):
        metrics.parity(ref, np.ones((2, 4)))


def test_batch_scaling_rtr_ase_bsr():
    ref = metrics.batch_scaling([{"batch_size": 1, "samples_per_s": 10.0},
                                 {"batch_size": 4, "samples_per_s": 20.0}])
    assert ref[1]["rtr"] == 2.0 and ref[1]["ase"] == 0.5
    var = metrics.batch_scaling([{"batch_size": 1, "samples_per_s": 100.0},
                                 {"batch_size": 4, "samples_per_s": 300.0}], ref)
    assert var[1]["ase"] == 0.75 and var[1]["bsr"] == 1.5 and var[0]["bsr"] == 1.0


def test_energy_window_interpolates_edges_and_subtracts_idle():
    # 10 W from t=0..1, 20 W from t=2 on (linear ramp between): window [0.5, 2.5]
    samples = [(0.0, 10.0), (1.0, 10.0), (2.0, 20.0), (3.0, 20.0)]
    s = maths.energy_summary(samples, 0.5, 2.5, idle_w=5.0, n_items=4)
    # energy = 0.5*10 + (10+20)/2*1 + 0.5*20 = 30 J over 2 s -> 15 W mean
    assert s["mean"] == pytest.approx(15.0)
    assert s["net"] == pytest.approx(10.0)
    assert s["energy_mj_per_sample"] == pytest.approx(10.0 * 2.0 / 4 * 1000)
