"""The append-only result store: what is written is read back, a torn last line (a run
killed mid-write) is ignored, and the latest record of a cell wins."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from edgebench import store


def _rec(model="m", variant="v", task="latency", status="ok", device_id="", **kw) -> dict:
    return {"model": model, "variant": variant, "task": task, "status": status,
            "device_id": device_id, **kw}


def test_append_then_read_round_trip(tmp_path):
    p = tmp_path / "results.jsonl"
    a, b = _rec(n=1), _rec(task="throughput", samples_per_s=2.5)
    store.append(p, a)
    store.append(p, b)
    assert store.read(p) == [a, b]
    assert p.read_text(encoding="utf-8").count("\n") == 2


def test_append_converts_numpy_and_paths(tmp_path):
    p = tmp_path / "results.jsonl"
    store.append(p, _rec(x=np.float32(1.5), n=np.int64(3), arr=np.arange(3), where=Path("/a/b")))
    r = store.read(p)[0]
    assert (r["x"], r["n"], r["arr"], r["where"]) == (1.5, 3, [0, 1, 2], "/a/b")


def test_append_refuses_nan_and_unknown_types(tmp_path):
    p = tmp_path / "results.jsonl"
    with pytest.raises(ValueError):
        store.append(p, _rec(x=float("nan")))
    with pytest.raises(TypeError):
        store.append(p, _rec(x=object()))
    assert store.read(p) == []


def test_read_missing_file_is_empty(tmp_path):
    assert store.read(tmp_path / "nope.jsonl") == []


def test_torn_last_line_and_blank_lines_are_ignored(tmp_path):
    p = tmp_path / "results.jsonl"
    store.append(p, _rec(n=1))
    store.append(p, _rec(task="accuracy"))
    with open(p, "a", encoding="utf-8") as f:
        f.write("\n   \n" + '{"model": "m", "variant": "v", "task": "thr')   # killed mid-write
    recs = store.read(p)
    assert [r["task"] for r in recs] == ["latency", "accuracy"]


def test_latest_keeps_the_last_record_of_each_cell():
    recs = [_rec(status="failed"), _rec(task="parity"), _rec(status="ok", n=2),
            _rec(device_id="orin1", status="timeout")]
    lat = store.latest(recs)
    assert set(lat) == {("", "m", "v", "latency", ""), ("", "m", "v", "parity", ""),
                        ("orin1", "m", "v", "latency", "")}
    assert lat[("", "m", "v", "latency", "")]["n"] == 2
    assert store.cell_key({"model": "m", "variant": "v", "task": "t"}) == ("", "m", "v", "t", "")


def test_the_power_mode_is_part_of_the_cell():
    """--power-modes: the same cell in two modes is two cells; resume finds each by its mode."""
    recs = [_rec(power_mode="MAXN", n=1), _rec(power_mode="MODE_50W", n=2),
            _rec(power_mode="MAXN", n=3)]
    lat = store.latest(recs)
    assert set(lat) == {("", "m", "v", "latency", "MAXN"), ("", "m", "v", "latency", "MODE_50W")}
    assert store.find(recs, "m", "v", "latency", power_mode="MAXN")["n"] == 3
    assert store.find(recs, "m", "v", "latency", power_mode="MODE_50W")["n"] == 2
    assert store.find(recs, "m", "v", "latency") is None


def test_find_by_cell_and_device(tmp_path):
    p = tmp_path / "results.jsonl"
    for r in (_rec(status="failed"), _rec(device_id="orin1", n=7), _rec(status="ok", n=1)):
        store.append(p, r)
    recs = store.read(p)
    assert store.find(recs, "m", "v", "latency")["n"] == 1
    assert store.find(recs, "m", "v", "latency", "orin1")["n"] == 7
    assert store.find(recs, "m", "v", "throughput") is None
    assert store.find(recs, "m", "other", "latency") is None


def test_raw_timings_go_to_the_sidecar_and_are_checked_by_hash(tmp_path):
    path = tmp_path / "results.jsonl"
    rec = {"model": "m", "variant": "v", "task": "latency", "status": "ok",
           store.RAW_KEY: {"latency_ms": [1.5, 1.25, 2.0]}}
    store.append(path, rec)
    [back] = store.read(path)
    assert store.RAW_KEY not in back and back["raw_timings"]["file"] == store.RAW_FILE
    assert store.read_raw(tmp_path, back)["latency_ms"] == [1.5, 1.25, 2.0]
    side = tmp_path / store.RAW_FILE
    side.write_text(side.read_text(encoding="utf-8").replace("1.25", "9.25"), encoding="utf-8")    # tampered: not found
    assert store.read_raw(tmp_path, back) is None
    assert store.read_raw(tmp_path, {"model": "m"}) is None      # an old record without them
