"""Reuse of another model's records (transfer.reuse_records) where the same kernel names its
blocks otherwise: MetaSchedule files both under one structural hash, but replays a record's
trace, block names and all, when it opens a database. A real schedule's trace on a real
matmul, in real JSON databases."""
from __future__ import annotations

import types

import pytest

tvm = pytest.importorskip("tvm", reason="apache-tvm not installed (pip install 'edgebench[tvm]')")

SRC, DST = "lv200_red", "lv397_red"     # MobileNetV2's and EfficientNet-B0's mean, 2026-12-02


def _matmul(block: str):
    from tvm import te

    a = te.placeholder((16, 16), name="A")
    b = te.placeholder((16, 16), name="B")
    k = te.reduce_axis((0, 16), name="k")
    c = te.compute((16, 16), lambda i, j: te.sum(a[i, k] * b[k, j], axis=k), name=block)
    return tvm.IRModule({"main": te.create_prim_func([a, b, c])})


def _scheduled(mod):
    """A schedule of the matmul whose trace names its block, and a block the schedule made
    from it (``<block>_init``), as MetaSchedule's traces do."""
    from tvm import s_tir

    sch = s_tir.Schedule(mod)
    blk = sch.get_sblock(SRC)
    _, j, k = sch.get_loops(blk)
    sch.split(j, sch.sample_perfect_tile(j, n=2))
    sch.decompose_reduction(blk, k)
    init = sch.get_sblock(f"{SRC}_init")
    sch.annotate(init, "edgebench.test", 1)
    return sch.trace


def _database(path, mod, trace):
    from tvm.s_tir import meta_schedule as ms

    path.mkdir(parents=True)
    db = ms.database.JSONDatabase(work_dir=str(path))
    db.commit_tuning_record(ms.database.TuningRecord(
        trace, db.commit_workload(mod), [1e-5], tvm.target.Target("llvm"),
        ms.arg_info.ArgInfo.from_prim_func(mod["main"])))
    return db


def _sblocks(trace) -> list:
    return [str(i[2][0]) for i in trace.as_json()[0] if i[0] == "GetSBlock"]


def test_a_record_of_the_same_kernel_under_other_block_names_is_replayed_renamed(tmp_path):
    from tvm.s_tir import meta_schedule as ms

    from converters.tvm import database, transfer

    theirs, ours = _matmul(SRC), _matmul(DST)
    # The premise: one structural hash, so reuse matches them.
    assert database.task_hash(theirs) == database.task_hash(ours)
    trace = _scheduled(theirs)
    _database(tmp_path / "src", theirs, trace)
    # Copied as it was, the record made the other database unreadable.
    _database(tmp_path / "raw", ours, trace)
    with pytest.raises(Exception):
        ms.database.JSONDatabase(work_dir=str(tmp_path / "raw"), allow_missing=False)
    # As it is now: the trace replayed on this model's kernel, its block names translated.
    assert transfer.replayed(trace, ours) is None
    task = types.SimpleNamespace(dispatched=[ours])
    (tmp_path / "dst").mkdir()         # as tuning.tune makes it
    res = transfer.reuse_records(tmp_path / "dst", [task], [tmp_path / "src"])
    assert (res["records"], res["tasks"], res["not_replayable"]) == (1, 1, 0), res
    db = ms.database.JSONDatabase(work_dir=str(tmp_path / "dst"), allow_missing=False)
    (rec,) = db.get_top_k(db.commit_workload(ours), 4)
    assert _sblocks(rec.trace) == [DST, f"{DST}_init"]
    assert [float(x) for x in rec.run_secs] == pytest.approx([1e-5])


def test_a_record_that_does_not_apply_is_left_out_and_the_database_still_opens(tmp_path,
                                                                              monkeypatch):
    """Where the block names cannot be matched (here: as for a kernel without a root block),
    the record is left out and counted, and the database still opens."""
    from tvm.s_tir import meta_schedule as ms

    from converters.tvm import transfer

    theirs, ours = _matmul(SRC), _matmul(DST)
    _database(tmp_path / "src", theirs, _scheduled(theirs))
    monkeypatch.setattr(transfer, "_block_names", lambda mod: [])
    task = types.SimpleNamespace(dispatched=[ours])
    (tmp_path / "dst").mkdir()
    res = transfer.reuse_records(tmp_path / "dst", [task], [tmp_path / "src"])
    assert (res["records"], res["tasks"], res["not_replayable"]) == (0, 0, 1), res
    assert res["databases"] == [{"database": str(tmp_path / "src"), "records": 0,
                                 "tasks": 0, "not_replayable": 1}]
    db = ms.database.JSONDatabase(work_dir=str(tmp_path / "dst"), allow_missing=True)
    assert list(db.get_all_tuning_records()) == []


def _tuned_in(path, space: str):
    """A tuning.json as a session in ``space`` (NHWC) leaves it, for database_profile."""
    import json

    (path / "tuning.json").write_text(json.dumps(
        {"layout": "NHWC", "sessions": [{"design_space": {space: True}}]}), encoding="utf-8")


def test_reuse_draws_only_on_databases_of_the_sessions_layout_and_design_space(tmp_path):
    """Two siblings hold the kernel: the one tuned in the session's profile lends its record,
    the other is named in ``skipped`` with its profile and how many missing kernels it held."""
    from converters.tvm import transfer

    theirs, ours = _matmul(SRC), _matmul(DST)
    for name, space in (("multi", "multi-vector"), ("wide", "wide-vector")):
        _database(tmp_path / name, theirs, _scheduled(theirs))
        _tuned_in(tmp_path / name, space)
    task = types.SimpleNamespace(dispatched=[ours])
    (tmp_path / "dst").mkdir()
    res = transfer.reuse_alike(tmp_path / "dst", [task], [tmp_path / "multi", tmp_path / "wide"],
                               ("NHWC", "wide-vector"))
    assert (res["records"], res["tasks"]) == (1, 1), res
    assert [d["database"] for d in res["databases"]] == [str(tmp_path / "wide")]
    assert res["skipped"] == [{"database": str(tmp_path / "multi"), "layout": "NHWC",
                               "design_space": "multi-vector", "tasks": 1}]
    # A session in the multi-vector space takes the other's record and names this one.
    (tmp_path / "dst2").mkdir()
    res = transfer.reuse_alike(tmp_path / "dst2", [task], [tmp_path / "multi", tmp_path / "wide"],
                               ("NHWC", "multi-vector"))
    assert [d["database"] for d in res["databases"]] == [str(tmp_path / "multi")]
    assert res["skipped"] == [{"database": str(tmp_path / "wide"), "layout": "NHWC",
                               "design_space": "wide-vector", "tasks": 1}]
