"""TVM tuning: a real tuning session of the tiny model (interrupted, resumed, applied),
cost-model transfer, design spaces, RPC on loopback, the runner's argument allocation.
"""
from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

tvm = pytest.importorskip("tvm", reason="apache-tvm not installed (pip install 'edgebench[tvm]')")

from tvmlib import (MODEL, REPO, SIZE, SIZE_ARG, TOL, _cli, _db_dir,  # noqa: E402 - after the skip
                    _records, _spec, _torch_logits)

# Every test here builds or tunes a real model (15-90 s each on 2 cores).
pytestmark = [pytest.mark.timeout(600), pytest.mark.slow]


@pytest.fixture(scope="module")
def tuned_dir(tmp_path_factory):
    """A tuning database made by the CLI: started, stopped with SIGINT once records exist,
    then resumed to its budget. Shared by the tests that need a tuned database."""
    root = tmp_path_factory.mktemp("tuning")
    args = ["--model", MODEL, "--input-size", SIZE_ARG, "--weights", "random",
            "--tuning-dir", str(root), "--trials", "12", "--trials-per-iter", "4",
            "--population", "64", "--no-progress"]
    e = dict(os.environ, PYTHONPATH=str(REPO), PYTHONUNBUFFERED="1")
    proc = subprocess.Popen([sys.executable, "-m", "edgebench.tune", *args], cwd=REPO, env=e,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 300
    recs_at_kill = 0
    try:
        while time.time() < deadline and proc.poll() is None:
            dbs = list(root.glob(f"llvm-*/{MODEL}-{SIZE_ARG}"))
            if dbs and len(_records(dbs[0])) >= 4:
                recs_at_kill = len(_records(dbs[0]))
                proc.send_signal(signal.SIGINT)
                break
            time.sleep(0.5)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    return {"root": root, "args": args, "rc_first": proc.returncode, "err_first": err,
            "out_first": out, "recs_at_kill": recs_at_kill}


def test_channels_last_kernels_tile_at_the_vector_width(tmp_path):
    """In NHWC a conv's output channels are what it vectorises over: the design space fixes
    that axis's innermost tile at the widest vector that divides it (16 floats for 48
    channels on AVX-512, 8 for 24, AVX2's 8 for 48) and leaves every other task, and NCHW,
    to MetaSchedule's default space."""
    import torch
    from tvm.s_tir import meta_schedule as ms

    from converters.tvm import importer, passes
    from converters.tvm.cpu import design_space

    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Conv2d(8, 48, 1), torch.nn.ReLU(),
        torch.nn.Conv2d(48, 48, 3, padding=1, groups=48), torch.nn.ReLU(),
        torch.nn.Conv2d(48, 24, 1), torch.nn.ReLU(),
        torch.nn.Conv2d(24, 6, 1)).eval()
    avx512 = tvm.target.Target({"kind": "llvm", "mcpu": "skylake-avx512", "num-cores": 2})
    avx2 = tvm.target.Target({"kind": "llvm", "mcpu": "haswell", "num-cores": 2})
    mod, _, _ = importer.import_model(model, (1, 8, 10, 10))

    def conv_tasks(target, layout):
        tasks = passes.extract_tasks(passes.lower_for_tuning(mod, target, layout), target)
        convs = {t.task_name.split("_")[1]: t.dispatched[0] for t in tasks
                 if "conv2d" in t.task_name}
        assert len(convs) == 4, [t.task_name for t in tasks]
        return convs

    convs = conv_tasks(avx512, "NHWC")
    # conv2d: 8->48, conv2d1: depthwise 48, conv2d2: 48->24, conv2d3: 24->6
    got = {k: design_space.vector_bits(f, avx512) for k, f in convs.items()}
    assert got == {"conv2d": 512, "conv2d1": 512, "conv2d2": 256, "conv2d3": None}, got
    got = {k: design_space.vector_bits(f, avx2) for k, f in conv_tasks(avx2, "NHWC").items()}
    assert got == {"conv2d": 256, "conv2d1": 256, "conv2d2": 256, "conv2d3": None}, got
    assert all(design_space.space_for(f, avx512, "NCHW") == "post-order-apply"
               for f in conv_tasks(avx512, "NCHW").values())
    assert design_space.space_for(convs["conv2d3"], avx512, "NHWC") == "post-order-apply"
    # What a tuning session gets (and records in tuning.json), and the switch that turns it off.
    from converters.tvm import tuning

    tasks = passes.extract_tasks(passes.lower_for_tuning(mod, avx512, "NHWC"), avx512)
    n = len(tasks)
    for choice, want in (("auto", {"wide-vector": 3, "default": n - 3}),
                         ("default", {"default": n})):
        cfg = tuning.TuneConfig(design_space=choice)
        ctxs, weights, spaces = tuning._tune_contexts(tasks, tmp_path, avx512, "NHWC", cfg)
        assert len(ctxs) == len(weights) == n and spaces == want, spaces
    with pytest.raises(ValueError, match="design_space must be one of"):
        tuning._tune_contexts(tasks, tmp_path, avx512, "NHWC",
                              tuning.TuneConfig(design_space="wide"))
    # multi-vector: on AVX2 a pair of 8-float vectors divides 48 channels, not 24; on AVX-512
    # a pair of 16 divides none of them. The depthwise conv (48 channels) reduces over its
    # window only, so it keeps one vector.
    tasks2 = passes.extract_tasks(passes.lower_for_tuning(mod, avx2, "NHWC"), avx2)
    cfg = tuning.TuneConfig(design_space="multi-vector")
    _, _, spaces = tuning._tune_contexts(tasks2, tmp_path, avx2, "NHWC", cfg)
    assert spaces == {"multi-vector": 1, "wide-vector": 2, "default": len(tasks2) - 3}, spaces
    _, _, spaces = tuning._tune_contexts(tasks, tmp_path, avx512, "NHWC", cfg)
    assert spaces == {"wide-vector": 3, "default": n - 3}, spaces
    assert design_space.session_space("multi-vector", avx2, "NHWC") == "multi-vector"
    assert design_space.session_space("multi-vector", avx2, "NCHW") == "default"
    from converters.tvm import database

    meta = {"layout": "NHWC", "sessions": [{"design_space": {"wide-vector": 3}},
                                           {"design_space": {"multi-vector": 2}}]}
    assert database._profile_of(meta) == ("NHWC", "multi-vector")   # transfer keeps them apart

    def fixed_splits(func, target=avx512, choice="auto"):
        """The constant factors of the Split instructions in each of the design space's
        sketches."""
        space = design_space.space_for(func, target, "NHWC", choice)
        ctx = ms.TuneContext(mod=func, target=target, space_generator=space, task_name="t")
        return [{int(f) for inst in sch.trace.insts if inst.kind.name == "Split"
                 for f in inst.inputs[1:] if isinstance(f, tvm.tirx.IntImm)}
                for sch in ctx.generate_design_space()]

    assert {16} in fixed_splits(convs["conv2d"])    # 48 channels: one 16-float vector
    assert {8} in fixed_splits(convs["conv2d2"])    # 24 channels: 8 floats
    assert not any(fixed_splits(convs["conv2d3"]))  # default space: sampled tiles only
    # the union: the one-vector sketches and as many split at a pair of vectors
    avx2_convs = conv_tasks(avx2, "NHWC")
    got = fixed_splits(avx2_convs["conv2d"], avx2, "multi-vector")
    assert got.count({8}) == got.count({16}) >= 1 and len(got) == 2 * got.count({8}), got
    for one in ("conv2d1", "conv2d2"):          # depthwise; 24 channels
        assert all(s == {8} for s in fixed_splits(avx2_convs[one], avx2, "multi-vector"))


