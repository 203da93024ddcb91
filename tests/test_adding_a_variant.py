"""The worked example of docs/adding-a-variant.md, run for real: a variant kept in its own
module (examples/torch_export_variant.py) is converted, checked for parity and measured by
`python -m edgebench.full`, with no change to the core."""
from __future__ import annotations

import json

import pytest

from testlib import TINY, assert_records_valid, records, run_cli

EXAMPLE = {"EDGEBENCH_VARIANT_MODULES": "examples.torch_export_variant"}


@pytest.mark.slow
def test_example_variant_runs_end_to_end(tmp_path, cache_dir):
    out = tmp_path / "r"
    proc = run_cli("edgebench.full", "--models", TINY, "--variants", "pytorch", "torch-export",
                   "--tasks", "parity", "latency", "--weights", "random", "--out", str(out),
                   "--cache-dir", str(cache_dir), "--export-max-batch", "16", env=EXAMPLE)
    assert proc.returncode == 0, proc.stderr[-3000:]
    recs = {(r["variant"], r["task"]): r for r in records(out)}
    assert_records_valid(out)
    parity = recs[("torch-export", "parity")]
    assert parity["status"] == "ok" and parity["max_abs_diff"] <= 1e-3, parity
    lat = recs[("torch-export", "latency")]
    assert lat["status"] == "ok" and lat["equivalent"] is True and lat["n"] >= 20
    assert lat["artifact"].endswith(".pt2") and lat["artifact_cached"] is True   # parity built it
    assert lat["variant_meta"]["max_batch"] == 16 and parity["convert_s"] > 0
    run = json.loads((out / "run.json").read_text(encoding="utf-8"))
    assert run["variants"]["torch-export"]["versions"]["torch"]
    assert run["options"]["export_max_batch"] == 16        # its own flag reached the options


@pytest.mark.slow  # 6.5 s on the 2-core AVX2 VM (2026-11-26)
def test_without_the_module_the_variant_is_unknown(tmp_path):
    proc = run_cli("edgebench.full", "--models", TINY, "--variants", "torch-export",
                   "--out", str(tmp_path / "r"))
    assert proc.returncode == 2 and "unknown variant 'torch-export'" in proc.stderr
    assert "Traceback" not in proc.stderr
