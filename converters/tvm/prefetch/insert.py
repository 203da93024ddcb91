"""Software prefetch of the weights in a scheduled kernel: where it goes (``plan``) and the
inserting (``add_prefetch``).

MetaSchedule's CPU design space has no prefetch. ResNet-152 reads 240 MB of weights an
inference, each conv's once, and its tuned convs lose in the network what they reach alone and
warm (experiments/tvm-resnet152-roofline-2026-11-28/). ``add_prefetch`` inserts, into a
scheduled PrimFunc (after ``MetaScheduleApplyDatabase`` and the layout rewrite), an
``llvm.prefetch`` of the weight stream a fixed distance ahead.

Measured in experiments/tvm-resnet152-prefetch-2026-11-28/: in five of ResNet-152's kernels
(2048 floats ahead, ``prefetcht1``) it cut the network 1.7-3.2 %; in every kernel it fits it
made the network 4-8 % slower, five kernels running 1.5-3x slower from code generation (the
prefetch inside an unrolled register tile). So the build applies it only where
``choice.choose`` measured it faster, kernel by kernel.

A weight is a parameter the reduction block reads with no output position in its index but
the channel. The outputs do not change: a prefetch only moves data between caches."""
from __future__ import annotations

LINE = 16           # float32 elements in a 64-byte cache line
MAX_LINES = 16      # prefetches at one place at most (a step over more is not one stream)


def _walk(stmt, path, found):
    """Collect (loops enclosing, SBlockRealize) for every block realize under ``stmt``."""
    from tvm import s_tir, tirx

    if isinstance(stmt, s_tir.SBlockRealize):
        found.append((list(path), stmt))
        _walk(stmt.block.body, path, found)
        if stmt.block.init is not None:
            _walk(stmt.block.init, path, found)
    elif isinstance(stmt, tirx.For):
        _walk(stmt.body, path + [stmt], found)
    elif isinstance(stmt, tirx.SeqStmt):
        for s in stmt.seq:
            _walk(s, path, found)
    elif hasattr(stmt, "body"):
        _walk(stmt.body, path, found)


def _blocks(func) -> list:
    """(enclosing loops, SBlockRealize) for every block of ``func``."""
    found: list = []
    _walk(func.body, [], found)
    return found


def _loads(expr, out):
    """Collect every buffer load in ``expr``."""
    from tvm.ir import expr as ir

    if isinstance(expr, ir.TensorLoad):
        out.append(expr)
    for name in ("a", "b", "value", "true_value", "false_value", "condition"):
        sub = getattr(expr, name, None)
        if isinstance(sub, ir.Expr):
            _loads(sub, out)
    if isinstance(expr, ir.Call):
        for a in expr.args:
            _loads(a, out)


def _vars(expr, out):
    """Collect every variable in an index expression (sums, products, divisions)."""
    from tvm.ir import expr as ir

    if isinstance(expr, ir.Var):
        out.add(expr)
        return
    for name in ("a", "b", "value"):
        sub = getattr(expr, name, None)
        if isinstance(sub, ir.Expr):
            _vars(sub, out)


def _at(expr, used, values):
    """``expr`` with every variable in ``used`` at ``values``' value, or 0: an int."""
    from tvm import sym, tirx

    ana = sym.Analyzer()
    for v in used:
        ana.bind(v, tirx.const(values.get(v, 0), v.ty.dtype))
    return int(ana.simplify(expr).value)


