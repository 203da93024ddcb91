"""Channel concatenations moved into their consumers, so that no kernel copies them.

In TVM a channel concat (SqueezeNet's Fire modules) is a kernel that copies both branches
(experiments/FINDINGS.md#channel-concats-moved-into-their-consumers). Its consumers are
linear or channel-wise, so the copy can go:

- ``conv2d(concat([a, b]), W)`` -> ``conv2d(a, W_a) + conv2d(b, W_b)`` (groups 1, constant
  weight), only where the conv's output is smaller than the concat;
- ``max_pool2d`` / ``avg_pool2d`` of a concat -> the concat of the pooled parts.

Runs on the imported NCHW module, before ConvertLayout; sums reorder within float32 rounding.
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
    """``mod`` (NCHW Relax, constant weights) with channel concats moved into the convs and
    pools that consume them, and copies left without a user removed."""
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

    # Canonicalise first (torch's max_pool2d is a tuple); a pool's new concat reaches its
    # conv only in the next round, hence the loop.
    mod = tidy(mod)
    for _ in range(8):
        before = _calls(mod)
        mod = tidy(rewrite_calls(mod, rule, lookup=True))
        if _calls(mod) == before:
            break
    return mod


def _elements(ty) -> int:
    """Number of elements of a static tensor type (huge where not static: nothing splits)."""
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
