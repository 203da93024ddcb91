"""edgebench.measure against a null system under test (MLPerf LoadGen style): a fake
predictor on a virtual clock, so loop counts and the batch search are exact and nothing
here waits on real work. Assertions are on counts and structure, never on speed."""
from __future__ import annotations

import copy

import numpy as np
import pytest

from converters.base import OutOfMemory
from edgebench import measure
from edgebench.store import RAW_KEY
from edgebench.telemetry import Monitor, PowerSource

from testlib import FakeData, FakePredictor, VirtualClock, null_monitor


@pytest.fixture
def clock(monkeypatch) -> VirtualClock:
    c = VirtualClock()
    monkeypatch.setattr(measure, "time", c)
    return c


def _prof(latency=None, throughput=None, **kw) -> dict:
    p = {"accuracy_batch": 4, "pass_budget_s": None,
         "latency": {"warmup": 2, "min_count": 10, "min_s": 0.0, "max_s": 10.0},
         "throughput": {"max_batch": 16, "warmup": 1, "min_iters": 3, "min_s": 0.01,
                        "budget_s": 100.0, "min_gain": 1.03}}
    p["latency"].update(latency or {})
    p["throughput"].update(throughput or {})
    p.update(kw)
    return p


def test_fake_predictor_honours_the_protocol():
    p = FakePredictor(n_classes=7)
    out = p(np.zeros((3, 3, 4, 4), np.float32))
    assert out.shape == (3, 7) and out.dtype == np.float32
    assert p.batch_sizes is None and isinstance(p.meta, dict)
    p.close()
    assert p.closed
    with pytest.raises(AssertionError):
        p(np.zeros((3, 4, 4), np.float32))      # not NCHW


# ------------------------------------------------------------------ latency
def test_latency_min_count_honoured(clock):
    p = FakePredictor(cost_s=0.001, clock=clock)
    status, f, reason = measure.latency(p, FakeData(), _prof({"min_count": 25, "min_s": 0.0}),
                                        null_monitor())
    assert (status, reason) == ("ok", "")
    assert f["n"] == 25                      # count reached first: stops exactly there
    assert len(p.calls) == 2 + 25 and f["warmup"] == 2
    assert f["batch_size"] == 1 and set(p.calls) == {1}
    assert set(f["latency_ms"]) == {"mean", "p50", "p90", "p95", "p99", "min", "max",
                                    "ci95_low", "ci95_high", "std"}
    assert f["latency_ms"]["min"] == f["latency_ms"]["max"] == 1.0   # virtual 1 ms per call


def test_latency_min_duration_honoured(clock):
    p = FakePredictor(cost_s=0.001, clock=clock)
    status, f, _ = measure.latency(p, FakeData(), _prof({"min_count": 5, "min_s": 0.04}),
                                   null_monitor())
    assert status == "ok"
    assert f["n"] == 40                      # 40 x 1 ms reaches min_s; 5 calls would not


def test_latency_both_minimums_with_real_sleep():
    """Real clock: the loop stops only once both minimums hold (structure, not speed)."""
    p = FakePredictor(cost_s=0.002)
    status, f, _ = measure.latency(p, FakeData(), _prof({"min_count": 3, "min_s": 0.03}),
                                   null_monitor())
    assert status == "ok" and f["n"] >= 3
    assert f["window_s"] >= 0.03                         # the window holds the whole loop
    assert f["latency_ms"]["min"] >= 2.0                 # sleep(2 ms) is inside every timed call
    assert f["n"] * f["latency_ms"]["mean"] / 1e3 <= f["window_s"] + 1e-3


def test_latency_partial_when_max_s_is_hit(clock):
    p = FakePredictor(cost_s=0.010, clock=clock)
    status, f, reason = measure.latency(p, FakeData(), _prof({"min_count": 100, "max_s": 0.2}),
                                        null_monitor())
    assert status == "partial"
    assert f["n"] == 20 and "20 of 100 calls" in reason and "0.2 s" in reason
    assert "latency_ms" in f


