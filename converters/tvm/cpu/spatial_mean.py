"""NHWC means over height and width computed as a GEMV (``--spatial-mean matmul``)."""
from __future__ import annotations

CHOICES = ("reduce", "matmul")      # --spatial-mean
MIN_PIXELS = 28 * 28


def rewrite(mod, min_pixels: int = MIN_PIXELS):
    """``mean(x, axis=[1, 2])`` of a static (N, H, W, C) float32 tensor with at least
    ``min_pixels`` pixels (H*W) -> ``reshape`` to (N, H*W, C), a matmul by a constant
    (N, 1, H*W) row of 1/(H*W), ``reshape`` back.

    In NHWC the reduction's loop over the channels (its only spatial loop) sits outside the
    loops over the pixels, so every step of the sum reads a float C floats after the last,
    and MetaSchedule's CPU space has no schedule that brings the channels inside to vectorise
    it: EfficientNet-B0's squeeze-excitation means took 1134 us an inference against ONNX
    Runtime's 527, the largest (112x112x32) 489 us against 52. As a matmul the same sum is a
    GEMV, which the matmul tiling (channels at the vector width, innermost) covers. Each of
    EfficientNet-B0's means tuned at 16 trials in both forms (``experiments/
    tvm-spatial-mean-2026-11-27``): from 28x28 up the GEMV took 0.16-0.38x the reduction's
    time (112x112x32: 60 against 381 us); at 14x14 and 7x7, whose strided reads stay in
    cache, the reduction took 4-13 us and the GEMV 1.7-2.9x that. Hence ``min_pixels``.
    The reshapes are views in the built module. Sums in another order: within 1e-7 of the
    reduction on unit-scale data."""
    import numpy as np
    from tvm import relax

    from ..relax_rewrite import rewrite_calls

    def rule(bb, call):
        if getattr(call.op, "name", None) != "relax.mean":
            return None
        t = call.args[0].ty
        try:
            shape = [int(v) for v in t.shape.values]
        except (TypeError, AttributeError, ValueError):
            return None                          # a dynamic shape
        if str(t.dtype) != "float32" or len(shape) != 4 or call.attrs["axis"] is None:
            return None
        if sorted(int(a) % 4 for a in call.attrs["axis"]) != [1, 2]:
            return None
        n, h, w, c = shape
        if h * w < min_pixels:
            return None
        flat = bb.emit(relax.op.reshape(call.args[0], (n, h * w, c)))
        row = relax.const(np.full((n, 1, h * w), 1.0 / (h * w), dtype="float32"))
        out = bb.emit(bb.call_te(_row_times, row, flat, primfunc_name_hint="spatial_mean"))
        return relax.op.reshape(out, (n, 1, 1, c) if bool(call.attrs["keepdims"]) else (n, c))

    return rewrite_calls(mod, rule)


def _row_times(row, x):
    """(N, 1, K) x (N, K, C) -> (N, 1, C): a matmul's loop nest (named ``spatial_mean`` so
    that profiles count it with the pooling, as ORT's ReduceMean)."""
    from tvm import te

    k = te.reduce_axis((0, x.shape[1]), name="k")
    return te.compute((x.shape[0], 1, x.shape[2]),
                      lambda b, i, j: te.sum(row[b, i, k] * x[b, k, j], axis=k),
                      name="spatial_mean")
