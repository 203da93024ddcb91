"""What a tuning session starts from, besides its own database.

Reuse (default): a task whose kernel a sibling database (same target, layout and design
space) holds starts from its best records (``reuse_alike``). Warm start (resume): this
database's own measurements. Transfer: the cost model pre-trained on sibling databases.
See experiments/FINDINGS.md#reuse-across-models, experiments/FINDINGS.md#cost-model-transfer.
"""
from __future__ import annotations

import logging
import time
from pathlib import Path

from edgebench.util import first_line

from . import database, intrinsics

log = logging.getLogger("edgebench.tvm.tune")


def train_on_records(cost_model, ctx, db, workload, top_k: int = 256) -> int:
    """Feed the best ``top_k`` measured records of ``workload`` in ``db`` to the cost model
    under ``ctx`` (its target and workload); returns how many."""
    from tvm.s_tir.meta_schedule.runner import RunnerResult

    recs = db.get_top_k(workload, top_k)
    if recs:
        cost_model.update(ctx, [r.as_measure_candidate() for r in recs],
                          [RunnerResult(run_secs=list(r.run_secs), error_msg=None)
                           for r in recs])
    return len(recs)


def warm_start_cost_model(cost_model, contexts, db):
    """Feed the measurements already in the database to the cost model (resume)."""
    n = 0
    for ctx in contexts:
        try:
            if db.has_workload(ctx.mod):
                n += train_on_records(cost_model, ctx, db, db.commit_workload(ctx.mod))
        except Exception as e:  # noqa: BLE001 - warm start is an optimisation only
            log.debug("cost-model warm start skipped a task: %s", e)
    return n


AUTO_SPACES = ("multi-vector",)   # session design spaces where --transfer is on by default


def auto_transfer(wanted, session_space: str) -> bool:
    """Whether a session pre-trains its cost model on its sibling databases: ``wanted``
    (``--transfer`` / ``--no-transfer``) if given, else on in ``AUTO_SPACES``, where it
    was measured to help (experiments/FINDINGS.md#cost-model-transfer)."""
    return bool(wanted) if wanted is not None else session_space in AUTO_SPACES


def transfer_databases(db_dir, extra=None, auto: bool = True) -> list[Path]:
    """Tuning databases whose measurements pre-train the cost model for ``db_dir``:
    ``auto``, its siblings (other models, same target); ``extra``, folders that are a
    database, a folder of them, or a tuning dir (its folder for this target). ``db_dir``
    itself is left out (``warm_start_cost_model`` feeds it)."""
    db_dir = Path(db_dir)
    found: list[Path] = []

    def add_children(folder: Path):
        if folder.is_dir():
            found.extend(sorted(c for c in folder.iterdir() if database.database_exists(c)))

    if auto:
        add_children(db_dir.parent)
    for e in extra or []:
        e = Path(e)
        if not e.is_dir():
            raise ValueError(f"--transfer-from {e}: no such directory")
        n = len(found)
        if database.database_exists(e):
            found.append(e)
        else:
            add_children(e / db_dir.parent.name)   # a tuning dir: this target's folder
            add_children(e)                        # a target folder
        if len(found) == n:
            raise ValueError(f"--transfer-from {e}: holds no tuning database (for this "
                             f"target: {db_dir.parent.name})")
    out, seen = [], set()
    for f in found:
        key = f.resolve()
        if key != db_dir.resolve() and key not in seen:
            seen.add(key)
            out.append(f)
    return out


def split_by_profile(db_dirs, profile: tuple[str, str]) -> tuple[list[Path], list[dict]]:
    """The databases tuned like this session (``profile``: layout, design space), and the
    others with theirs. Only the first pre-train the cost model: other layouts misled it
    (experiments/FINDINGS.md#vector-width-tiling)."""
    same, other = [], []
    for d in db_dirs:
        p = database.database_profile(d)
        if p == tuple(profile):
            same.append(d)
        else:
            other.append({"database": str(d), "layout": p[0], "design_space": p[1]})
    return same, other


def transfer_cost_model(cost_model, target, db_dirs, per_workload: int = 256) -> dict:
    """Train the cost model on other tuning databases' measurements before the first search.

    The XGBoost model learns a schedule's speed relative to its workload's best from loop-nest
    features, so it carries across models (TenSet, Zheng et al. 2021); untrained it guesses
    until 100 own candidates are measured. Only which candidates get measured changes."""
    from tvm.s_tir import meta_schedule as ms

    t0 = time.perf_counter()
    intrinsics.register_for(target)      # TuneContext imports them: seconds, not minutes
    n = workloads = 0
    used = []
    for d in db_dirs:
        try:
            db = ms.database.JSONDatabase(work_dir=str(d), allow_missing=False)
            by_hash = {database.task_hash(r.workload.mod): r.workload
                       for r in db.get_all_tuning_records()}
        except Exception as e:  # noqa: BLE001 - an unreadable database is skipped, said below
            log.warning("cost-model transfer skipped %s: %s", d, first_line(e))
            continue
        k = 0
        for wl in by_hash.values():
            try:
                ctx = ms.TuneContext(mod=wl.mod, target=target, task_name="transfer")
                got = train_on_records(cost_model, ctx, db, wl, per_workload)
            except Exception as e:  # noqa: BLE001 - e.g. a workload this TVM cannot replay
                log.debug("cost-model transfer skipped a workload of %s: %s", d, e)
                continue
            k += got
            workloads += bool(got)
        n += k
        used.append({"database": str(d), "records": k})
    return {"records": n, "workloads": workloads, "databases": used,
            "seconds": round(time.perf_counter() - t0, 1)}


