"""runner.Session with a null variant (tests/fake_variant.py) and the bundled sample: the
worker is a function of the cell (the parity verdict and the reference sweep are passed in),
plan-decided skips start no process, and each cell's process is its own in both isolation
modes. Real worker processes, real records; small windows keep it fast."""
from __future__ import annotations

import copy

import pytest

from edgebench import runner, store
from edgebench.cell import Cell, RunSettings
from edgebench.data import resolve_source
from edgebench.profiles import PROFILES
from testlib import TINY, assert_records_valid

FAST = copy.deepcopy(PROFILES["quick"])
FAST.update(idle_s=0.0, pass_budget_s=None, cell_timeout=120)
FAST["latency"].update(warmup=1, min_count=5, min_s=0.05, max_s=5.0)
FAST["throughput"].update(max_batch=4, warmup=0, min_iters=2, min_s=0.05, budget_s=10.0)


def _session(tmp_path, cache_dir, isolation="fork", **options) -> runner.Session:
    settings = RunSettings(run_id="t", profile="quick", prof=FAST, cache_dir=str(cache_dir),
                           options={"torch_device": "cpu", **options}, device={"kind": "cpu", "name": "test"},
                           env={"EDGEBENCH_VARIANT_MODULES": "tests.fake_variant"})
    s = runner.Session(settings, tmp_path / "logs", cell_timeout=120, isolation=isolation)
    s.probe(["pytorch", "null"], {TINY: (3, 160, 160)})
    s.prepare(TINY, resolve_source(None), "random", 0)
    return s


@pytest.mark.slow
def test_parity_verdict_and_reference_sweep_reach_later_cells(tmp_path, cache_dir):
    with _session(tmp_path, cache_dir) as s:
        recs = [s.run(Cell(TINY, v, t)) for v, t in
                [("pytorch", "throughput"), ("null", "parity"), ("null", "latency"),
                 ("null", "throughput")]]
    ref_tp, parity, lat, tp = recs
    (tmp_path / "store").mkdir()
    for r in recs:                           # as a run stores them: raw timings to the sidecar
        store.append(tmp_path / "store" / "results.jsonl", r)
    assert_records_valid(tmp_path / "store" / "results.jsonl")
    assert ref_tp["status"] == "ok" and ref_tp["equivalent"] is True
    assert parity["status"] == "failed" and parity["top1_agreement"] < 1.0
    # the runner passed the verdict in; the worker read no results file (there is none)
    assert not (tmp_path / "results.jsonl").exists()
    assert lat["equivalent"] is False and lat["equivalence"] == parity["criterion"]
    assert tp["equivalent"] is False
    assert [r["batch_size"] for r in tp["by_batch"]] == [1, 2, 4]
    # BSR from the reference sweep, at every batch size both measured
    ref_sizes = {r["batch_size"] for r in ref_tp["by_batch"]}
    assert ref_sizes & {1, 2}
    assert all((r["bsr"] is not None) == (r["batch_size"] in ref_sizes) for r in tp["by_batch"])


@pytest.mark.slow  # 9.5 s on the 2-core AVX2 VM (2026-11-26)
def test_unchecked_parity_is_said_and_records_get_raw_timings(tmp_path, cache_dir):
    with _session(tmp_path, cache_dir) as s:
        lat = s.run(Cell(TINY, "null", "latency"))
    assert lat["equivalent"] is None and lat["equivalence"] == "parity not run"
    out = tmp_path / "r"
    out.mkdir()
    store.append(out / "results.jsonl", lat)
    raw = store.read_raw(out, store.read(out / "results.jsonl")[0])
    assert raw["model"] == TINY and len(raw["latency_ms"]) == lat["n"] >= 5


