"""The CPU research: rewrites, design spaces and recipes measured on x86-64 CPUs
(experiments/FINDINGS.md#lowering-the-x86-64-cpu-defaults). The core reaches it through
``REWRITES``, ``fast_math``, ``design_space``, ``pool_schedule`` and ``recipes``; nothing
here imports the core's tuning, build or CLI.

  winograd.py        Winograd F(4x4, 3x3) / the tile that fits, for 3x3 stride-1 NHWC convs
  pad_channels.py    conv output channels padded to whole vectors (NHWC)
  concat_split.py    channel concats moved into the convs and pools that consume them
  input_transpose.py the NCHW input read by the first conv (NHWC)
  spatial_mean.py    NHWC means over height and width as a GEMV
  fast_math.py       vectorisable exp/erf-based activations
  design_space.py    MetaSchedule design spaces tiled at the vector width
  pool_schedule.py   a hand-written sketch for channels-last max pools
  recipes.py         each study model's best tuning options
"""
from __future__ import annotations

from ..relax_rewrite import Rewrite
from . import concat_split, input_transpose, pad_channels, spatial_mean, winograd


def _pad(mod, target, value):
    return pad_channels.rewrite(mod, target, pair=value == "pad-pair")


# In pipeline order within each stage (passes.lower_for_tuning): the padding comes before the
# split, which keeps it.
REWRITES = (
    Rewrite("out_channels", pad_channels.CHOICES, plain="keep", measured="pad", before="keep",
            help="NHWC conv outputs padded to whole vectors (or pairs of them)",
            says="padded channels", stage="graph", apply=_pad,
            cache_tag=lambda v: f"channels-{v}-{pad_channels.MAX_PAD_FRACTION}"),
    Rewrite("concat", concat_split.CHOICES, plain="keep", measured="split", before="keep",
            help="channel concats: kernels of their own, or moved into their consumers",
            says="split concats", stage="graph", nhwc_only=False,
            apply=lambda mod, target, value: concat_split.rewrite(mod)),
    Rewrite("input_transpose", input_transpose.CHOICES, plain="kernel", measured="conv",
            before="kernel", help="the NCHW input: a transpose kernel, or read by the first conv",
            says="the input read by the first conv",
            apply=lambda mod, target, value: input_transpose.rewrite(mod),
            cache_tag=lambda v: f"input-{v}"),
    Rewrite("conv2d", winograd.CHOICES, plain="direct", measured="direct", before="direct",
            help="3x3 stride-1 convs: direct, Winograd F(4x4), or the tile that fits",
            nhwc_only=False, needs_nhwc=True,
            apply=lambda mod, target, value: winograd.rewrite(mod, fit=value == "winograd-fit"),
            cache_tag=winograd.cache_tag),
    Rewrite("spatial_mean", spatial_mean.CHOICES, plain="reduce", measured="matmul",
            before="reduce", help="NHWC means over height and width: a reduction or a GEMV",
            says="means as GEMVs", apply=lambda mod, target, value: spatial_mean.rewrite(mod),
            cache_tag=lambda v: f"mean-{v}-{spatial_mean.MIN_PIXELS}"),
)
