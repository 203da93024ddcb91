"""Conv output channels padded to a whole number of vectors, where that costs little.

In NHWC a conv vectorises over its output channels, and the CPU design space tiles them at
the widest vector whose lanes divide them (design_space.py). SqueezeNet's classifier, a 1x1
conv to 1000 classes, gets 8-float tiles on AVX-512: 16 does not divide 1000. Tuned alone at
126 trials on a 2-core Zen 4 it took 856 us with 1000 channels and 761 us with 1008 (16-float
tiles; 0.889x) for 0.8 % more arithmetic (``experiments/tvm-pad-channels-2026-11-28/``,
``head_alone.py``). ONNX Runtime's conv, which blocks channels by 16 itself (NCHWc), took
784-791 us in the network (``experiments/tvm-concat-split-2026-11-28/runs/profile.json``).

``rewrite`` turns ``add(conv2d(x, W), bias)`` (constant W and bias, groups 1) whose output
channels C are not a multiple of the target's float lanes L, where padding adds at most
C/16, into ``strided_slice(add(conv2d(x, W'), bias'), channels [0, C))``, W' and bias'
zero-padded to C' = ceil(C / L) * L. The conv and its bias stay one kernel; the slice fuses
with what follows (ReLU, the global mean). Convs with few channels (24 -> 32 would add a
third) are left alone. On AVX2 (8 lanes) 1000 is already whole, and nothing changes.

``pad-pair`` (for ``--design-space multi-vector``) pads such a conv to whole pairs of vectors
instead, where that too adds at most C/16: 1000 -> 1024 on AVX-512 (2.4 %, against 0.8 % for
1008), so the multi-vector space's two-vector sketch, which needs a pair to divide the
channels, applies to SqueezeNet's classifier. Convs whose channels are whole vectors already
are left alone, as with ``pad``.

Run on the imported NCHW module, before ConvertLayout (which converts the new conv, add and
slice like the others) and before concat_split (which then splits the padded conv).
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
    """What ``rewrite`` pads ``channels`` to: ``padded``'s count, or with ``pair`` the count
    for ``2 * lanes`` where that too adds at most ``MAX_PAD_FRACTION``; None where
    ``channels`` are whole vectors already (those stay as they are either way)."""
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
    """``mod`` (NCHW Relax, weights bound as constants) with every eligible conv + bias padded
    to whole vectors of ``target`` (with ``pair``, to whole pairs of them where that adds
    little too: ``padded_to``) and sliced back (see the module's docstring)."""
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