def test_latency_uses_a_batch_the_variant_has():
    p = FakePredictor(batch_sizes=[4, 8])
    _, f, _ = measure.latency(p, FakeData(), _prof({"min_count": 2}), null_monitor())
    assert f["batch_size"] == 4 and set(p.calls) == {4}


# ------------------------------------------------------------------ throughput
def test_throughput_doubles_up_to_the_cap(clock):
    p = FakePredictor(cost_s=0.002, clock=clock)     # same cost at any batch: sps doubles
    status, f, reason = measure.throughput(p, FakeData(), _prof(), null_monitor())
    assert (status, reason) == ("ok", "")
    assert [r["batch_size"] for r in f["by_batch"]] == [1, 2, 4, 8, 16]
    assert p.distinct_batches() == [1, 2, 4, 8, 16]
    assert f["best_batch"] == 16 and "batch cap 16" in f["stop_reason"]
    for r in f["by_batch"]:
        assert r["iters"] == 5                         # min_s 0.01 / 2 ms > min_iters 3
        assert r["rtr"] == r["batch_size"] and r["ase"] == 1.0 and r["bsr"] is None
    assert f["samples_per_s"] == max(r["samples_per_s"] for r in f["by_batch"])


def test_throughput_bsr_against_the_reference_sweep(clock):
    p = FakePredictor(cost_s=0.002, clock=clock)
    ref = [{"batch_size": 1, "ase": 1.0}, {"batch_size": 2, "ase": 0.5}]
    _, f, _ = measure.throughput(p, FakeData(), _prof(throughput={"max_batch": 4}),
                                 null_monitor(), ref)
    assert [r["bsr"] for r in f["by_batch"]] == [1.0, 2.0, None]


def test_throughput_oom_steps_down_once_and_keeps_the_step(clock):
    p = FakePredictor(cost_s=0.002, clock=clock, oom_above=6)
    status, f, _ = measure.throughput(p, FakeData(), _prof(), null_monitor())
    assert status == "ok"
    assert p.distinct_batches() == [1, 2, 4, 8, 6]          # 8 fails, halfway between 4 and 8
    assert [r["batch_size"] for r in f["by_batch"]] == [1, 2, 4, 6]
    assert f["best_batch"] == 6
    assert f["stop_reason"].startswith("out of memory at batch 8")


def test_throughput_oom_twice_stops_at_the_last_good_batch(clock):
    p = FakePredictor(cost_s=0.002, clock=clock, oom_above=5)
    status, f, _ = measure.throughput(p, FakeData(), _prof(), null_monitor())
    assert status == "ok"
    assert p.distinct_batches() == [1, 2, 4, 8, 6]          # one step down only
    assert [r["batch_size"] for r in f["by_batch"]] == [1, 2, 4]
    assert f["stop_reason"].startswith("out of memory at batch 6")


def test_throughput_oom_with_fixed_batch_sizes(clock):
    p = FakePredictor(cost_s=0.002, clock=clock, batch_sizes=[1, 4, 16], oom_above=8)
    _, f, _ = measure.throughput(p, FakeData(), _prof(throughput={"max_batch": 32}), null_monitor())
    assert p.distinct_batches() == [1, 4, 16]               # no built size between 4 and 16
    assert [r["batch_size"] for r in f["by_batch"]] == [1, 4]
    assert f["stop_reason"].startswith("out of memory at batch 16")


def test_throughput_oom_at_batch_one_fails(clock):
    p = FakePredictor(clock=clock, oom_above=0)
    status, f, reason = measure.throughput(p, FakeData(), _prof(), null_monitor())
    assert status == "failed" and f == {"by_batch": []} and "out of memory at batch 1" in reason


def test_throughput_oom_by_message_and_other_errors_propagate(clock):
    p = FakePredictor(clock=clock, error=RuntimeError("CUDA out of memory. Tried to allocate"))
    status, _, reason = measure.throughput(p, FakeData(), _prof(), null_monitor())
    assert status == "failed" and "out of memory at batch 1" in reason
    p = FakePredictor(clock=clock, error=ValueError("shape mismatch"))
    with pytest.raises(ValueError, match="shape mismatch"):
        measure.throughput(p, FakeData(), _prof(), null_monitor())


