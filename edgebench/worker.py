"""One cell (model x variant x task) in its own process.

    python -m edgebench.worker CELL.json OUT.json       run a cell, write its record to OUT.json
    python -m edgebench.worker --probe IN.json OUT.json can these variants run here?

``run_cell`` is a function of the cell alone (``edgebench.cell.Cell``: settings, the model's
inputs and what earlier cells decided); it reads no results file. The runner owns the result
store; the worker only writes its one record. A crash here leaves no OUT.json and the runner
records the cell as failed.
"""
from __future__ import annotations

import contextlib
import ctypes
import json
import os
import signal
import sys
import time
import traceback
from pathlib import Path

from . import model_branch, parity_cell
from .cell import Cell, new_record
from .model_branch import graphs_compiled, spec_for
from .models import kind_of
from .plan import LAYERS_TASK, SCENARIO_TASKS
from .util import atomic_write_json, first_line


def _die_with_parent() -> None:
    # If the runner is SIGKILLed, its workers must not run on as orphans.
    with contextlib.suppress(Exception):
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
        if os.getppid() == 1:
            os._exit(1)


def _tail(limit: int = 12) -> str:
    return "".join(traceback.format_exc().splitlines(keepends=True)[-limit:])


def compute_device(conv, opts: dict) -> str:
    """``conv.compute_device(opts)``, or "cpu" where it cannot say: most converters import
    their backend to answer, and a backend that is not installed must leave the probe with
    ``available()``'s reason, not an ImportError."""
    try:
        return conv.compute_device(opts)
    except Exception:  # noqa: BLE001 - available() already says why the backend is missing
        return "cpu"


def probe(request: dict, out: Path) -> None:
    """For each variant: can it run here, which options it settles here, where it computes,
    and which of the request's models it cannot take (with the reason)."""
    import converters

    res = {}
    for variant in request["variants"]:
        if os.environ.get("EDGEBENCH_TEST_CRASH") == f"probe/{variant}":  # the isolation tests
            os.kill(os.getpid(), signal.SIGSEGV)
        try:
            conv = converters.get(variant)
            settled = conv.settle_options(dict(request["options"]))
            opts = {**request["options"], **settled}
            av = conv.available(opts)
            models = {}
            if av.ok:
                for m, size in request.get("models", {}).items():
                    ma = (_needs_source(m) if not conv.starts_from_onnx and kind_of(m) == "onnx"
                          else conv.check_model(m, tuple(size), opts))
                    if not ma.ok:
                        models[m] = ma.reason
            device = compute_device(conv, opts)
            res[variant] = {"ok": av.ok, "reason": av.reason, "versions": av.versions or {},
                            "precision": conv.precision, "description": conv.description,
                            "compares_with": conv.compares_with,
                            "needs_calibration": conv.needs_calibration,
                            "settled": settled, "compute_device": device,
                            "compile_in_branch": bool(conv.compiles_in_process
                                                      and device == "cpu"),
                            "models": models,
                            "worker_env": conv.worker_env(opts, request.get("cache_dir", ""))}
        except Exception as e:  # noqa: BLE001
            res[variant] = {"ok": False, "reason": f"probe failed: {first_line(e, 500)}",
                            "versions": {}, "models": {}}
    atomic_write_json(out, res)


def _needs_source(model: str):
    import converters
    from converters.base import Availability

    return Availability.no(f"needs the source model, and {model} is an ONNX file: the variants "
                           f"that start from ONNX ({', '.join(converters.onnx_file_variants())}) "
                           "run it")


DRIFT_IMAGES = 2      # every intermediate tensor of two models is held: keep it small


def _wants_drift(cell: Cell, conv, rec: dict) -> bool:
    """The per-layer drift table: for an INT8 parity cell whose model fails parity or
    MLPerf's 99% rule, or every INT8 parity cell with --int8-layer-drift."""
    if cell.task != "parity" or conv.precision != "int8" or "int8_cost" not in rec:
        return False
    return bool(cell.run.options.get("int8_layer_drift") or rec["status"] == "failed"
                or rec["int8_cost"].get("mlperf_99") == "fail")


def _device_hooks(device: dict):
    """Temperature/clock sampler, a device-memory reader and what that reader reads, for
    this machine, where they exist: NvMap on Jetson (unified memory, read the way jtop
    does), NVML on discrete GPUs."""
    state = memory = None
    source = ""
    with contextlib.suppress(Exception):
        from .telemetry.device_state import nvmap_used_mb, sample_state

        state = sample_state
        if device.get("kind") == "jetson" and nvmap_used_mb() is not None:
            memory, source = nvmap_used_mb, ("NvMapMemUsed from /proc/meminfo: memory mapped "
                                             "for the GPU (device-wide, part of system memory)")
    if memory is None:
        with contextlib.suppress(Exception):
            from .telemetry.nvml import device_memory_mb

            memory = device_memory_mb()
            source = "NVML used memory of GPU 0 (device-wide)" if memory else ""
    return state, memory, source