# ----------------------------------------------------------------------------- tuning


def test_tune_interrupt_resume_and_tuned_rebuild(tuned_dir, tmp_path):
    import converters

    root, args = tuned_dir["root"], tuned_dir["args"]
    # 1. SIGINT after the first records: exit 130, the records are kept.
    assert tuned_dir["recs_at_kill"] >= 4, tuned_dir["err_first"][-2000:]
    assert tuned_dir["rc_first"] == 130, tuned_dir["err_first"][-2000:]
    db = _db_dir(root)
    kept = len(_records(db))
    assert kept >= tuned_dir["recs_at_kill"]
    meta = json.loads((db / "tuning.json").read_text(encoding="utf-8"))
    assert meta["sessions"][-1]["interrupted"] is True
    assert meta["sessions"][-1]["trials_after"] == kept
    assert meta["sessions"][-1]["measure_threads"] >= 1
    assert meta["sessions"][-1]["population"] == 64          # the fixture's --population
    # the allocation's parameters (--trials-per-iter 4; the cap: the default rule, at least 4)
    assert meta["sessions"][-1]["trials_per_iter"] == 4
    assert meta["sessions"][-1]["max_trials_per_task"] >= 4
    assert meta["sessions"][-1]["allocation"] == {"rule": "uniform"}      # the default
    # The measured batches (at most 4 candidates each; a data-movement task's space can hold
    # fewer), the last one ending at the session's last trial.
    ends = meta["sessions"][-1]["phases"]["batch_ends"]
    steps = [b - a for a, b in zip([0, *ends], ends)]
    assert ends and all(1 <= n <= 4 for n in steps), steps
    assert ends[-1] == meta["sessions"][-1]["trials_run"]
    # Where the session's time went: every phase ran, and they fit in the session's time.
    from converters.tvm.scheduler import PHASES

    phases = meta["sessions"][-1]["phases"]
    assert phases["candidates"] == meta["sessions"][-1]["trials_run"] > 0, phases
    assert all(phases[k] > 0 for k in PHASES), phases
    assert sum(phases[k] for k in PHASES) <= meta["sessions"][-1]["tuning_s"] + 0.1, phases
    assert set(phases["per_candidate_ms"]) == {k[:-2] for k in PHASES}

    # 2. Resume: the same command counts the records toward --trials and runs the rest.
    # A second model's database for the same target (here a copy) pre-trains the cost model.
    sibling = db.parent / "sibling_model-3x64x64"
    shutil.copytree(db, sibling, ignore=shutil.ignore_patterns("logs"))
    r = _cli(*args, "--transfer", "--summary", str(tmp_path / "s.json"))
    assert r.returncode == 0, r.stderr[-3000:]
    s = json.loads((tmp_path / "s.json").read_text(encoding="utf-8"))["tuning"]
    assert s["transfer_from"] == [str(sibling)]
    assert s["population"] == 64
    assert "pre-trained on 1 other database(s) (sibling_model-3x64x64)" in r.stderr
    transfer = json.loads((db / "tuning.json").read_text(encoding="utf-8"))["sessions"][-1]["cost_model_transfer"]
    measured = [r for r in _records(sibling) if r[1][1] and max(r[1][1]) < 1e9]
    assert transfer["records"] == len(measured) > 0 and transfer["workloads"] >= 1, transfer
    assert s["trials_before"] == kept
    assert s["trials_run"] == 12 - kept        # to the budget, not past it
    assert s["trials_after"] == len(_records(db)) == 12
    assert s["errors"] < s["trials_run"], s["first_error"]
    assert len(json.loads((db / "tuning.json").read_text(encoding="utf-8"))["sessions"]) == 2
    # 3. Budget already met: nothing runs, exit 0.
    r = _cli(*args, "--summary", str(tmp_path / "s2.json"))
    assert r.returncode == 0, r.stderr[-3000:]
    assert json.loads((tmp_path / "s2.json").read_text(encoding="utf-8"))["tuning"]["trials_run"] == 0

    # 4. The converter applies the database and says so.
    conv = converters.get("tvm")
    spec = _spec({"tuning_dir": str(root)})
    art = conv.convert(spec, tmp_path / "cache")
    t = art.meta["tuning"]
    assert t["status"] == "tuned", t
    assert t["trials"] == len(_records(db))
    assert t["tuning_s"] and t["tuning_s"] > 0
    # Tuned in the CPU default, NHWC: 22 kernels, the first conv reading the NCHW input
    # itself (no transpose kernel: input_transpose "conv" on a new database). A new
    # database takes GEMV spatial means; this model's only mean (its global pool, 2x2) is
    # under SPATIAL_MEAN_MIN_PIXELS and stays a reduction.
    assert art.meta["layout"] == "NHWC" and meta["layout"] == "NHWC"
    assert art.meta["spatial_mean"] == "matmul" and meta["spatial_mean"] == "matmul"
    assert art.meta["concat"] == "split" and meta["concat"] == "split"   # a no-op here
    assert art.meta["input_transpose"] == "conv" and meta["input_transpose"] == "conv"
    assert 0 < t["tasks_tuned"] <= t["tasks_total"] == 22
    assert Path(t["database"]) == db
    assert t["design_space"] == "wide-vector"       # the convs tile channels at the vector
    assert t["transfer_from"] == [str(sibling)]     # the artifact says what its tuning drew on
    x = np.random.RandomState(3).standard_normal((1, *SIZE)).astype(np.float32)
    pred = conv.load(art, spec)
    assert np.abs(pred(x) - _torch_logits(spec, x)).max() <= TOL
    # Parity and accuracy run where the kernels are tuned (batch 1), not the profile's 8.
    from converters.tvm import database
    from edgebench import measure

    assert database.tuned_batch_sizes(db) == pred.tuned_batch_sizes == t["batch_sizes"] == [1]
    assert measure.pass_batch(pred, 8) == 1
    # The throughput search and MultiStream keep to the tuned size too: no untuned batch 2 is
    # compiled (the artifact cache would hold its library).
    from edgebench.mlperf.task import _batch
    from testlib import FakeData, null_monitor

    prof = {"throughput": {"max_batch": 16, "warmup": 1, "min_iters": 3, "min_s": 0.05,
                           "budget_s": 30.0, "min_gain": 1.03}}
    libs = sorted(lib.name for lib in (tmp_path / "cache").rglob("*.so"))
    status, f, _ = measure.throughput(pred, FakeData(n=4, hw=SIZE[1]), prof, null_monitor())
    assert status == "ok" and [r["batch_size"] for r in f["by_batch"]] == [1]
    assert "variant is tuned for (1) reached" in f["stop_reason"]
    assert sorted(pred.libs) == [1]
    assert sorted(lib.name for lib in (tmp_path / "cache").rglob("*.so")) == libs
    assert _batch("multistream", pred, {"accuracy_batch": 8}, {}, {})[0] == 1
    # An untuned build of the same model is a different cache entry, its passes any size.
    art0 = conv.convert(_spec({"tuning_dir": str(tmp_path / "none")}), tmp_path / "cache")
    assert art0.path != art.path and art0.meta["tuning"]["status"] == "untuned"
    assert database.tuned_batch_sizes(tmp_path / "none") == []
    pred0 = conv.load(art0, _spec({"tuning_dir": str(tmp_path / "none")}))
    assert pred0.tuned_batch_sizes is None and measure.pass_batch(pred0, 8) == 8
    # An artifact exported from this database at 1 and 2 holds batch 2 untuned: what runs
    # from it keeps to batch 1 too (the manifest says which libraries are tuned).
    r = _cli(*args, "--export", str(tmp_path / "art"), "--batch-sizes", "1,2")
    assert r.returncode == 0, r.stderr[-3000:]
    spec_a = _spec({"tvm_artifact": str(tmp_path / "art")})
    art_a = conv.convert(spec_a, tmp_path / "cache-a")
    assert art_a.meta["tuned_batch_sizes"] == [1]
    pred_a = conv.load(art_a, spec_a)
    assert pred_a.batch_sizes == [1, 2] and pred_a.tuned_batch_sizes == [1]
    assert measure.fit_batch(pred_a, 8) == 2 and measure.pass_batch(pred_a, 8) == 1
    assert np.abs(pred_a(x) - _torch_logits(spec, x)).max() <= TOL
    status, f, _ = measure.throughput(pred_a, FakeData(n=4, hw=SIZE[1]), prof, null_monitor())
    assert status == "ok" and [b["batch_size"] for b in f["by_batch"]] == [1]
    assert "variant is tuned for (1) reached" in f["stop_reason"]
    assert _batch("multistream", pred_a, {"accuracy_batch": 8}, {}, {})[0] == 1


