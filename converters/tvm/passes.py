"""Lowering: the Relax passes shared by tuning and compiling, so the workloads the tuner
records are exactly the ones the compiler looks up.

    torch.export -> relax.frontend.torch.from_exported_program   (importer.py)
    fold_batch_norm, pad_channels (NHWC, new databases), concat_split (new databases),
    clip_as_min_max (NHWC), ConvertLayout (NHWC), input_transpose (NHWC, new databases),
    fast_math (LLVM),
    winograd (3x3 stride-1 convs, when asked), spatial_mean_as_matmul (NHWC; new databases)
    DecomposeOpsForInference, CanonicalizeBindings, LegalizeOps, AnnotateTIROpPattern,
    FoldConstant, FuseOps, FuseTIR, AttachAttrLayoutFreeBuffers          = ``lower_for_tuning``
    MetaScheduleApplyDatabase, SplitLayoutRewritePreproc, FoldConstant  = build.apply_database
    tvm.compile(target)  (per-target default pipeline; on CUDA it adds dlight default schedules)

Weights are bound as constants, so a tuned schedule's weight-layout rewrite (MetaSchedule's
``cpu_weight_prepack`` idea) is folded into the constants at compile time instead of running
on every call.
"""
from __future__ import annotations

from . import database
from .errors import TvmError
from .targets import x86_measured

# Bump when the lowering pipeline changes: it invalidates compiled-library caches.
PIPELINE_VERSION = "tvm-pipeline-9"   # 9: fast_math on x86-64 only; 8: input_transpose
LAYOUTS = ("NCHW", "NHWC")
# Every lowering choice, with the form a database made before the choice existed was tuned
# in (its workloads exist only in that form). ``lowering_for`` returns all of them; builds,
# exports, the compiled-library cache and every record carry them under these names.
BEFORE_RECORDED = {"layout": "NCHW", "conv2d": "direct", "spatial_mean": "reduce",
                   "concat": "keep", "out_channels": "keep", "input_transpose": "kernel"}
CHOICE_NAMES = tuple(BEFORE_RECORDED)


def layout_for(target, db_dir=None, wanted: str | None = None) -> str:
    """The conv2d layout a build or a tuning session uses.

    ``wanted`` (the user's option) first; then the layout the database in ``db_dir`` was
    tuned in (its workloads exist only in that layout; a database from before layouts were
    recorded is NCHW); else NHWC on x86-64 CPU targets (``targets.x86_measured``) and NCHW,
    TVM's plain layout, elsewhere. NHWC on x86: with the channels innermost every conv
    vectorises over channels, and MobileNetV2 tuned in NHWC at 512 trials ran 8-29% faster
    than in NCHW (experiments/FINDINGS.md)."""
    if wanted:
        return wanted.upper()
    if db_dir is not None:
        recorded = database.read_db_meta(db_dir).get("layout")
        if recorded:
            return str(recorded).upper()
        if database.database_exists(db_dir):
            return "NCHW"
    return "NHWC" if x86_measured(target) else "NCHW"


def conv2d_for(db_dir=None, wanted: str | None = None) -> str:
    """The conv2d algorithm a build or a tuning session uses: ``wanted`` (the user's option)
    first; then the one the database in ``db_dir`` was tuned with (its workloads exist only
    in that form); else ``direct``. ``winograd``: see winograd.py."""
    if wanted:
        return wanted.lower()
    if db_dir is not None:
        recorded = database.read_db_meta(db_dir).get("conv2d")
        if recorded:
            return str(recorded).lower()
    return "direct"


SPATIAL_MEANS = ("reduce", "matmul")


def spatial_mean_for(target, db_dir=None, wanted: str | None = None) -> str:
    """How a mean over an NHWC tensor's height and width is computed: ``wanted`` (the user's
    option) first; then what the database in ``db_dir`` was tuned with (its workloads exist
    only in that form); ``reduce`` for a database from before the choice was recorded; else
    ``matmul`` (``spatial_mean_as_matmul``) on x86-64, where it was measured, and
    ``reduce`` elsewhere. NCHW builds keep the reduction either way."""
    new = "matmul" if x86_measured(target) else "reduce"
    return recorded_choice(db_dir, "spatial_mean", wanted, before="reduce", new=new)


