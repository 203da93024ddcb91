"""How the tuner's runner finds a candidate's weights (``--runner-caches warm|cold``): the
choice per database, the evaluator it makes, and a real tuning session measured cold."""
from __future__ import annotations

import json

import pytest

tvm = pytest.importorskip("tvm", reason="apache-tvm not installed (pip install 'edgebench[tvm]')")

from tvmlib import MODEL, SIZE_ARG, _cli, _db_dir, _records, old_database  # noqa: E402


def _recorded(path, caches: str):
    """A database whose tuning.json records the runner's caches."""
    from converters.tvm import database

    old_database(path)
    meta = json.loads((path / database.DB_META).read_text(encoding="utf-8"))
    (path / database.DB_META).write_text(json.dumps({**meta, "runner_caches": caches}),
                                         encoding="utf-8")
    return path


def test_a_database_keeps_the_caches_its_records_were_measured_with(tmp_path):
    from converters.tvm import runner, targets
    from converters.tvm.errors import TvmError

    cpu, _ = targets.resolve_target("host")
    gpu = tvm.target.Target("cuda")
    assert runner.caches_for(cpu) == "warm"                          # the default
    assert runner.caches_for(cpu, tmp_path / "none") == "warm"       # a new database
    assert runner.caches_for(cpu, tmp_path / "none", "cold") == "cold"
    assert runner.caches_for(cpu, old_database(tmp_path / "old")) == "warm"
    cold = _recorded(tmp_path / "cold", "cold")
    assert runner.caches_for(cpu, cold) == "cold"
    assert runner.caches_for(cpu, cold, "cold") == "cold"
    # warm records beside cold ones would win every task on how they were measured
    with pytest.raises(TvmError, match="cold caches.*--runner-caches warm"):
        runner.caches_for(cpu, cold, "warm")
    with pytest.raises(TvmError, match="warm caches"):
        runner.caches_for(cpu, tmp_path / "old", "cold")
    # the flush is a CPU one: GPU candidates are measured as MetaSchedule does
    assert runner.caches_for(gpu, tmp_path / "none", "cold") == "warm"
    assert runner.caches_for(gpu, old_database(tmp_path / "gpu"), "cold") == "warm"


def test_the_cold_evaluator_flushes_before_every_single_call():
    from converters.tvm import runner
    from converters.tvm.tuning import TuneConfig

    cold = runner.evaluator_config(TuneConfig(runner_caches="cold"))
    # MetaSchedule flushes before each repeat: one call per repeat, and no min_repeat_ms,
    # which would add warm calls to it
    assert (cold.number, cold.repeat, cold.min_repeat_ms) == (1, runner.COLD_REPEAT, 0)
    assert cold.enable_cpu_cache_flush is True
    warm = runner.evaluator_config(TuneConfig())
    assert warm.enable_cpu_cache_flush is False
    assert (warm.number, warm.repeat, warm.min_repeat_ms) == (3, 1, 50)


def _session_args(root) -> list:
    """edgebench.tune on the tiny model's first conv alone, into ``root``."""
    return ["--model", MODEL, "--input-size", SIZE_ARG, "--weights", "random",
            "--tuning-dir", str(root), "--trials-per-iter", "4", "--population", "64",
            "--only-tasks", "fused_conv2d_add_relu", "--no-reuse", "--no-progress"]


def _first_session(root, caches: str):
    """A 4-trial session with ``--runner-caches caches``: its database, after checking that
    every measured record holds COLD_REPEAT single-call measurements."""
    from converters.tvm import runner

    r = _cli(*_session_args(root), "--trials", "4", "--runner-caches", caches)
    assert r.returncode == 0, r.stderr[-3000:]
    db = _db_dir(root)
    recs = [rec for rec in _records(db) if rec[1][1] and max(rec[1][1]) < 1e9]
    assert recs, _records(db)
    assert all(len(rec[1][1]) == runner.COLD_REPEAT for rec in recs), recs
    return db


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_a_cold_session_measures_every_candidate_cold_and_keeps_its_database_so(tmp_path):
    """A real session of the tiny model's first conv with the cold runner: each record holds
    COLD_REPEAT single-call measurements (a warm one holds 1), the session and the database
    say cold, a warm session on it is refused, and a session after it goes on cold."""
    from converters.tvm import runner

    root = tmp_path / "tuning"
    common = _session_args(root)
    db = _first_session(root, "cold")
    meta = json.loads((db / "tuning.json").read_text(encoding="utf-8"))
    assert meta["runner_caches"] == "cold" and meta["sessions"][-1]["runner_caches"] == "cold"

    n = len(_records(db))
    r = _cli(*common, "--trials", "8", "--runner-caches", "warm")
    assert r.returncode != 0 and "cold caches" in r.stderr, r.stderr[-2000:]
    assert len(_records(db)) == n                       # refused before measuring anything

    # more trials without the option go on cold
    r = _cli(*common, "--trials", "8")
    assert r.returncode == 0, r.stderr[-3000:]
    recs = [rec for rec in _records(db) if rec[1][1] and max(rec[1][1]) < 1e9]
    assert len(recs) > 4 and all(len(rec[1][1]) == runner.COLD_REPEAT for rec in recs)
