"""Winograd convolution for 3x3, stride-1 convs in NHWC (``--conv2d winograd``).

Relax lowers every ``conv2d`` to the direct loop nest; this rewrite, run before
``LegalizeOps``, brings back Relay's ``conv2d_winograd_nhwc``: TVM's
``_conv2d_winograd_nhwc_impl`` (its block names and schedule rules kept) with U = G w G^T
computed once in float64 numpy (TVM 0.27's ``pre_computed`` path raises "LEGACY-FLOW").
Convs taken: ``eligible``; tile: ``tile_for``. Why: experiments/FINDINGS.md#winograd-for-3x3-convs,
experiments/FINDINGS.md#winograd-with-the-tile-that-fits.
"""
from __future__ import annotations

import numpy as np

from ..relax_rewrite import dense_conv2d

TILE = 4             # m of F(m x m, 3 x 3) for ``winograd``
FIT_TILES = (4, 2)   # ``winograd-fit``: the first whose tiles cover the output ...
FIT_WASTE = 0.10     # ... with at most this fraction of it padding
MIN_CHANNELS = 16    # fewer: the transforms cost more than the multiplies they save
CHOICES = ("direct", "winograd", "winograd-fit")    # --conv2d / TuneConfig.conv2d / tvm_conv2d


def is_winograd(conv2d: str) -> bool:
    """Whether the ``conv2d`` choice rewrites 3x3 convs into Winograd."""
    return conv2d != "direct"


def cache_tag(conv2d: str) -> str | None:
    """What a compiled library's cache key carries for the ``conv2d`` choice: nothing for
    ``direct``; for ``winograd-fit`` the padding threshold too, which decides the convs taken."""
    if not is_winograd(conv2d):
        return None
    return f"{conv2d}-{FIT_WASTE}" if conv2d == "winograd-fit" else conv2d


def tile_for(out_h: int, out_w: int, fit: bool) -> int | None:
    """m of F(m x m, 3 x 3) for an ``out_h`` x ``out_w`` output, or None to keep it direct:
    ``TILE``, or with ``fit`` the first of ``FIT_TILES`` padding at most ``FIT_WASTE``."""
    if not fit:
        return TILE

    def covered(m: int) -> int:
        return -(-out_h // m) * m * (-(-out_w // m) * m)

    return next((m for m in FIT_TILES if covered(m) <= (1 + FIT_WASTE) * out_h * out_w), None)


def transform_matrices(m: int = TILE):
    """(A, B, G) of F(m, 3) as float64 numpy, from TVM's own Cook-Toom construction (the
    same points the TE compute's A and B use)."""
    from tvm.topi.nn.winograd_util import _cook_toom_convolution, _interpolation_points

    a, b, g = _cook_toom_convolution(_interpolation_points(m + 1), m, 3)
    return (np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64),
            np.asarray(g, dtype=np.float64))


def transform_weight(w_ohwi: np.ndarray, m: int = TILE) -> np.ndarray:
    """U[eps, nu, co, ci] = sum_kh,kw G[eps, kh] w[co, kh, kw, ci] G[nu, kw], in float64,
    returned as float32 (the layout ``bgemm`` reads)."""
    _, _, g = transform_matrices(m)
    return np.einsum("ek,okwi,nw->enoi", g, w_ohwi.astype(np.float64), g).astype(np.float32)


def _transform(src, mat, size: int, name: str, rule: str):
    """out[i, j, p, c] = sum_a,b src[a, b, p, c] mat[a, i] mat[b, j]: the input transform
    (B) and the output transform (A) alike. ``rule`` names TVM's CPU schedule rule for it."""
    from tvm import te

    alpha = int(src.shape[0])
    r_a = te.reduce_axis((0, alpha), "r_a")
    r_b = te.reduce_axis((0, alpha), "r_b")
    return te.compute(
        (size, size, src.shape[2], src.shape[3]),
        lambda i, j, p, c: te.sum(src[r_a, r_b, p, c] * mat[r_a, i] * mat[r_b, j],
                                  axis=[r_a, r_b]),
        name=name, attrs={"schedule_rule": rule})