@pytest.mark.slow  # 6.5 s on the 2-core AVX2 VM (2026-11-26)
def test_plan_decided_skips_start_no_worker(tmp_path, cache_dir):
    with _session(tmp_path, cache_dir, null_refuse=[TINY]) as s:
        rec = s.run(Cell(TINY, "null", "latency"))
        assert rec["status"] == "skipped" and rec["reason"] == f"null refuses {TINY}"
    assert not (tmp_path / "logs" / f"{TINY}__null__latency.log").exists()
    with _session(tmp_path / "b", cache_dir, null_unavailable="no null here") as s:
        rec = s.run(Cell(TINY, "null", "parity"))
    assert rec["status"] == "skipped" and rec["reason"] == "no null here"


@pytest.mark.slow
@pytest.mark.parametrize("isolation", ["fork", "spawn"])
def test_each_cell_has_its_own_process(tmp_path, cache_dir, isolation):
    """A cell that leaks 300 MB leaves nothing behind: the next cell's baseline is as low
    as the first one's, in both isolation modes."""
    with _session(tmp_path, cache_dir, isolation, null_leak_mb=300) as s:
        first = s.run(Cell(TINY, "null", "latency"))
        second = s.run(Cell(TINY, "null", "latency"))
    for r in (first, second):
        assert r["status"] == "ok", r["reason"]
        assert r["memory_mb"]["peak"] - r["memory_mb"]["process_start"] >= 250   # it leaked
    assert second["memory_mb"]["process_start"] < first["memory_mb"]["process_start"] + 100


@pytest.mark.slow  # 10.3 s on the 2-core AVX2 VM (2026-11-26)
def test_oom_step_down_in_a_real_worker(tmp_path, cache_dir):
    with _session(tmp_path, cache_dir, null_oom_above=3) as s:
        rec = s.run(Cell(TINY, "null", "throughput"))
    assert rec["status"] == "ok"
    assert [r["batch_size"] for r in rec["by_batch"]] == [1, 2, 3]
    assert rec["stop_reason"].startswith("out of memory at batch 4")


@pytest.mark.slow  # fork: 10.4 s on the 2-core AVX2 VM (2026-11-26); spawn slower
@pytest.mark.parametrize("isolation", ["fork", "spawn"])
def test_throughput_cell_killed_after_two_batch_sizes_leaves_a_partial_record(
        tmp_path, cache_dir, isolation):
    """A real SIGKILL (what the Linux OOM killer sends; on a Jetson's unified memory the
    usual end of a max-batch search) at batch 4: the record keeps batch sizes 1 and 2."""
    with _session(tmp_path, cache_dir, isolation, null_kill_at_batch=4) as s:
        rec = s.run(Cell(TINY, "null", "throughput"))
    assert rec["status"] == "partial", rec["reason"]
    assert [r["batch_size"] for r in rec["by_batch"]] == [1, 2]
    assert "SIGKILL" in rec["reason"] and "OOM killer" in rec["reason"]
    assert "after batch sizes 1, 2 were measured" in rec["reason"]
    assert rec["best_batch"] in (1, 2) and rec["samples_per_s"] == max(
        r["samples_per_s"] for r in rec["by_batch"])
    assert rec["stop_reason"] == "the search had not ended after batch 2"
    assert rec["memory_mb"]["peak"] > 0 and rec["memory_mb"]["system"]["peak"] > 0
    (tmp_path / "store").mkdir()
    store.append(tmp_path / "store" / "results.jsonl", rec)    # raw timings to the sidecar
    assert_records_valid(tmp_path / "store" / "results.jsonl")
    raw = store.read_raw(tmp_path / "store", store.read(tmp_path / "store" / "results.jsonl")[0])
    assert sorted(raw["by_batch_ms"]) == ["1", "2"]
    assert runner.exit_code([rec], {("", TINY, "null", "throughput")}) == 0


def test_status_rules():
    recs = [{"model": "m", "variant": "v", "task": t, "status": s}
            for t, s in (("latency", "failed"), ("latency", "ok"), ("parity", "timeout"),
                         ("accuracy", "skipped"))]
    assert runner.done_keys(recs) == {("", "m", "v", "latency", "")}
    assert runner.exit_code(recs, {("", "m", "v", "latency", "")}) == 0
    assert runner.exit_code(recs, {("", "m", "v", "parity", "")}) == 1
    assert runner.exit_code(recs, {("", "m", "v", "throughput", "")}) == 0   # not run yet