def test_is_oom():
    assert measure.is_oom(OutOfMemory("x")) and measure.is_oom(MemoryError())
    assert measure.is_oom(RuntimeError("RESOURCE_EXHAUSTED: failed"))
    assert not measure.is_oom(RuntimeError("index out of range"))


def test_throughput_gain_stop(clock):
    p = FakePredictor(per_sample_s=0.001, clock=clock)      # cost grows with b: flat sps
    status, f, _ = measure.throughput(p, FakeData(), _prof(), null_monitor())
    assert status == "ok"
    # 2 and 4 both fail to beat batch 1 by 1.03x: two flat steps in a row end the search
    assert [r["batch_size"] for r in f["by_batch"]] == [1, 2, 4]
    assert f["stop_reason"] == "gain stopped at batch 4 (2 steps in a row < 1.03x the best so far)"


class StepCostPredictor(FakePredictor):
    """A FakePredictor whose call at batch b costs ``cost_by_batch[b]`` virtual seconds:
    throughput T(b) = b / cost, set step by step."""

    def __init__(self, cost_by_batch: dict[int, float], **kw):
        super().__init__(**kw)
        self.cost_by_batch = cost_by_batch

    def __call__(self, x):
        self.cost_s = self.cost_by_batch[x.shape[0]]
        return super().__call__(x)


def _sps_ladder(sps: dict[int, float]) -> dict[int, float]:
    return {b: b / v for b, v in sps.items()}


def test_throughput_one_noisy_step_does_not_end_the_search(clock):
    # batch 4 is a noisy window (below batch 2's figure); 8 and 16 rise again
    sps = {1: 100.0, 2: 200.0, 4: 150.0, 8: 400.0, 16: 700.0}
    p = StepCostPredictor(_sps_ladder(sps), clock=clock)
    status, f, _ = measure.throughput(p, FakeData(), _prof(), null_monitor())
    assert status == "ok"
    assert [r["batch_size"] for r in f["by_batch"]] == [1, 2, 4, 8, 16]
    assert f["best_batch"] == 16 and "batch cap 16" in f["stop_reason"]
    assert [round(r["samples_per_s"]) for r in f["by_batch"]] == [100, 200, 150, 400, 700]


def test_throughput_stops_when_the_gain_has_clearly_stopped(clock):
    # rises to batch 8, then 16 and 32 are flat (each < 1.03x the best): stop at 32, best 16
    sps = {1: 100.0, 2: 190.0, 4: 350.0, 8: 500.0, 16: 510.0, 32: 505.0, 64: 900.0}
    p = StepCostPredictor(_sps_ladder(sps), clock=clock)
    _, f, _ = measure.throughput(p, FakeData(), _prof(throughput={"max_batch": 64}),
                                 null_monitor())
    assert [r["batch_size"] for r in f["by_batch"]] == [1, 2, 4, 8, 16, 32]
    assert p.distinct_batches() == [1, 2, 4, 8, 16, 32]          # 64 never tried
    assert f["best_batch"] == 16
    assert f["stop_reason"] == "gain stopped at batch 32 (2 steps in a row < 1.03x the best so far)"


def test_throughput_a_gain_resets_the_flat_count(clock):
    # 4 flat, 8 gains (> 1.03x best), 16 flat, 32 gains: never two flat in a row
    sps = {1: 100.0, 2: 200.0, 4: 201.0, 8: 300.0, 16: 290.0, 32: 400.0}
    p = StepCostPredictor(_sps_ladder(sps), clock=clock)
    _, f, _ = measure.throughput(p, FakeData(), _prof(throughput={"max_batch": 32}),
                                 null_monitor())
    assert [r["batch_size"] for r in f["by_batch"]] == [1, 2, 4, 8, 16, 32]
    assert "batch cap 32" in f["stop_reason"] and f["best_batch"] == 32


