"""The model's NCHW input read by the first conv itself, in NHWC builds.

In an NHWC build ConvertLayout transposes the NCHW input in a kernel of its own
(experiments/FINDINGS.md#the-input-read-by-the-first-conv). ``rewrite`` (``conv``) turns
``conv2d(permute_dims(x, [0, 2, 3, 1]), W)``, ``x`` the function's parameter, one group, into
one conv reading NCHW and writing NHWC, emitted as a TE compute (Relax cannot legalize mixed
layouts) named ``conv2d`` so it fuses and tunes like the others. ``kernel`` keeps the
transpose; a database holds one form (lowering.lowering_for). Runs after ConvertLayout.
"""
from __future__ import annotations

CHOICES = ("kernel", "conv")


def conv2d_nchw_to_nhwc(data, weight, strides, padding, dilation, out_dtype: str):
    """TE: ``data`` NCHW, ``weight`` OHWI, result NHWC (one group); ``padding`` is (top, left,
    bottom, right), as Relax's conv2d attribute."""
    from tvm import te, topi

    _, _, height, width = (int(v) for v in data.shape)
    out_ch, kh, kw, in_ch = (int(v) for v in weight.shape)
    top, left, bottom, right = padding
    sh, sw = strides
    dh, dw = dilation
    padded = topi.nn.pad(data, [0, 0, top, left], [0, 0, bottom, right], name="pad_temp")
    out_h = (height + top + bottom - (kh - 1) * dh - 1) // sh + 1
    out_w = (width + left + right - (kw - 1) * dw - 1) // sw + 1
    # Reduction axes in the input's layout order (channels, then window), as topi.nn.conv:
    # MultiLevelTiling keeps it, so the input's innermost axis sits innermost.
    rc = te.reduce_axis((0, in_ch), name="rc")
    ry = te.reduce_axis((0, kh), name="ry")
    rx = te.reduce_axis((0, kw), name="rx")
    return te.compute(
        (data.shape[0], out_h, out_w, out_ch),
        lambda n, y, x, f: te.sum(
            padded[n, rc, y * sh + ry * dh, x * sw + rx * dw].astype(out_dtype)
            * weight[f, ry, rx, rc].astype(out_dtype), axis=[rc, ry, rx]),
        name="conv2d_nhwc", tag="conv2d_nhwc")


def _input_transposed(value_of, arg):
    """The function parameter ``arg`` is an NCHW -> NHWC transpose of, else None."""
    from tvm import relax

    if not isinstance(arg, relax.Var):
        return None
    perm = value_of(arg)
    if not isinstance(perm, relax.Call) or getattr(perm.op, "name", None) != \
            "relax.permute_dims":
        return None
    axes = perm.attrs["axes"]
    src = perm.args[0]
    if axes is None or [int(a) for a in axes] != [0, 2, 3, 1]:
        return None
    # a parameter is bound to nothing inside the function
    if not isinstance(src, relax.Var) or value_of(src) is not None:
        return None
    return src


def rewrite(mod):
    """``mod`` (NHWC Relax) with each conv that reads a transpose of the input reading it."""
    from ..relax_rewrite import dense_conv2d, rewrite_calls, tidy

    def rule(bb, call, value_of):
        if not dense_conv2d(call, "NHWC"):
            return None
        attrs = call.attrs
        x = _input_transposed(value_of, call.args[0])
        if x is None:
            return None
        # the ONNX importer leaves out_dtype unset (None / void): the input's dtype then
        out_dtype = str(attrs["out_dtype"] or "")
        if out_dtype in ("", "None", "void"):
            out_dtype = str(call.args[0].ty.dtype)
        return bb.call_te(conv2d_nchw_to_nhwc, x, call.args[1],
                          strides=[int(s) for s in attrs["strides"]],
                          padding=[int(p) for p in attrs["padding"]],
                          dilation=[int(d) for d in attrs["dilation"]],
                          out_dtype=out_dtype, primfunc_name_hint="conv2d")

    return tidy(rewrite_calls(mod, rule, lookup=True))
