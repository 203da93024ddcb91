"""Build: import, lower, apply a tuning database and compile one static batch size into a
Relax executable (optionally exported as a host-native library)."""
from __future__ import annotations

import os
import time
from pathlib import Path

from edgebench.cache_integrity import seal
from edgebench.util import first_line

from . import database, passes
from . import importer as importer_
from .errors import TvmError


def apply_database(mod, target, db_dir: str | None):
    """Apply the best records of the tuning database in ``db_dir`` (if any) and fold the
    weight-layout rewrites the tuned schedules introduced into the constants."""
    from tvm.s_tir import meta_schedule as ms

    if not db_dir or not database.database_exists(db_dir):
        return mod
    return apply_records(mod, target,
                         ms.database.JSONDatabase(work_dir=str(db_dir), allow_missing=False))


def apply_records(mod, target, db):
    """``apply_database`` on a MetaSchedule database object (e.g. a union of databases)."""
    from tvm import relax

    with target, db:
        mod = relax.transform.MetaScheduleApplyDatabase(enable_warning=False)(mod)
        mod = relax.transform.SplitLayoutRewritePreproc()(mod)
        mod = relax.transform.FoldConstant()(mod)
    return mod


def compile_module(mod, target):
    import tvm

    with tvm.transform.PassContext(opt_level=3):
        return tvm.compile(mod, target=target)


def build_library(model, input_size, batch: int, target, *, db_dir=None, importer="auto",
                  spec=None, cache=None, out_path: Path | None = None, **lowering) -> dict:
    """Import, lower, apply the database and compile one static batch size. ``lowering``:
    ``passes.lower_for_tuning``'s choices (``lowering.lowering_for`` gives a database's).

    Returns {"executable", "importer", "importer_note", "tuning", "lowered", "tasks",
    "timings"}; the executable is also exported to ``out_path`` when given."""
    timings = {}
    t0 = time.perf_counter()
    shape = (batch, *input_size)
    mod, used, note = importer_.import_model(model, shape, importer, spec=spec, cache=cache)
    timings["import_s"] = time.perf_counter() - t0
    t = time.perf_counter()
    try:
        lowered = passes.lower_for_tuning(mod, target, **lowering)
        tasks = passes.extract_tasks(lowered, target)
        summary = database.tuning_summary(
            db_dir if db_dir and database.database_exists(db_dir) else None, tasks)
        applied = apply_database(lowered, target, db_dir)
        timings["lower_s"] = time.perf_counter() - t
        t = time.perf_counter()
        ex = compile_module(applied, target)
    except TvmError:
        raise
    except Exception as e:  # noqa: BLE001 - the compiler's message goes into the record
        raise TvmError(f"TVM build failed ({used} importer): {first_line(e, 1500)}") from e
    timings["compile_s"] = time.perf_counter() - t
    if out_path is not None:
        t = time.perf_counter()
        out_path.parent.mkdir(parents=True, exist_ok=True)
        tmp = out_path.with_name(out_path.name + f".{os.getpid()}.part.so")
        ex.export_library(str(tmp))
        os.replace(tmp, out_path)
        seal(out_path)     # its sha256, checked before every later load from the cache
        timings["export_s"] = time.perf_counter() - t
    return {"executable": ex, "importer": used, "importer_note": note, "tuning": summary,
            "lowered": lowered, "tasks": tasks,
            "timings": {k: round(v, 3) for k, v in timings.items()}}
