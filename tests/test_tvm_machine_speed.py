"""The machine-speed trace a tuning session keeps (converters/tvm/machine_speed.py): real
probes on this machine's CPUs, the session record's summary, and the tuning loop going on when
the probe fails. No timing is asserted: only what is recorded and that the probe leaves the
tuner's CPU affinity as it found it. (A real tuning session's trace is checked in
test_tvm_tuning.py.)"""
from __future__ import annotations

import os

from converters.tvm import machine_speed, scheduler


def test_the_probe_times_every_cpu_and_gives_the_affinity_back():
    before = os.sched_getaffinity(0)
    probe = machine_speed.Probe()
    trace = [{"trials": 4 * (k + 1), "task": "t", **probe.sample()} for k in range(2)]
    # Pinned to each CPU in turn, then unpinned: a tuner left on one CPU would measure its
    # candidates' builds and the cost model on that core alone.
    assert os.sched_getaffinity(0) == before
    assert probe.cpus == sorted(before)[:machine_speed.MAX_CPUS]
    for sample in trace:
        assert len(sample["compute_ms"]) == len(probe.cpus)
        assert all(ms > 0 for ms in sample["compute_ms"]) and sample["memory_ms"] > 0
    rec = machine_speed.session_record(trace, "local")
    assert rec["samples"] == 2 and rec["trace"] == trace and "error" not in rec
    assert len(rec["compute_ms"]) == len(probe.cpus)
    for spread in [*rec["compute_ms"], rec["memory_ms"]]:
        assert spread["min"] <= spread["median"] <= spread["max"]
        assert spread["max_over_min"] >= 1.0
    assert "machine speed over 2 batches" in machine_speed.describe(rec)
    assert "trace" not in machine_speed.without_trace(rec)


def test_candidates_measured_elsewhere_are_not_traced():
    rec = machine_speed.session_record([], "rpc 127.0.0.1:9190 key=orin")
    assert rec["samples"] == 0 and "rpc 127.0.0.1:9190" in rec["not_traced"]
    rec = machine_speed.session_record([], "local, on the CUDA GPU")
    assert rec["samples"] == 0 and "CUDA GPU" in rec["not_traced"]
    assert machine_speed.describe(rec) == "machine speed: not traced"


class _FailsAfterOneSample:
    """A probe whose second sampling fails (as an affinity call may in a restricted container)."""

    GOOD = {"compute_ms": [1.0, 1.2], "memory_ms": 10.0}

    def __init__(self):
        self.calls = 0

    def sample(self):
        self.calls += 1
        if self.calls > 1:
            raise OSError("sched_setaffinity: Operation not permitted")
        return dict(self.GOOD)


def test_a_failing_probe_is_recorded_and_the_tuning_goes_on():
    probe = _FailsAfterOneSample()
    loop = scheduler.Loop([], [], None, None, None, None, [], [], [], None, probe)
    loop._sample_speed("fused_conv2d", 8)
    loop.done = 8
    loop._sample_speed("fused_conv2d1", 8)          # raises inside: caught
    assert loop.probe is None                       # not sampled again this session
    loop._sample_speed("fused_conv2d2", 8)
    assert probe.calls == 2 and [s["trials"] for s in loop.speed] == [8, 16]
    rec = machine_speed.session_record(loop.speed, "local")
    assert rec["samples"] == 1 and rec["trace"][0]["compute_ms"] == probe.GOOD["compute_ms"]
    assert rec["error"] == "OSError: sched_setaffinity: Operation not permitted"