def test_shared_kernels_reuse_another_models_records(tuned_dir, tmp_path):
    """A model whose kernels another model's database (same target) already tuned starts
    from that database's best records: copied in, counted toward --trials (so no search runs
    here), said in tuning.json, the summary and the built artifact's record."""
    import converters
    from converters.tvm import database, transfer

    src = _db_dir(tuned_dir["root"])
    root = tmp_path / "tuning"
    sibling = root / src.parent.name / "other_model-3x64x64"
    # its tuning.json too: it says the database was tuned in this session's layout and space
    shutil.copytree(src, sibling, ignore=shutil.ignore_patterns("logs"))
    assert database.database_profile(sibling) == ("NHWC", "wide-vector")
    hashes, recs = database._records_by_workload(sibling)
    valid = {hashes[i]: sum(r < 1e9 for r in v) for i, v in recs.items()}
    expect = sum(min(transfer.REUSE_TOP_K, n) for n in valid.values())
    assert expect > 0
    args = ["--model", MODEL, "--input-size", SIZE_ARG, "--weights", "random",
            "--tuning-dir", str(root), "--trials", "1", "--no-progress"]
    r = _cli(*args, "--summary", str(tmp_path / "s.json"))
    assert r.returncode == 0, r.stderr[-3000:]
    s = json.loads((tmp_path / "s.json").read_text(encoding="utf-8"))["tuning"]
    reused = s["reused_records"]
    assert reused["records"] == expect and reused["tasks"] == sum(n > 0 for n in valid.values())
    assert reused["databases"] == [{"database": str(sibling), "records": expect,
                                    "tasks": reused["tasks"], "not_replayable": 0}]
    assert reused["not_replayable"] == 0       # the same block names: every copy replays
    assert reused["skipped"] == []
    assert s["trials_before"] == expect and s["trials_run"] == 0    # the budget is met
    assert f"reused: {expect} records of {reused['tasks']} task(s)" in r.stderr
    mine = root / src.parent.name / f"{MODEL}-{SIZE_ARG}"
    assert len(_records(mine)) == expect
    session = json.loads((mine / "tuning.json").read_text(encoding="utf-8"))["sessions"][-1]
    assert session["reused_records"] == reused and session["trials_run"] == 0
    # Again: nothing more to copy (the database has those workloads now).
    r = _cli(*args, "--summary", str(tmp_path / "s2.json"))
    assert r.returncode == 0, r.stderr[-3000:]
    assert json.loads((tmp_path / "s2.json").read_text(encoding="utf-8"))[
        "tuning"]["reused_records"]["records"] == 0
    assert len(_records(mine)) == expect
    # The build applies them and its record names where they came from.
    art = converters.get("tvm").convert(_spec({"tuning_dir": str(root)}), tmp_path / "cache")
    t = art.meta["tuning"]
    assert t["status"] == "tuned" and t["reused_from"] == [str(sibling)], t
    assert t["trials"] == expect and t["transfer_from"] == []
    # --no-reuse: nothing copied into a fresh tuning dir (--trials 0: no search either).
    other = tmp_path / "no-reuse"
    shutil.copytree(root / src.parent.name / "other_model-3x64x64",
                    other / src.parent.name / "other_model-3x64x64")
    r = _cli(*[a if a != str(root) else str(other) for a in args], "--no-reuse",
             "--summary", str(tmp_path / "s3.json"))
    assert r.returncode == 0, r.stderr[-3000:]
    s3 = json.loads((tmp_path / "s3.json").read_text(encoding="utf-8"))["tuning"]
    assert s3["reused_records"]["records"] == 0
    # A sibling tuned in another layout or design space (here: one without a tuning.json,
    # which reads as NCHW in the default space) lends nothing; the session names it.
    third = tmp_path / "other-space"
    foreign = third / src.parent.name / "other_model-3x64x64"
    shutil.copytree(sibling, foreign, ignore=shutil.ignore_patterns("logs", "tuning.json"))
    r = _cli(*[a if a != str(root) else str(third) for a in args],
             "--summary", str(tmp_path / "s4.json"))
    assert r.returncode == 0, r.stderr[-3000:]
    s4 = json.loads((tmp_path / "s4.json").read_text(encoding="utf-8"))["tuning"]
    assert s4["reused_records"]["records"] == 0 and s4["trials_run"] == 1
    assert s4["reused_records"]["skipped"] == [{
        "database": str(foreign), "layout": "NCHW", "design_space": "default",
        "tasks": reused["tasks"]}]
    assert "reuse: 1 database(s) left out, tuned in another layout or design space" in r.stderr


