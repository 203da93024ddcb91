"""LoadGen's detail log (``mlperf_log_detail.txt``): one ``:::MLLOG {json}`` per line. The
figures and the verdict are read from these lines, not from the summary's text."""
from __future__ import annotations

import json
from pathlib import Path

PREFIX = ":::MLLOG "


def read(path: str | Path) -> tuple[dict, list[str]]:
    """(key -> value of its last line, the messages of the lines marked as errors)."""
    values: dict = {}
    errors: list[str] = []
    for line in Path(path).read_text(encoding="utf-8", errors="replace").splitlines():
        if not line.startswith(PREFIX):
            continue
        try:
            entry = json.loads(line[len(PREFIX):])
        except ValueError:
            continue
        values[entry.get("key")] = entry.get("value")
        if (entry.get("metadata") or {}).get("is_error"):
            errors.append(f"{entry.get('key')}: {entry.get('value')}")
    return values, errors


def _ms(ns) -> float | None:
    return None if ns is None else round(float(ns) / 1e6, 4)


def failed_rules(v: dict) -> list[str]:
    """What made a run INVALID, in LoadGen's own terms."""
    out = []
    if v.get("result_min_duration_met") is False:
        out.append("minimum duration not met")
    if v.get("result_min_queries_met") is False:
        out.append("minimum query count not met")
    if v.get("early_stopping_met") is False:
        out.append("early stopping not met" + (f" ({' '.join(str(v['early_stopping_result']).split())})"
                                               if v.get("early_stopping_result") else ""))
    if v.get("result_invalid_reason"):
        out.append(str(v["result_invalid_reason"]).strip())
    if v.get("result_validity") == "INVALID" and not out:
        out.append("LoadGen says INVALID without a reason")
    return out


def summarize(scenario: str, v: dict) -> dict:
    """The scenario's metric and the facts behind it, from the detail log's values."""
    out = {"scenario": v.get("effective_scenario"), "validity": v.get("result_validity"),
           "invalid_because": failed_rules(v), "loadgen_version": v.get("loadgen_version"),
           "query_count": v.get("result_query_count"),
           "test_mode": v.get("effective_test_mode")}
    if scenario == "SingleStream":
        out.update(metric="90th percentile latency", unit="ms",
                   value=_ms(v.get("result_90.00_percentile_latency_ns")),
                   early_stopping_p90_ms=_ms(v.get("early_stopping_latency_ss")),
                   p50_ms=_ms(v.get("result_50.00_percentile_latency_ns")),
                   mean_ms=_ms(v.get("result_mean_latency_ns")))
    elif scenario == "MultiStream":
        out.update(metric="99th percentile latency per query", unit="ms",
                   value=_ms(v.get("result_99.00_percentile_per_query_latency_ns")),
                   early_stopping_p99_ms=_ms(v.get("early_stopping_latency_ms")) or None,
                   p50_per_query_ms=_ms(v.get("result_50.00_percentile_per_query_latency_ns")),
                   samples_per_query=v.get("effective_samples_per_query"))
    else:
        sps = v.get("result_samples_per_second")
        out.update(metric="samples per second", unit="samples/s",
                   value=None if sps is None else round(float(sps), 4))
    out["early_stopping"] = (" ".join(str(v["early_stopping_result"]).split())
                             if v.get("early_stopping_result") else None)
    return out