def winograd_nhwc(data, u, pad: int, m: int = TILE):
    """TE: NHWC input (N, H, W, CI) and transformed weights U (alpha, alpha, CO, CI) ->
    (N, H', W', CO), H' = H + 2 pad - 2."""
    from tvm import te
    from tvm.topi.nn.pad import pad as te_pad
    from tvm.topi.nn.winograd_util import winograd_transform_matrices
    from tvm.topi.utils import get_const_tuple

    n, h, w, ci_ = get_const_tuple(data.shape)
    alpha, _, co_, _ = get_const_tuple(u.shape)
    a_mat, b_mat, _ = winograd_transform_matrices(m, 3, str(data.dtype))
    oh, ow = h + 2 * pad - 2, w + 2 * pad - 2
    nh, nw = (oh + m - 1) // m, (ow + m - 1) // m
    p_all = n * nh * nw
    # Pad to whole tiles: the last tile reads past the conv's own padding.
    extra_h = (nh - 1) * m + alpha - (h + 2 * pad)
    extra_w = (nw - 1) * m + alpha - (w + 2 * pad)
    data_pad = te_pad(data, (0, pad, pad, 0), (0, pad + extra_h, pad + extra_w, 0),
                      name="data_pad", attrs={"schedule_rule": "None"})
    input_tile = te.compute(
        (alpha, alpha, p_all, ci_),
        lambda eps, nu, p, c: data_pad[p // (nh * nw), ((p // nw) % nh) * m + eps,
                                       (p % nw) * m + nu, c],
        name="input_tile", attrs={"schedule_rule": "None"})
    data_pack = _transform(input_tile, b_mat, alpha, "data_pack",
                           "conv2d_nhwc_winograd_data_pack")
    ci = te.reduce_axis((0, ci_), name="ci")
    bgemm = te.compute(
        (alpha, alpha, p_all, co_),
        lambda eps, nu, p, co: te.sum(data_pack[eps, nu, p, ci] * u[eps, nu, co, ci], axis=[ci]),
        name="bgemm",
        # U is a constant: the tuned schedule may re-lay it out, folded at build time.
        attrs={"layout_free_placeholders": [u], "meta_schedule.write_cache_level": [2]})
    inverse = _transform(bgemm, a_mat, m, "inverse", "conv2d_nhwc_winograd_inverse")
    return te.compute(
        (n, oh, ow, co_),
        lambda b, y, x, co: inverse[y % m, x % m, b * nh * nw + (y // m) * nw + (x // m), co],
        name="conv2d_winograd")


def constant_weight(bb, w) -> np.ndarray | None:
    """The value of a conv's weight operand when it is a constant, or a ``permute_dims`` of
    one (as ConvertLayout leaves OIHW -> OHWI before FoldConstant)."""
    from tvm.ir.expr import Constant    # tvm.relax.Constant before TVM 0.27
    from tvm.relax import Var

    from ..relax_rewrite import const_np as _const_np

    if isinstance(w, Constant):
        return _const_np(w)
    if not isinstance(w, Var):
        return None
    bound = bb.lookup_binding(w)
    if (bound is None or getattr(getattr(bound, "op", None), "name", None) != "relax.permute_dims"
            or not isinstance(bound.args[0], Constant)):
        return None
    axes = bound.attrs["axes"]
    v = _const_np(bound.args[0])
    return v.transpose([int(a) for a in axes]) if axes is not None else v.transpose()


def eligible(call) -> tuple[int, int, int] | None:
    """(padding, output height, output width) of a ``conv2d`` call this rewrite takes, else
    None; reads only attributes and types."""
    if not dense_conv2d(call, "NHWC"):
        return None
    a = call.attrs
    if ([int(v) for v in a["strides"]] != [1, 1]
            or [int(v) for v in a["dilation"]] != [1, 1]):
        return None
    pad = {int(v) for v in a["padding"]}
    if len(pad) != 1 or not pad <= {0, 1}:
        return None
    xt, wt = call.args[0].ty, call.args[1].ty     # struct_info before TVM 0.27
    if str(xt.dtype) != "float32" or str(wt.dtype) != "float32" or \
            str(a["out_dtype"] or "") not in ("", "float32"):
        return None
    try:
        _, h, w, _ = (int(v) for v in xt.shape.values)    # a static input shape
        co, kh, kw, ci = (int(v) for v in wt.shape.values)
    except (TypeError, AttributeError, ValueError):
        return None
    if (kh, kw) != (3, 3) or ci < MIN_CHANNELS or co < MIN_CHANNELS:
        return None
    pad = pad.pop()
    return pad, h + 2 * pad - 2, w + 2 * pad - 2           # stride 1


def rewrite(mod, fit: bool = False):
    """Every eligible NHWC conv2d with constant weights (``eligible``) ->
    the Winograd TE compute with U as a constant, in F(``tile_for``) (``fit``: per conv)."""
    from tvm import relax

    from ..relax_rewrite import rewrite_calls

    def rule(bb, call):
        taken = eligible(call)
        if taken is None:
            return None
        pad, oh, ow = taken
        m = tile_for(oh, ow, fit)
        if m is None:
            return None
        weight = constant_weight(bb, call.args[1])
        if weight is None:
            return None
        return bb.call_te(winograd_nhwc, call.args[0], relax.const(transform_weight(weight, m)),
                          pad, m, primfunc_name_hint="conv2d_winograd")

    mod = rewrite_calls(mod, rule)
    # The OIHW -> OHWI weight permutes the rewritten convs read are dead now.
    return relax.transform.DeadCodeElimination()(mod)
