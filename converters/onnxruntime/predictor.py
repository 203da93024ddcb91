"""``OrtPredictor``: one ONNX Runtime session as a ``Predictor``. On the CPU a plain
``session.run``; behind a GPU EP an IO binding, with the host->device copy, the run and the
device->host copy all inside the timed call (the same boundary as every other variant). ORT's
allocation failures become ``OutOfMemory``.
"""
from __future__ import annotations

import numpy as np

from converters.base import OutOfMemory, Predictor

from .export import INPUT_NAME, OUTPUT_NAME


class OrtPredictor(Predictor):
    def __init__(self, sess, device: str, meta: dict):
        import onnxruntime as ort

        self.sess = sess
        self.ort = ort
        self.device = device               # "cpu" or "cuda"
        self.meta = meta
        self.out_names = [OUTPUT_NAME]
        if device == "cuda":
            self.binding = sess.io_binding()

    def __call__(self, batch: np.ndarray) -> np.ndarray:
        try:
            if self.device == "cpu":
                return self.sess.run(self.out_names, {INPUT_NAME: batch})[0]
            # GPU: the host->device copy, run and device->host copy all sit inside the call,
            # the same boundary as every other variant.
            b = self.binding
            b.clear_binding_inputs()
            b.clear_binding_outputs()
            x = self.ort.OrtValue.ortvalue_from_numpy(batch, "cuda", 0)
            b.bind_ortvalue_input(INPUT_NAME, x)
            b.bind_output(OUTPUT_NAME, "cpu")
            self.sess.run_with_iobinding(b)
            return b.copy_outputs_to_cpu()[0]
        except Exception as e:  # noqa: BLE001
            msg = str(e).lower()
            if "out of memory" in msg or "failed to allocate" in msg or "bad_alloc" in msg:
                raise OutOfMemory(str(e)) from e
            raise
