"""LoadGen's query sample library over the run's preprocessed images, and the system under
test over a variant's ``Predictor``.

- The library keeps the samples LoadGen asks to load as normalised float32 CHW arrays, so a
  query's timed region holds what every other task's does: the predictor call, plus the
  stacking of the query's samples into one batch and the arg-max of the logits.
- Responses are each sample's top-1 class (int64), as MLPerf's ResNet-50 reference answers;
  accuracy mode's ``mlperf_log_accuracy.json`` holds them, and ``accuracy_top1`` scores them.
- SingleStream: one sample per query. MultiStream: the query's 8 samples as one batch where
  the predictor runs batch 8 (else in its largest batch below, said in the record). Offline:
  one query of every sample, run in batches of the chosen size and completed batch by batch.
- A predictor exception inside LoadGen's callback is caught (it must not unwind through
  LoadGen's C++ thread): the query's samples are completed empty so LoadGen can end, and the
  first error is raised again after the test.
"""
from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import numpy as np


class SampleLibrary:
    def __init__(self, data, total: int):
        self.data = data
        self.total = total
        self.loaded: dict[int, np.ndarray] = {}

    def load(self, indices) -> None:
        for i in indices:
            if i not in self.loaded:
                self.loaded[i] = self.data.batch(int(i), 1)[0]

    def unload(self, indices) -> None:
        for i in indices:
            self.loaded.pop(i, None)

    def batch(self, indices: list[int]) -> np.ndarray:
        if len(indices) == 1:
            return self.loaded[indices[0]][None]
        return np.stack([self.loaded[i] for i in indices])


class SystemUnderTest:
    """Answers LoadGen's queries with ``predictor`` in batches of ``batch`` samples."""

    def __init__(self, lg, predictor, library: SampleLibrary, batch: int):
        self.lg, self.predictor, self.library, self.batch = lg, predictor, library, batch
        self.error: BaseException | None = None
        self.samples = 0
        self.calls = 0
        self._lock = threading.Lock()

    def _complete(self, chunk, top1: np.ndarray | None) -> None:
        lg = self.lg
        if top1 is None:
            lg.QuerySamplesComplete([lg.QuerySampleResponse(q.id, 0, 0) for q in chunk])
            return
        ptr = top1.__array_interface__["data"][0]
        lg.QuerySamplesComplete([lg.QuerySampleResponse(q.id, ptr + k * 8, 8)
                                 for k, q in enumerate(chunk)])   # top1 lives until here

    def run_chunk(self, chunk, predictor=None) -> None:
        if self.error is not None:
            self._complete(chunk, None)
            return
        try:
            x = self.library.batch([q.index for q in chunk])
            logits = (predictor or self.predictor)(x)
            top1 = np.ascontiguousarray(np.asarray(logits).argmax(1), dtype=np.int64)
        except BaseException as e:  # noqa: BLE001 - must not unwind through LoadGen's thread
            with self._lock:
                self.error = self.error or e
            self._complete(chunk, None)
            return
        with self._lock:
            self.samples += len(chunk)
            self.calls += 1
        self._complete(chunk, top1)

    def issue(self, queries) -> None:
        queries = list(queries)
        for s in range(0, len(queries), self.batch):
            self.run_chunk(queries[s:s + self.batch])

    def flush(self) -> None:
        pass


def start(lg, sut_impl, library: SampleLibrary, settings, folder: Path,
          performance_count: int) -> None:
    """Run one LoadGen test with its logs in ``folder``, which is also the working directory
    while it runs: LoadGen silently reads an ``audit.config`` from its working directory, and
    this folder is new and the cell's own, so no stray file can change a result."""
    folder.mkdir(parents=True, exist_ok=True)
    stray = folder / "audit.config"
    if stray.exists():
        raise RuntimeError(f"{stray} exists: LoadGen would apply it; the scenario folder must be new")
    log = lg.LogSettings()
    log.log_output.outdir = str(folder)
    log.log_output.copy_summary_to_stdout = False
    log.enable_trace = False
    sut = lg.ConstructSUT(sut_impl.issue, sut_impl.flush)
    qsl = lg.ConstructQSL(library.total, performance_count, library.load, library.unload)
    cwd = os.getcwd()
    os.chdir(folder)
    try:
        lg.StartTestWithLogSettings(sut, qsl, settings, log)
    finally:
        os.chdir(cwd)
        lg.DestroyQSL(qsl)
        lg.DestroySUT(sut)
    trace = folder / "mlperf_log_trace.json"
    if trace.is_file() and trace.stat().st_size == 0:
        trace.unlink()
    if sut_impl.error is not None:
        raise sut_impl.error


def accuracy_top1(path: Path, labels: np.ndarray) -> dict:
    """Top-1 (percent, rounded as the accuracy task rounds) from LoadGen's accuracy log: each
    entry's data is the sample's top-1 class as int64."""
    entries = json.loads(Path(path).read_text(encoding="utf-8") or "[]")
    preds: dict[int, int] = {}
    for e in entries:
        raw = bytes.fromhex(e["data"])
        if len(raw) >= 8:
            preds[int(e["qsl_idx"])] = int(np.frombuffer(raw[:8], dtype=np.int64)[0])
    idx = np.array(sorted(preds), dtype=np.int64)
    if not idx.size:
        return {"n_images": 0, "top1": None}
    pred = np.array([preds[i] for i in idx])
    y = np.asarray(labels)[idx]
    known = y >= 0
    top1 = (round(100.0 * float((pred[known] == y[known]).mean()), 4) if known.any() else None)
    return {"n_images": int(idx.size), "n_labelled": int(known.sum()), "top1": top1}
