"""The tuning loop's allocation rules as numbers (no TVM needed): ``measured`` halves the first
round's batch and caps each task by its share of the measured time."""
from __future__ import annotations

import math

from converters.tvm import scheduler


def test_first_round_batch_is_half_the_even_batch_and_never_below_two():
    assert [scheduler.first_round_batch(b) for b in (64, 17, 15, 4, 3, 2)] == [32, 9, 8, 2, 2, 2]


def test_measured_shares_follow_calls_times_latency_not_flops():
    # A depthwise conv with almost no arithmetic that takes 3 ms counts as 3 ms.
    shares = scheduler.measured_shares([1, 35, 2], [3e-3, 1e-3, None])
    assert shares[2] == 0                               # never measured: no share
    assert math.isclose(shares[0], 3 / 38) and math.isclose(shares[1], 35 / 38)
    # Failed measurements (1e10 s) are not time, and nothing measured is uniform.
    assert scheduler.measured_shares([1, 1], [1e10, 2e-3]) == [0.0, 1.0]
    assert scheduler.measured_shares([1, 1], [None, None]) == [0.5, 0.5]
    assert scheduler.measured_shares([], []) == []


def test_caps_from_measured_shares_keep_the_even_cap_as_a_floor():
    shares = scheduler.measured_shares([35, 1, 1], [1.6e-3, 1e-4, 1e-4])
    caps = scheduler.task_caps(shares, 512, 68)
    assert caps[0] == math.ceil(512 * shares[0]) > 68 and caps[1:] == [68, 68]


def test_phase_record_gives_seconds_and_per_candidate_milliseconds():
    phases = dict.fromkeys(scheduler.PHASES, 0.0)
    phases.update(build_s=12.345, run_s=3.0)
    rec = scheduler.phase_record(phases, 10)
    assert rec["candidates"] == 10 and rec["build_s"] == 12.35 and rec["search_s"] == 0.0
    assert rec["per_candidate_ms"]["build"] == 1234.5 and rec["per_candidate_ms"]["run"] == 300.0
    # nothing measured (stopped before the first batch): no per-candidate figures
    assert "per_candidate_ms" not in scheduler.phase_record(phases, 0)