REUSE_TOP_K = 32       # records copied per reused task: the best one and a seed population


def _block_names(mod) -> list[str]:
    """The names of a kernel's blocks under its root, in order ([] where it has no root)."""
    from tvm import s_tir

    try:
        sch = s_tir.Schedule(mod)
        return [sch.get(rv).name_hint
                for rv in sch.get_child_blocks(sch.get_sblock("root"))]
    except Exception:  # noqa: BLE001 - no root block: nothing to rename
        return []


def _renamed(name: str, names: dict) -> str:
    """``name`` with its block's name from the source kernel replaced by the destination's,
    also where a schedule made it from one ("lv200_red_rf" from "lv200_red")."""
    for old in sorted(names, key=len, reverse=True):
        if name == old or name.startswith(old + "_"):
            return names[old] + name[len(old):]
    return name


def replayed(trace, mod, names: dict | None = None):
    """``trace`` (another database's record of a kernel structurally equal to ``mod``)
    replayed on ``mod`` as the JSON database replays records on opening: the trace as ``mod``
    will carry it, or None where it does not apply. Structural equality ignores block names,
    which Relax takes from variables ("lv200_red" vs "lv397_red"), and a record naming a block
    ``mod`` lacks makes a database unreadable: ``names`` maps the source's names to ``mod``'s."""
    from tvm import s_tir
    from tvm.s_tir.schedule import Trace

    insts, decisions = trace.as_json(remove_postproc=False)
    if names:
        insts = [[i[0], i[1], [_renamed(i[2][0], names), *i[2][1:]], i[3]]
                 if i[0] == "GetSBlock" and i[2] and isinstance(i[2][0], str) else i
                 for i in insts]
    try:
        sch = s_tir.Schedule(mod)
        Trace.apply_json_to_schedule([insts, decisions], sch)
    except Exception:  # noqa: BLE001 - TVM says only that the schedule failed
        return None
    return sch.trace


def reuse_records(db_dir, tasks, sources, top_k: int = REUSE_TOP_K) -> dict:
    """Copy into ``db_dir`` the best ``top_k`` records of every task whose workload one of
    ``sources`` (databases for the same target) holds and ``db_dir`` does not yet.

    Copies count toward ``--trials`` and seed the evolutionary search; each is ``replayed``
    first, one that does not apply is left out (``not_replayable``). Returns {"records",
    "tasks", "not_replayable", "databases": [{database, records, tasks, not_replayable}]}."""
    from tvm.s_tir import meta_schedule as ms

    if not sources:
        return {"records": 0, "tasks": 0, "not_replayable": 0, "databases": []}
    have = set(database.workload_hashes(db_dir))
    wanted = {database.task_hash(t.dispatched[0]): t for t in tasks}
    wanted = {h: t for h, t in wanted.items() if h not in have}
    dst = None
    used, n, lost, done = [], 0, 0, set()
    for src_dir in sources:
        hits = [h for h in database.workload_hashes(src_dir) if h in wanted and h not in done]
        if not hits:
            continue
        try:
            src = ms.database.JSONDatabase(work_dir=str(src_dir), allow_missing=False)
        except Exception as e:  # noqa: BLE001 - an unreadable database is skipped, said here
            log.warning("reuse skipped %s: %s", src_dir, first_line(e))
            continue
        dst = dst or ms.database.JSONDatabase(work_dir=str(db_dir))
        k = tasks_hit = skipped = 0
        for h in hits:
            mod = wanted[h].dispatched[0]
            if not src.has_workload(mod):
                continue
            src_wl = src.commit_workload(mod)
            recs = src.get_top_k(src_wl, top_k)
            theirs, ours = _block_names(src_wl.mod), _block_names(mod)
            names = ({a: b for a, b in zip(theirs, ours) if a != b}
                     if len(theirs) == len(ours) else {})
            traces = [(r, replayed(r.trace, mod, names)) for r in recs]
            skipped += sum(t is None for _, t in traces)
            traces = [(r, t) for r, t in traces if t is not None]
            if not traces:
                continue
            wl = dst.commit_workload(mod)
            for r, t in traces:
                dst.commit_tuning_record(ms.database.TuningRecord(
                    t, wl, r.run_secs, r.target, r.args_info))
            k += len(traces)
            tasks_hit += 1
            done.add(h)
        if skipped:
            log.warning("reuse: %d record(s) of %s do not apply to this model's kernels, left "
                        "out", skipped, src_dir)
        if k or skipped:
            used.append({"database": str(src_dir), "records": k, "tasks": tasks_hit,
                         "not_replayable": skipped})
            n += k
            lost += skipped
    return {"records": n, "tasks": len(done), "not_replayable": lost, "databases": used}


def reuse_alike(db_dir, tasks, candidates, profile: tuple[str, str]) -> dict:
    """``reuse_records`` from those of ``candidates`` tuned in this session's layout and
    design space (``profile``), as ``split_by_profile``: copies from another space misled
    the search (experiments/FINDINGS.md#reuse-across-models). Adds ``skipped``: the other
    databases holding some of the missing kernels, with layout, design space and count."""
    same, other = split_by_profile(candidates, profile)
    missing = ({database.task_hash(t.dispatched[0]) for t in tasks}
               - set(database.workload_hashes(db_dir)))
    skipped = []
    for o in other:
        n = len(missing & database.measured_workloads(o["database"]))
        if n:
            skipped.append({**o, "tasks": n})
    out = reuse_records(db_dir, tasks, same)
    out["skipped"] = skipped
    return out