def test_throughput_reports_each_batch_size_as_it_is_measured(clock):
    seen = []
    p = FakePredictor(cost_s=0.002, clock=clock)
    status, f, _ = measure.throughput(p, FakeData(), _prof(throughput={"max_batch": 4}),
                                      null_monitor(), on_step=lambda fields: seen.append(
                                          copy.deepcopy(fields)))
    assert [[r["batch_size"] for r in s["by_batch"]] for s in seen] == [[1], [1, 2], [1, 2, 4]]
    for s in seen:                          # each a record's fields on its own, best so far
        assert s["best_batch"] == s["by_batch"][-1]["batch_size"]
        assert s["stop_reason"] == f"the search had not ended after batch {s['best_batch']}"
        assert sorted(s[RAW_KEY]["by_batch_ms"]) == sorted(str(r["batch_size"]) for r in s["by_batch"])
    assert seen[-1]["by_batch"] == f["by_batch"] and status == "ok"


def test_throughput_variant_batch_sizes_and_their_end(clock):
    p = FakePredictor(cost_s=0.002, clock=clock, batch_sizes=[1, 2, 8])
    _, f, _ = measure.throughput(p, FakeData(), _prof(), null_monitor())
    assert [r["batch_size"] for r in f["by_batch"]] == [1, 2, 8]
    assert "largest batch size the variant was built for (8)" in f["stop_reason"]


def test_throughput_keeps_to_the_sizes_a_predictor_is_tuned_for(clock):
    # A TVM build tuned at batches 1 and 4 runs any size, but others with untuned kernels: the
    # search measures only the tuned ones and says why it ended.
    p = FakePredictor(cost_s=0.002, clock=clock, tuned_batch_sizes=[4, 1])
    status, f, _ = measure.throughput(p, FakeData(), _prof(), null_monitor())
    assert status == "ok" and p.distinct_batches() == [1, 4]
    assert [r["batch_size"] for r in f["by_batch"]] == [1, 4] and f["best_batch"] == 4
    assert f["stop_reason"] == ("largest batch size the variant is tuned for (4) reached: it "
                                "would run a larger one with untuned kernels")
    # tuned at 1 only: one size, and the search ends there
    p = FakePredictor(cost_s=0.002, clock=clock, tuned_batch_sizes=[1])
    _, f, _ = measure.throughput(p, FakeData(), _prof(), null_monitor())
    assert p.distinct_batches() == [1] and f["best_batch"] == 1
    assert "variant is tuned for (1)" in f["stop_reason"]
    # a tuned size the predictor cannot run is left out; none left: the sizes it can run
    p = FakePredictor(cost_s=0.002, clock=clock, batch_sizes=[1, 2, 8], tuned_batch_sizes=[1, 4])
    _, f, _ = measure.throughput(p, FakeData(), _prof(), null_monitor())
    assert p.distinct_batches() == [1] and "tuned for (1)" in f["stop_reason"]
    p = FakePredictor(cost_s=0.002, clock=clock, batch_sizes=[1, 2, 8], tuned_batch_sizes=[4])
    _, f, _ = measure.throughput(p, FakeData(), _prof(), null_monitor())
    assert p.distinct_batches() == [1, 2, 8] and "was built for (8)" in f["stop_reason"]


def test_throughput_partial_on_time_budget(clock):
    p = FakePredictor(cost_s=0.002, clock=clock)
    status, f, reason = measure.throughput(p, FakeData(), _prof(throughput={"budget_s": 0.015}),
                                           null_monitor())
    # batch 1: warm-up + 5 timed calls = 12 ms; batch 2 ends at 24 ms > 15 ms
    assert status == "partial" and reason == "time budget 0.015 s reached after batch 2"
    assert [r["batch_size"] for r in f["by_batch"]] == [1, 2]


# ------------------------------------------------------------------ fit_batch, run_all, accuracy
@pytest.mark.parametrize("sizes, wanted, got", [
    (None, 8, 8), ([1, 4, 16], 4, 4), ([1, 4, 16], 8, 4), ([1, 4, 16], 64, 16), ([4, 16], 1, 4)])
def test_fit_batch(sizes, wanted, got):
    assert measure.fit_batch(FakePredictor(batch_sizes=sizes), wanted) == got


@pytest.mark.parametrize("sizes, prefer, wanted, got", [
    (None, None, 8, 8), (None, [1], 8, 1), (None, [1, 4], 8, 4), (None, [4], 2, 4),
    ([2, 4], [1, 4], 8, 4), ([2, 4], [1], 8, 4)])   # a preferred size it cannot run is not
