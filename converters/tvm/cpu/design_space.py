"""MetaSchedule design spaces: on CPUs, channels-last kernels are tiled at the vector width.

The default space tiles the channel axis (innermost in NHWC, the one vectorised) like any
loop, so at a few hundred trials most tasks never meet a tile that fills a vector.
``space_for`` swaps ``MultiLevelTiling`` for TVM's ``MultiLevelTilingWideVector``, split at
the widest vector that divides the axis; other tasks, NCHW and GPUs keep the default space
(experiments/FINDINGS.md#vector-width-tiling). ``multi-vector`` adds a second sketch split
at two vectors where a pair divides the channels and the reduction runs over input channels,
so one broadcast feeds two FMAs (experiments/FINDINGS.md#two-vectors-of-channels).
"""
from __future__ import annotations

import math

MIN_LANES = 4          # narrower than SSE's 4 floats is not worth a fixed split
CHOICES = ("auto", "default", "multi-vector")   # --design-space / TuneConfig.design_space


def region_buffer(region):
    """A block's read or write region's buffer (``source`` on TVM 0.27's TensorRegion)."""
    return region.buffer if hasattr(region, "buffer") else region.source


def _reduction_outputs(func) -> list:
    """The buffers written by the blocks MultiLevelTiling works on: those with a reduction."""
    from tvm import s_tir, tirx

    try:
        sch = s_tir.Schedule(func)
        blocks = sch.get_child_blocks(sch.get_sblock("root"))
    except Exception:  # noqa: BLE001 - no root block to walk: keep the default space
        return []
    found = []
    for rv in blocks:
        block = sch.get(rv)
        if len(block.writes) == 1 and any(iv.iter_type == tirx.IterVar.CommReduce
                                          for iv in block.iter_vars):
            found.append(region_buffer(block.writes[0]))
    return found


def target_vector_bits(target) -> int:
    """The SIMD register width of an LLVM CPU target from its features: 512 (AVX-512), 256
    (AVX), else 128 (``llvm_get_vector_width`` answered 512 for every x86 ``mcpu``)."""
    from tvm.target import codegen

    def has(feature):
        try:
            return bool(codegen.llvm_cpu_has_features(feature, target))
        except Exception:  # noqa: BLE001 - a feature this target's LLVM backend lacks
            return False

    return 512 if has("avx512f") else 256 if has("avx") else 128


def vector_bits(func, target) -> int | None:
    """Width in bits of the widest vector of ``target`` whose lanes divide the innermost axis
    of every reduction output of ``func`` (None: no such vector of ``MIN_LANES`` or more)."""
    outs = _reduction_outputs(func)
    if not outs or target.kind.name != "llvm":
        return None
    bits = target_vector_bits(target)
    extents, dtype_bits = [], set()
    for b in outs:
        last = b.shape[-1] if len(b.shape) else None
        if last is None or not hasattr(last, "value"):
            return None                   # dynamic shape
        extents.append(int(last.value))
        dtype_bits.add(int(b.dtype.bits))
    if len(dtype_bits) != 1:
        return None
    g = math.gcd(*extents)
    elem = dtype_bits.pop()
    lanes = bits // elem
    while lanes >= MIN_LANES:
        if g % lanes == 0:
            return lanes * elem
        lanes //= 2
    return None


def _wide_vector_rules(target, vector_bits: int) -> list:
    """TVM's default LLVM rules with the multi-level tiling fixed at ``vector_bits``."""
    from tvm.s_tir import meta_schedule as ms

    rules = []
    for r in ms.ScheduleRule.create("llvm"):
        if type(r).__name__ == "MultiLevelTiling":
            # Same structure and write reuse as TVM's default CPU rule.
            r = ms.schedule_rule.MultiLevelTilingWideVector(
                structure="SSRSRS", vector_length_in_bits=vector_bits, max_innermost_factor=64,
                reuse_write=ms.schedule_rule.ReuseType(req="may", levels=[1, 2],
                                                       scope="global"))
        rules.append(r)
    return rules


def _reduces_over_channels(func) -> bool:
    """Whether every reduction block of ``func`` reads an operand whose innermost axis a
    reduction variable indexes (not a depthwise conv): then a pair of vectors shares one
    broadcast of each input value."""
    from tvm import s_tir, tirx

    try:
        sch = s_tir.Schedule(func)
        blocks = [sch.get(rv) for rv in sch.get_child_blocks(sch.get_sblock("root"))]
    except Exception:  # noqa: BLE001 - no root block to walk
        return False
    found = False
    for block in blocks:
        reduce_vars = [iv.var for iv in block.iter_vars
                       if iv.iter_type == tirx.IterVar.CommReduce]
        if not reduce_vars:
            continue
        # a grouped conv's channel reduction of extent 1 (depthwise) reduces over nothing
        reduce_vars = [iv.var for iv in block.iter_vars if iv.iter_type ==
                       tirx.IterVar.CommReduce and int(iv.dom.extent) > 1]
        found = True
        inner = [tirx.analysis.undefined_vars(r.region[-1].min) for r in block.reads
                 if len(r.region)]
        if not any(v.same_as(rv) for used in inner for v in used for rv in reduce_vars):
            return False
    return found


def _divides_all(func, lanes: int) -> bool:
    """Whether ``lanes`` divides the innermost axis of every reduction output of ``func``."""
    return all(int(b.shape[-1].value) % lanes == 0 for b in _reduction_outputs(func))


def space_for(func, target, layout: str, choice: str = "auto"):
    """One task's design space: ``"post-order-apply"`` (TVM's default), one tiled at the
    vector width, or for ``multi-vector`` where it fits the union with one at two vectors."""
    from tvm.s_tir import meta_schedule as ms

    if session_space(choice, target, layout) == "default":
        return "post-order-apply"
    bits = vector_bits(func, target)
    if bits is None:
        return "post-order-apply"
    one = ms.space_generator.PostOrderApply(sch_rules=_wide_vector_rules(target, bits),
                                            postprocs="llvm", mutator_probs="llvm")
    elem = int(_reduction_outputs(func)[0].dtype.bits)
    if (choice != "multi-vector" or not _divides_all(func, 2 * bits // elem)
            or not _reduces_over_channels(func)):
        return one
    two = ms.space_generator.PostOrderApply(sch_rules=_wide_vector_rules(target, 2 * bits),
                                            postprocs="llvm", mutator_probs="llvm")
    return ms.space_generator.SpaceGeneratorUnion(
        [one, two], sch_rules=_wide_vector_rules(target, bits), postprocs="llvm",
        mutator_probs="llvm")


def session_space(choice: str, target, layout: str) -> str:
    """A session's design space by name: "wide-vector" (``auto``, x86-64 LLVM, NHWC),
    "multi-vector" (asked for, any LLVM target in NHWC) or "default" (TVM's)."""
    from ..targets import x86_measured

    if choice == "default" or layout != "NHWC" or target.kind.name != "llvm":
        return "default"
    if choice == "auto" and not x86_measured(target):
        return "default"
    return "multi-vector" if choice == "multi-vector" else "wide-vector"


def describe(space) -> str:
    """The name ``tuning.json`` records for a space ``space_for`` returned."""
    from tvm.s_tir import meta_schedule as ms

    if isinstance(space, str):
        return "default"
    if isinstance(space, ms.space_generator.SpaceGeneratorUnion):
        return "multi-vector"
    return "wide-vector"
