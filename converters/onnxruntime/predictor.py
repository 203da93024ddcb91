"""``OrtPredictor``: one ONNX Runtime session as a ``Predictor``. On the CPU a plain
``session.run``; behind a GPU EP an IO binding, with the host->device copy, the run and the
device->host copy all inside the timed call (the same boundary as every other variant). ORT's
allocation failures become ``OutOfMemory``.
"""
from __future__ import annotations

import numpy as np

from converters.base import OutOfMemory, Predictor, host_outputs

from .export import INPUT_NAME


class OrtPredictor(Predictor):
    def __init__(self, sess, device: str, meta: dict):
        import onnxruntime as ort

        self.sess = sess
        self.ort = ort
        self.device = device               # "cpu" or "cuda"
        self.meta = meta
        # Every output, in the model's order: one comes back as an array, several as a tuple.
        self.out_names = [o.name for o in sess.get_outputs()]
        if device == "cuda":
            self.binding = sess.io_binding()

    def __call__(self, batch: np.ndarray) -> np.ndarray:
        try:
            if self.device == "cpu":
                return host_outputs(self.sess.run(self.out_names, {INPUT_NAME: batch}))
            # GPU: the host->device copy, run and device->host copy all sit inside the call,
            # the same boundary as every other variant.
            b = self.binding
            b.clear_binding_inputs()
            b.clear_binding_outputs()
            x = self.ort.OrtValue.ortvalue_from_numpy(batch, "cuda", 0)
            b.bind_ortvalue_input(INPUT_NAME, x)
            for name in self.out_names:
                b.bind_output(name, "cpu")
            self.sess.run_with_iobinding(b)
            return host_outputs(b.copy_outputs_to_cpu())
        except Exception as e:  # noqa: BLE001
            msg = str(e).lower()
            if "out of memory" in msg or "failed to allocate" in msg or "bad_alloc" in msg:
                raise OutOfMemory(str(e)) from e
            raise
