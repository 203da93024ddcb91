"""Tuning databases: where they live, their fingerprint (part of every cache key), what they
hold for a model's tasks, and ``tuning.json`` (the sessions beside MetaSchedule's database).

    <tuning_dir>/<target-slug>/<model>-CxHxW/database_workload.json
                                            /database_tuning_record.json
                                            /tuning.json
"""
from __future__ import annotations

import json
from pathlib import Path

from edgebench.util import atomic_write_json, sha256_file

from . import targets

DB_WORKLOAD = "database_workload.json"
DB_RECORDS = "database_tuning_record.json"
DB_META = "tuning.json"


def db_dir_for(tuning_dir, target, model: str, input_size) -> Path:
    from edgebench.models import slug   # a zoo name is its own; a path or factory is made safe

    c, h, w = input_size
    return Path(tuning_dir) / targets.target_slug(target) / f"{slug(model)}-{c}x{h}x{w}"


def database_exists(db_dir) -> bool:
    p = Path(db_dir)
    return (p / DB_WORKLOAD).is_file() and (p / DB_RECORDS).is_file() \
        and (p / DB_RECORDS).stat().st_size > 0


def database_fingerprint(db_dir) -> str:
    """Content hash of the records file ('none' without one): part of every cache key."""
    if not database_exists(db_dir):
        return "none"
    return sha256_file(Path(db_dir) / DB_RECORDS)[:16]


def read_db_meta(db_dir) -> dict:
    p = Path(db_dir) / DB_META
    if p.is_file():
        try:
            return json.loads(p.read_text(encoding="utf-8"))
        except json.JSONDecodeError:
            return {}
    return {}


def workload_hashes(db_dir) -> list[str]:
    """The structural hashes of the workloads a database holds (its workload file's order)."""
    p = Path(db_dir) / DB_WORKLOAD
    if not p.is_file():
        return []
    return [str(json.loads(line)[0])
            for line in p.read_text(encoding="utf-8").splitlines() if line.strip()]