def recorded_choice(db_dir, key: str, wanted: str | None, before: str,
                    new: str | None) -> str | None:
    """A lowering choice, or another choice a database records (``runner.caches_for``):
    ``wanted`` (the user's option) first; then the one the database in ``db_dir`` records
    under ``key`` (its workloads or records exist only in that form); ``before`` for a
    database made before the choice was recorded; else ``new``."""
    if wanted:
        return wanted.lower()
    if db_dir is not None:
        recorded = database.read_db_meta(db_dir).get(key)
        if recorded:
            return str(recorded).lower()
        if database.database_exists(db_dir):
            return before
    return new


def concat_for(target, db_dir=None, wanted: str | None = None) -> str:
    """Whether channel concats stay kernels (``keep``) or move into their consumers
    (``split``, concat_split.py): ``wanted`` (the user's option) first; then what the database
    in ``db_dir`` was tuned with (its workloads exist only in that form); ``keep`` for a
    database from before the choice was recorded; else ``split`` on x86-64 CPU targets, where
    it was measured, and ``keep`` elsewhere (on GPUs each split conv is one more kernel
    launch; other CPUs were not measured)."""
    new = "split" if x86_measured(target) else "keep"
    return recorded_choice(db_dir, "concat", wanted, before="keep", new=new)


def out_channels_for(target, db_dir=None, wanted: str | None = None) -> str:
    """Whether convs keep their output channels (``keep``) or are padded to whole vectors
    where that costs little (``pad``, pad_channels.py): ``wanted`` first; then what the
    database in ``db_dir`` was tuned with; ``keep`` for a database from before the choice was
    recorded; else ``pad`` on x86-64 CPU targets (measured there) and ``keep`` elsewhere.
    NCHW builds keep them either way."""
    new = "pad" if x86_measured(target) else "keep"
    return recorded_choice(db_dir, "out_channels", wanted, before="keep", new=new)


def input_transpose_for(target, db_dir=None, wanted: str | None = None) -> str:
    """Whether an NHWC build transposes the NCHW input in a kernel of its own (``kernel``) or
    has the first conv read it (``conv``, input_transpose.py): ``wanted`` first; then what
    the database in ``db_dir`` was tuned with; ``kernel`` for a database from before the
    choice was recorded; else ``conv`` on x86-64 CPU targets, where it was measured, and
    ``kernel`` elsewhere. NCHW builds have no transpose."""
    new = "conv" if x86_measured(target) else "kernel"
    return recorded_choice(db_dir, "input_transpose", wanted, before="kernel", new=new)


def lowering_for(target, db_dir=None, layout: str | None = None, conv2d: str | None = None,
                 spatial_mean: str | None = None, concat: str | None = None,
                 out_channels: str | None = None, input_transpose: str | None = None) -> dict:
    """The lowering choices of a build or a tuning session, each the user's option if given,
    else the database's, else the default: ``lower_for_tuning``'s keyword arguments."""
    lay = layout_for(target, db_dir, layout)
    return {"layout": lay, "conv2d": conv2d_for(db_dir, conv2d),
            "spatial_mean": (spatial_mean_for(target, db_dir, spatial_mean) if lay == "NHWC"
                             else "reduce"),
            "concat": concat_for(target, db_dir, concat),
            "out_channels": (out_channels_for(target, db_dir, out_channels) if lay == "NHWC"
                             else "keep"),
            "input_transpose": (input_transpose_for(target, db_dir, input_transpose)
                                if lay == "NHWC" else "kernel")}


def _const_np(c):
    """numpy value of a Relax constant (``GenericConst.value`` in TVM 0.27, ``.data`` before)."""
    v = getattr(c, "value", None)
    if v is None:
        v = c.data
    return v.numpy()


