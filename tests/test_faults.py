"""Faults injected for real into `python -m edgebench.full`: a record torn by a kill
mid-append, Ctrl-C (a real SIGINT), a second run on the same --out, a full disk (a real
tmpfs) under the records, the data cache and an artifact, and a real address-space limit
(RLIMIT_AS) in the throughput search. Each one is survived with no complete record lost.
The table of all faults and their tests: docs/reliability.md."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from edgebench import store
from testlib import REPO, TINY, assert_records_valid, records, run_cli

ARGS = ["--models", TINY, "--variants", "pytorch", "onnxruntime", "--tasks", "latency",
        "throughput", "--weights", "random"]
# Where the run need not still be going when the fault is injected, the smoke profile's
# second-long windows do: these tests are about records and exit codes, not figures.
LATENCY_ONLY = ["--models", TINY, "--variants", "pytorch", "onnxruntime", "--tasks", "latency",
                "--weights", "random", "--profile", "smoke"]
ALL = {(v, t) for v in ("pytorch", "onnxruntime") for t in ("latency", "throughput")}
# The four cells in the smoke profile: a fault injected after the first record still finds
# the run going (three cells left, a process each), and the resume's three cells take seconds
# instead of quick's windows (up to 15 s latency and 40 s throughput each).
SMOKE_ARGS = [*ARGS, "--profile", "smoke"]


def _start(out, cache_dir, args=ARGS) -> subprocess.Popen:
    """The run as a terminal starts it. A test session started as a background job (CI,
    `cmd &` in a script, nohup) has SIGINT ignored; its children inherit that through exec
    and Python leaves an ignored SIGINT ignored, so a Ctrl-C test would send a signal the run
    never sees (exit 0, every cell run). A caught signal is reset to its default at exec:
    catching SIGINT here for the moment of the spawn gives the run a terminal's SIGINT."""
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        return subprocess.Popen([sys.executable, "-m", "edgebench.full", *args, "--out",
                                 str(out), "--cache-dir", str(cache_dir)], cwd=REPO, env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    finally:
        signal.signal(signal.SIGINT, previous)


def _wait_for(out, n: int, timeout: float = 300) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline and len(records(out)) < n:
        time.sleep(0.1)
    assert len(records(out)) >= n, "the run never got that far"


@pytest.mark.slow
def test_torn_last_record_is_set_aside_and_its_cell_runs_again(tmp_path, cache_dir):
    """What a SIGKILL during the append leaves: a last line without its end. --resume keeps
    the complete lines, moves the torn one to results.jsonl.torn, warns, and runs that cell."""
    out = tmp_path / "r"
    res = run_cli("edgebench.full", *LATENCY_ONLY,
                  "--out", str(out), "--cache-dir", str(cache_dir))
    assert res.returncode == 0, res.stderr[-2000:]
    path = out / "results.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    assert len(lines) == 2
    path.write_text(lines[0] + lines[1][: len(lines[1]) // 2], encoding="utf-8")     # onnxruntime's line, torn
    res = run_cli("edgebench.full", *LATENCY_ONLY,
                  "--out", str(out), "--cache-dir", str(cache_dir), "--resume")
    assert res.returncode == 0, res.stderr[-2000:]
    assert "cut off mid-write" in res.stderr and "results.jsonl.torn" in res.stderr
    after = store.read(path)
    assert_records_valid(after)
    assert [r["variant"] for r in after] == ["pytorch", "onnxruntime"]   # the first kept, once
    assert (out / "results.jsonl.torn").read_text(encoding="utf-8") == lines[1][: len(lines[1]) // 2] + "\n"
    assert path.read_text(encoding="utf-8").endswith("\n") and len(path.read_text(encoding="utf-8").splitlines()) == 2


@pytest.mark.slow
def test_ctrl_c_stops_cleanly_reports_and_resumes(tmp_path, cache_dir):
    out = tmp_path / "r"
    proc = _start(out, cache_dir, SMOKE_ARGS)
    _wait_for(out, 1)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err[-2000:]
    assert "Traceback" not in err and "--resume" in err
    before = records(out)
    assert_records_valid(before)
    assert 1 <= len(before) < 4
    assert (out / "report.md").is_file() and (out / "summary.csv").is_file()
    res = run_cli("edgebench.full", *SMOKE_ARGS, "--out", str(out), "--cache-dir", str(cache_dir),
                  "--resume")
    assert res.returncode == 0, res.stderr[-2000:]
    after = records(out)
    assert {(r["variant"], r["task"]) for r in after if r["status"] == "ok"} == ALL
    first = {(r["variant"], r["task"]): r["started_at"] for r in before if r["status"] == "ok"}
    for key, started in first.items():                     # finished cells were not run again
        assert [r["started_at"] for r in after if (r["variant"], r["task"]) == key] == [started]


@pytest.mark.slow
def test_second_run_on_the_same_out_is_refused(tmp_path, cache_dir):
    out = tmp_path / "r"
    first = _start(out, cache_dir)
    _wait_for(out, 1)
    second = run_cli("edgebench.full", *ARGS, "--out", str(out), "--cache-dir", str(cache_dir),
                     "--resume")
    assert second.returncode == 2, second.stderr[-2000:]
    assert "in use by another edgebench run" in second.stderr and "Traceback" not in second.stderr
    _, err = first.communicate(timeout=600)
    assert first.returncode == 0, err[-2000:]
    recs = records(out)
    assert_records_valid(recs)
    assert sorted((r["variant"], r["task"]) for r in recs) == sorted(ALL)   # no interleaving


@pytest.mark.slow
def test_throughput_search_steps_down_under_a_real_memory_limit(tmp_path, cache_dir):
    """A real address-space cap (RLIMIT_AS, --cell-memory-limit) on the cell's own process,
    and a system under test that really allocates 1 GiB per sample: batch 8 cannot get its
    memory, the search steps down to 6, which fits, and stops there. No exception is faked."""
    import copy

    from edgebench import runner
    from edgebench.cell import Cell, RunSettings
    from edgebench.data import resolve_source
    from edgebench.profiles import PROFILES

    prof = copy.deepcopy(PROFILES["quick"])
    prof.update(idle_s=0.0, pass_budget_s=None)
    prof["throughput"].update(max_batch=8, warmup=0, min_iters=2, min_s=0.05, budget_s=60.0,
                              min_gain=0.0)

    def session(limit_mb, name):
        settings = RunSettings(run_id="t", profile="quick", prof=prof, cache_dir=str(cache_dir),
                               options={"torch_device": "cpu", "null_alloc_mb": 1024},
                               device={"kind": "cpu", "name": "test"},
                               env={"EDGEBENCH_VARIANT_MODULES": "tests.fake_variant"},
                               memory_limit_mb=limit_mb)
        s = runner.Session(settings, tmp_path / name, cell_timeout=120)
        s.probe(["null"], {TINY: (3, 160, 160)})
        s.prepare(TINY, resolve_source(None), "random", 0)
        return s

    with session(None, "free") as s:             # how much the cell's process maps by itself
        free = s.run(Cell(TINY, "null", "throughput"))
    assert free["status"] == "ok", free.get("reason")
    assert [r["batch_size"] for r in free["by_batch"]] == [1, 2, 4, 8]
    base = free["variant_meta"]["vmsize_mb"]
    limit = int(base + 6.5 * 1024)               # room for 6 GiB of work, not for 8
    with session(limit, "capped") as s:
        capped = s.run(Cell(TINY, "null", "throughput"))
    assert capped["status"] == "ok", capped.get("reason")
    assert capped["memory_limit_mb"] == limit
    assert [r["batch_size"] for r in capped["by_batch"]] == [1, 2, 4, 6]
    assert capped["stop_reason"].startswith("out of memory at batch 8")
    for r in (free, capped):                     # as a run stores them: raw timings aside
        store.append(tmp_path / "results.jsonl", r)
    assert_records_valid(tmp_path / "results.jsonl")

    with session(64, "too-small") as s:          # a cap below what the process already maps
        low = s.run(Cell(TINY, "null", "throughput"))
    assert low["status"] == "failed" and low["reason"].startswith("out of memory")
    assert "--cell-memory-limit 64 MiB" in low["reason"]


def fill(disk) -> Path:
    """Fill the filesystem at ``disk`` to the last byte with a file; returns the file."""
    filler = disk / "filler"
    with open(filler, "wb") as f:
        try:
            while True:
                f.write(b"\0" * 65536)
                f.flush()
        except OSError:
            pass
    return filler


@pytest.mark.slow
def test_disk_full_while_appending_records(tmp_path, cache_dir, small_disk):
    """The run's disk fills up after the first record: the next append fails whole (no torn
    line), the run stops with exit 74 and a one-line message, the records already written stay
    valid, and after freeing space --resume finishes the run without redoing them."""
    out = small_disk("8m") / "r"
    proc = _start(out, cache_dir, SMOKE_ARGS)
    _wait_for(out, 1)
    filler = fill(out.parent)
    _, err = proc.communicate(timeout=300)
    before = records(out)
    assert proc.returncode == 74, err[-2000:]
    assert "No space left on device" in err and "--resume" in err and "Traceback" not in err
    assert (out / "results.jsonl").read_text(encoding="utf-8").endswith("\n")
    assert_records_valid(before)
    assert 1 <= len(before) < 4
    filler.unlink()
    res = run_cli("edgebench.full", *SMOKE_ARGS, "--out", str(out), "--cache-dir", str(cache_dir),
                  "--resume")
    assert res.returncode == 0, res.stderr[-2000:]
    after = records(out)
    assert_records_valid(after)
    assert {(r["variant"], r["task"]) for r in after if r["status"] == "ok"} == ALL
    for r in before:                                 # written before the disk filled: kept as is
        assert r in after


@pytest.mark.slow
def test_disk_full_in_the_data_cache(tmp_path, small_disk):
    """No room for the preprocessed images: exit 74 with one line naming the file, nothing
    half-written is taken for a cache entry by the next run (on a disk with room)."""
    cache = small_disk("1m")
    out = tmp_path / "r"
    res = run_cli("edgebench.full", *LATENCY_ONLY, "--out", str(out), "--cache-dir", str(cache))
    assert res.returncode == 74, res.stderr[-2000:]
    assert "No space left on device" in res.stderr and "Traceback" not in res.stderr
    assert records(out) == []


@pytest.mark.slow
def test_disk_full_while_writing_an_artifact(tmp_path, small_disk):
    """The cache's disk has room for the data but not for the ONNX export: the cell fails with
    the disk's own message and the run goes on (exit 1, records valid). Once space is free the
    export is made again from scratch: no half-written file is taken for a cached one."""
    cache = small_disk("24m")
    lat = ["--models", TINY, "--tasks", "latency", "--weights", "random", "--cache-dir", str(cache),
           "--profile", "smoke"]
    res = run_cli("edgebench.full", *lat, "--variants", "pytorch", "--out", str(tmp_path / "a"))
    assert res.returncode == 0, res.stderr[-2000:]            # the data cache is on the disk now
    free = os.statvfs(cache).f_bavail * os.statvfs(cache).f_frsize
    filler = cache / "filler"
    with open(filler, "wb") as f:                              # leave 128 KiB: less than the export
        f.truncate(0)
        os.posix_fallocate(f.fileno(), 0, free - (128 << 10))
    res = run_cli("edgebench.full", *lat, "--variants", "onnxruntime", "pytorch",
                  "--out", str(tmp_path / "b"))
    assert res.returncode == 1, res.stderr[-2000:]
    recs = {r["variant"]: r for r in assert_records_valid(tmp_path / "b" / "results.jsonl")}
    assert recs["onnxruntime"]["status"] == "failed", recs["onnxruntime"]
    assert "No space left on device" in recs["onnxruntime"]["reason"]
    assert recs["pytorch"]["status"] == "ok"                   # the run went on
    filler.unlink()
    res = run_cli("edgebench.full", *lat, "--variants", "pytorch", "onnxruntime", "--tasks",
                  "parity", "--out", str(tmp_path / "c"))
    assert res.returncode == 0, res.stderr[-2000:]
    recs = {r["variant"]: r for r in records(tmp_path / "c")}
    assert recs["onnxruntime"]["status"] == "ok" and recs["onnxruntime"]["artifact_cached"] is False
