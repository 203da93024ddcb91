"""pytorch-aot (AOTInductor): a real torch.export + aoti_compile_and_package of a small timm
model, compiled by the first cell and loaded from the package by the others."""
from __future__ import annotations

import pytest

import converters
from testlib import TINY, assert_records_valid, records, run_cli


def test_opt_in_not_in_the_default_run():
    assert "pytorch-aot" in converters.names()
    assert "pytorch-aot" not in converters.default_names()
    assert "pytorch-compile" in converters.default_names()


@pytest.mark.slow
def test_compiled_once_then_loaded_with_parity_and_every_batch(tmp_path, wnid_folder, cache_dir):
    out = tmp_path / "r"
    proc = run_cli("edgebench.full", "--models", TINY, "--variants", "pytorch-aot",
                   "--tasks", "parity", "latency", "throughput", "--data", str(wnid_folder),
                   "--weights", "random", "--out", str(out), "--cache-dir", str(cache_dir))
    assert proc.returncode == 0, proc.stderr[-3000:]
    recs = {r["task"]: r for r in assert_records_valid(out)}
    assert {r["status"] for r in recs.values()} == {"ok"}, [r.get("reason") for r in recs.values()]
    # The first cell compiled the package; the others loaded the same file.
    first, *rest = records(out)
    assert first["artifact_cached"] is False and first["convert_s"] > 0
    assert first["variant_meta"]["compile_s"] > 0 and first["variant_meta"]["export_s"] > 0
    assert all(r["artifact_cached"] is True and r["convert_s"] == 0 for r in rest)
    assert len({r["artifact_sha256"] for r in records(out)}) == 1
    assert recs["parity"]["max_abs_diff"] <= 1e-3 and recs["parity"]["top1_agreement"] == 1.0
    # One package serves every batch size of the search (a symbolic batch dimension).
    sizes = [b["batch_size"] for b in recs["throughput"]["by_batch"]]
    assert sizes[:3] == [1, 2, 4]