def test_measured_allocation_halves_the_first_round_then_caps_by_measured_time(tmp_path):
    """--allocation measured: the first round gives each task half a batch (2 of 4), so the
    gradient rule gets the rest of the budget, in full batches, with caps re-made from the
    measured time. Two tasks of the tiny model (a conv and a max pool), 8 trials."""
    import math

    root = tmp_path / "tuning"
    tasks = ["fused_conv2d1_add_relu1", "max_pool2d1"]
    r = _cli("--model", MODEL, "--input-size", SIZE_ARG, "--weights", "random",
             "--tuning-dir", str(root), "--trials", "8", "--trials-per-iter", "4",
             "--population", "64", "--allocation", "measured", "--only-tasks", *tasks,
             "--no-progress")
    assert r.returncode == 0, r.stderr[-3000:]
    db = _db_dir(root)
    session = json.loads((db / "tuning.json").read_text(encoding="utf-8"))["sessions"][-1]
    alloc = session["allocation"]
    assert alloc["rule"] == "measured" and alloc["first_round_batch"] == 2, alloc
    assert alloc["later_batch"] == 4 and alloc["caps_from_measured_time"] is True
    # The first round: at most 2 records per task (fewer where a task's space ran out), every
    # task in it; uniform would have given the first task 4 in a row.
    wl = [rec[0] for rec in _records(db)]
    first, later = wl[:alloc["after_trials"]], wl[alloc["after_trials"]:]
    assert 2 <= len(first) <= 4 and sorted(set(first)) == [0, 1], wl
    assert all(first.count(w) <= 2 for w in set(first)), wl
    # Afterwards a full batch of 4 (the budget left is 4 or more): one batch, as the
    # session's batch_ends count them; two batches of 2 would mean the strategies were not
    # re-armed.
    assert len(later) >= 4 and later[:4] == [later[0]] * 4, wl
    done = session["phases"]["batch_ends"]
    sizes = [b - a for a, b in zip([0] + done, done)]
    k = done.index(alloc["after_trials"]) + 1
    assert all(b <= 2 for b in sizes[:k]) and sizes[k] == 4, sizes
    # Caps: the even cap (4 x ceil(8 / 2) = 16) or the task's share of the measured time.
    shares = alloc["largest_measured_shares"]
    assert len(shares) == 2 and math.isclose(sum(t["share"] for t in shares), 1, abs_tol=2e-4)
    assert all(t["cap"] == max(16, math.ceil(8 * t["share"])) for t in shares), shares
    # NHWC on a CPU: the max pool's candidates come from the hand-written sketch
    # (pool_schedule): the window loops put outside the channels, vectorised; no tiles to
    # sample and no rfactor, which MetaSchedule's generic rules give a pool
    assert session["pool_schedule"] == "channels-last"
    kinds = [{inst[0] for inst in rec[1][0][0]} for rec in _records(db)]
    sketched = [k for k in kinds if {"Reorder", "Vectorize", "ComputeInline"} <= k
                and not k & {"SamplePerfectTile", "RFactor", "SampleComputeLocation"}]
    assert sketched and all(k & {"SamplePerfectTile"} for k in kinds if k not in sketched)


