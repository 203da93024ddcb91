"""What a tuning session starts from, besides its own database.

Reuse (default): a task whose kernel (workload) another model's database for the same
target already holds starts from that database's best records, copied in as they are: they
are measurements of this very kernel on this very target. ResNet-50, -101 and -152 share all
29 of their tasks (a 512-trial resnet152 database gives 491 records, so a 512-trial ResNet-50
session after it, with the same flags, runs 21 trials). Only from databases tuned in this
session's layout and design space, as for transfer (``reuse_alike``): with the model recipes,
EfficientNet-B0 (one-vector) no longer takes the 6 kernels it shares with MobileNetV2's
multi-vector database (experiments/FINDINGS.md, "Reuse across models"). A copy is replayed on this
model's kernel first, under its block names (``replayed``).

Warm start (resume): the measurements this model's own database already holds.

Transfer (asked for: ``--transfer``/``--transfer-from``): the other models' databases for
the same target (``<tuning_dir>/<target-slug>/*``, plus ``--transfer-from``) that were tuned
in the same layout and design space, so the cost model ranks candidates from the first round
instead of guessing. Only the choice of candidates changes: every record is still measured.
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
    (``--transfer`` / ``--no-transfer``) if given, else on in the design spaces where it was
    measured to help (``AUTO_SPACES``). Multi-vector, Zen 5, 512 trials, by the fastest call
    against the same session without transfer: ResNet-152's network 0.970x and 0.957x over
    two seeds, SqueezeNet 1.1's 0.975x (experiments/tvm-transfer-multi-2026-11-29/). In the
    one-vector space it measured no gain (experiments/FINDINGS.md, "Cost-model transfer"), so it stays
    off there."""
    return bool(wanted) if wanted is not None else session_space in AUTO_SPACES


def transfer_databases(db_dir, extra=None, auto: bool = True) -> list[Path]:
    """Tuning databases whose measurements pre-train the cost model for ``db_dir``.

    ``auto``: the other models' databases for the same target (``db_dir``'s siblings under
    ``<tuning-dir>/<target-slug>/``). ``extra``: more folders, each a database or a folder
    of databases (e.g. another tuning dir's ``<target-slug>``, or a tuning dir: then its
    sub-folder for this target). This model's own database is left out (it warm-starts the
    model anyway, see ``warm_start_cost_model``)."""
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
    others with theirs. Only the first are used for the transfer: NCHW databases of the
    default space pre-training an NHWC vector-width search took mobilenetv2's 512-trial
    estimate from 1.74 to 3.63 ms (experiments/FINDINGS.md, "Vector-width tiling")."""
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

    MetaSchedule's XGBoost model learns a schedule's speed *relative to the best one of its
    own workload* from features of the loop nest (PerStoreFeature), so what it learns on one
    model's convolutions ranks candidates for another's (the idea of TenSet, Zheng et al.
    2021). Without it the model predicts at random until 100 of this model's own candidates
    are measured, and with ~15 candidates per task at 512 trials most tasks are searched
    blind. This shapes only which candidates get measured: every figure in the database is
    still this model's own measurement on this target."""
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
    replayed on ``mod`` as MetaSchedule's JSON database replays every record when it opens
    one: the trace as ``mod`` will carry it, or None where it does not apply.

    Structural equality ignores block names, and Relax names a kernel's blocks after its own
    variables: MobileNetV2's global mean reduces in block "lv200_red", EfficientNet-B0's in
    "lv397_red". A copied record that names a block ``mod`` lacks made EfficientNet-B0's
    database unreadable (2026-12-02). ``names`` maps the source's block names to ``mod``'s."""
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

    The copies count toward ``--trials`` like any record of the database (so a model whose
    kernels were all tuned for another runs only what the copies leave of the budget) and seed the
    evolutionary search. Each is replayed on this model's kernel first, its block names
    translated (``replayed``); one that does not apply is left out (``not_replayable``).
    Returns {"records", "tasks", "not_replayable", "databases": [{database, records, tasks,
    not_replayable}]} for ``tuning.json``."""
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
    design space (``profile``), as cost-model transfer (``split_by_profile``). A copy from
    another space is a true measurement of the kernel, but on Zen 5 the sessions that took
    them searched the other kernels worse: EfficientNet-B0 (one-vector space) after
    MobileNetV2 (multi-vector) copied 77 records of 6 tasks (counted as trials done, and
    trained on first), and its networks ran 1.09x and 1.14x the 11-29 database's p50 over two
    seeds, against 1.02x and 1.03x without them (experiments/tvm-reuse-effnet-2026-12-02/).
    On Zen 4 it went the other way, by less (0.902x and 0.915x with the copies, 0.926x
    without; experiments/tvm-reuse-space-zen4-2026-12-03/): a default on mixed evidence
    (experiments/FINDINGS.md, "Reuse across models").

    The result is ``reuse_records``' plus ``skipped``: the other-profile databases that hold
    measurements of some of this model's missing kernels, with their layout, design space
    and that count."""
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
