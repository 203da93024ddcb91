"""LoadGen's TestSettings for one scenario cell.

- ``paper``: MLPerf's own rules, LoadGen's built-in ``mlperf.conf`` (``FromConfig`` with
  conf_type 0: no user.conf): 600 s minimum duration, 662 queries for MultiStream, for
  ``resnet50`` 24,576 samples Offline and 1,024 performance samples. A paper run on a board
  can then say VALID.
- ``quick`` and ``smoke``: short windows (``SHORT``). LoadGen still judges them, but the
  record and the report say they are not MLPerf-valid, and why.
Either way the expected latency and QPS (what a user.conf would set) come from the run's own
latency and throughput cells of the same variant where they exist (``seed``), and the options
(``--mlperf-min-duration``, ``--mlperf-min-queries``) override the windows.
"""
from __future__ import annotations

from . import SCENARIOS

# Short windows: (min_duration_s, min_query_count, max_duration_s). SingleStream's 64
# queries are the fewest LoadGen's early-stopping estimate accepts.
SHORT = {
    "quick": {"singlestream": (10.0, 64, 60.0), "multistream": (10.0, 64, 60.0),
              "offline": (10.0, 1, 120.0)},
    "smoke": {"singlestream": (1.0, 16, 10.0), "multistream": (1.0, 8, 10.0),
              "offline": (1.0, 1, 20.0)},
}
MULTISTREAM_SAMPLES = 8       # MLPerf's MultiStream query: 8 samples
DEFAULTS = {"singlestream_ms": 10.0, "multistream_ms": 80.0, "offline_qps": 10.0}


def check_options(options: dict) -> None:
    """Refuse values LoadGen cannot mean (ValueError naming the flag; the CLI exits 2)."""
    for key, flag, low in (("mlperf_offline_batch", "--mlperf-offline-batch", 1),
                           ("mlperf_min_queries", "--mlperf-min-queries", 1)):
        v = options.get(key)
        if v is not None and (not isinstance(v, int) or v < low):
            raise ValueError(f"{flag} {v}: must be an integer >= {low}")
    q = options.get("mlperf_offline_qps")
    if q is not None and not q > 0:
        raise ValueError(f"--mlperf-offline-qps {q:g}: must be a positive number of samples/s")
    d = options.get("mlperf_min_duration")
    if d is not None and not (0 < d <= 86400):
        raise ValueError(f"--mlperf-min-duration {d:g}: must be a number of seconds in (0, 86400]")


def seed_figures(latency: dict | None, throughput: dict | None) -> dict:
    """What the run's own cells say about this variant: batch-1 latency percentiles, the
    best throughput and its batch, the latency of an 8-sample batch."""
    out: dict = {}
    if latency and latency.get("status") in ("ok", "partial") and latency.get("latency_ms"):
        out["latency_p50_ms"] = latency["latency_ms"].get("p50")
        out["latency_p90_ms"] = latency["latency_ms"].get("p90")
    if throughput and throughput.get("status") in ("ok", "partial"):
        out["samples_per_s"] = throughput.get("samples_per_s")
        out["best_batch"] = throughput.get("best_batch")
        for row in throughput.get("by_batch") or []:
            if row.get("batch_size") == MULTISTREAM_SAMPLES and row.get("latency_ms_p50"):
                out["batch8_latency_ms"] = row["latency_ms_p50"]
    return {k: v for k, v in out.items() if v}


def build(lg, task: str, profile: str, model: str, seed: dict, options: dict,
          accuracy: bool = False):
    """(TestSettings, the settings as a dict for the record, why not MLPerf-valid or "")."""
    scenario = SCENARIOS[task]
    ts = lg.TestSettings()
    rec: dict = {"scenario": scenario, "profile": profile, "model_name": model}
    if profile == "paper":
        rc = ts.FromConfig("", model, scenario, 0)      # 0: the built-in mlperf.conf only
        rec["config"] = f"LoadGen's built-in mlperf.conf (FromConfig rc {rc})"
        not_valid = ""
    else:
        dur, queries, cap = SHORT.get(profile, SHORT["quick"])[task]
        ts.min_duration_ms = int(dur * 1000)
        ts.min_query_count = queries
        ts.max_duration_ms = int(cap * 1000)
        rec["config"] = f"edgebench's short windows for profile {profile}"
        not_valid = (f"profile {profile}: short windows (a {dur:g} s minimum duration; MLPerf "
                     "asks 600 s, and 662 queries for MultiStream), so not MLPerf-valid "
                     "whatever LoadGen says; use --profile paper")
    if options.get("mlperf_min_duration") is not None:
        ts.min_duration_ms = int(options["mlperf_min_duration"] * 1000)
        ts.max_duration_ms = max(ts.max_duration_ms, ts.min_duration_ms * 2) \
            if ts.max_duration_ms else 0
        not_valid = not_valid or "--mlperf-min-duration overrides MLPerf's windows"
    if options.get("mlperf_min_queries") is not None:
        ts.min_query_count = int(options["mlperf_min_queries"])
        not_valid = not_valid or "--mlperf-min-queries overrides MLPerf's windows"
    ts.scenario = getattr(lg.TestScenario, scenario)
    ts.mode = lg.TestMode.AccuracyOnly if accuracy else lg.TestMode.PerformanceOnly
    # What a user.conf would say: this variant's own figures from the same run.
    p90 = seed.get("latency_p90_ms") or seed.get("latency_p50_ms")
    ss_ms = p90 or DEFAULTS["singlestream_ms"]
    ms_ms = seed.get("batch8_latency_ms") or (MULTISTREAM_SAMPLES * p90 if p90
                                              else DEFAULTS["multistream_ms"])
    qps = options.get("mlperf_offline_qps") or seed.get("samples_per_s") or DEFAULTS["offline_qps"]
    ts.single_stream_expected_latency_ns = int(ss_ms * 1e6)
    ts.multi_stream_expected_latency_ns = int(ms_ms * 1e6)
    ts.offline_expected_qps = float(qps)
    if options.get("mlperf_min_queries") is not None and ts.max_duration_ms \
            and scenario != "Offline":
        # The queries asked for must fit under the short profile's cap: LoadGen stops at the
        # cap whatever the count, and the test then fails on too few queries (smoke's 10 s
        # cap against 3-10 s calls under QEMU). Twice the asked count at the expected latency
        # leaves room for the spread; an Offline query is one, sized by its own QPS.
        per_query_ms = ss_ms if scenario == "SingleStream" else ms_ms
        needed_ms = int(2 * ts.min_query_count * per_query_ms)
        if needed_ms > ts.max_duration_ms:
            ts.max_duration_ms = needed_ms
            rec["max_duration_from"] = "--mlperf-min-queries x the expected latency, twice over"
    rec["expected"] = {"singlestream_latency_ms": round(ss_ms, 4),
                       "multistream_latency_ms": round(ms_ms, 4), "offline_qps": round(qps, 4),
                       "seeded_from": sorted(seed) or "defaults (no latency/throughput cell)",
                       **({"offline_qps_from": "--mlperf-offline-qps"}
                          if options.get("mlperf_offline_qps") else {})}
    rec.update(min_duration_ms=ts.min_duration_ms, min_query_count=ts.min_query_count,
               max_duration_ms=ts.max_duration_ms,
               mode="AccuracyOnly" if accuracy else "PerformanceOnly")
    return ts, rec, not_valid