def _measure(cell: Cell, conv, art, predictor, spec, data, cache: Path, monitor,
             on_step=None):
    """The cell's task on a loaded predictor: (status, fields, reason)."""
    from . import measure

    prof = cell.run.prof
    if cell.task == "parity":
        return parity_cell.run(cell, predictor, conv.precision, spec, data, cache)
    if cell.task == "accuracy":
        return measure.accuracy(predictor, data, prof, monitor)
    if cell.task == "latency":
        return measure.latency(predictor, data, prof, monitor)
    if cell.task == "throughput":
        return measure.throughput(predictor, data, prof, monitor, cell.reference_sweep,
                                  on_step=on_step)
    if cell.task == "convert":
        return "ok", {}, ""
    if cell.task == LAYERS_TASK:
        from . import layers

        return layers.run(cell, conv, art, spec, predictor, data, prof)
    if cell.task in SCENARIO_TASKS:
        from .mlperf import task as scenario

        root = Path(cell.run.run_dir or cache) / "mlperf"
        return scenario.run(cell, predictor, data, monitor, root / cell.slug(),
                            parity_cell.labels_real(cell)[0])
    raise ValueError(f"unknown task {cell.task}")


def _telemetry_fields(monitor) -> dict:
    power, power_reason, energy = monitor.power_summary()
    return {"memory_mb": monitor.memory_mb(), "power_w": power, "power_reason": power_reason,
            "energy_mj_per_sample": energy}


def _partial_writer(path: Path | None, rec: dict, monitor, t_start: float):
    """``on_step`` for the throughput search: after each batch size, the record as measured
    so far goes to ``path`` (atomically). The runner keeps it, as a ``partial`` record, if
    this process dies before it writes its record (the OOM killer's SIGKILL, a timeout)."""
    if path is None:
        return None

    def write(fields: dict) -> None:
        part = {**rec, **fields, **_telemetry_fields(monitor), "status": "partial",
                "reason": "the worker ended during the batch search",
                "wall_s": round(time.perf_counter() - t_start, 3)}
        with contextlib.suppress(Exception):   # a full disk must not end the measurement
            atomic_write_json(path, part, indent=None)
    return write