def test_the_last_batch_stops_at_the_budget(tmp_path):
    """--trials is a ceiling: a budget that is not a whole number of batches ends on a short
    batch (one task, batches of 4, 6 trials: 4 then 2), not a whole one past it (VGG16 ran
    531 of 512 on 2026-12-02). Resumed with a larger budget, it runs exactly the rest."""
    root = tmp_path / "tuning"
    base = ["--model", MODEL, "--input-size", SIZE_ARG, "--weights", "random",
            "--tuning-dir", str(root), "--trials-per-iter", "4", "--population", "64",
            "--only-tasks", "fused_conv2d1_add_relu1", "--no-progress"]
    for trials, before, run in ((6, 0, 6), (9, 6, 3)):
        r = _cli(*base, "--trials", str(trials), "--summary", str(tmp_path / "s.json"))
        assert r.returncode == 0, r.stderr[-3000:]
        s = json.loads((tmp_path / "s.json").read_text(encoding="utf-8"))["tuning"]
        assert (s["trials_before"], s["trials_run"], s["trials_after"]) == (before, run, trials), s
        assert len(_records(_db_dir(root))) == trials
    sizes = json.loads((_db_dir(root) / "tuning.json").read_text(
        encoding="utf-8"))["sessions"][0]["phases"]["batch_ends"]
    assert sizes == [4, 6], sizes


