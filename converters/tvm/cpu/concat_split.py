"""Channel concatenations moved into their consumers, so that no kernel copies them.

SqueezeNet's Fire modules (and Inception's branches) end in a concat of two convs' outputs
along the channels. In TVM each concat is a kernel of its own that reads both branches and
writes them again: on the Zen 4, SqueezeNet 1.1's eight concats took 0.74 ms of a 5.65 ms
call (``experiments/tvm-six-models-zen4-2026-11-27/runs/squeezenet1_1/profile.json``), each
2.0-3.0x slower in the network than alone. What consumes them is linear or
channel-wise, so the copy can go:

- ``conv2d(concat([a, b], channels), W)`` -> ``conv2d(a, W_a) + conv2d(b, W_b)``, the
  weight's input channels split to match (groups 1, constant weight). FuseOps fuses the add
  (and the bias and ReLU after it) into the second conv. The first conv's output is written
  and read again in place of the concat, so this is done only where that output is smaller
  than the concat: a Fire module's squeeze conv (128 -> 16 channels), not SqueezeNet's
  classifier (512 -> 1000), which split in two halves tuned worse than whole
  (``experiments/tvm-pad-channels-2026-11-28/``).
- ``max_pool2d`` / ``avg_pool2d`` (``concat([a, b], channels))`` -> ``concat([pool(a),
  pool(b)], channels)``: a pool treats each channel alone. The concat now comes after the
  pool, a quarter of the size, where the conv rule above removes it too.

Run on the imported NCHW module (before ConvertLayout, which then converts the new convs
and pools like the others). The sums run in another order: parity within float32 rounding.
"""
from __future__ import annotations

CHOICES = ("keep", "split")
POOLS = ("relax.nn.max_pool2d", "relax.nn.avg_pool2d")


def _channel_concat_parts(value_of, var):
    """(tensor, channels) of each part a concat along NCHW's channel axis joins, if ``var``
    is bound to one (with static channel counts), else None."""
    from tvm import relax

    value = value_of(var)
    if not isinstance(value, relax.Call) or getattr(value.op, "name", None) != "relax.concat":
        return None
    shape = getattr(var.ty, "shape", None)
    ndim = len(shape.values) if shape is not None else 0
    axis = value.attrs["axis"]
    if ndim != 4 or axis is None or int(axis) % 4 != 1:
        return None
    parts = value.args[0]
    if isinstance(parts, relax.Var):
        parts = value_of(parts)
    if not isinstance(parts, relax.Tuple) or len(parts.fields) < 2:
        return None
    try:
        return [(p, int(p.ty.shape.values[1])) for p in parts.fields]
    except (AttributeError, TypeError, IndexError, ValueError):
        return None


def rewrite(mod):
    """``mod`` (NCHW Relax, weights bound as constants) with channel concats moved into the
    convs and pools that consume them (see the module's docstring), and the copies that no
    longer have a user removed."""
    import tvm
    from tvm import relax

    from ..relax_rewrite import const_np as _const_np
    from ..relax_rewrite import dense_conv2d, rewrite_calls, tidy

    def conv_over_parts(bb, call, parts):
        if (not dense_conv2d(call, "NCHW", out_layout=False)
                or not isinstance(call.args[1], tvm.ir.expr.Constant)):
            return None
        attrs = call.attrs
        weight = _const_np(call.args[1])
        if sum(width for _, width in parts) != weight.shape[1]:
            return None
        if _elements(call.ty) >= sum(_elements(p.ty) for p, _ in parts):
            return None              # the partial sum would move more than the concat
        out, start = None, 0
        for part, width in parts:
            w = relax.const(weight[:, start:start + width].copy())
            start += width
            term = bb.emit(relax.Call(call.op, (part, w), attrs))
            out = term if out is None else bb.emit(relax.op.add(out, term))
        return out

    def pools_over_parts(bb, call, parts):
        if call.attrs["layout"] != "NCHW" or call.attrs["out_layout"] != "NCHW":
            return None
        pooled = [bb.emit(relax.Call(call.op, (p,), call.attrs)) for p, _ in parts]
        return relax.op.concat(pooled, axis=1)

    def rule(bb, call, value_of):
        name = getattr(call.op, "name", None)
        if name not in ("relax.nn.conv2d", *POOLS):
            return None
        parts = _channel_concat_parts(value_of, call.args[0])
        if parts is None:
            return None
        if name == "relax.nn.conv2d":
            return conv_over_parts(bb, call, parts)
        return pools_over_parts(bb, call, parts)

    # CanonicalizeBindings first: torch's max_pool2d comes as a tuple (values, indices), and a
    # conv reads the values through a TupleGetItem until it is canonicalised. A pool's new
    # concat is visible to its conv only in the next round, hence the loop (two rounds for
    # SqueezeNet, a third finds nothing).
    mod = tidy(mod)
    for _ in range(8):
        before = _calls(mod)
        mod = tidy(rewrite_calls(mod, rule, lookup=True))
        if _calls(mod) == before:
            break
    return mod


def _elements(ty) -> int:
    """Number of elements of a static tensor type (a large number where it is not static,
    so that nothing is split for it)."""
    try:
        n = 1
        for v in ty.shape.values:
            n *= int(v)
        return n
    except (AttributeError, TypeError, ValueError):
        return 1 << 62


def _calls(mod) -> list:
    """The operators a module's Relax functions call, in order (a rewrite round's footprint)."""
    from tvm import relax

    names: list = []
    for _, func in mod.functions_items():
        if isinstance(func, relax.Function):
            relax.analysis.post_order_visit(
                func, lambda e: names.append(getattr(e.op, "name", "")) if isinstance(
                    e, relax.Call) else None)
    return names