def run_cell(cell: Cell, partial_out: Path | None = None) -> dict:
    """The cell's record. ``partial_out``: where the throughput search writes the record as
    measured so far after each batch size (see ``cell.partial_path``)."""
    import converters

    from . import measure
    from .data import PreparedData
    from .telemetry import Monitor

    # Forked from a branch that compiled this model (edgebench.forkserver)? The first cell
    # forked from it counts the compile in its own time; the others start at the fork.
    prepared = model_branch.prepared_for(cell)
    first_of_group = prepared is not None and prepared.served == 0
    t_start = prepared.t_start if first_of_group else time.perf_counter()
    graphs0 = graphs_compiled()
    run, inp = cell.run, cell.inputs
    # The interpreter this cell ran in (a variant may have its own: --python).
    rec = new_record(cell, "failed", python={"executable": sys.executable,
                                             "version": sys.version.split()[0]})
    device_state, device_memory, memory_source = _device_hooks(run.device)
    monitor = Monitor(interval_s=run.prof.get("sample_interval_s", 0.1),
                      device_state=device_state, device_memory=device_memory,
                      device_memory_source=memory_source).start()
    cache = Path(run.cache_dir)
    try:
        if run.memory_limit_mb:
            rec["memory_limit_mb"] = run.memory_limit_mb
            _limit_address_space(run.memory_limit_mb)
        conv = converters.get(cell.variant)
        spec = spec_for(cell)
        av = conv.available(run.options)
        if not av.ok:
            rec.update(status="skipped", reason=av.reason)
            return rec
        if prepared is not None:
            # The baseline is the branch's before it built the model: the delta is the
            # model's footprint, as in a process that built it itself.
            monitor.rebaseline(prepared.baseline_mb, prepared.sys_baseline_mb)
            conv.after_fork()
            art, predictor = prepared.artifact, prepared.predictor
            rec.update(convert_s=round(art.convert_s + prepared.warm_s, 3) if first_of_group
                       else 0.0, artifact_cached=art.cached if first_of_group else True,
                       artifact=art.path, artifact_sha256=art.sha256(),
                       load_s=round(prepared.load_s, 3) if first_of_group else 0.0)
        else:
            monitor.rebaseline()
            art = conv.convert(spec, cache)
            rec.update(convert_s=round(art.convert_s, 3), artifact_cached=art.cached,
                       artifact=art.path, artifact_sha256=art.sha256())
            t = time.perf_counter()
            predictor = conv.load(art, spec)
            rec["load_s"] = round(time.perf_counter() - t, 3)
        data = PreparedData(Path(inp.data_folder), inp.mean, inp.std)
        rec["cold_start_ms"] = round(measure.cold_start(predictor, data.batch(0, 1)), 3)
        rec["variant_meta"] = {**art.meta, **getattr(predictor, "meta", {}),
                               **(prepared.meta() if prepared is not None else {})}
        if cell.task != "parity":
            rec["equivalent"], rec["equivalence"] = cell.equivalent, cell.equivalence
            if cell.int8_cost is not None:    # what this INT8 model costs (its parity cell)
                rec["int8_cost"] = cell.int8_cost
        monitor.measure_idle(run.prof["idle_s"])
        t = time.perf_counter()
        status, fields, reason = _measure(cell, conv, art, predictor, spec, data, cache, monitor,
                                          _partial_writer(partial_out, rec, monitor, t_start))
        rec["measure_s"] = round(time.perf_counter() - t, 3)
        # A cached artifact the predictor found corrupted and rebuilt while measuring (TVM
        # compiles other batch sizes on first use) is said in the record as at convert.
        rebuilt = getattr(predictor, "meta", {}).get("cache_rebuilt")
        if rebuilt:
            rec["variant_meta"]["cache_rebuilt"] = rebuilt
        if conv.compiles_in_process:   # JIT: the graphs this cell's own process compiled
            rec["variant_meta"]["graphs_compiled_in_cell"] = \
                (graphs_compiled() or 0) - (graphs0 or 0)
        rec.update(fields)
        rec.update(status=status, reason=reason)
        if _wants_drift(cell, conv, rec):
            t = time.perf_counter()
            drift = conv.diagnose(art, spec, data.batch(0, min(DRIFT_IMAGES, len(data))))
            if drift is not None:
                rec["int8_cost"]["layer_drift"] = {**drift,
                                                   "s": round(time.perf_counter() - t, 3)}
        if prepared is None:      # a prepared predictor is the branch's: the next cell's too
            predictor.close()
    except converters.SkipVariant as e:
        rec.update(status="skipped", reason=str(e))
    except Exception as e:  # noqa: BLE001 - one cell's failure is a record, not a crash
        from .measure import is_oom

        rec.update(status="failed", reason=("out of memory: " if is_oom(e) else "")
                   + first_line(e, 500), traceback=_tail())
    finally:
        monitor.stop()
        # Over the window behind the record's figure (measure sets monitor.figure_window).
        rec.update(_telemetry_fields(monitor))
        states = monitor.device_states()
        if states:
            rec["device_states"] = states
        rec["wall_s"] = round(time.perf_counter() - t_start, 3)
    return rec


def _limit_address_space(mb: int) -> None:
    """Cap this cell's process at ``mb`` MiB of address space (RLIMIT_AS). Allocations past
    it fail inside the cell (MemoryError, "cannot allocate"), which the throughput search
    treats as out of memory. Set in the cell's own process, so no other cell shares it."""
    import resource

    cap = int(mb) << 20
    in_use = _address_space_bytes()
    if in_use is not None and in_use >= cap:
        raise MemoryError(f"out of memory: --cell-memory-limit {mb} MiB is below what the cell "
                          f"process already maps ({in_use >> 20} MiB)")
    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))


def _address_space_bytes() -> int | None:
    """VmSize of this process, from /proc (Linux), or None."""
    try:
        for line in Path("/proc/self/status").read_text(encoding="utf-8").splitlines():
            if line.startswith("VmSize:"):
                return int(line.split()[1]) << 10
    except OSError:
        pass
    return None


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    _die_with_parent()
    if argv and argv[0] == "--probe":
        probe(json.loads(Path(argv[1]).read_text(encoding="utf-8")), Path(argv[2]))
        return 0
    cell = Cell.from_json(json.loads(Path(argv[0]).read_text(encoding="utf-8")))
    # Fault injection for the isolation tests: a real hard crash (SIGSEGV) of this worker.
    if os.environ.get("EDGEBENCH_TEST_CRASH") == f"{cell.model}/{cell.variant}/{cell.task}":
        os.kill(os.getpid(), signal.SIGSEGV)
    from .cell import partial_path

    out = Path(argv[1])
    atomic_write_json(out, run_cell(cell, partial_path(out)), indent=None)
    return 0


if __name__ == "__main__":
    sys.exit(main())
