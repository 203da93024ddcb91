"""The jitted forward pass and the Predictor the harness times.

Params are jit *arguments*, not closed-over constants: baking hundreds of MB of weights into
the HLO as literals makes XLA constant-fold them and compiles far slower. Each batch shape
is compiled explicitly (``lower().compile()``) the first time it is seen, and that compile
time is recorded in ``meta["compile_s"]``, so a compile is never mistaken for a run. Matmuls and convs run at full FP32 ("highest"): on GPUs XLA would
otherwise use TF32, which is not the FP32 variant this claims to be.
"""
from __future__ import annotations

import time

import numpy as np

from converters.base import OutOfMemory, Predictor

MATMUL_PRECISION = "highest"


def make_forward(module):
    """(params, NCHW float32 batch) -> logits; the NHWC transpose is inside the jit."""
    import jax.numpy as jnp

    def forward(params, batch_nchw):
        return module.apply({"params": params}, jnp.transpose(batch_nchw, (0, 2, 3, 1)))

    return forward


def compile_forward(jitted, params, input_shape: tuple):
    """Ahead-of-time compile ``jitted`` for one input shape: (executable, seconds).
    ``params`` may be arrays or ShapeDtypeStructs: only shapes are needed."""
    import jax

    shapes = jax.tree.map(lambda a: jax.ShapeDtypeStruct(a.shape, a.dtype), params)
    t0 = time.perf_counter()
    with jax.default_matmul_precision(MATMUL_PRECISION):
        executable = jitted.lower(shapes, jax.ShapeDtypeStruct(input_shape, np.float32)).compile()
    return executable, time.perf_counter() - t0


def shape_key(shape) -> str:
    return "x".join(map(str, shape))


def _is_oom(error: Exception) -> bool:
    text = str(error)
    return "RESOURCE_EXHAUSTED" in text or "Out of memory" in text or "out of memory" in text


def _move_to_device(params: dict) -> dict:
    """device_put leaf by leaf, dropping each host array as soon as it is copied, so the
    peak holds one extra layer, not a second copy of the whole model. Empties ``params``."""
    import jax

    moved = {}
    for key in list(params):
        value = params.pop(key)
        moved[key] = _move_to_device(value) if isinstance(value, dict) else jax.device_put(value)
    return moved


class JaxPredictor(Predictor):
    def __init__(self, module, params, precompiled: dict | None = None):
        import jax

        self._jitted = jax.jit(make_forward(module))
        self._params = _move_to_device(params)
        self._executables = dict(precompiled or {})     # input shape -> executable
        self.meta = {"compile_s": {}, "matmul_precision": MATMUL_PRECISION}

    def compile(self, input_shape: tuple) -> float:
        """Compile for ``input_shape`` now (the first call of a new shape would otherwise)."""
        try:
            executable, seconds = compile_forward(self._jitted, self._params, input_shape)
        except Exception as e:  # noqa: BLE001 - only OOM is translated, the rest re-raised
            if _is_oom(e):
                raise OutOfMemory(str(e)) from e
            raise
        self._executables[tuple(input_shape)] = executable
        self.meta["compile_s"][shape_key(input_shape)] = round(seconds, 4)
        return seconds

    def __call__(self, batch: np.ndarray) -> np.ndarray:
        batch = np.ascontiguousarray(batch, dtype=np.float32)
        if batch.shape not in self._executables:
            self.compile(batch.shape)
        try:
            logits = self._executables[batch.shape](self._params, batch)
            logits.block_until_ready()
        except Exception as e:  # noqa: BLE001
            if _is_oom(e):
                raise OutOfMemory(str(e)) from e
            raise
        return np.asarray(logits, dtype=np.float32)

    def profile_layers(self, batch: np.ndarray, runs: int) -> dict:
        from .profile_layers import profile

        return profile(self, batch, runs)

    def close(self) -> None:
        self._executables.clear()
        self._params = None
