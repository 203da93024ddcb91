"""Faults injected for real into `python -m edgebench.full`: a record torn by a kill
mid-append, Ctrl-C (a real SIGINT), and a second run on the same --out. Each one is
survived with no complete record lost."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from edgebench import store
from testlib import REPO, TINY, assert_records_valid, records, run_cli

ARGS = ["--models", TINY, "--variants", "pytorch", "onnxruntime", "--tasks", "latency",
        "throughput", "--weights", "random"]
LATENCY_ONLY = ["--models", TINY, "--variants", "pytorch", "onnxruntime", "--tasks", "latency",
                "--weights", "random"]
ALL = {(v, t) for v in ("pytorch", "onnxruntime") for t in ("latency", "throughput")}


def _start(out, cache_dir) -> subprocess.Popen:
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    return subprocess.Popen([sys.executable, "-m", "edgebench.full", *ARGS, "--out", str(out),
                             "--cache-dir", str(cache_dir)], cwd=REPO, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


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
    lines = path.read_text().splitlines(keepends=True)
    assert len(lines) == 2
    path.write_text(lines[0] + lines[1][: len(lines[1]) // 2])     # onnxruntime's line, torn
    res = run_cli("edgebench.full", *LATENCY_ONLY,
                  "--out", str(out), "--cache-dir", str(cache_dir), "--resume")
    assert res.returncode == 0, res.stderr[-2000:]
    assert "cut off mid-write" in res.stderr and "results.jsonl.torn" in res.stderr
    after = store.read(path)
    assert_records_valid(after)
    assert [r["variant"] for r in after] == ["pytorch", "onnxruntime"]   # the first kept, once
    assert (out / "results.jsonl.torn").read_text() == lines[1][: len(lines[1]) // 2] + "\n"
    assert path.read_text().endswith("\n") and len(path.read_text().splitlines()) == 2


@pytest.mark.slow
def test_ctrl_c_stops_cleanly_reports_and_resumes(tmp_path, cache_dir):
    out = tmp_path / "r"
    proc = _start(out, cache_dir)
    _wait_for(out, 1)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err[-2000:]
    assert "Traceback" not in err and "--resume" in err
    before = records(out)
    assert_records_valid(before)
    assert 1 <= len(before) < 4
    assert (out / "report.md").is_file() and (out / "summary.csv").is_file()
    res = run_cli("edgebench.full", *ARGS, "--out", str(out), "--cache-dir", str(cache_dir),
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