def test_pass_batch(sizes, prefer, wanted, got):
    p = FakePredictor(batch_sizes=sizes, tuned_batch_sizes=prefer)
    assert measure.pass_batch(p, wanted) == got


def test_passes_run_at_the_predictors_pass_batch_size():
    # A TVM build tuned at batch 1 (its tuned_batch_sizes): parity and accuracy run at batch
    # 1, warm-up included, not at the profile's 8, which would compile untuned kernels.
    p = FakePredictor(tuned_batch_sizes=[1])
    status, f, _ = measure.accuracy(p, FakeData(n=3), _prof(accuracy_batch=8), null_monitor())
    assert f["batch_size"] == 1 and f["n_images"] == 3 and p.calls == [1, 1, 1, 1]
    p = FakePredictor(tuned_batch_sizes=[1])
    logits, _, _ = measure.budgeted_pass(p, FakeData(n=20), 8, limit=16, budget_s=45.0)
    assert len(logits) == 16 and set(p.calls) == {1}


def test_run_all_in_order_with_limit():
    p = FakePredictor(logits_fn=lambda x: x[:, 0, 0, :1])   # logit 0 = the image's index
    logits, labels, _ = measure.run_all(p, FakeData(n=11), batch_size=4, limit=7)
    assert logits[:, 0].tolist() == list(range(7)) and labels.tolist() == list(range(7))
    assert p.calls == [4, 3]


def test_run_all_restricted_batch_sizes():
    p = FakePredictor(batch_sizes=[1, 2])
    logits, _, _ = measure.run_all(p, FakeData(n=5), batch_size=8)
    assert len(logits) == 5 and set(p.calls) == {1, 2}


def test_run_all_stops_after_the_batch_that_crosses_the_budget(clock):
    p = FakePredictor(cost_s=0.010, clock=clock)
    logits, labels, wall = measure.run_all(p, FakeData(n=20), batch_size=2, budget_s=0.025)
    assert len(logits) == len(labels) == 6 and p.calls == [2, 2, 2]
    assert wall == pytest.approx(0.030)


def _ranked_logits(labels, ranks, n_classes=10):
    """Logits where image i's label sits at rank ranks[i] (0 = highest)."""
    out = np.zeros((len(labels), n_classes), np.float32)
    for i, (y, r) in enumerate(zip(labels, ranks)):
        order = [c for c in range(n_classes) if c != y]
        order.insert(r, y)
        out[i, order] = np.arange(n_classes, 0, -1)
    return out


def test_accuracy_top1_top5_on_known_logits():
    labels = [3, 1, 4, 1, 5, 9, 2, 6, -1, 5]         # image 8 has no label
    ranks = [0, 0, 1, 4, 5, 9, 0, 2, 0, 7]
    table = _ranked_logits([max(y, 0) for y in labels], ranks)
    p = FakePredictor(logits_fn=lambda x: table[x[:, 0, 0, 0].astype(int)])
    data = FakeData(n=10, labels=labels, skipped=[{"path": "bad.jpg"}])
    status, f, reason = measure.accuracy(p, data, _prof(accuracy_batch=4), null_monitor())
    assert (status, reason) == ("ok", "")
    # 9 labelled: rank 0 for images 0, 1, 6 -> 3/9; rank < 5 also for 2, 3, 7 -> 6/9
    assert f["top1"] == round(100 * 3 / 9, 4) and f["top5"] == round(100 * 6 / 9, 4)
    assert f["n_images"] == 10 and f["n_labelled"] == 9 and f["skipped_images"] == 1
    assert f["batch_size"] == 4 and f["samples_per_s"] > 0


def test_accuracy_without_labels_is_partial():
    data = FakeData(n=4, labels=[-1] * 4)
    status, f, reason = measure.accuracy(FakePredictor(), data, _prof(), null_monitor())
    assert status == "partial" and f["top1"] is None and f["top5"] is None
    assert "no labelled images" in reason


