"""The run folder of ``edgebench.full``: made (with its logs/ and the cache folder) and held
for the run (``.lock``), and where the invocation's wall time went (``time_budget``)."""
from __future__ import annotations

import datetime as dt
import os
from pathlib import Path

from .errors import UsageError, make_out_dir
from .util import REPO_ROOT


def time_budget(total_s: float, records: list[dict], session_timings: dict,
                report_s: float) -> dict:
    """Where this invocation's wall time went (a resumed run counts its own cells only)."""
    def total(key: str) -> float:
        return sum(r.get(key) or 0.0 for r in records)

    parts = {
        "measure_s": total("measure_s"),                          # the tasks' measuring
        "convert_s": total("convert_s") + total("load_s"),        # convert/compile + load
        "process_s": total("process_s") + session_timings.get("fork_server_s", 0.0),
        "prepare_s": session_timings.get("prepare_s", 0.0),       # weights + data
        "probe_s": session_timings.get("probe_s", 0.0),
        "report_s": report_s,
    }
    # In the cells but none of the above: model build for the reference, idle baselines,
    # cold start, telemetry start and stop.
    parts["cell_other_s"] = total("wall_s") - parts["measure_s"] - parts["convert_s"]
    parts["other_s"] = total_s - sum(parts.values())   # main process: imports, plan, run.json
    out = {"total_s": total_s, **parts}
    # Each task's cells, process start included: what a task such as layers adds to a run.
    by_task: dict = {}
    for r in records:
        by_task[r["task"]] = by_task.get(r["task"], 0.0) + (r.get("wall_s") or 0.0) \
            + (r.get("process_s") or 0.0)
    return ({k: round(v, 1) for k, v in out.items()} | {"cells_run": len(records)}
            | {"tasks_s": {k: round(v, 1) for k, v in by_task.items()}})


def lock(out: Path):
    """Hold ``out/.lock`` for the run: a second run on the same folder stops with a message
    instead of interleaving its records with this one's. The kernel drops the lock when this
    process ends, however it ends."""
    import fcntl

    f = open(out / ".lock", "a+", encoding="utf-8")
    try:
        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        f.seek(0)
        who = f.read().strip() or "another process"
        f.close()
        raise UsageError(f"--out {out} is in use by another edgebench run ({who}); wait for it "
                         "or choose another folder") from None
    f.truncate(0)
    f.write(f"pid {os.getpid()}\n")
    f.flush()
    return f


def make(args) -> Path:
    out = Path(args.out or REPO_ROOT / "results" / f"run-{dt.datetime.now(dt.timezone.utc):%Y%m%dT%H%M%SZ}")
    make_out_dir("--out", out)
    make_out_dir("--out", out / "logs")
    make_out_dir("--cache-dir", args.cache_dir)
    return out
