"""Conv output channels padded to a whole number of vectors, where that costs little.

The design space tiles output channels at the widest vector dividing them, so a 1000-class
conv gets 8-float tiles on AVX-512 (experiments/FINDINGS.md#conv-output-channels-padded-to-whole-vectors).
``rewrite`` turns ``add(conv2d(x, W), bias)`` (constant W and bias, groups 1) whose C output
channels are not whole vectors of L lanes, where padding adds at most C/16, into
``strided_slice(add(conv2d(x, W'), bias'), channels [0, C))`` with W', bias' zero-padded to
ceil(C / L) * L; the slice fuses with what follows. ``pad-pair`` pads to whole pairs of
vectors where that too adds at most C/16, for the two-vector sketch.

Runs on the imported NCHW module, before ConvertLayout and concat_split.
"""
from __future__ import annotations

CHOICES = ("keep", "pad", "pad-pair")
PADDED = ("pad", "pad-pair")       # the choices that rewrite
MAX_PAD_FRACTION = 1 / 16


def float_lanes(target) -> int | None:
    """float32 lanes of ``target``'s widest vector (LLVM CPU targets only, else None)."""
    from .design_space import target_vector_bits

    if target is None or target.kind.name != "llvm":
        return None
    return target_vector_bits(target) // 32


def padded(channels: int, lanes: int) -> int | None:
    """The channel count to pad ``channels`` to for ``lanes``-wide vectors, or None where
    they are whole already or padding would add more than ``MAX_PAD_FRACTION``."""
    if lanes <= 1 or channels % lanes == 0:
        return None
    to = -(-channels // lanes) * lanes
    return to if (to - channels) <= channels * MAX_PAD_FRACTION else None


def padded_to(channels: int, lanes: int, pair: bool = False) -> int | None:
    """What ``rewrite`` pads ``channels`` to: ``padded``'s count, or with ``pair`` that for
    ``2 * lanes`` where it too adds little; None where they are whole vectors already."""
    to = padded(channels, lanes)
    if to is None or not pair:
        return to
    return padded(channels, 2 * lanes) or to


def _const_value(value_of, expr):
    """numpy value of ``expr`` if it is a constant, or a variable bound to a constant or to a
    reshape of one (the torch importer's conv bias), else None."""
    import tvm
    from tvm import relax

    from ..relax_rewrite import const_np as _const_np

    if isinstance(expr, relax.Var):
        expr = value_of(expr)
    if isinstance(expr, relax.Call) and getattr(expr.op, "name", None) == "relax.reshape":
        inner = expr.args[0]
        if isinstance(inner, relax.Var):
            inner = value_of(inner)
        expr = inner
    if isinstance(expr, tvm.ir.expr.Constant):
        return _const_np(expr)
    return None


def rewrite(mod, target, pair: bool = False):
    """``mod`` (NCHW Relax, constant weights) with every eligible conv + bias padded to
    ``padded_to`` channels and sliced back."""
    import numpy as np
    from tvm import relax

    from ..relax_rewrite import dense_conv2d, rewrite_calls, tidy

    lanes = float_lanes(target)
    if not lanes:
        return mod

    def rule(bb, call, value_of):
        if getattr(call.op, "name", None) != "relax.add" or not isinstance(call.args[0],
                                                                           relax.Var):
            return None
        conv = value_of(call.args[0])
        if not isinstance(conv, relax.Call) or not dense_conv2d(conv, "NCHW"):
            return None
        attrs = conv.attrs
        weight = _const_value(value_of, conv.args[1])
        bias = _const_value(value_of, call.args[1])
        if weight is None or bias is None or weight.dtype != np.float32:
            return None
        channels = weight.shape[0]
        if bias.size != channels or (bias.ndim == 4 and bias.shape != (1, channels, 1, 1)):
            return None
        to = padded_to(channels, lanes, pair)
        if to is None:
            return None
        w = np.zeros((to, *weight.shape[1:]), np.float32)
        w[:channels] = weight
        b = np.zeros((1, to, 1, 1), np.float32)
        b[0, :channels, 0, 0] = bias.reshape(-1)
        out = bb.emit(relax.Call(conv.op, (conv.args[0], relax.const(w)), attrs))
        out = bb.emit(relax.op.add(out, relax.const(b)))
        return relax.op.strided_slice(out, axes=[1], begin=[0], end=[channels])

    return tidy(rewrite_calls(mod, rule, lookup=True))
