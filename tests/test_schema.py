"""The record contract: every committed results.jsonl obeys results.schema.json, and the
schema is strict enough to fail (unknown fields, wrong types, missing per-task fields)."""
from __future__ import annotations

import copy
import json
import subprocess

import pytest

from testlib import REPO, assert_records_valid, record_errors, record_validator


def _committed_results() -> list[str]:
    out = subprocess.run(["git", "ls-files", "*results.jsonl"], cwd=REPO, capture_output=True,
                         text=True, check=True).stdout.split()
    return [p for p in out if p.endswith("results.jsonl")]


COMMITTED = _committed_results()


def _ok_latency() -> dict:
    return {"run_id": "r", "model": "m", "variant": "pytorch", "task": "latency", "status": "ok",
            "reason": "", "device": {"kind": "cpu", "name": "x", "arch": "x86_64"},
            "device_id": "", "weights": "random-seed-0", "weights_note": "", "data": None,
            "profile": "quick", "started_at": "2026-11-23T00:00:00+00:00", "wall_s": 1.0,
            "convert_s": 0.0, "artifact_cached": True, "artifact": None, "artifact_sha256": None,
            "load_s": 0.1, "cold_start_ms": 3.0, "variant_meta": {"anything": [1, 2]},
            "batch_size": 1, "n": 10, "warmup": 2, "window_s": 0.5,
            "latency_ms": {"mean": 1, "p50": 1, "p90": 1, "p95": 1, "p99": 1, "min": 1, "max": 1,
                           "ci95_low": 1, "ci95_high": 1, "std": 0},
            "memory_mb": {"baseline": 1.0, "peak": 2.0, "delta": 1.0}, "power_w": None,
            "power_reason": "no sensor", "energy_mj_per_sample": None}


def test_schema_is_a_valid_schema_with_a_description_per_property():
    schema = record_validator().schema
    assert schema["additionalProperties"] is False
    missing = [k for k, v in schema["properties"].items() if not v.get("description")]
    assert not missing, f"properties without a description: {missing}"


def test_committed_results_exist():
    assert COMMITTED, "no committed results.jsonl found by git ls-files"


@pytest.mark.parametrize("path", COMMITTED)
def test_committed_results_obey_the_schema(path):
    recs = assert_records_valid(REPO / path)
    assert recs, f"{path} holds no record"


def test_a_good_record_passes():
    assert_records_valid([_ok_latency()])


@pytest.mark.parametrize("mutate, field", [
    (lambda r: r.update(surprise=1), "surprise"),                       # unknown top-level field
    (lambda r: r["latency_ms"].update(p42=1.0), "latency_ms"),          # unknown nested field
    (lambda r: r["memory_mb"].update(bogus=1.0), "memory_mb"),
    (lambda r: r.update(status="great"), "status"),                     # not in the enum
    (lambda r: r.update(n="10"), "n"),                                  # wrong type
    (lambda r: r.pop("latency_ms"), "latency_ms"),                      # ok latency needs it
    (lambda r: r.pop("run_id"), "run_id"),
])
def test_schema_rejects(mutate, field):
    r = copy.deepcopy(_ok_latency())
    mutate(r)
    errs = record_errors([r])
    assert errs, f"schema accepted a record with a bad {field}"
    assert any(field in e for e in errs), errs
    with pytest.raises(AssertionError, match=r"m/pytorch/latency"):
        assert_records_valid([r])


def test_unknown_field_message_names_record_and_field(tmp_path):
    p = tmp_path / "results.jsonl"
    good, bad = _ok_latency(), dict(_ok_latency(), task="throughput", status="failed", extra_x=1)
    p.write_text(json.dumps(good) + "\n" + json.dumps(bad) + "\n", encoding="utf-8")
    with pytest.raises(AssertionError) as ei:
        assert_records_valid(tmp_path)
    msg = str(ei.value)
    assert "record 2 (m/pytorch/throughput" in msg and "extra_x" in msg, msg
    assert "record 1" not in msg


def test_free_form_maps_stay_open():
    r = _ok_latency()
    r["device"]["gpu"] = "anything"
    r["variant_meta"]["new_key"] = {"x": 1}
    r["device_states"] = [{"t": 0.0, "temps_c": {"cpu": 40}, "new_sensor": 1}]
    r["power_w"] = {"mean": 1.0, "idle": 0.5, "net": 0.5, "rails": {"VDD_GPU_SOC": 1.0},
                    "window_s": 1.0, "source": "tegrastats", "caveat": ""}
    assert_records_valid([r])
