"""Lowering: the Relax passes shared by tuning and compiling, so the workloads the tuner
records are exactly the ones the compiler looks up.

    torch.export -> relax.frontend.torch.from_exported_program   (importer.py)
    fold_batch_norm, the "graph" choices (lowering.py: cpu/pad_channels, cpu/concat_split),
    clip_as_min_max (NHWC), ConvertLayout (NHWC), fast_math (x86-64),
    the "layout" choices (cpu/input_transpose, cpu/winograd, cpu/spatial_mean)
    DecomposeOpsForInference, CanonicalizeBindings, LegalizeOps, AnnotateTIROpPattern,
    FoldConstant, FuseOps, FuseTIR, AttachAttrLayoutFreeBuffers          = ``lower_for_tuning``
    MetaScheduleApplyDatabase, SplitLayoutRewritePreproc, FoldConstant  = build.apply_database
    tvm.compile(target)

Weights are constants, so a tuned schedule's weight-layout rewrite is folded at compile time.
"""
from __future__ import annotations

from . import lowering
from .errors import TvmError
from .relax_rewrite import const_np

# Bump when the lowering pipeline changes: it invalidates compiled-library caches.
PIPELINE_VERSION = "tvm-pipeline-10"   # 10: choices from lowering.py; 9: fast_math on x86-64


def fold_batch_norm(mod):
    """conv2d(x, W) -> batch_norm(., gamma, beta, mean, var) with constant parameters becomes
    conv2d(x, W * s) + (beta - mean * s), s = gamma / sqrt(var + eps), in float64 numpy
    (TVM's FoldBatchnormToConv2D leaves that to FoldConstant, which takes minutes)."""
    import numpy as np
    from tvm import relax
    from tvm.relax.dpl import TupleGetItemPattern, is_const, is_op, rewrite_call, wildcard

    x, w = wildcard(), is_const()
    conv = is_op("relax.nn.conv2d")(x, w)
    g, b, m, v = is_const(), is_const(), is_const(), is_const()
    bn = is_op("relax.nn.batch_norm")(conv, g, b, m, v)
    pattern = TupleGetItemPattern(bn, 0)

    def rewriter(expr, matches):
        call = matches[conv]
        attrs = call.attrs
        if attrs["kernel_layout"] != "OIHW" or attrs["data_layout"] != "NCHW" or \
                int(matches[bn].attrs["axis"]) != 1:
            return expr
        w0 = const_np(matches[w])
        if w0.dtype != np.float32:
            return expr
        weight = w0.astype(np.float64)
        gamma, beta, mean, var = (const_np(matches[t]).astype(np.float64)
                                  for t in (g, b, m, v))
        scale = gamma / np.sqrt(var + float(matches[bn].attrs["epsilon"]))
        if weight.shape[0] != scale.shape[0]:
            return expr
        new_w = (weight * scale[:, None, None, None]).astype(np.float32)
        bias = (beta - mean * scale).astype(np.float32).reshape(1, -1, 1, 1)
        out = relax.Call(call.op, (matches[x], relax.const(new_w)), attrs)
        return relax.op.add(out, relax.const(bias))

    for gv, func in list(mod.functions.items()):
        if isinstance(func, relax.Function):
            mod[gv] = rewrite_call(pattern, rewriter, func)
    return mod


def clip_as_min_max(mod):
    """``clip(x, lo, hi)`` -> ``minimum(maximum(x, lo), hi)`` with constant bounds:
    ConvertLayout has no rule for ``clip`` and wrapped every ReLU6 in transposes; these
    follow any layout, so conv+bias+ReLU6 fuse into one NHWC kernel
    (experiments/FINDINGS.md#nhwc-on-cpus)."""
    from tvm import relax

    from .relax_rewrite import rewrite_calls

    def bound(v):
        v = getattr(v, "value", v)
        return float(getattr(v, "value", v))

    def rule(bb, call):
        if getattr(call.op, "name", None) != "relax.clip":
            return None
        dtype = str(getattr(call.args[0].ty, "dtype", ""))
        if not dtype.startswith("float"):
            return None
        lo = relax.const(bound(call.args[1]), dtype)
        hi = relax.const(bound(call.args[2]), dtype)
        return relax.op.minimum(relax.op.maximum(call.args[0], lo), hi)

    return rewrite_calls(mod, rule)


def lower_for_tuning(mod, target, layout: str = "NCHW", conv2d: str = "direct", **choices):
    """Relax module -> fused Relax + TIR module whose PrimFuncs are the tuning workloads.

    ``layout``: the conv2d layout TVM computes in (the input stays NCHW); ``conv2d`` and
    ``choices``: the other lowering choices (lowering.py; unset: plain), in registry order."""
    import tvm
    from tvm import relax

    from .cpu import fast_math

    plain = {r.name: r.plain for r in lowering.REWRITES}
    chosen = {**plain, **{k: v for k, v in choices.items() if v is not None},
              "layout": layout, "conv2d": conv2d}
    try:
        lowering.check(chosen)
    except ValueError as e:
        raise TvmError(str(e)) from None
    nhwc = layout == "NHWC"

    def rewrites(stage):
        return [r for r in lowering.REWRITES[1:] if r.stage == stage
                and chosen[r.name] != r.plain and (nhwc or not r.nhwc_only)]

    mod = fold_batch_norm(mod)
    for r in rewrites("graph"):
        mod = r.apply(mod, target, chosen[r.name])
    if nhwc:
        mod = clip_as_min_max(mod)
    convert = [relax.transform.ConvertLayout({"relax.nn.conv2d": ["NHWC", "OHWI"]}),
               relax.transform.CanonicalizeBindings()] if nhwc else []
    with target:
        mod = tvm.transform.Sequential([
            relax.transform.DecomposeOpsForInference(),
            relax.transform.CanonicalizeBindings(),
            *convert,
        ])(mod)
        if fast_math.applies_to(target):
            mod = fast_math.rewrite(mod)
        for r in rewrites("layout"):
            mod = r.apply(mod, target, chosen[r.name])
        return tvm.transform.Sequential([
            relax.transform.LegalizeOps(),
            relax.transform.AnnotateTIROpPattern(),
            relax.transform.FoldConstant(),
            relax.transform.FuseOps(),
            relax.transform.FuseTIR(),
            relax.transform.AttachAttrLayoutFreeBuffers(),
        ])(mod)


def extract_tasks(lowered_mod, target):
    from tvm.s_tir import meta_schedule as ms

    return ms.relax_integration.extract_tasks(lowered_mod, target)
