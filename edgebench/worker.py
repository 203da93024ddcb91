"""One cell (model x variant x task) in its own process.

    python -m edgebench.worker CELL.json OUT.json     run a cell, write its record to OUT.json
    python -m edgebench.worker --probe VARIANT[,VARIANT...] OUT.json [OPTIONS.json]

The runner owns the result store; the worker only writes its one record. A crash here
leaves no OUT.json and the runner records the cell as failed.
"""
from __future__ import annotations

import contextlib
import ctypes
import datetime as dt
import json
import os
import signal
import sys
import time
import traceback
from pathlib import Path

import numpy as np


def _die_with_parent() -> None:
    # If the runner is SIGKILLed, its workers must not run on as orphans.
    with contextlib.suppress(Exception):
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
        if os.getppid() == 1:
            os._exit(1)


def _err(e: BaseException) -> str:
    first = str(e).strip().splitlines()
    return f"{type(e).__name__}: {first[0][:500] if first else ''}".strip()


def _tail(limit: int = 12) -> str:
    return "".join(traceback.format_exc().splitlines(keepends=True)[-limit:])


def _write(out: Path, record: dict) -> None:
    from .store import _json_default

    tmp = out.with_suffix(".part")
    tmp.write_text(json.dumps(record, default=_json_default))
    os.replace(tmp, out)


def probe(variants: list[str], out: Path, options: dict) -> None:
    import converters

    res = {}
    for variant in variants:
        try:
            conv = converters.get(variant)
            av = conv.available(options)
            res[variant] = {"ok": av.ok, "reason": av.reason, "versions": av.versions or {},
                            "precision": conv.precision, "description": conv.description}
        except Exception as e:  # noqa: BLE001
            res[variant] = {"ok": False, "reason": f"probe failed: {_err(e)}", "versions": {}}
    _write(out, res)


class Cell:
    """Everything one cell needs, as written by the runner."""

    def __init__(self, d: dict):
        self.__dict__.update(d)


def _reference_logits(cell: Cell, spec, data, cache: Path) -> np.ndarray:
    """PyTorch FP32 eager logits for the parity images, computed once per model/data and
    cached, so every variant is compared with the very same reference."""
    from converters.pytorch import TorchPredictor

    from .measure import run_all

    key = spec.key("reference", Path(cell.data_folder).name, cell.parity_images)
    path = cache / "reference" / f"{cell.model}-{key}.npy"
    if path.is_file():
        return np.load(path)
    ref = TorchPredictor(spec.build(), "cpu", {})
    logits, _, _ = run_all(ref, data, cell.prof["accuracy_batch"], cell.parity_images)
    path.parent.mkdir(parents=True, exist_ok=True)
    np.save(path.with_suffix(".part.npy"), logits)
    os.replace(path.with_suffix(".part.npy"), path)
    del ref
    return logits


def _parity(cell: Cell, predictor, precision: str, spec, data, cache: Path):
    from . import metrics
    from .measure import run_all

    ref = _reference_logits(cell, spec, data, cache)
    out, _, _ = run_all(predictor, data, cell.prof["accuracy_batch"], cell.parity_images,
                        budget_s=cell.prof.get("pass_budget_s"))
    p = metrics.parity(ref[:len(out)], out)
    ok, why = metrics.parity_verdict(p, precision, cell.parity_thresholds)
    p["precision"] = precision
    p["criterion"] = why
    if not ok:
        return "failed", p, f"parity failed: {why}"
    if len(out) < len(ref):
        return "partial", p, (f"{len(out)} of {len(ref)} images within the "
                              f"{cell.prof['pass_budget_s']:g} s budget of this profile")
    return "ok", p, ""


def _equivalence(cell: Cell) -> tuple[bool | None, str]:
    """Did this variant pass parity earlier in the run? (None: not checked.)"""
    from . import store

    if cell.variant == cell.reference_variant:
        return True, "the reference"
    r = store.find(store.read(Path(cell.results_path)), cell.model, cell.variant, "parity",
                   cell.device_id)
    if r is None or r["status"] not in ("ok", "failed", "partial"):
        return None, "parity not run"
    return r["status"] != "failed", r.get("criterion", r.get("reason", ""))


def _device_hooks(device: dict):
    """Temperature/clock sampler and a device-memory reader for this machine, where they
    exist: NvMap on Jetson (unified memory, read the way jtop does), NVML on discrete GPUs."""
    state = memory = None
    with contextlib.suppress(Exception):
        from .telemetry.device_state import nvmap_used_mb, sample_state

        state = sample_state
        if device.get("kind") == "jetson":
            memory = nvmap_used_mb
    if memory is None:
        with contextlib.suppress(Exception):
            from .telemetry.nvml import device_memory_mb

            memory = device_memory_mb()
    return state, memory


