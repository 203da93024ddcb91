"""Max pooling on CPUs in channels-last layout: a hand-written sketch for MetaSchedule.

TOPI marks pooling blocks ``schedule_rule = "meta_schedule.pool_max"`` and TVM registers no
CPU rule under that name, so generic rules schedule them poorly (padding in its own buffer,
an ``rfactor`` copy, channels not vectorised). This rule inlines the padding, puts the window
outside the channel loop, vectorises the channels and parallelises output rows (or rows x
columns: two sketches) (experiments/FINDINGS.md#max-pools-a-hand-written-sketch).
Non-channels-last pools, and every pool under ``enabled(False)``, keep the generic rules.
"""
from __future__ import annotations

import contextlib

RULE = "meta_schedule.pool_max"             # the mark TOPI puts on pooling blocks
# ApplyCustomRule looks up "s_tir.meta_schedule.<target key>.<mark>" for each target key
REGISTERED_AS = "s_tir.meta_schedule.cpu." + RULE

_state = {"on": False, "registered": False}


def for_space(session_space: str) -> str:
    """What a session's pools get by ``design_space.session_space``'s name: "channels-last"
    (the sketches) in edgebench's CPU spaces, "generic" (TVM's rules) in the default one."""
    return "generic" if session_space == "default" else "channels-last"


def _iter_kinds(sch, block) -> list:
    """(loop, is_reduction, extent) for each loop of an unscheduled block, outermost first
    (one loop per block variable, as TOPI's compute gives)."""
    from tvm import tirx

    loops = sch.get_loops(block)
    ivs = sch.get(block).iter_vars
    if len(loops) != len(ivs):
        return []
    return [(loop, iv.iter_type == tirx.IterVar.CommReduce, int(iv.dom.extent))
            for loop, iv in zip(loops, ivs)]


def channels_last(sch, block) -> bool:
    """Whether the block's innermost spatial variable indexes the innermost axis of the
    buffer it reads, one for one: channels in NHWC (in NCHW it is the width, at a stride)."""
    from tvm import tirx

    from .design_space import region_buffer

    node = sch.get(block)
    spatial = [iv.var for iv in node.iter_vars if iv.iter_type == tirx.IterVar.DataPar]
    out = region_buffer(node.writes[0])
    inputs = [r for r in node.reads if not region_buffer(r).same_as(out)]
    if not spatial or len(inputs) != 1 or not len(inputs[0].region):
        return False
    inner = inputs[0].region[-1]
    return bool(inner.min.same_as(spatial[-1]) and int(inner.extent) == 1)


def _sketch(sch, block, pixels: bool):
    """Inline the padding, put the window loops outside the channels, vectorise those and
    make the output rows (``pixels``: rows x columns) parallel."""
    for other in sch.get_child_blocks(sch.get_sblock("root")):
        if not sch.get(other).same_as(sch.get(block)):
            sch.compute_inline(other)
    loops = _iter_kinds(sch, block)
    spatial = [loop for loop, red, _ in loops if not red]
    window = [loop for loop, red, _ in loops if red]
    sch.reorder(*spatial[:-1], *window, spatial[-1])
    outer = spatial[:-1] if pixels else spatial[:-2]
    sch.parallel(sch.fuse(*outer) if len(outer) > 1 else outer[0])
    sch.vectorize(spatial[-1])
    return sch


def _rule(sch, block) -> list:
    """ApplyCustomRule's entry: the two sketches, or the block as it is, unmarked, for the
    generic rules (what TVM does where no rule is registered)."""
    loops = _iter_kinds(sch, block) if _state["on"] else []
    spatial = [n for _, red, n in loops if not red]
    if (not _state["on"] or len(spatial) < 3 or not any(red for _, red, _ in loops)
            or not channels_last(sch, block)):
        sch.unannotate(block, "schedule_rule")
        return [sch]
    out = []
    for pixels in (False, True):
        copy = sch.copy()
        try:
            out.append(_sketch(copy, block, pixels))
        except Exception:  # noqa: BLE001 - a producer that cannot be inlined: generic rules
            pass
    if not out:
        sch.unannotate(block, "schedule_rule")
        return [sch]
    return out


def register() -> None:
    """Register the rule with TVM, once per process (inactive until ``enabled``)."""
    import tvm_ffi

    if not _state["registered"]:
        tvm_ffi.register_global_func(REGISTERED_AS, _rule, override=True)
        _state["registered"] = True


@contextlib.contextmanager
def enabled(on: bool):
    """Pooling blocks get the hand-written sketches inside this block when ``on``."""
    register()
    before = _state["on"]
    _state["on"] = bool(on)
    try:
        yield
    finally:
        _state["on"] = before