def test_cost_model_transfer_trains_before_the_first_search(tuned_dir, tmp_path):
    """Another database's measurements give the cost model a trained booster before any of
    this model's candidates is measured: its predictions stop being random draws."""
    from tvm.s_tir import meta_schedule as ms

    from converters.tvm import database, intrinsics, targets, transfer

    db = _db_dir(tuned_dir["root"])
    target, _ = targets.resolve_target("host")
    # Found as a sibling of this model's database; this model's own is never a source.
    other = tmp_path / db.parent.name / "other_model-3x64x64"
    shutil.copytree(db, other, ignore=shutil.ignore_patterns("logs"))
    mine = other.parent / f"{MODEL}-{SIZE_ARG}"
    assert transfer.transfer_databases(mine) == [other]
    assert transfer.transfer_databases(mine, auto=False) == []
    assert transfer.transfer_databases(tmp_path / "t" / db.parent.name / "m",
                                     extra=[tmp_path], auto=False) == [other]
    assert transfer.transfer_databases(other) == []
    # The siblings are drawn on by default only in the multi-vector space, where it helped.
    assert transfer.auto_transfer(None, "multi-vector") is True
    assert transfer.auto_transfer(None, "wide-vector") is False
    assert transfer.auto_transfer(None, "default") is False
    assert transfer.auto_transfer(False, "multi-vector") is False
    assert transfer.auto_transfer(True, "wide-vector") is True
    from converters.tvm.cli import build_parser                # unset, --transfer, --no-
    assert [build_parser().parse_args(["--model", "m", *a]).transfer
            for a in ([], ["--transfer"], ["--no-transfer"])] == [None, True, False]
    (tmp_path / "t").mkdir()
    with pytest.raises(ValueError, match="holds no tuning database"):
        transfer.transfer_databases(mine, extra=[tmp_path / "t"])
    # Only databases tuned like this session teach its cost model.
    assert database.database_profile(other) == ("NHWC", "wide-vector")
    assert database.database_profile(tmp_path / "t") == ("NCHW", "default")   # before records
    assert transfer.split_by_profile([other], ("NHWC", "wide-vector")) == ([other], [])
    assert transfer.split_by_profile([other], ("NCHW", "default")) == (
        [], [{"database": str(other), "layout": "NHWC", "design_space": "wide-vector"}])

    recs = ms.database.JSONDatabase(work_dir=str(db)).get_all_tuning_records()
    intrinsics.register_for(target)
    ctx = ms.TuneContext(mod=recs[0].workload.mod, target=target, task_name="t")
    first = database.task_hash(recs[0].workload.mod)
    cands = [r.as_measure_candidate() for r in recs
             if database.task_hash(r.workload.mod) == first]
    model = ms.cost_model.XGBModel(extractor=ms.feature_extractor.PerStoreFeature(),
                                   num_warmup_samples=4, adaptive_training=True)
    before = model.predict(ctx, cands), model.predict(ctx, cands)
    assert not np.allclose(*before)        # untrained: uniform random scores
    info = transfer.transfer_cost_model(model, target, [other])
    measured = [r for r in recs if r.run_secs and max(float(x) for x in r.run_secs) < 1e9]
    assert info["records"] == len(measured) > 0
    assert info["databases"][0]["records"] == len(measured)
    assert model.booster is not None
    after = model.predict(ctx, cands), model.predict(ctx, cands)
    np.testing.assert_allclose(*after)     # trained: the same candidates, the same scores


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def rpc_tracker():
    pytest.importorskip("tornado", reason="the RPC tracker needs tornado (pip install tornado)")
    port = _free_port()
    env = dict(os.environ, PYTHONPATH=str(REPO))
    # Own process groups: the tracker and server run their work in popen_worker children,
    # which must go too.
    procs = [subprocess.Popen([sys.executable, "-m", "tvm.exec.rpc_tracker", "--host",
                               "127.0.0.1", "--port", str(port), "--port-end",
                               str(port + 1), "--silent"], env=env, cwd=REPO,
                              start_new_session=True)]
    try:
        from tvm import rpc

        deadline = time.time() + 60
        while True:
            try:
                rpc.connect_tracker("127.0.0.1", port).summary()
                break
            except Exception:  # noqa: BLE001
                if time.time() > deadline:
                    raise
                time.sleep(0.5)
        sport = _free_port()
        procs.append(subprocess.Popen(
            [sys.executable, "-m", "tvm.exec.rpc_server", "--host", "127.0.0.1", "--port",
             str(sport), "--port-end", str(sport + 1), "--tracker", f"127.0.0.1:{port}",
             "--key", "eb-loopback", "--silent"], env=env, cwd=REPO, start_new_session=True))
        while True:
            keys = [i["key"] for i in rpc.connect_tracker("127.0.0.1", port)
                    .summary()["server_info"]]
            if any(k.endswith("eb-loopback") for k in keys):
                break
            if time.time() > deadline:
                raise TimeoutError(f"RPC server did not register (keys: {keys})")
            time.sleep(0.5)
        yield f"127.0.0.1:{port}"
    finally:
        for p in reversed(procs):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(p.pid, signal.SIGTERM)
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)