def test_accuracy_partial_on_pass_budget(clock):
    p = FakePredictor(cost_s=0.010, clock=clock)
    status, f, reason = measure.accuracy(p, FakeData(n=20), _prof(accuracy_batch=2,
                                                                  pass_budget_s=0.025),
                                         null_monitor())
    assert status == "partial" and f["n_images"] == 6 and "6 of 20 images" in reason


def test_accuracy_pass_budget_does_not_count_a_per_shape_compile(clock):
    # TVM compiles each static batch size on its first call: 100 s of compiling at batch 8
    # (and 100 s more at the remainder, 4) must not eat a 45 s budget for running images.
    p = FakePredictor(cost_s=0.010, first_call_s=100.0, clock=clock)
    status, f, reason = measure.accuracy(p, FakeData(n=20), _prof(accuracy_batch=8,
                                                                  pass_budget_s=45.0),
                                         null_monitor())
    assert (status, reason) == ("ok", "") and f["n_images"] == 20
    assert p.calls == [8, 4, 8, 8, 4]      # one untimed call per shape, then the pass


def test_parity_pass_budget_does_not_count_a_per_shape_compile(clock):
    # The emulated Orin's untuned TVM parity cell: 16 images at batch 8, the batch-8 library
    # compiled on its first call. Counted in the 45 s budget, it stopped the pass at 8 of 16.
    p = FakePredictor(cost_s=0.010, first_call_s=100.0, clock=clock)
    logits, labels, _ = measure.budgeted_pass(p, FakeData(n=20), 8, limit=16, budget_s=45.0)
    assert len(logits) == len(labels) == 16 and p.calls == [8, 8, 8]


def test_warm_up_pass_calls_each_shape_once():
    p = FakePredictor(batch_sizes=[1, 2, 4])
    assert measure.warm_up_pass(p, FakeData(n=16), 8, limit=6) == 4
    assert p.calls == [4, 2]
    p = FakePredictor()
    assert measure.warm_up_pass(p, FakeData(n=3), 8) == 8 and p.calls == [3]


def test_cold_start_calls_once():
    p = FakePredictor()
    assert measure.cold_start(p, FakeData().batch(0, 1)) >= 0 and p.calls == [1]


# ------------------------------------------------------------------ energy over the figure's window
class ConstantPower(PowerSource):
    """A power source reading a fixed figure: what a window integrates to is then known."""
    name = "constant"

    def __init__(self, watts: float):
        self.mw = watts * 1000.0

    def read_mw(self) -> dict[str, float]:
        return {"RAIL": self.mw, "total": self.mw}


@pytest.fixture
def one_clock(monkeypatch, clock) -> VirtualClock:
    """The virtual clock for the monitor's windows too: a window is then exactly the calls it
    holds, and energy per sample an exact figure (a real clock under CI's load put gaps between
    calls that moved it by 7%: 2026-12-02, 9.01 against 8.41 mJ)."""
    from edgebench.telemetry import monitor as monitor_module

    monkeypatch.setattr(monitor_module, "time", clock)
    return clock


def _powered_monitor(watts=12.0, idle=10.0) -> Monitor:
    mon = Monitor(interval_s=0.05, power=ConstantPower(watts))
    mon.idle_w = idle                    # as measure_idle would leave it
    return mon


