"""NHWC means over height and width computed as a GEMV (``--spatial-mean matmul``)."""
from __future__ import annotations

CHOICES = ("reduce", "matmul")      # --spatial-mean
MIN_PIXELS = 28 * 28


def rewrite(mod, min_pixels: int = MIN_PIXELS):
    """``mean(x, axis=[1, 2])`` of a static (N, H, W, C) float32 tensor with at least
    ``min_pixels`` pixels (H*W) -> ``reshape`` to (N, H*W, C), a matmul by a constant
    (N, 1, H*W) row of 1/(H*W), ``reshape`` back. In NHWC the reduction's channel loop sits
    outside its pixel loops and no schedule vectorises it; the GEMV's tiling does. Below
    ``min_pixels`` the reduction is faster (experiments/FINDINGS.md#spatial-means-as-a-gemv)."""
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
