"""Software prefetch of a kernel's weights (converters/tvm/prefetch.py): where it goes, that
it reaches the machine code, and that the kernel computes the same thing."""
import numpy as np
import pytest

tvm = pytest.importorskip("tvm", reason="apache-tvm not installed (pip install 'edgebench[tvm]')")


def _conv():
    """A 3x3 NHWC conv with HWIO weights, as TE makes it: the pixel loops outside the
    channel loops, so the weights are re-read for every pixel. The weights come first in
    the product: the data must be told apart by its index, not by its place."""
    from tvm import te

    x = te.placeholder((1, 10, 10, 16), name="x")
    w = te.placeholder((3, 3, 16, 32), name="w")
    ry, rx, ci = te.reduce_axis((0, 3), "ry"), te.reduce_axis((0, 3), "rx"), \
        te.reduce_axis((0, 16), "ci")
    y = te.compute((1, 8, 8, 32), lambda n, h, wo, co: te.sum(
        w[ry, rx, ci, co] * x[n, h + ry, wo + rx, ci], axis=[ry, rx, ci]), name="y")
    return te.create_prim_func([x, w, y])


def _add():
    from tvm import te

    a = te.placeholder((64,), name="a")
    b = te.placeholder((64,), name="b")
    return te.create_prim_func([a, b, te.compute((64,), lambda i: a[i] + b[i], name="c")])


def _host():
    from converters.tvm import targets

    return targets.resolve_target("host")[0]


def _run(func, args):
    lib = tvm.compile(tvm.IRModule({"main": func.with_attr("global_symbol", "main")}),
                      target=_host())
    tensors = [tvm.runtime.tensor(a) for a in args]
    lib["main"](*tensors)
    return lib, tensors[-1].numpy()


def test_the_plan_finds_the_weight_and_the_loop_that_walks_it():
    from converters.tvm.prefetch import plan

    (loop, weight, _, inner, size, step), = plan(_conv())
    assert weight.name == "w"                   # not x: its index holds the output pixel
    assert size == 3 * 3 * 16 * 32
    # the input-channel loop, innermost: one step moves the HWIO index by the 32 outputs
    assert loop.loop_var.name == "ci" and step == 32 and inner == []


def test_the_prefetch_reaches_the_code_and_the_outputs_do_not_change():
    from converters.tvm.prefetch import add_prefetch

    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, 10, 10, 16)).astype("float32")
    w = rng.standard_normal((3, 3, 16, 32)).astype("float32")
    y = np.zeros((1, 8, 8, 32), "float32")
    func = _conv()
    with_prefetch, blocks = add_prefetch(func, 2048, locality=2)
    assert blocks == 1
    script = with_prefetch.script()
    # two cache lines a step (32 floats), 2048 elements ahead, clamped to the buffer
    assert script.count('"llvm.prefetch"') == 2 and "4607" in script
    lib, got = _run(with_prefetch, [x, w, y])
    _, want = _run(func, [x, w, y.copy()])
    np.testing.assert_array_equal(got, want)
    np.testing.assert_allclose(want, np.einsum("nhwyxc,yxco->nhwo", np.lib.stride_tricks
                                               .sliding_window_view(x, (3, 3), axis=(1, 2))
                                               .transpose(0, 1, 2, 4, 5, 3), w),
                               rtol=1e-4, atol=1e-4)
    asm = lib.mod.inspect_source("asm")
    assert "prefetcht1" in asm or "prfm" in asm            # x86-64 or aarch64


def test_a_kernel_without_weights_is_left_as_it_was():
    from converters.tvm.prefetch import add_prefetch, plan

    func = _add()
    assert plan(func) == []
    same, blocks = add_prefetch(func, 2048)
    assert blocks == 0 and same.same_as(func)


def test_placed_outside_the_register_tile_when_asked():
    """With the output channels innermost (inside the reduction, as a register tile holds
    them), the stream placement prefetches at every channel; the tile placement moves out
    to the input-channel loop, where the accumulators are not in flight."""
    from tvm import s_tir

    from converters.tvm.prefetch import add_prefetch, plan

    sch = s_tir.Schedule(tvm.IRModule({"main": _conv()}))
    n, h, wo, co, ry, rx, ci = sch.get_loops(sch.get_sblock("y"))
    sch.reorder(ry, rx, ci, co)
    func = sch.mod["main"]
    (stream, *_), = plan(func)
    (tile, _, _, inner, _, step), = plan(func, "tile")
    assert stream.loop_var.name == "co"
    assert tile.loop_var.name == "ci" and step == 32 and [v.name for v in inner] == ["co"]
    x = np.random.default_rng(1).standard_normal((1, 10, 10, 16)).astype("float32")
    w = np.random.default_rng(2).standard_normal((3, 3, 16, 32)).astype("float32")
    y = np.zeros((1, 8, 8, 32), "float32")
    _, got = _run(add_prefetch(func, 2048, placement="tile")[0], [x, w, y])
    _, want = _run(func, [x, w, y.copy()])
    np.testing.assert_array_equal(got, want)