def run_cell(cell: Cell) -> dict:
    import converters

    from . import measure, store
    from .data import PreparedData
    from .models import make_spec
    from .telemetry import Monitor

    started = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    t_start = time.perf_counter()
    rec: dict = {"run_id": cell.run_id, "model": cell.model, "variant": cell.variant,
                 "task": cell.task, "status": "failed", "reason": "", "device": cell.device,
                 "device_id": cell.device_id, "weights": cell.weights,
                 "weights_note": cell.weights_note, "data": cell.data_info,
                 "profile": cell.profile, "started_at": started,
                 # The interpreter this cell ran in (a variant may have its own: --python).
                 "python": {"executable": sys.executable, "version": sys.version.split()[0]}}
    device_state, device_memory = _device_hooks(cell.device)
    monitor = Monitor(interval_s=cell.prof.get("sample_interval_s", 0.1),
                      device_state=device_state, device_memory=device_memory).start()
    cache = Path(cell.cache_dir)
    try:
        conv = converters.get(cell.variant)
        # The profile's largest batch sizes the variants that fix it at build time (TensorRT).
        spec = make_spec(cell.model, cell.weights,
                         {"max_batch": cell.prof["throughput"]["max_batch"], **cell.options})
        av = conv.available(cell.options)
        if not av.ok:
            rec.update(status="skipped", reason=av.reason)
            return rec
        monitor.rebaseline()
        art = conv.convert(spec, cache)
        rec.update(convert_s=round(art.convert_s, 3), artifact_cached=art.cached,
                   artifact=art.path, artifact_sha256=art.sha256())
        t = time.perf_counter()
        predictor = conv.load(art, spec)
        rec["load_s"] = round(time.perf_counter() - t, 3)
        data = PreparedData(Path(cell.data_folder), cell.mean, cell.std)
        rec["cold_start_ms"] = round(measure.cold_start(predictor, data.batch(0, 1)), 3)
        rec["variant_meta"] = {**art.meta, **getattr(predictor, "meta", {})}
        if cell.task in ("latency", "throughput", "accuracy", "convert"):
            rec["equivalent"], rec["equivalence"] = _equivalence(cell)
        monitor.measure_idle(cell.prof["idle_s"])
        if cell.task == "parity":
            status, fields, reason = _parity(cell, predictor, conv.precision, spec, data, cache)
        elif cell.task == "accuracy":
            status, fields, reason = measure.accuracy(predictor, data, cell.prof, monitor)
        elif cell.task == "latency":
            status, fields, reason = measure.latency(predictor, data, cell.prof, monitor)
        elif cell.task == "throughput":
            ref = store.find(store.read(Path(cell.results_path)), cell.model,
                             cell.reference_variant, "throughput", cell.device_id)
            ref_sweep = ref.get("by_batch") if ref and cell.variant != cell.reference_variant else None
            status, fields, reason = measure.throughput(predictor, data, cell.prof, monitor, ref_sweep)
        elif cell.task == "convert":
            status, fields, reason = "ok", {}, ""
        else:
            raise ValueError(f"unknown task {cell.task}")
        rec.update(fields)
        rec.update(status=status, reason=reason)
        predictor.close()
    except converters.SkipVariant as e:
        rec.update(status="skipped", reason=str(e))
    except Exception as e:  # noqa: BLE001 - one cell's failure is a record, not a crash
        from .measure import is_oom

        rec.update(status="failed", reason=("out of memory: " if is_oom(e) else "") + _err(e),
                   traceback=_tail())
    finally:
        monitor.stop()
        rec["memory_mb"] = monitor.memory_mb()
        power, power_reason, energy = monitor.power_summary()
        rec.update(power_w=power, power_reason=power_reason, energy_mj_per_sample=energy)
        states = monitor.device_states()
        if states:
            rec["device_states"] = states
        rec["wall_s"] = round(time.perf_counter() - t_start, 3)
    return rec


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    _die_with_parent()
    if argv and argv[0] == "--probe":
        opts = json.loads(Path(argv[3]).read_text()) if len(argv) > 3 else {}
        probe(argv[1].split(","), Path(argv[2]), opts)
        return 0
    cell = Cell(json.loads(Path(argv[0]).read_text()))
    # Fault injection for the isolation tests: a real hard crash (SIGSEGV) of this worker.
    if os.environ.get("EDGEBENCH_TEST_CRASH") == f"{cell.model}/{cell.variant}/{cell.task}":
        os.kill(os.getpid(), signal.SIGSEGV)
    for k, v in (cell.env or {}).items():
        os.environ.setdefault(k, str(v))
    rec = run_cell(cell)
    _write(Path(argv[1]), rec)
    return 0


if __name__ == "__main__":
    sys.exit(main())
