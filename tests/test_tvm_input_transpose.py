"""The NCHW input read by the first conv (input_transpose, ``--input-transpose conv``): what
the lowering becomes, parity of a real build, which convs qualify, and the defaults."""
from __future__ import annotations

import numpy as np
import pytest

tvm = pytest.importorskip("tvm", reason="apache-tvm not installed (pip install 'edgebench[tvm]')")

from tvmlib import old_database  # noqa: E402 - after the skip

SHAPE = (1, 3, 15, 15)


def _stem_net(groups: int = 1):
    """A stem conv (3x3, stride 2, padded) + ReLU, a 1x1 conv and a global mean."""
    import torch
    from torch import nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.stem = nn.Conv2d(3, 48, 3, stride=2, padding=1, groups=groups)
            self.conv = nn.Conv2d(48, 16, 1)

        def forward(self, x):
            return self.conv(torch.relu(self.stem(x))).mean((2, 3))

    torch.manual_seed(0)
    return Net().eval()


def _build_and_run(net, form: str):
    from converters.tvm import build, targets

    target, _ = targets.resolve_target("host")
    res = build.build_library(net, SHAPE[1:], 1, target, layout="NHWC", input_transpose=form)
    x = np.random.RandomState(0).standard_normal(SHAPE).astype(np.float32)
    got = tvm.relax.VirtualMachine(res["executable"], tvm.cpu())["main"](
        tvm.runtime.tensor(x)).numpy()
    return res, x, got


def _param_shapes(res) -> dict:
    """Each tuning task's name -> the shapes of its PrimFunc's parameters."""
    from tvm.s_tir import meta_schedule as ms

    return {t.task_name: [tuple(int(d) for d in a.shape)
                          for a in ms.arg_info.ArgInfo.from_prim_func(t.dispatched[0]["main"])]
            for t in res["tasks"]}


def test_the_first_conv_reads_the_nchw_input_and_keeps_parity():
    import torch

    net = _stem_net()
    for form in ("kernel", "conv"):
        res, x, got = _build_and_run(net, form)
        ref = net(torch.from_numpy(x)).detach().numpy()
        shapes = _param_shapes(res)
        transposes = [n for n in shapes if "transpose" in n]
        # which kernel reads the model's input as it is, NCHW
        readers = [n for n, s in shapes.items() if SHAPE in s]
        if form == "conv":
            assert transposes == [], shapes
            assert len(readers) == 1 and "conv2d" in readers[0], shapes
            # the stem's bias and ReLU stay fused with it, and it writes NHWC
            assert "relu" in readers[0] and (1, 8, 8, 48) in shapes[readers[0]], shapes
        else:
            assert readers == transposes and len(transposes) == 1, shapes
        assert np.abs(got - ref).max() <= 1e-5, form


def test_a_grouped_stem_keeps_its_transpose():
    import torch

    net = _stem_net(groups=3)
    res, x, got = _build_and_run(net, "conv")
    assert any("transpose" in n for n in _param_shapes(res))
    assert np.abs(got - net(torch.from_numpy(x)).detach().numpy()).max() <= 1e-5


def test_new_nhwc_cpu_databases_read_the_input_in_the_conv_and_older_ones_keep_the_kernel(
        tmp_path):
    from converters.tvm import database, lowering, passes, targets

    target, _ = targets.resolve_target("host")
    gpu = tvm.target.Target({"kind": "cuda", "arch": "sm_87"})
    assert lowering.lowering_for(target, tmp_path / "new")["input_transpose"] == "conv"
    assert lowering.lowering_for(target, tmp_path / "new", layout="NCHW")["input_transpose"] == \
        "kernel"
    assert lowering.lowering_for(gpu, tmp_path / "new", layout="NHWC")["input_transpose"] == \
        "kernel"
    old = old_database(tmp_path / "old")     # a database from before the choice was recorded
    assert lowering.lowering_for(target, old)["input_transpose"] == "kernel"
    database.record_session(old, {"target": {}},
                            choices={**lowering.BEFORE_RECORDED, "layout": "NHWC",
                                     "input_transpose": "conv"})
    assert lowering.lowering_for(target, old)["input_transpose"] == "conv"
    assert database.read_db_meta(old)["concat"] == "keep"     # every choice is recorded
    with pytest.raises(Exception, match="tvm_input_transpose must be one of kernel, conv"):
        passes.lower_for_tuning(None, target, "NHWC", input_transpose="fused")
