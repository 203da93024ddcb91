"""The plan: which cells (model x variant x task) run, in which order.

Order matters twice: the reference variant runs first for each model (its throughput sweep
is the BSR baseline), and parity runs before a variant's other tasks (they are marked as
coming from a non-equivalent model when parity failed)."""
from __future__ import annotations

from .cell import REFERENCE_VARIANT, Cell

TASKS = ("parity", "accuracy", "latency", "throughput")
# MLPerf's scenarios through LoadGen (edgebench.mlperf): opt-in through --tasks, after the
# latency and throughput cells whose figures seed them.
SCENARIO_TASKS = ("singlestream", "multistream", "offline")
# The per-layer profile (edgebench.layers): opt-in, after the latency cell it is checked
# against; its own cell, so profiling never touches the latency figures.
LAYERS_TASK = "layers"
ALL_TASKS = ("convert", *TASKS, LAYERS_TASK, *SCENARIO_TASKS)

__all__ = ["ALL_TASKS", "LAYERS_TASK", "REFERENCE_VARIANT", "SCENARIO_TASKS", "TASKS", "build"]


def build(models: list[str], variants: list[str], tasks: list[str],
          reference_parity: bool = False, reference: str = REFERENCE_VARIANT) -> list[Cell]:
    """``reference_parity``: whether the reference variant gets a parity cell of its own.
    The parity reference is always FP32 on the CPU, so it needs one when the reference
    variant computes elsewhere (cuDNN's TF32 default once put PyTorch on a GPU 0.008 away)."""
    order = {t: i for i, t in enumerate(ALL_TASKS)}
    variants = sorted(variants, key=lambda v: v != reference)  # stable: reference first
    cells = []
    for m in models:
        for v in variants:
            for t in sorted(tasks, key=order.__getitem__):
                if t == "parity" and v == reference and not reference_parity:
                    continue  # the reference is what parity compares against
                cells.append(Cell(m, v, t))
    return cells
