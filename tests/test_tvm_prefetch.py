"""Software prefetch of a kernel's weights (converters/tvm/prefetch/): where it goes, that
it reaches the machine code, that the kernel computes the same thing, how a kernel's choice
is decided from its rounds, and that a build applies a kept choice to the very kernel
measured and to no other."""
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


def _reordered_conv():
    from tvm import s_tir

    sch = s_tir.Schedule(tvm.IRModule({"main": _conv()}))
    n, h, wo, co, ry, rx, ci = sch.get_loops(sch.get_sblock("y"))
    sch.reorder(ry, rx, ci, co)
    return sch.mod["main"]


@pytest.mark.parametrize("ratios, warm_ratio, want", [
    # flushed time with / without, per round; warm with / without; what is kept
    ([0.97] * 8 + [1.01], 1.00, "stream"),      # 3 % faster in 8 of 9 rounds
    ([0.97] * 5 + [1.01] * 4, 1.00, None),      # median 3 % faster, but in only 5 rounds
    ([0.99] * 9, 1.00, None),                   # faster every round, by less than 2 %
    ([0.97] * 9, 1.02, None),                   # warm (weights cached) 2 % slower
])
def test_a_placement_is_kept_only_when_faster_by_the_gain_in_most_rounds(ratios, warm_ratio,
                                                                          want):
    from converters.tvm.prefetch.choice import decide

    none = [1e-3 * (1 + 0.1 * (r % 3)) for r in range(9)]      # the machine drifts
    flushed = {"none": none, "stream": [n * k for n, k in zip(none, ratios)]}
    warm = {"none": [5e-4] * 9, "stream": [5e-4 * warm_ratio] * 9}
    pick, stats = decide(flushed, warm)
    assert pick == want, stats
    assert stats["stream"]["warm_ratio"] == warm_ratio


def test_warm_time_counts_only_where_the_weights_fit_in_the_cache():
    """ResNet-152's 230 MiB of weights come from memory each inference, as flushed: its
    kernels are judged on that alone; a model whose weights fit the last-level cache may
    find them there, so warm must not get slower. ``repick`` applies a rule to kept figures."""
    from converters.tvm.prefetch.choice import WARM_SLACK, decide, repick, warm_slack_for

    llc = 32 << 20
    assert warm_slack_for(230 << 20, llc) is None
    assert warm_slack_for(5 << 20, llc) == WARM_SLACK
    assert warm_slack_for(None, llc) == WARM_SLACK      # unknown: the careful rule
    flushed = {"none": [1e-3] * 9, "stream": [0.92e-3] * 9}
    warm = {"none": [5e-4] * 9, "stream": [5e-4 * 1.03] * 9}
    assert decide(flushed, warm, warm_slack=None)[0] == "stream"
    pick, stats = decide(flushed, warm)
    assert pick is None
    kept = {"gain": 0.02, "per_kernel": [{"kernel": "k", "picked": None, "arms": stats}]}
    loose = repick(kept, None)
    assert loose["per_kernel"][0]["picked"] == "stream" and loose["chosen"] == 1
    assert loose["warm_slack"] is None and kept["per_kernel"][0]["picked"] is None


def test_the_faster_of_two_kept_placements_wins():
    from converters.tvm.prefetch.choice import decide

    none = [1e-3] * 9
    flushed = {"none": none, "stream": [0.97e-3] * 9, "tile": [0.95e-3] * 9}
    warm = {a: [5e-4] * 9 for a in flushed}
    assert decide(flushed, warm)[0] == "tile"


def test_choose_measures_each_placement_and_a_build_applies_only_the_kernel_measured(
        tmp_path):
    """A real measurement of a real kernel alone (both placements give different code on
    the reordered conv; the elementwise kernel has none to measure), then a kept choice:
    applied to the kernel of that name and schedule, not to one whose schedule changed."""
    from converters.tvm.prefetch import choice

    target = _host()
    conv, add = _reordered_conv(), _add()
    applied = tvm.IRModule({"conv": conv.with_attr("global_symbol", "conv"),
                            "add": add.with_attr("global_symbol", "add")})
    res = choice.choose(applied, target, rounds=2)
    assert res["kernels_measured"] == 1 and res["rounds"] == 2
    (row,) = res["per_kernel"]
    assert row["kernel"] == "conv" and set(row["arms"]) == {"stream", "tile"}
    assert row["hash"] == choice.kernel_hash(applied["conv"])
    assert row["none_us"]["flushed"] > 0 and row["none_us"]["warm"] > 0
    for stats in row["arms"].values():
        assert stats["flushed_ratio"] > 0 and 0 <= stats["faster_share"] <= 1
    assert res["chosen"] == (row["picked"] is not None)

    row["picked"] = "tile"      # as if measured faster: what a build does with a choice
    choice.save(tmp_path, res)
    out, report = choice.apply_chosen(applied, tmp_path)
    assert report == {**choice.summary(res), "applied": 1, "unmatched": []}
    assert report["distance"] == choice.DISTANCE and report["rounds"] == 2
    assert out["conv"].script().count('"llvm.prefetch"') == 2
    assert '"llvm.prefetch"' not in out["add"].script()
    assert '"llvm.prefetch"' not in applied["conv"].script()     # the input is unchanged
    # the schedule changed since (the stream order): no prefetch, counted
    other = tvm.IRModule({"conv": _conv().with_attr("global_symbol", "conv")})
    same, report = choice.apply_chosen(other, tmp_path)
    assert report["applied"] == 0 and report["unmatched"] == ["conv"]
    assert same.same_as(other)
    # no choice kept: nothing to report
    assert choice.apply_chosen(applied, tmp_path / "none")[1] is None
