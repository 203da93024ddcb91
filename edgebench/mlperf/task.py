"""One scenario cell (``singlestream``, ``multistream``, ``offline``): LoadGen drives the
variant's predictor, its logs are kept in the run folder, and the record gets the metric,
LoadGen's verdict and what failed, its version and the settings used. In accuracy mode (run
after the performance test where the labels are real and the scenario is Offline, or in every
scenario cell with ``--mlperf-accuracy``) the top-1 of LoadGen's accuracy log is recorded;
it equals the ``accuracy`` task's on the same images (tests/test_mlperf.py checks it)."""
from __future__ import annotations

import shutil
from pathlib import Path

from . import SCENARIOS, mllog, settings
from .harness import SampleLibrary, SystemUnderTest, accuracy_top1, start
from .multi import MultiDeviceSUT

PERFORMANCE_SAMPLES = 1024     # what MLPerf's ResNet-50 keeps in memory


def _batch(task: str, predictor, prof: dict, seed: dict, options: dict) -> tuple[int, str]:
    from ..measure import fit_batch, pass_batch

    if task == "singlestream":
        return 1, "one sample per query"
    if task == "multistream":
        # at a size the predictor runs at its best (a TVM build's tuned sizes), as the passes
        b = pass_batch(predictor, settings.MULTISTREAM_SAMPLES)
        if b == settings.MULTISTREAM_SAMPLES:
            return b, "the query's 8 samples as one batch"
        if b == fit_batch(predictor, settings.MULTISTREAM_SAMPLES):
            return b, f"the predictor runs no batch 8: the query in batches of {b}"
        return b, (f"the predictor is tuned for no batch 8 (it would run one with untuned "
                   f"kernels): the query in batches of {b}")
    if options.get("mlperf_offline_batch"):
        want, why = options["mlperf_offline_batch"], "--mlperf-offline-batch"
    elif seed.get("best_batch"):
        want, why = seed["best_batch"], "the variant's best throughput batch in this run"
    else:   # the accuracy task's own batch (a TVM build's tuned size)
        want = pass_batch(predictor, prof["accuracy_batch"])
        why = "no throughput cell in this run: the accuracy batch"
    b = fit_batch(predictor, int(want))
    return b, f"batch {b} ({why}{'' if b == want else f', {want} fitted to the predictor'})"


def run(cell, predictor, data, monitor, folder: Path, labels_real: bool) -> tuple[str, dict, str]:
    import mlperf_loadgen as lg

    run_s, task = cell.run, cell.task
    options, seed = run_s.options, dict(cell.mlperf_seed or {})
    settings.check_options(options)
    if folder.exists():           # a rerun of the cell (--resume): LoadGen's logs start anew
        shutil.rmtree(folder)
    total = len(data)
    perf_count = min(total, PERFORMANCE_SAMPLES)
    library = SampleLibrary(data, total)
    batch, batching = _batch(task, predictor, run_s.prof, seed, options)
    devices = getattr(predictor, "offline_devices", None) if task == "offline" else None
    ts, used, not_valid = settings.build(lg, task, run_s.profile, cell.model, seed, options)
    used["batching"] = batching
    sut = (MultiDeviceSUT(lg, devices, library, batch) if devices
           else SystemUnderTest(lg, predictor, library, batch))
    perf_dir = folder / "performance"
    try:
        with monitor.window() as w:
            start(lg, sut, library, ts, perf_dir, perf_count)
            if devices:
                sut.wait()
            w.n_items = sut.samples
        monitor.figure_window = w
    finally:
        if devices:
            sut.close()
    values, errors = mllog.read(perf_dir / "mlperf_log_detail.txt")
    result = mllog.summarize(SCENARIOS[task], values)
    fields = {"mlperf": {**result, "settings": used,
                         "mlperf_valid": (result["validity"] == "VALID" and not not_valid),
                         "not_mlperf_valid_because": not_valid or None,
                         "logs": {"summary": str(perf_dir / "mlperf_log_summary.txt"),
                                  "detail": str(perf_dir / "mlperf_log_detail.txt")},
                         "sut_calls": sut.calls, "samples_completed": sut.samples},
              "window_s": round(w.t1 - w.t0, 3)}
    if devices:
        fields["mlperf"]["device_shares"] = sut.share_record()
    if errors:
        return "failed", fields, "LoadGen reported errors: " + "; ".join(errors)[:500]
    if result["value"] is None:
        return "failed", fields, "LoadGen's detail log has no result for this scenario"
    if options.get("mlperf_accuracy") or (labels_real and task == "offline"):
        fields["mlperf"]["accuracy"] = _accuracy(lg, cell, predictor, data, library, folder,
                                                 seed, options)
    return "ok", fields, ""


def _accuracy(lg, cell, predictor, data, library, folder: Path, seed: dict, options: dict) -> dict:
    """LoadGen's AccuracyOnly mode: every sample once, its answer logged; top-1 from the log.
    Offline runs at the accuracy task's batch, so the logits are the very ones it scores."""
    from ..measure import pass_batch

    task = cell.task
    if task == "offline":
        batch = pass_batch(predictor, cell.run.prof["accuracy_batch"])
    else:
        batch = _batch(task, predictor, cell.run.prof, seed, options)[0]
    ts, used, _ = settings.build(lg, task, cell.run.profile, cell.model, seed, options,
                                 accuracy=True)
    acc_dir = folder / "accuracy"
    sut = SystemUnderTest(lg, predictor, library, batch)
    start(lg, sut, library, ts, acc_dir, min(len(data), PERFORMANCE_SAMPLES))
    got = accuracy_top1(acc_dir / "mlperf_log_accuracy.json", data.labels)
    return {**got, "batch": batch, "accuracy_json": str(acc_dir / "mlperf_log_accuracy.json"),
            "detail": str(acc_dir / "mlperf_log_detail.txt")}