def test_rpc_tuning_on_loopback(rpc_tracker, tmp_path):
    root = tmp_path / "rpc"
    r = _cli("--model", MODEL, "--input-size", SIZE_ARG, "--weights", "random",
             "--tuning-dir", str(root), "--trials", "4", "--trials-per-iter", "4",
             "--population", "64", "--rpc-tracker", rpc_tracker, "--rpc-key", "eb-loopback",
             "--no-progress", "--summary", str(tmp_path / "s.json"))
    assert r.returncode == 0, r.stderr[-3000:]
    s = json.loads((tmp_path / "s.json").read_text(encoding="utf-8"))
    assert s["rpc"] == {"tracker": rpc_tracker, "key": "eb-loopback"}
    assert s["tuning"]["runner"].startswith("rpc ")
    recs = _records(_db_dir(root))
    assert len(recs) == 4
    ok = [rec for rec in recs if min(float(t) for t in rec[1][1]) < 1e9]
    assert ok, f"no candidate ran over RPC: {s['tuning']['first_error']}"
    # A key nobody registered: a clear error (exit 2), nothing tuned. No timing assertion:
    # a tool that waited for the key would hit _cli's timeout and fail the test that way.
    r = _cli("--model", MODEL, "--input-size", SIZE_ARG, "--weights", "random",
             "--tuning-dir", str(tmp_path / "rpc2"), "--trials", "4", "--rpc-tracker",
             rpc_tracker, "--rpc-key", "no-such-device", "--no-progress", timeout=120)
    assert r.returncode == 2 and "no-such-device" in r.stderr and "eb-loopback" in r.stderr
    assert not (tmp_path / "rpc2").exists()                   # checked before any database