def plan(func, placement: str = "stream"):
    """Where to prefetch in ``func``: for each reduction block that reads a weight, (the loop
    that walks the weights, the weight parameter, its flat index in loop variables, the loop
    variables inside that loop, the weight's size, the index's step per iteration).

    The loop is the innermost one whose variable moves the index and which sits outside
    every loop that re-reads the same weights (a pixel loop between two weight loops would
    repeat the prefetch), loops of extent 1 and vector lanes aside. A loop that reaches the
    weights only through a division (step 0) gives no stream: that block is left out.

    ``placement="tile"`` picks instead the innermost weight loop outside the register tile
    (the output loops inside the reduction), where the prefetch's address arithmetic cannot
    spill the accumulators."""
    from tvm import sym, tirx

    params = list(func.params)
    plans = []
    for loops, realize in _blocks(func):
        block = realize.block
        if not any(iv.iter_type == tirx.IterVar.CommReduce for iv in block.iter_vars):
            continue
        store = block.body
        if not isinstance(store, tirx.BufferStore):
            continue
        out_vars = [set() for _ in store.indices]
        for i, idx in enumerate(store.indices):
            _vars(idx, out_vars[i])
        position = set().union(*out_vars[:-1]) if len(out_vars) > 1 else set()
        loads = []
        _loads(store.value, loads)
        weight = None
        for ld in loads:
            if not any(ld.source.same_as(v) for v in params):
                continue
            used = set()
            for idx in ld.indices:
                _vars(idx, used)
            if used and not (used & position):
                weight = ld
        if weight is None:
            continue
        ana = sym.Analyzer()
        for iv, val in zip(block.iter_vars, realize.iter_values):
            ana.bind(iv.var, val)
        flat, stride = tirx.const(0, "int64"), 1
        for idx, ext in reversed(list(zip(weight.indices, weight.source.ty.shape))):
            flat = flat + tirx.Cast("int64", idx) * stride
            stride *= int(ext)
        flat = ana.simplify(flat)
        used = set()
        _vars(flat, used)
        walking = [lp for lp in loops if lp.kind != tirx.ForKind.VECTORIZED
                   and not (isinstance(lp.extent, tirx.IntImm) and int(lp.extent.value) == 1)]
        flags = [lp.loop_var in used for lp in walking]
        if not any(flags):
            continue
        if placement == "tile":
            # outside the register tile: the loops over outputs (pixels or channels) inside
            # the reduction hold accumulators in registers; the prefetch's address
            # arithmetic among them spills them
            reducing = set()
            for iv, val in zip(block.iter_vars, realize.iter_values):
                if iv.iter_type == tirx.IterVar.CommReduce:
                    _vars(val, reducing)
            red = [i for i, lp in enumerate(walking) if lp.loop_var in reducing]
            tile = [i for i, lp in enumerate(walking)
                    if red and i > red[0] and lp.loop_var not in reducing]
            before = [i for i, f in enumerate(flags) if f and (not tile or i < tile[0])]
        else:
            # once per step of the loop that walks the weights outside every loop that
            # re-reads them (a pixel loop between two weight loops would repeat the prefetch)
            rereads = [i for i, f in enumerate(flags) if not f and any(flags[i + 1:])]
            before = [i for i, f in enumerate(flags) if f and (not rereads or i < rereads[-1])]
        if not before and placement == "tile":
            continue
        k = before[-1] if before else max(i for i, f in enumerate(flags) if f)
        target = walking[k]
        inner = [lp.loop_var for lp in loops[loops.index(target) + 1:]]
        step = _at(flat, used, {target.loop_var: 1}) - _at(flat, used, {})
        if step == 0:       # the loop reaches the weights through a division: no stream
            continue
        plans.append((target, weight.source, flat, inner, stride, step))
    return plans


def add_prefetch(func, distance: int, locality: int = 2, placement: str = "stream"):
    """``func`` with, at the top of the loop ``plan`` picks for each reduction block, one
    prefetch per cache line of the weights that iteration reads (16 at most), ``distance``
    elements ahead of them and clamped to the buffer. ``locality`` 3/2/1/0 = x86
    prefetcht0/t1/t2/nta; ``placement``: ``plan``'s. Returns (the new func, how many blocks
    got a prefetch); a func with none is returned as it was."""
    import tvm
    from tvm import s_tir, sym, tirx

    plans = plan(func, placement)
    if not plans:
        return func, 0
    mod = tvm.IRModule({"main": func})
    sch = s_tir.Schedule(mod)
    for target, buf, flat, inner, size, step in plans:
        ana = sym.Analyzer()
        for v in inner:
            ana.bind(v, tirx.const(0, v.ty.dtype))
        start = ana.simplify(flat)
        calls = []
        for line in range(min(max(1, -(-abs(step) // LINE)), MAX_LINES)):
            ahead = tirx.min(start + distance + line * LINE, size - 1)
            idx, rest = [], ahead
            for ext in reversed([int(s) for s in buf.ty.shape]):
                idx.append(tirx.floormod(rest, ext))
                rest = tirx.floordiv(rest, ext)
            idx = [ana.simplify(i) for i in reversed(idx)]
            calls.append(tirx.Evaluate(tirx.call_llvm_intrin(
                "void", "llvm.prefetch", tirx.address_of(tirx.BufferLoad(buf, idx)),
                tirx.const(0, "int32"), tirx.const(locality, "int32"),
                tirx.const(1, "int32"))))
        # the loop as it is now: an earlier plan may have rewritten a loop around it
        loop_now = next(lp for loops, _ in _blocks(sch.mod["main"]) for lp in loops
                        if lp.loop_var.same_as(target.loop_var))
        new = tirx.For(loop_now.loop_var, loop_now.min, loop_now.extent, loop_now.kind,
                       tirx.SeqStmt(calls + [loop_now.body]),
                       loop_now.thread_binding, loop_now.annotations)
        sch.state.replace(sch.state.get_sref(loop_now), new, {})
    return sch.mod["main"], len(plans)
