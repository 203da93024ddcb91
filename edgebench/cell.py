"""The cell: one model x variant x task, and everything its worker needs, as one typed value.

The plan makes bare cells (model, variant, task); the runner fills in the run's settings,
the model's prepared inputs and what earlier cells decided (the parity verdict, the
reference variant's throughput sweep) before it hands the cell to a worker. The worker is
a function of this value alone: it reads no results file.

``new_record`` is the one place a result record's common fields are laid out.
"""
from __future__ import annotations

import dataclasses
import datetime as dt
from pathlib import Path
from typing import Any

# The configured reference: the variant every other one's parity is judged against.
REFERENCE_VARIANT = "pytorch"


@dataclasses.dataclass(frozen=True)
class RunSettings:
    """What every cell of a run on one device shares."""

    run_id: str
    profile: str                        # profile name ("quick", "paper", "smoke")
    prof: dict                          # the profile's settings (edgebench.profiles)
    cache_dir: str
    options: dict                       # variant options by CLI dest name
    device: dict                        # sysinfo.device() of the machine that runs the cells
    device_id: str = ""                 # "" for a single-machine run; the fleet's device id
    reference_variant: str = REFERENCE_VARIANT
    parity_thresholds: dict = dataclasses.field(default_factory=dict)
    env: dict = dataclasses.field(default_factory=dict)   # set in the worker's environment
    memory_limit_mb: int | None = None  # address-space cap on each cell's process (RLIMIT_AS)
    run_dir: str = ""                   # the run folder (LoadGen's logs go under it)
    # --power-modes: the nvpmodel mode the cells run in (its name; "" when not swept) and
    # what the switch to it found (edgebench.powermodes.ModeState.to_json()).
    power_mode: str = ""
    power_mode_state: dict | None = None
    # The tasks the run's plan holds: a JIT variant's model branch warms only the batch
    # shapes they call (edgebench.model_branch.warm_batch_sizes). Empty: every task's.
    tasks: tuple = ()


@dataclasses.dataclass(frozen=True)
class ModelInputs:
    """A model's resolved weights and preprocessed data, prepared once before its cells."""

    weights: str
    weights_note: str = ""
    data_folder: str = ""
    mean: tuple = ()
    std: tuple = ()
    parity_images: int = 0
    data_info: dict | None = None
    # INT8 calibration set, prepared with the model's preprocessing, when a planned variant
    # needs one: folder, mean, std, n, method, sha256 (of the preprocessed images), source,
    # files_sha256 (of the file list) -- converters.onnxruntime.quantize reads it.
    calibration: dict | None = None
    # What the run learnt of the model (edgebench.models.describe): kind, architecture,
    # class count, outputs, content hashes, where its preprocessing came from. In every record.
    model_info: dict | None = None


@dataclasses.dataclass(frozen=True)
class Cell:
    model: str
    variant: str
    task: str
    run: RunSettings | None = None
    inputs: ModelInputs | None = None
    # From earlier cells of the same model and device (the runner fills these in):
    equivalent: bool | None = None      # did this variant pass parity? None: not checked
    equivalence: str = ""               # why (the parity criterion or the reason it was not run)
    reference_sweep: list | None = None  # the reference variant's throughput by_batch (BSR)
    int8_cost: dict | None = None       # an INT8 variant's accuracy cost, from its parity cell
    mlperf_seed: dict | None = None     # a scenario cell: its variant's latency/throughput figures
    latency_p50_ms: float | None = None  # a layers cell: its variant's latency p50 (same run)

    def slug(self) -> str:
        from .models import slug

        mode = self.run.power_mode if self.run else ""
        return f"{slug(self.model)}__{self.variant}__{self.task}" + (f"__{mode}" if mode else "")

    def key(self, device_id: str | None = None, power_mode: str | None = None) -> tuple:
        """The store's key of this cell (edgebench.store.cell_key)."""
        dev = device_id if device_id is not None else (self.run.device_id if self.run else "")
        mode = power_mode if power_mode is not None else (self.run.power_mode if self.run else "")
        return (dev, self.model, self.variant, self.task, mode)

    def compile_group(self) -> str:
        """What a model compiled once for this cell is shared by: the cells of one model and
        variant in one run (same weights, options and profile). ``edgebench.forkserver``
        compiles a JIT variant once per group and forks the group's cells from it."""
        import hashlib
        import json

        run, inp = self.run, self.inputs
        blob = json.dumps([self.model, self.variant, inp.weights if inp else None,
                           inp.data_folder if inp else None, run.run_id if run else None,
                           run.options if run else None, run.prof if run else None],
                          sort_keys=True, default=str)
        return hashlib.sha256(blob.encode()).hexdigest()[:16]

    def with_(self, **changes) -> "Cell":
        return dataclasses.replace(self, **changes)

    def to_json(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, d: dict) -> "Cell":
        d = dict(d)
        if d.get("run") is not None:
            d["run"] = RunSettings(**d["run"])
        if d.get("inputs") is not None:
            inp = dict(d["inputs"])
            inp["mean"], inp["std"] = tuple(inp.get("mean", ())), tuple(inp.get("std", ()))
            d["inputs"] = ModelInputs(**inp)
        return cls(**d)


def now_iso() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


def new_record(cell: Cell, status: str, reason: str = "", **fields: Any) -> dict:
    """A result record with every common field set: identity, device, weights, data and
    the telemetry fields (null until measured). ``fields`` add to or override them."""
    run, inp = cell.run, cell.inputs
    rec = {"run_id": run.run_id if run else "", "model": cell.model, "variant": cell.variant,
           "task": cell.task, "status": status, "reason": reason,
           "device": run.device if run else None, "device_id": run.device_id if run else "",
           "weights": inp.weights if inp else None, "weights_note": inp.weights_note if inp else "",
           "data": inp.data_info if inp else None, "profile": run.profile if run else "",
           "model_info": inp.model_info if inp else None,
           "started_at": now_iso(), "wall_s": 0.0, "memory_mb": None, "power_w": None,
           "power_reason": "not run" if status == "skipped" else "cell did not finish",
           "energy_mj_per_sample": None}
    if run and run.power_mode:
        rec["power_mode"], rec["power_mode_state"] = run.power_mode, run.power_mode_state
    rec.update(fields)
    return rec


def partial_path(record_path: Path) -> Path:
    """Where a worker writing its record to ``record_path`` keeps the record as measured so
    far (the throughput search rewrites it after each batch size)."""
    return Path(record_path).with_suffix(".partial.json")