def test_runner_gives_gather_kernels_valid_indices():
    """MetaSchedule's default argument allocation fills index tensors with random values;
    a gather (``take``, Swin-T's relative-position bias) then reads out of bounds and the
    runner process dies, so every candidate failed and those tasks stayed untuned. Ours sets
    integer arguments to 0. Both runners here are real, measuring a real built kernel."""
    from tvm import te, topi
    from tvm.s_tir import meta_schedule as ms

    from converters.tvm import runner, targets
    from converters.tvm.tuning import TuneConfig

    table = te.placeholder((169, 3), "float32", name="table")
    index = te.placeholder((2401,), "int64", name="index")
    mod = tvm.IRModule({"main": te.create_prim_func(
        [table, index, topi.take(table, index, axis=0, mode="fast")])})
    target, _ = targets.resolve_target("host")
    # The project's builder (its timeout and its light build function): MetaSchedule's
    # default LocalBuilder gives a fresh worker 30 s, and that worker's imports alone take
    # 17-25 s here, so a slow day failed this test with "LocalBuilder: Timeout".
    builder = runner.make_builder(TuneConfig(builder_workers=1))
    [built] = builder.build([ms.builder.BuilderInput(mod, target)])
    assert built.error_msg is None, built.error_msg
    args = ms.arg_info.ArgInfo.from_prim_func(mod["main"])

    def run(alloc):
        local = ms.runner.LocalRunner(timeout_sec=60, f_alloc_argument=alloc,
                                      evaluator_config=ms.runner.EvaluatorConfig(number=1))
        return local.run([ms.runner.RunnerInput(built.artifact_path, "cpu", args)])[0].result()

    default = run(None)
    assert default.error_msg and "exception" in default.error_msg      # the failure we fix
    ours = run(runner.alloc_valid_indices)
    assert ours.error_msg is None and ours.run_secs and float(ours.run_secs[0]) > 0


def test_kept_builder_pool_builds_every_batch_in_the_same_workers_then_restarts():
    """The kept builder pool: the worker that built the first batch builds the next ones (no
    second start: Python and TVM imported once), every artifact runs, and after
    RECYCLE_AFTER batches a new pool starts (TVM's LocalBuilder restarts its pool for a leak
    in long-used workers)."""
    from tvm import te
    from tvm.s_tir import meta_schedule as ms

    from converters.tvm import runner, targets
    from converters.tvm.tuning import TuneConfig

    a = te.placeholder((64, 64), "float32", name="a")
    mod = tvm.IRModule({"main": te.create_prim_func([a, te.compute((64, 64),
                                                     lambda i, j: a[i, j] * 2.0, name="b")])})
    target, _ = targets.resolve_target("host")
    builder = runner.make_builder(TuneConfig(builder_workers=1))
    builder.RECYCLE_AFTER = 2
    measure = ms.runner.LocalRunner(timeout_sec=60,
                                    evaluator_config=ms.runner.EvaluatorConfig(number=1))
    args = ms.arg_info.ArgInfo.from_prim_func(mod["main"])
    pids = []
    try:
        for _ in range(3):
            [built] = builder.build([ms.builder.BuilderInput(mod, target)])
            assert built.error_msg is None, built.error_msg
            pids.append([w._proc.pid for w in builder._pool._worker_map.values() if w._proc])
            ran = measure.run([ms.runner.RunnerInput(built.artifact_path, "cpu", args)])[0]
            assert ran.result().error_msg is None and float(ran.result().run_secs[0]) > 0
        assert pids[0] == pids[1] and len(pids[0]) == 1, pids     # the same worker, kept
        assert pids[2] != pids[0], pids                            # restarted after 2 batches
    finally:
        builder.shutdown()
        measure.pool.shutdown(wait=False)
    assert builder._pool is None