def _records_by_workload(db_dir) -> tuple[list[str], dict[int, list[float]]]:
    """(workload structural hashes by line, {workload index: [median run seconds, ...]})."""
    p = Path(db_dir)
    hashes = workload_hashes(p)
    recs: dict[int, list[float]] = {}
    if (p / DB_RECORDS).is_file():
        with open(p / DB_RECORDS, encoding="utf-8") as f:
            for line in f:
                if not line.strip():
                    continue
                try:
                    idx, rec = json.loads(line)
                except (json.JSONDecodeError, ValueError):
                    continue  # a torn last line after a kill: ignored, as MetaSchedule does
                secs = rec[1] if len(rec) > 1 and rec[1] else [1e10]
                secs = sorted(float(s) for s in secs)
                recs.setdefault(int(idx), []).append(secs[len(secs) // 2])
    return hashes, recs


def task_hash(task_mod) -> str:
    """The structural hash MetaSchedule's JSON database files a workload under."""
    import tvm_ffi

    return str(tvm_ffi.structural_hash(task_mod))


def kernel_workloads(lowered_mod, tasks) -> dict:
    """{kernel name: task} for every PrimFunc of ``lowered_mod`` whose workload is one of
    ``tasks`` (several kernels can share a task), wrapped as ``extract_tasks`` files it."""
    import tvm
    from tvm import tirx

    by_hash = {task_hash(t.dispatched[0]): t for t in tasks}
    out = {}
    for gv, f in lowered_mod.functions.items():
        if isinstance(f, tirx.PrimFunc):
            h = task_hash(tvm.IRModule({"main": f.with_attr("global_symbol", "main")}))
            if h in by_hash:
                out[gv.name_hint] = by_hash[h]
    return out


def _runs_by_hash(db_dir) -> dict[str, list[float]]:
    hashes, recs = _records_by_workload(db_dir)
    by_hash: dict[str, list[float]] = {}
    for i, hsh in enumerate(hashes):
        by_hash.setdefault(hsh, []).extend(recs.get(i, []))
    return by_hash


def measured_workloads(db_dir) -> set[str]:
    """The structural hashes of the workloads with at least one valid measurement (a failed
    candidate is filed at 1e10 s)."""
    return {h for h, runs in _runs_by_hash(db_dir).items() if any(r < 1e9 for r in runs)}


def tuning_summary(db_dir, tasks, target=None) -> dict:
    """What the database holds for these tasks: trial count, tasks with a record, and the
    tuner's own latency estimate (sum over tasks of weight x best measured run)."""
    by_hash = _runs_by_hash(db_dir) if db_dir else {}
    trials = tuned = 0
    est = 0.0
    est_complete = True
    per_task = []
    for t in tasks:
        hsh = task_hash(t.dispatched[0])
        runs = by_hash.get(hsh, [])
        ok = [r for r in runs if r < 1e9]
        trials += len(runs)
        if ok:
            tuned += 1
            est += t.weight * min(ok)
        else:
            est_complete = False
        row = {"name": t.task_name, "weight": int(t.weight), "trials": len(runs),
               "best_us": round(min(ok) * 1e6, 2) if ok else None}
        per_task.append(row)
    return {"trials": trials, "tasks_total": len(tasks), "tasks_tuned": tuned,
            "estimate_ms": round(est * 1e3, 4) if est_complete and tasks else None,
            "per_task": per_task}


def database_profile(db_dir) -> tuple[str, str]:
    """(layout, design space) a database was tuned in, from its ``tuning.json``: before
    layouts were recorded NCHW, before design spaces were recorded "default"."""
    return _profile_of(read_db_meta(db_dir) if db_dir else {})


def _profile_of(meta: dict) -> tuple[str, str]:
    spaces = [s.get("design_space") or {} for s in meta.get("sessions", [])]
    space = ("multi-vector" if any(s.get("multi-vector") for s in spaces) else
             "wide-vector" if any(s.get("wide-vector") for s in spaces) else "default")
    return str(meta.get("layout") or "NCHW").upper(), space


def tuning_meta(db_dir, summary: dict) -> dict:
    """The ``tuning`` block every record carries."""
    meta = read_db_meta(db_dir) if db_dir else {}
    status = "tuned" if summary.get("tasks_tuned") else "untuned"
    tuning_s = meta.get("tuning_s") if status == "tuned" else None
    return {"status": status, "trials": int(summary.get("trials", 0)) if status == "tuned" else 0,
            "tuning_s": round(tuning_s, 1) if isinstance(tuning_s, (int, float)) else None,
            "database": str(db_dir) if db_dir else None,
            "tasks_tuned": summary.get("tasks_tuned", 0),
            "tasks_total": summary.get("tasks_total", 0),
            "tuner_estimate_ms": summary.get("estimate_ms"),
            "design_space": _profile_of(meta)[1] if status == "tuned" else None,
            # how its candidates were measured (runner.caches_for)
            "runner_caches": meta.get("runner_caches", "warm") if status == "tuned" else None,
            "transfer_from": transfer_sources(meta) if status == "tuned" else [],
            "reused_from": reuse_sources(meta) if status == "tuned" else [],
            # the model's tuning recipe its options came from (recipes.py), if any
            "recipe": ({k: v for k, v in (recipe_of(meta) or {}).items() if k != "evidence"}
                       or None) if status == "tuned" else None,
            # the sizes with tuned kernels: the throughput search and MultiStream keep to them
            "batch_sizes": tuned_batch_sizes(db_dir) if status == "tuned" else []}


def _session_sources(meta: dict, key: str) -> list[str]:
    """The databases a block ``key`` of this database's sessions names with records, in the
    order first used."""
    out: list[str] = []
    for s in meta.get("sessions", []):
        for d in ((s.get(key) or {}).get("databases") or []):
            if d.get("records") and d.get("database") not in out:
                out.append(d["database"])
    return out


def transfer_sources(meta: dict) -> list[str]:
    """The databases that pre-trained the cost model in any session (``--transfer``)."""
    return _session_sources(meta, "cost_model_transfer")


def recipe_of(meta: dict) -> dict | None:
    """The recipe (recipes.py) a database's first session applied, None for none."""
    for s in meta.get("sessions", []):
        if s.get("recipe"):
            return s["recipe"]
    return None


def tuned_batch_sizes(db_dir) -> list[int]:
    """The batch sizes this database holds tuned kernels for (unrecorded: 1); [] without one."""
    if not db_dir or not database_exists(db_dir):
        return []
    sessions = read_db_meta(db_dir).get("sessions", [])
    return sorted({int(s.get("batch_size") or 1) for s in sessions
                   if s.get("trials_after", 1)} or {1})


def reuse_sources(meta: dict) -> list[str]:
    """The other models' databases whose records of shared kernels were copied in (reuse)."""
    return _session_sources(meta, "reused_records")


def record_session(db_dir: Path, session: dict, choices: dict) -> None:
    """Append one tuning session to ``tuning.json`` (what records report as tuning time);
    ``choices``: the lowering choices its workloads were made with (lowering.py)."""
    meta = read_db_meta(db_dir)
    sessions = meta.get("sessions", [])
    sessions.append(session)
    meta["sessions"] = sessions
    meta["tuning_s"] = round(sum(s.get("tuning_s", 0) for s in sessions), 1)
    meta["target"] = session["target"]
    meta.update(choices)     # the lowering choices the database's workloads were made with
    # how its candidates were measured (runner.caches_for): records compare only alike
    meta["runner_caches"] = session.get("runner_caches", meta.get("runner_caches", "warm"))
    atomic_write_json(db_dir / DB_META, meta)
    gi = db_dir / ".gitignore"
    if not gi.exists():
        gi.write_text("# MetaSchedule per-task logs: large, for debugging build errors only\n"
                      "logs/\n", encoding="utf-8")
