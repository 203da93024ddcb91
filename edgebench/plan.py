"""The plan: which cells (model x variant x task) run, in which order.

Order matters twice: the reference variant runs first for each model (its throughput sweep
is the BSR baseline), and parity runs before a variant's other tasks (they are marked as
coming from a non-equivalent model when parity failed)."""
from __future__ import annotations

import dataclasses

TASKS = ("parity", "accuracy", "latency", "throughput")
ALL_TASKS = ("convert", *TASKS)
REFERENCE_VARIANT = "pytorch"


@dataclasses.dataclass(frozen=True)
class CellId:
    model: str
    variant: str
    task: str

    def slug(self) -> str:
        return f"{self.model}__{self.variant}__{self.task}"


def build(models: list[str], variants: list[str], tasks: list[str],
          reference_device: str = "cpu") -> list[CellId]:
    """``reference_device``: where the reference variant runs. The parity reference is
    always PyTorch FP32 on the CPU, so on a GPU the reference variant gets a parity cell too
    (cuDNN's TF32 default once put it 0.008 away)."""
    order = {t: i for i, t in enumerate(ALL_TASKS)}
    variants = sorted(variants, key=lambda v: v != REFERENCE_VARIANT)  # stable: reference first
    cells = []
    for m in models:
        for v in variants:
            for t in sorted(tasks, key=order.__getitem__):
                if t == "parity" and v == REFERENCE_VARIANT and reference_device == "cpu":
                    continue  # the reference is what parity compares against
                cells.append(CellId(m, v, t))
    return cells
