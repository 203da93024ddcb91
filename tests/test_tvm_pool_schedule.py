"""Max pooling's hand-written sketch (converters/tvm/pool_schedule.py): which pools get it,
what the design space holds with and without it, and that the kernels it builds compute
PyTorch's max pool."""
from __future__ import annotations

import numpy as np
import pytest

tvm = pytest.importorskip("tvm", reason="apache-tvm not installed (pip install 'edgebench[tvm]')")


def _pool(layout: str, shape=(1, 11, 11, 32)):
    """TOPI's 3x3 stride-2 max pool with ceil mode (SqueezeNet's), as Relax lowers it."""
    from tvm import te, topi

    n, h, w, c = shape
    data = te.placeholder(shape if layout == "NHWC" else (n, c, h, w), name="data")
    out = topi.nn.pool2d(data, (3, 3), (2, 2), (1, 1), (0, 0, 0, 0), "max", ceil_mode=True,
                         layout=layout)
    return te.create_prim_func([data, out])


def _space(func, on: bool):
    from tvm.s_tir import meta_schedule as ms

    from converters.tvm import intrinsics
    from converters.tvm.cpu import design_space, pool_schedule

    target = tvm.target.Target({"kind": "llvm", "num-cores": 2})
    intrinsics.register_for(target)     # else the first TuneContext parses them all (~60 s)
    with pool_schedule.enabled(on):
        space = design_space.space_for(func, target, "NHWC", "auto")
        ctx = ms.TuneContext(mod=tvm.IRModule({"main": func}), target=target,
                             space_generator=space, task_name="pool")
        return target, ctx.generate_design_space()


def _kinds(sch) -> list[str]:
    return [inst.kind.name for inst in sch.trace.insts]


def _loops(sch) -> list:
    """(kind, extent) of the pool block's loops, outermost first."""
    loops = [sch.get(rv) for rv in sch.get_loops(sch.get_sblock("pool_max"))]
    return [(tvm.tirx.ForKind(int(f.kind)).name, int(f.extent)) for f in loops]


def test_channels_last_pools_get_a_vector_kernel_without_temporaries():
    import torch

    func = _pool("NHWC")
    # The rule fires on TOPI's mark: if TOPI stops putting it, pools fall back silently.
    assert 'meta_schedule.pool_max' in func.script()
    target, spaces = _space(func, on=True)
    assert len(spaces) == 2                              # rows, rows x columns parallel
    x = np.random.default_rng(0).standard_normal((1, 11, 11, 32)).astype("float32")
    want = torch.nn.functional.max_pool2d(torch.from_numpy(x).permute(0, 3, 1, 2), 3, 2,
                                          ceil_mode=True).permute(0, 2, 3, 1).numpy()
    parallel = []
    for sch in spaces:
        kinds = _kinds(sch)
        assert "RFactor" not in kinds and "ComputeAt" not in kinds, kinds
        assert "ComputeInline" in kinds and "Vectorize" in kinds, kinds
        main = sch.mod["main"]
        # no buffer of its own: the padding is read in place and the window reduced in
        # registers
        assert "alloc_buffer" not in main.script(), main.script()
        loops = _loops(sch)
        assert loops[-1] == ("VECTORIZED", 32), loops      # the channels, innermost
        parallel.append([e for k, e in loops if k == "PARALLEL"])
        lib = tvm.compile(tvm.IRModule({"main": main.with_attr("global_symbol", "main")}),
                          target=target)
        out = tvm.runtime.tensor(np.zeros(want.shape, "float32"), tvm.cpu())
        lib["main"](tvm.runtime.tensor(x, tvm.cpu()), out)
        np.testing.assert_array_equal(out.numpy(), want)
    assert sorted(parallel) == [[5], [25]], parallel     # 5 output rows; 5 x 5 pixels


def test_other_pools_and_the_default_space_keep_tvms_generic_rules():
    # The rule off (the "default" design space): TVM's fallback for an unknown rule, which
    # drops the mark and lets the generic rules schedule the block.
    for func, on in ((_pool("NHWC"), False), (_pool("NCHW"), True)):
        _, spaces = _space(func, on)
        for sch in spaces:
            kinds = _kinds(sch)
            assert "Unannotate" in kinds and "Reorder" not in kinds, kinds
    from converters.tvm.cpu import pool_schedule

    assert pool_schedule._state["on"] is False            # enabled() restored it
