"""How the tuner's runner finds a candidate's weights (``--runner-caches warm|cold|streamed``):
the choice per database, the evaluator it makes, the streamed runner's argument copies, and
real tuning sessions measured cold and streamed."""
from __future__ import annotations

import json

import numpy as np
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


def test_streamed_copies_span_twice_the_last_level_cache():
    from converters.tvm import runner

    mib = 1 << 20
    assert runner.stream_copies(int(2.4 * mib), 32 * mib) == 27     # ResNet-152's 3x3 conv
    assert runner.stream_copies(64 * mib, 32 * mib) == 1     # one copy evicts itself
    assert runner.stream_copies(100 * mib, 32 * mib) == 1
    assert runner.stream_copies(16 << 10, 32 * mib) == runner.STREAM_MAX_COPIES
    assert runner.stream_copies(0, 32 * mib) == runner.STREAM_MAX_COPIES
    llc = runner.last_level_cache_bytes()
    assert llc >= 1 << 20, llc     # every CPU this runs on has a MiB of cache or more


def test_the_streamed_runner_times_each_call_on_its_own_copy_of_the_weights(tmp_path):
    """A real conv built and exported as the builder exports a candidate, its arguments
    allocated by ``alloc_streamed`` and timed by ``run_streamed``: one data tensor shared by
    every set, distinct copies of everything else, and one timing per call."""
    from tvm import relax
    from tvm.s_tir import meta_schedule as ms

    from converters.tvm import runner
    from converters.tvm.tuning import TuneConfig

    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType((1, 8, 8, 16), "float32"))
    w = relax.Var("w", relax.TensorType((16, 3, 3, 16), "float32"))
    with bb.function("main", [x, w]):
        y = bb.emit(relax.op.nn.conv2d(x, w, padding=1, data_layout="NHWC",
                                       kernel_layout="OHWI"))
        bb.emit_func_output(y)
    mod = relax.transform.LegalizeOps()(bb.get())
    prim = next(f for gv, f in mod.functions_items() if gv.name_hint != "main")
    lib = tvm.compile(tvm.IRModule({"main": prim.with_attr("global_symbol", "main")}),
                      target="llvm")
    so = tmp_path / "conv.so"
    lib.export_library(str(so))
    rt_mod = tvm.runtime.load_module(str(so))

    args_info = tuple(a.as_json() for a in ms.arg_info.ArgInfo.from_prim_func(prim))
    sets = runner.alloc_streamed(tvm.cpu(), args_info, 1)
    per_copy = (16 * 3 * 3 * 16 + 1 * 8 * 8 * 16) * 4           # weight and output
    assert len(sets) == runner.stream_copies(per_copy, runner.last_level_cache_bytes())
    assert len(sets) == runner.STREAM_MAX_COPIES                 # 46 KB a copy
    assert all(len(s) == 3 and s[0] is sets[0][0] for s in sets)           # one data
    assert len({id(t) for s in sets for t in s[1:]}) == 2 * len(sets)       # the rest: copies
    assert not np.array_equal(sets[0][1].numpy(), sets[1][1].numpy())      # filled apart

    cfg = runner.evaluator_config(TuneConfig(runner_caches="streamed"))
    assert (cfg.number, cfg.repeat, cfg.min_repeat_ms) == (1, runner.COLD_REPEAT, 0)
    assert cfg.enable_cpu_cache_flush is False
    untouched = sets[runner.COLD_REPEAT][2].numpy().copy()
    costs = runner.run_streamed(rt_mod, tvm.cpu(), cfg, sets)
    assert len(costs) == runner.COLD_REPEAT and all(0 < c < 1 for c in costs), costs
    # the calls went to the sets in allocation order, one each, after the untimed one on the
    # last set: those outputs are their own set's conv of the shared data, the next set's
    # output is as it was allocated
    data = sets[0][0].numpy()
    for s in [*sets[:runner.COLD_REPEAT], sets[-1]]:
        np.testing.assert_allclose(s[2].numpy(), _conv_nhwc(data, s[1].numpy()),
                                   rtol=1e-4, atol=1e-4)
    np.testing.assert_array_equal(sets[runner.COLD_REPEAT][2].numpy(), untouched)


def _conv_nhwc(x, w):
    """3x3, padding 1, NHWC data, OHWI weight, in numpy."""
    xp = np.pad(x, ((0, 0), (1, 1), (1, 1), (0, 0)))
    out = np.zeros(x.shape[:3] + (w.shape[0],), np.float32)
    for i in range(3):
        for j in range(3):
            out += np.einsum("nhwc,oc->nhwo", xp[:, i:i + x.shape[1], j:j + x.shape[2]],
                             w[:, i, j, :])
    return out


def test_the_streamed_runner_is_refused_over_rpc():
    from converters.tvm import runner
    from converters.tvm.errors import TvmError
    from converters.tvm.tuning import TuneConfig

    with pytest.raises(TvmError, match="over RPC use --runner-caches cold"):
        runner.make_runner(TuneConfig(runner_caches="streamed", rpc_tracker="127.0.0.1:9190",
                                      rpc_key="orin"))


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_a_streamed_session_times_every_candidate_streamed(tmp_path):
    """A real session of the tiny model's first conv with the streamed runner: every record
    holds COLD_REPEAT single-call measurements, and the database says streamed."""
    db = _first_session(tmp_path / "tuning", "streamed")
    meta = json.loads((db / "tuning.json").read_text(encoding="utf-8"))
    assert meta["runner_caches"] == "streamed", meta


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
    say cold, a warm session on it is refused, and --rerank re-measures cold."""
    from converters.tvm import runner, targets

    root = tmp_path / "tuning"
    common = _session_args(root)
    db = _first_session(root, "cold")
    meta = json.loads((db / "tuning.json").read_text(encoding="utf-8"))
    assert meta["runner_caches"] == "cold" and meta["sessions"][-1]["runner_caches"] == "cold"

    n = len(_records(db))
    r = _cli(*common, "--trials", "8", "--runner-caches", "warm")
    assert r.returncode != 0 and "cold caches" in r.stderr, r.stderr[-2000:]
    assert len(_records(db)) == n                       # refused before measuring anything

    # more trials without the option go on cold, and the re-rank measures as they were
    r = _cli(*common, "--trials", "8", "--rerank", "2")
    assert r.returncode == 0, r.stderr[-3000:]
    recs = [rec for rec in _records(db) if rec[1][1] and max(rec[1][1]) < 1e9]
    assert len(recs) > 4 and all(len(rec[1][1]) == runner.COLD_REPEAT for rec in recs)
    rerank = json.loads((db / "reranked" / "rerank.json").read_text(encoding="utf-8"))
    assert rerank["runner_caches"] == "cold" and rerank["tasks"] == 1, rerank

    # A re-rank alone (no session before it to set TVM_NUM_THREADS) measures on every core
    # too (TVM alone would take half the vCPUs), here warm, as asked
    r = _cli(*common, "--trials", "0", "--rerank", "2", "--runner-caches", "warm",
             env={"TVM_NUM_THREADS": ""})
    assert r.returncode == 0, r.stderr[-3000:]
    rerank = json.loads((db / "reranked" / "rerank.json").read_text(encoding="utf-8"))
    assert rerank["runner_caches"] == "warm", rerank
    assert rerank["measure_threads"] == targets.threads_for(targets.resolve_target("host")[0])
