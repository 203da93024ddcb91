"""What a model branch of the fork server prepares: a model converted, loaded and compiled
for every batch shape its cells will use, once per model and run (``prepare``), and what a
cell forked from that branch finds of it (``prepared_for``).

For variants whose compiled form lives in the process (``Converter.compiles_in_process``:
torch.compile's graphs), a cell forked from the branch measures the branch's predictor
instead of compiling again (``edgebench.forkserver`` forks; ``edgebench.worker`` measures)."""
from __future__ import annotations

import dataclasses
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from .cell import Cell


@dataclasses.dataclass
class Prepared:
    """A model converted, loaded and compiled for every batch shape its cells will use, once,
    in a branch of the fork server (``edgebench.forkserver``, for variants whose compiled
    form lives in the process: ``Converter.compiles_in_process``). The cells of its group
    are forked from that branch and measure this predictor instead of compiling again."""

    group: str                  # Cell.compile_group() of the cells it serves
    artifact: Any
    predictor: Any
    load_s: float
    shapes: list                # the batch sizes called once after loading (compiled here)
    warm_s: float
    baseline_mb: float          # the branch's memory before the model was built
    sys_baseline_mb: float | None
    t_start: float              # when the branch started preparing (perf_counter)
    graphs: int | None          # graphs compiled while preparing (torch.compile), if known
    pid: int                    # the branch's process
    served: int = 0             # cells forked from it so far (the first one compiled)

    def meta(self) -> dict:
        first = self.served == 0
        return {"compiled_in": {
            "process": "the model's fork-server branch (edgebench.forkserver): compiled once "
                       "for this model and run, each cell forked from it",
            "pid": self.pid, "this_cell_compiled": first,
            "warm_batch_sizes": self.shapes, "warm_s": round(self.warm_s, 3),
            "graphs_compiled": self.graphs}}


# Set in a fork-server branch by ``prepare``; a cell forked from it finds it here.
PREPARED: Prepared | None = None


# Which batch shapes each task calls a predictor with (warm_batch_sizes): batch 1; the
# accuracy batch and its remainder; the doubling sizes from 1 (throughput's search; MultiStream
# calls 8, Offline the best throughput batch, known only once the throughput cell has run).
BATCH_ONE_TASKS = {"latency", "singlestream", "layers"}
PASS_TASKS = {"parity", "accuracy"}
LADDER_TASKS = {"throughput", "multistream", "offline"}


def warm_batch_sizes(prof: dict, n_images: int, tasks=(), pass_batch=None) -> list[int]:
    """Every batch shape the run's ``tasks`` call a predictor with (empty: every task's), in
    the order a fresh process meets them first: batch 1 (cold start, latency), the
    accuracy/parity batch and its remainder, then the throughput search's doubling sizes up
    to the profile's cap. A shape no task calls is not warmed: for torch.compile each new
    shape may be another graph to compile (a parity-only run of the tiny test model warmed
    5 shapes and compiled 3 graphs in 27.9 s). ``pass_batch`` maps
    the accuracy batch to the one the passes will run at (``measure.pass_batch`` for the
    predictor: a TVM build's tuned size), so no other is compiled for nothing."""
    wanted = set(tasks) if tasks else BATCH_ONE_TASKS | PASS_TASKS | LADDER_TASKS
    ab = pass_batch(prof["accuracy_batch"]) if pass_batch else prof["accuracy_batch"]
    ab = min(ab, n_images) if n_images else ab
    sizes = [1] if wanted & BATCH_ONE_TASKS else []
    if wanted & PASS_TASKS:
        sizes += [ab, (n_images % ab) if n_images else 0]
    b = 1
    while wanted & LADDER_TASKS and b <= prof["throughput"]["max_batch"]:
        sizes.append(b)
        b *= 2
    return [s for s in dict.fromkeys(sizes) if s > 0]


def graphs_compiled() -> int | None:
    """Graphs dynamo has compiled in this process so far (None without torch._dynamo)."""
    mod = sys.modules.get("torch._dynamo.utils")
    if mod is None:
        return None
    return int(mod.counters["stats"].get("unique_graphs", 0))


def spec_for(cell: Cell):
    from .models import make_spec

    run = cell.run
    # The profile's largest batch sizes the variants that fix it at build time (TensorRT).
    return make_spec(cell.model, cell.inputs.weights,
                     {"max_batch": run.prof["throughput"]["max_batch"],
                      "accuracy_batch": run.prof["accuracy_batch"], **run.options,
                      "int8_calibration": cell.inputs.calibration},
                     info=cell.inputs.model_info)


def prepare(cell_json: str) -> Prepared | None:
    """In a fork-server branch: convert, load and call the model once at every batch shape
    its cells use, so that the cells forked afterwards compile nothing. Errors propagate (the
    branch then forks the cells unprepared: each converts itself and records the error)."""
    import psutil

    import converters

    from .data import PreparedData
    from .measure import pass_batch
    from .telemetry.memory import system_used_mb, tree_rss_mb

    global PREPARED
    t_start = time.perf_counter()
    cell = Cell.from_json(json.loads(Path(cell_json).read_text(encoding="utf-8")))
    conv = converters.get(cell.variant)
    if not conv.available(cell.run.options).ok:
        return None
    spec = spec_for(cell)
    baseline, sys_baseline = tree_rss_mb(psutil.Process()), system_used_mb()
    graphs0 = graphs_compiled()
    art = conv.convert(spec, Path(cell.run.cache_dir))
    t = time.perf_counter()
    predictor = conv.load(art, spec)
    load_s = time.perf_counter() - t
    inp = cell.inputs
    data = PreparedData(Path(inp.data_folder), inp.mean, inp.std)
    shapes = warm_batch_sizes(cell.run.prof, inp.parity_images, cell.run.tasks,
                              lambda b: pass_batch(predictor, b))
    t = time.perf_counter()
    for b in shapes:
        predictor(data.tiled(b))
    conv.before_fork()
    warm_s = time.perf_counter() - t
    graphs1 = graphs_compiled()
    PREPARED = Prepared(cell.compile_group(), art, predictor, load_s, shapes, warm_s, baseline,
                        sys_baseline, t_start,
                        None if graphs1 is None else graphs1 - (graphs0 or 0), os.getpid())
    return PREPARED


def prepared_for(cell: Cell) -> Prepared | None:
    """The branch's prepared model, if this process was forked from the branch of the
    cell's compile group."""
    if PREPARED is not None and PREPARED.group == cell.compile_group():
        return PREPARED
    return None