@pytest.mark.slow  # 12.2 s on the 2-core AVX2 VM (2026-11-26)
def test_a_dead_fork_server_is_replaced(tmp_path, cache_dir):
    """The fork server killed between cells (as the OOM killer might): the next cell still
    runs, in a new server, and nothing raises."""
    import sys

    with _session(tmp_path, cache_dir) as s:
        assert s.run(Cell(TINY, "null", "latency"))["status"] == "ok"
        first = s._servers[sys.executable]
        first.proc.kill()
        first.proc.wait()
        assert s.run(Cell(TINY, "null", "latency"))["status"] == "ok"
        assert s._servers[sys.executable] is not first and s._servers[sys.executable].alive()


_FORK_FROM_RUNNER = r"""
import json, os, sys, time
from pathlib import Path
from edgebench import process
log = Path(sys.argv[1])
process.note_imports_only()                     # as the CLI does before its checks
r, w = os.pipe()                                # a descriptor the runner holds open
server = process.ForkServer(sys.executable, log)
fds = sorted(int(fd) for fd in os.listdir(f"/proc/{server.proc.pid}/fd"))
first = (server.forked, fds, server.alive())
server.close()                                  # stdin closed: it must end by itself
rc = server.proc.returncode
plain = process.ForkServer(sys.executable, log)  # OpenBLAS ended its pool at the fork: fewer
plain.close()                                   # threads than noted, still forkable
with_env = process.ForkServer(sys.executable, log, {"EDGEBENCH_TEST_RUN_ENV": "1"})
with_env.close()                                # a run's env: read at import, so spawned
import torch                                    # a computation starts OpenMP's threads
torch.set_num_threads(2)
(torch.ones(512, 512) @ torch.ones(512, 512)).sum().item()
again = process.ForkServer(sys.executable, log)
print(json.dumps({"first": first, "rc": rc, "forked_again": again.forked,
                  "forked_second": plain.forked, "forked_with_env": with_env.forked}))
again.close()
"""