def test_throughput_energy_per_batch_is_over_that_batch_window_alone(one_clock):
    """Every by_batch entry's energy is net power x its own window / the samples timed in it
    (= net power / its samples_per_s, exactly, on a clock that moves only in the calls), and
    the record's figure is the best batch's, not a spread over the whole search with its
    warm-ups and gaps."""
    mon = _powered_monitor()
    p = FakePredictor(cost_s=0.004, clock=one_clock)
    prof = _prof(throughput={"max_batch": 8, "min_s": 0.03, "warmup": 2})
    _, f, _ = measure.throughput(p, FakeData(), prof, mon)
    assert [r["batch_size"] for r in f["by_batch"]] == [1, 2, 4, 8]
    for r in f["by_batch"]:
        assert r["power_mean_w"] == pytest.approx(12.0) and r["power_net_w"] == pytest.approx(2.0)
        n = r["iters"] * r["batch_size"]
        assert r["window_s"] == pytest.approx(r["iters"] * 0.004, rel=1e-3)
        assert r["energy_mj_per_sample"] == pytest.approx(2.0 * 0.004 / r["batch_size"] * 1e3, rel=1e-3)
        assert r["energy_mj_per_sample"] == pytest.approx(2.0 * r["window_s"] / n * 1e3, rel=1e-3)
        assert r["energy_mj_per_sample"] == pytest.approx(2.0 / r["samples_per_s"] * 1e3, rel=1e-3)
        assert r["peak_rss_mb"] > 0 and r["system_memory_peak_mb"] > 0
    power, reason, energy = mon.power_summary()
    best = next(r for r in f["by_batch"] if r["batch_size"] == f["best_batch"])
    assert f["best_batch"] == 8 and reason is None and energy == best["energy_mj_per_sample"]
    assert power["window_s"] == pytest.approx(best["window_s"], abs=1e-3)
    # Not the old figure: first window's start to the last one's end, warm-ups between them
    # included, over every sample
    spread = 2.0 * (mon.windows[-1].t1 - mon.windows[0].t0) / sum(w.n_items for w in mon.windows)
    assert energy < 0.8 * spread * 1e3


def test_latency_energy_is_net_power_times_time_per_sample(one_clock):
    mon = _powered_monitor(watts=15.0, idle=10.0)
    p = FakePredictor(cost_s=0.003, batch_sizes=[2], clock=one_clock)
    _, f, _ = measure.latency(p, FakeData(), _prof({"min_count": 10, "min_s": 0.03}), mon)
    power, _, energy = mon.power_summary()
    per_sample_ms = f["latency_ms"]["mean"] / f["batch_size"]
    assert f["n"] == 10 and per_sample_ms == pytest.approx(1.5)
    assert power["net"] == pytest.approx(5.0)
    assert power["window_s"] == pytest.approx(f["window_s"], abs=1e-3)
    assert energy == pytest.approx(5.0 * power["window_s"] / (f["n"] * 2) * 1e3, rel=1e-4)
    # The window holds the timed calls and nothing else (the warm-up calls are outside it)
    assert energy == pytest.approx(5.0 * per_sample_ms, rel=1e-6)


def test_net_power_at_or_below_idle_is_kept_as_measured_with_a_note():
    """The emulated Orin's jtop served a mean 0.67 W under the idle it had measured
    (2026-11-26): the record keeps the negative net and energy, and says why."""
    from edgebench.telemetry.monitor import NET_AT_OR_BELOW_IDLE

    mon = _powered_monitor(watts=9.5, idle=10.0)
    p = FakePredictor(cost_s=0.003)
    measure.latency(p, FakeData(), _prof({"min_count": 10, "min_s": 0.03}), mon)
    power, reason, energy = mon.power_summary()
    assert power["net"] == pytest.approx(-0.5) and energy < 0 and reason is None
    assert power["note"] == NET_AT_OR_BELOW_IDLE
    mon = _powered_monitor(watts=10.5, idle=10.0)
    measure.latency(p, FakeData(), _prof({"min_count": 10, "min_s": 0.03}), mon)
    power, _, energy = mon.power_summary()
    assert energy > 0 and "note" not in power


def test_no_sensor_leaves_every_energy_figure_null():
    p = FakePredictor(cost_s=0.001)
    mon = null_monitor()
    _, f, _ = measure.throughput(p, FakeData(), _prof(throughput={"max_batch": 2, "min_s": 0.005}), mon)
    for r in f["by_batch"]:
        assert r["energy_mj_per_sample"] is None and r["power_mean_w"] is None
    assert mon.power_summary() == (None, "power sampling disabled", None)


def test_crossing_the_time_budget_on_the_last_batch_size_is_a_complete_search(clock):
    p = FakePredictor(cost_s=0.002, clock=clock)
    status, f, reason = measure.throughput(
        p, FakeData(), _prof(throughput={"budget_s": 0.015, "max_batch": 2}), null_monitor())
    assert status == "ok" and reason == "" and [r["batch_size"] for r in f["by_batch"]] == [1, 2]
    assert f["stop_reason"] == "batch cap 2 of this profile reached"