def fold_batch_norm(mod):
    """conv2d(x, W) -> batch_norm(., gamma, beta, mean, var) with constant parameters becomes
    conv2d(x, W * s) + (beta - mean * s), s = gamma / sqrt(var + eps), computed here in
    float64 numpy. (TVM's FoldBatchnormToConv2D does the same but leaves the arithmetic to
    FoldConstant, which compiles and runs one TIR function per constant: minutes for a
    MobileNet on 2 cores.) The fused conv kernels then carry a bias add instead of four
    per-channel BN operations."""
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
        w0 = _const_np(matches[w])
        if w0.dtype != np.float32:
            return expr
        weight = w0.astype(np.float64)
        gamma, beta, mean, var = (_const_np(matches[t]).astype(np.float64)
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
    """``clip(x, lo, hi)`` -> ``minimum(maximum(x, lo), hi)`` with constant bounds.

    Relax's ConvertLayout has no layout rule for ``clip``: converting to NHWC wrapped every
    ReLU6 of MobileNet in a transpose back to NCHW and out again, each its own kernel, and
    cut the conv's fusion with its activation. Binary elementwise ops with a scalar follow
    any layout, so after this rewrite conv+bias+ReLU6 fuse into one NHWC kernel."""
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


SPATIAL_MEAN_MIN_PIXELS = 28 * 28


def spatial_mean_as_matmul(mod, min_pixels: int = SPATIAL_MEAN_MIN_PIXELS):
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

    from .relax_rewrite import rewrite_calls

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


def lower_for_tuning(mod, target, layout: str = "NCHW", conv2d: str = "direct",
                     winograd_min_output: int = 0, spatial_mean: str = "reduce",
                     concat: str = "keep", out_channels: str = "keep",
                     input_transpose: str = "kernel"):
    """Relax module -> fused Relax + TIR module whose PrimFuncs are the tuning workloads.

    ``layout``: the conv2d data layout TVM computes in (the model's input stays NCHW).
    ``conv2d``: ``direct``, or ``winograd`` (F(4x4)) / ``winograd-fit`` (the tile that fits
    each output) for the 3x3 stride-1 convs (NHWC only; winograd.py), those with an output
    of at least ``winograd_min_output`` pixels a side.
    ``spatial_mean``: ``reduce``, or ``matmul`` for NHWC means over height and width
    (``spatial_mean_as_matmul``; NCHW builds keep the reduction).
    ``concat``: ``keep``, or ``split`` to move channel concats into the convs and pools that
    consume them (concat_split.py).
    ``out_channels``: ``keep``, or ``pad`` to pad conv output channels to whole vectors of an
    LLVM target where that adds little, ``pad-pair`` to whole pairs of them (pad_channels.py;
    NHWC only).
    ``input_transpose``: ``kernel``, or ``conv`` to have the first conv read the NCHW input
    instead of a transpose kernel (input_transpose.py; NHWC only)."""
    import tvm
    from tvm import relax

    from . import concat_split, input_transpose as input_transpose_, pad_channels, winograd

    if layout not in LAYOUTS:
        raise TvmError(f"tvm_layout must be one of {', '.join(LAYOUTS)} (got '{layout}')")
    if conv2d not in winograd.CHOICES:
        raise TvmError(f"tvm_conv2d must be one of {', '.join(winograd.CHOICES)} "
                       f"(got '{conv2d}')")
    if spatial_mean not in SPATIAL_MEANS:
        raise TvmError(f"tvm_spatial_mean must be one of {', '.join(SPATIAL_MEANS)} "
                       f"(got '{spatial_mean}')")
    if concat not in concat_split.CHOICES:
        raise TvmError(f"tvm_concat must be one of {', '.join(concat_split.CHOICES)} "
                       f"(got '{concat}')")
    if out_channels not in pad_channels.CHOICES:
        raise TvmError(f"tvm_out_channels must be one of {', '.join(pad_channels.CHOICES)} "
                       f"(got '{out_channels}')")
    if input_transpose not in input_transpose_.CHOICES:
        raise TvmError(f"tvm_input_transpose must be one of "
                       f"{', '.join(input_transpose_.CHOICES)} (got '{input_transpose}')")
    if winograd.is_winograd(conv2d) and layout != "NHWC":
        raise TvmError(f"tvm_conv2d {conv2d} needs the NHWC layout (its TVM schedules are "
                       f"NHWC's; got {layout})")
    convert = [relax.transform.ConvertLayout({"relax.nn.conv2d": ["NHWC", "OHWI"]}),
               relax.transform.CanonicalizeBindings()] if layout == "NHWC" else []
    from . import fast_math

    mod = fold_batch_norm(mod)
    if out_channels in pad_channels.PADDED and layout == "NHWC":
        # before the split, which keeps the padding
        mod = pad_channels.rewrite(mod, target, pair=out_channels == "pad-pair")
    if concat == "split":
        mod = concat_split.rewrite(mod)
    if layout == "NHWC":
        mod = clip_as_min_max(mod)
    with target:
        mod = tvm.transform.Sequential([
            relax.transform.DecomposeOpsForInference(),
            relax.transform.CanonicalizeBindings(),
            *convert,
        ])(mod)
        if layout == "NHWC" and input_transpose == "conv":
            mod = input_transpose_.rewrite(mod)
        if fast_math.applies_to(target):
            mod = fast_math.rewrite(mod)
        if winograd.is_winograd(conv2d):
            mod = winograd.rewrite(mod, min_output=winograd_min_output,
                                   fit=conv2d == "winograd-fit")
        if layout == "NHWC" and spatial_mean == "matmul":
            mod = spatial_mean_as_matmul(mod)
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