@pytest.mark.slow   # a spawned server: 3-8 s
def test_the_fork_server_is_forked_from_a_runner_that_has_computed_nothing(tmp_path):
    """A runner that has only imported (the CLI, before any model runs) forks its fork server
    rather than spawning one: the server holds none of the runner's descriptors (only its
    pipes and log as 0-2) and ends when its stdin closes. Given a run's env (read by the
    imports it would inherit), or once the runner has computed (a model checked, data
    prepared: OpenMP's threads, which a child of it would hang on), the server is spawned."""
    import json
    import subprocess
    import sys

    from edgebench.util import REPO_ROOT

    log = tmp_path / "forkserver.log"
    out = subprocess.run([sys.executable, "-c", _FORK_FROM_RUNNER, str(log)], cwd=REPO_ROOT,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    forked, fds, alive = got["first"]
    assert forked and alive, got
    assert fds == [0, 1, 2], fds                   # not the runner's pipe, not its own ends
    assert got["rc"] == 0, got                     # ended on EOF, not killed after the wait
    assert got["forked_again"] is False, got
    assert got["forked_second"] is True, got
    assert got["forked_with_env"] is False, got    # the run's env must reach its imports
    lines = log.read_text(encoding="utf-8").splitlines()
    assert lines[0].startswith("edgebench.forkserver: forked from the runner"), lines
    assert lines[1].startswith("edgebench.forkserver: forked from the runner"), lines
    assert any(ln.startswith("edgebench.forkserver: spawned") for ln in lines[1:]), lines


def test_a_probe_that_crashes_in_the_fork_server_is_spawned_again_variant_by_variant(
        tmp_path, cache_dir, monkeypatch):
    """The probe runs forked from the fork server; a real SIGSEGV there (one variant's
    import) is not the answer: the probe is spawned, and a crash again is probed variant by
    variant, so the other variant still runs."""
    monkeypatch.setenv("EDGEBENCH_TEST_CRASH", "probe/null-preloading")
    settings = RunSettings(run_id="t", profile="quick", prof=FAST, cache_dir=str(cache_dir),
                           options={"torch_device": "cpu"}, device={"kind": "cpu", "name": "t"},
                           env={"EDGEBENCH_VARIANT_MODULES": "tests.fake_variant"})
    with runner.Session(settings, tmp_path / "logs", cell_timeout=120) as s:
        probes = s.probe(["null", "null-preloading"], {TINY: (3, 160, 160)})
        assert probes["null"]["ok"], probes["null"]
        bad = probes["null-preloading"]
        assert not bad["ok"] and bad["crashed"] and "availability probe exit code -11" in \
            bad["reason"], bad
        logs = sorted(p.name for p in (tmp_path / "logs").iterdir())
        assert "probe__null-preloading.log" in logs and "forkserver.log" in logs, logs


@pytest.mark.slow   # 5-13 s; the fork server's family keeps test_a_dead_fork_server_is_replaced fast
def test_a_fork_server_that_dies_during_a_cell_is_said_not_a_timeout(tmp_path, cache_dir):
    """The fork server killed while a cell runs (the OOM killer may pick it): that cell's
    record says the server died. It read as a ``timeout`` ("cell exceeded --cell-timeout"),
    since the end of the server's pipe was taken for the deadline. The next cell runs in a
    new server."""
    import sys
    import threading
    import time

    # 500 ms a call: the latency cell (6 calls at least) is still measuring at the kill
    with _session(tmp_path, cache_dir, null_sleep_ms=500) as s:
        s.cell_timeout = 120
        assert s.run(Cell(TINY, "null", "accuracy"))["status"] == "ok"   # the server is up
        server = s._servers[sys.executable]
        log = tmp_path / "logs" / f"{Cell(TINY, 'null', 'latency').slug()}.log"
        recs = []
        t = threading.Thread(target=lambda: recs.append(s.run(Cell(TINY, "null", "latency"))))
        t.start()
        deadline = time.time() + 60          # the cell is running once its log exists
        while not log.exists():
            assert time.time() < deadline, "the cell did not start"
            time.sleep(0.05)
        time.sleep(0.5)
        server.proc.kill()
        t.join(60)
        assert not t.is_alive(), "the runner waited on a dead server"
        (rec,) = recs
        assert rec["status"] == "failed", rec
        assert rec["reason"].startswith("the fork server ended while this cell ran"), rec["reason"]
        assert rec["wall_s"] < 60
        assert s.run(Cell(TINY, "null", "accuracy"))["status"] == "ok"
        assert s._servers[sys.executable] is not server


@pytest.mark.slow   # 5-13 s; the fork server's family keeps test_a_dead_fork_server_is_replaced fast
def test_a_dead_fork_server_branch_is_replaced(tmp_path, cache_dir):
    """A variant's branch of the fork server killed between cells: the next cell of that
    variant still runs (spawned, then a new server), and nothing raises."""
    import sys
    import time

    import psutil

    with _session(tmp_path, cache_dir) as s:
        assert s.run(Cell(TINY, "null", "latency"))["status"] == "ok"
        first = s._servers[sys.executable]
        # the server's branches: the probe's, then the variant's (the newest)
        branch = max(psutil.Process(first.proc.pid).children(), key=lambda p: p.create_time())
        branch.kill()
        deadline = time.time() + 10         # not our child: poll until it is gone (a zombie)
        while branch.is_running() and branch.status() != psutil.STATUS_ZOMBIE:
            assert time.time() < deadline, "the branch outlived SIGKILL"
            time.sleep(0.05)
        assert s.run(Cell(TINY, "null", "latency"))["status"] == "ok"
        assert s.run(Cell(TINY, "null", "latency"))["status"] == "ok"
        assert s._servers[sys.executable] is not first and s._servers[sys.executable].alive()


@pytest.mark.slow   # 5-13 s; the fork server's family keeps test_a_dead_fork_server_is_replaced fast
def test_a_cell_maps_only_its_own_variants_preloaded_modules(tmp_path, cache_dir):
    """The fork server imports what every cell needs; a variant's own modules are imported by
    its branch of the server, so another variant's cells never map them (JAX's and
    inductor's added 45 MB to every PyTorch cell's resident memory)."""
    import sys

    with _session(tmp_path, cache_dir) as s:
        recs = [s.run(Cell(TINY, v, "latency")) for v in ("null-preloading", "null",
                                                          "null-preloading", "null")]
        preloaded = s._servers[sys.executable].preloaded
    assert [r["status"] for r in recs] == ["ok"] * 4, [r.get("reason") for r in recs]
    assert [r["variant_meta"]["preloaded_marker"] for r in recs] == [True, False, True, False]
    assert "timm" in preloaded and "tests.fake_preloaded" not in preloaded


@pytest.mark.slow   # 5-13 s; the fork server's family keeps test_a_dead_fork_server_is_replaced fast
def test_cells_forked_from_one_server_get_layouts_of_their_own(tmp_path, cache_dir):
    """Two cells of one fork server place the same allocation at different addresses, as two
    new interpreters would (ASLR): a layout that happens to be slow is not shared by a run."""
    with _session(tmp_path, cache_dir) as s:
        a, b = (s.run(Cell(TINY, "null", "latency")) for _ in range(2))
    assert a["status"] == b["status"] == "ok"
    assert a["variant_meta"]["buffer_address"] != b["variant_meta"]["buffer_address"]


def _compile_session(tmp_path, cache_dir) -> runner.Session:
    s = _session(tmp_path, cache_dir)
    s.probe(["pytorch", "pytorch-compile", "null"], {TINY: (3, 160, 160)})
    s.cell_timeout = 600        # the first cell compiles every graph, cold on a fresh cache
    return s


def test_a_model_branch_warms_only_the_batch_shapes_the_run_calls():
    """quick: accuracy batch 8, throughput cap 16; 20 parity images leave a remainder of 4."""
    from edgebench.model_branch import warm_batch_sizes

    prof = PROFILES["quick"]
    assert warm_batch_sizes(prof, 20) == [1, 8, 4, 2, 16]           # no tasks given: all
    assert warm_batch_sizes(prof, 20, ("parity",)) == [8, 4]
    assert warm_batch_sizes(prof, 8, ("parity", "accuracy")) == [8]
    assert warm_batch_sizes(prof, 20, ("latency", "singlestream")) == [1]
    assert warm_batch_sizes(prof, 20, ("latency", "throughput")) == [1, 2, 4, 8, 16]
    assert warm_batch_sizes(prof, 20, ("convert",)) == []
    # a predictor whose passes run at batch 1 (a TVM build tuned there): batch 8 not compiled
    assert warm_batch_sizes(prof, 20, ("parity", "latency"), lambda b: 1) == [1]
    assert warm_batch_sizes(prof, 20, ("parity",), lambda b: 4) == [4]


TASKS = ("parity", "accuracy", "latency", "throughput")


@pytest.mark.slow
def test_torch_compile_compiles_once_per_model_and_run(tmp_path, cache_dir):
    """torch.compile (JIT) on the CPU: the fork server's model branch compiles the model for
    every batch shape its cells use, once; the first cell counts that compile, the other
    cells are forked from the compiled branch and compile no graph themselves. Parity still
    holds, and every cell's memory baseline is the branch's from before the model was built."""
    with _compile_session(tmp_path, cache_dir) as s:
        recs = [s.run(Cell(TINY, "pytorch-compile", t)) for t in TASKS]
    assert [r["status"] for r in recs] == ["ok"] * 4, [r.get("reason") for r in recs]
    first, *rest = recs
    compiled = [r["variant_meta"]["compiled_in"] for r in recs]
    assert [c["this_cell_compiled"] for c in compiled] == [True, False, False, False]
    assert len({c["pid"] for c in compiled}) == 1              # one branch served them all
    assert compiled[0]["graphs_compiled"] >= 2                 # batch 1, then a dynamic batch
    assert compiled[0]["warm_batch_sizes"][0] == 1 and 4 in compiled[0]["warm_batch_sizes"]
    assert first["convert_s"] > 0 and first["variant_meta"]["compile_s"] > 0
    for r in rest:
        assert r["convert_s"] == 0.0 and r["artifact_cached"] is True and r["load_s"] == 0.0
    # the real claim: no cell after the first traced or compiled anything
    assert [r["variant_meta"]["graphs_compiled_in_cell"] for r in rest] == [0, 0, 0]
    assert first["max_abs_diff"] <= 1e-3 and first["top1_agreement"] == 1.0
    assert [b["batch_size"] for b in recs[3]["by_batch"]] == [1, 2, 4]
    assert len({r["memory_mb"]["baseline"] for r in recs}) == 1
    assert all(r["memory_mb"]["peak"] > r["memory_mb"]["baseline"] for r in recs)


@pytest.mark.slow
def test_a_crash_in_the_compiling_cell_leaves_its_branch_to_the_others(tmp_path, cache_dir,
                                                                       monkeypatch):
    """The first cell of a model branch runs in the branch's process group: its hard crash
    (SIGSEGV) is that cell's failure; the branch lives on and serves the other cells."""
    monkeypatch.setenv("EDGEBENCH_TEST_CRASH", f"{TINY}/pytorch-compile/parity")
    with _compile_session(tmp_path, cache_dir) as s:
        recs = [s.run(Cell(TINY, "pytorch-compile", t)) for t in ("parity", "latency")]
    assert recs[0]["status"] == "failed" and "SIGSEGV" in recs[0]["reason"]
    assert recs[1]["status"] == "ok"
    assert recs[1]["variant_meta"]["compiled_in"]["this_cell_compiled"] is False
    assert recs[1]["variant_meta"]["graphs_compiled_in_cell"] == 0


@pytest.mark.slow
def test_a_dead_model_branch_is_replaced(tmp_path, cache_dir):
    """A model branch killed between its cells (say by the OOM killer): the next cell of the
    model gets a new branch, which compiles again and counts it; nothing raises."""
    import psutil

    with _compile_session(tmp_path, cache_dir) as s:
        a = s.run(Cell(TINY, "pytorch-compile", "latency"))
        pid = a["variant_meta"]["compiled_in"]["pid"]
        psutil.Process(pid).kill()
        b = s.run(Cell(TINY, "pytorch-compile", "throughput"))
    assert a["status"] == b["status"] == "ok", b.get("reason")
    assert b["variant_meta"]["compiled_in"]["this_cell_compiled"] is True
    assert b["variant_meta"]["compiled_in"]["pid"] != pid


@pytest.mark.slow
def test_a_timeout_of_the_compiling_cell_ends_its_branch(tmp_path, cache_dir):
    """The first cell's timeout kills its process group, which is the model branch's: the
    cell is a timeout, no process is left behind, and the next cell starts a new branch."""
    import psutil

    with _compile_session(tmp_path, cache_dir) as s:
        s.cell_timeout = 0.5                 # inside the compile
        a = s.run(Cell(TINY, "pytorch-compile", "parity"))
        server = s._servers[__import__("sys").executable]
        left = [p for p in psutil.Process(server.proc.pid).children(recursive=True)
                if p.status() != psutil.STATUS_ZOMBIE]
        s.cell_timeout = 600
        b = s.run(Cell(TINY, "pytorch-compile", "latency"))
    assert a["status"] == "timeout"
    assert len(left) == 2        # the probe's branch and the variant's; its model branch is gone
    assert b["status"] == "ok" and b["variant_meta"]["compiled_in"]["this_cell_compiled"]
