"""Channel concats moved into their consumers (concat_split, ``--concat split``): what the
lowering becomes, parity of real builds against PyTorch, what is left alone, and which
databases get which form."""
from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

tvm = pytest.importorskip("tvm", reason="apache-tvm not installed (pip install 'edgebench[tvm]')")

from tvmlib import old_database  # noqa: E402 - after the skip


def _fire_net():
    """Two SqueezeNet-style Fire modules (a 1x1 and a 3x3 branch joined along the channels)
    with a ceil-mode max pool between them, a 3x3 conv over the second concat, and a head:
    the three consumers the rewrite handles (pool, 1x1 conv, padded 3x3 conv)."""
    import torch
    from torch import nn

    class Fire(nn.Module):
        def __init__(self, cin, squeeze, expand):
            super().__init__()
            self.squeeze = nn.Conv2d(cin, squeeze, 1)
            self.e1, self.e3 = nn.Conv2d(squeeze, expand, 1), nn.Conv2d(squeeze, expand, 3,
                                                                       padding=1)

        def forward(self, x):
            s = torch.relu(self.squeeze(x))
            return torch.cat([torch.relu(self.e1(s)), torch.relu(self.e3(s))], 1)

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.stem = nn.Conv2d(3, 8, 3, stride=2)
            self.fire1, self.fire2 = Fire(8, 4, 8), Fire(16, 4, 6)
            self.pool = nn.MaxPool2d(3, 2, ceil_mode=True)
            self.mix = nn.Conv2d(12, 10, 3, padding=1)

        def forward(self, x):
            x = self.pool(self.fire1(torch.relu(self.stem(x))))
            return torch.relu(self.mix(self.fire2(x))).mean((2, 3))

    torch.manual_seed(0)
    return Net().eval()


def _calls(mod) -> Counter:
    from converters.tvm.cpu import concat_split

    return Counter(concat_split._calls(mod))


def test_every_concat_moves_into_its_pool_and_convs_and_builds_keep_parity():
    import torch

    from converters.tvm import build, importer, passes, targets
    from converters.tvm.cpu import concat_split

    net = _fire_net()
    mod, _, _ = importer.import_model(net, (1, 3, 23, 23))
    before = _calls(passes.fold_batch_norm(mod))
    after = _calls(concat_split.rewrite(passes.fold_batch_norm(mod)))
    assert before["relax.concat"] == 2 and after["relax.concat"] == 0
    # pool(concat(a, b)) -> two pools; each conv over a 2-part concat -> two convs
    assert after["relax.nn.max_pool2d"] == before["relax.nn.max_pool2d"] + 1
    assert after["relax.nn.conv2d"] == before["relax.nn.conv2d"] + 2

    target, _ = targets.resolve_target("host")
    x = np.random.RandomState(0).standard_normal((1, 3, 23, 23)).astype(np.float32)
    ref = net(torch.from_numpy(x)).detach().numpy()
    for layout in ("NCHW", "NHWC"):
        kernels = {}
        for form in concat_split.CHOICES:
            res = build.build_library(net, (3, 23, 23), 1, target, layout=layout,
                                      spatial_mean="reduce", concat=form)
            kernels[form] = [t.task_name for t in res["tasks"]]
            got = tvm.relax.VirtualMachine(res["executable"], tvm.cpu())["main"](
                tvm.runtime.tensor(x)).numpy()
            assert np.abs(got - ref).max() <= 1e-5, (layout, form)
        assert [k for k in kernels["keep"] if k.startswith("concatenate")], layout
        assert not [k for k in kernels["split"] if k.startswith("concatenate")], layout


def _module(make):
    from tvm import relax

    bb = relax.BlockBuilder()
    a = relax.Var("a", relax.TensorType((1, 4, 8, 8), "float32"))
    b = relax.Var("b", relax.TensorType((1, 6, 8, 8), "float32"))
    with bb.function("main", [a, b]):
        with bb.dataflow():
            out = bb.emit_output(bb.emit(make(bb, a, b)))
        bb.emit_func_output(out)
    return bb.get()


def test_concats_whose_consumer_is_not_channel_wise_or_larger_are_left_alone():
    from tvm import relax

    from converters.tvm.cpu import concat_split

    rng = np.random.default_rng(0)

    def conv(groups=1, through_add=False, out=6):
        def make(bb, a, b):
            joined = bb.emit(relax.op.concat([a, b], axis=1))
            if through_add:
                joined = bb.emit(relax.op.add(joined, joined))
            w = rng.standard_normal((out, 10 // groups, 1, 1)).astype("float32")
            return relax.op.nn.conv2d(joined, relax.const(w), groups=groups)
        return make

    # a grouped conv mixes each group's channels only: its weight does not split by branch
    assert _calls(concat_split.rewrite(_module(conv(groups=2))))["relax.concat"] == 1
    # an add between the concat and the conv: the concat stays
    assert _calls(concat_split.rewrite(_module(conv(through_add=True))))["relax.concat"] == 1
    # a conv whose output is as large as the concat (SqueezeNet's classifier, 512 -> 1000):
    # its partial sum would move as much as the copy
    assert _calls(concat_split.rewrite(_module(conv(out=10))))["relax.concat"] == 1
    assert _calls(concat_split.rewrite(_module(conv(out=20))))["relax.concat"] == 1
    # the plain case, for contrast (10 -> 6 channels)
    split = _calls(concat_split.rewrite(_module(conv())))
    assert split["relax.concat"] == 0 and split["relax.nn.conv2d"] == 2
    # a concat along the height is not a channel concat
    def height_pool(bb, a, b):
        joined = bb.emit(relax.op.concat([a, a], axis=2))
        return relax.op.nn.max_pool2d(joined, pool_size=2, strides=2)
    assert _calls(concat_split.rewrite(_module(height_pool)))["relax.concat"] == 1


def test_a_database_keeps_the_concat_form_it_was_tuned_with(tmp_path):
    from converters.tvm import database, lowering, passes, targets

    target, _ = targets.resolve_target("host")
    assert lowering.lowering_for(target, tmp_path / "new")["concat"] == "split"
    # measured on CPUs only: a new GPU database keeps its concats unless asked
    gpu = tvm.target.Target({"kind": "cuda", "arch": "sm_87"})
    assert lowering.lowering_for(gpu, tmp_path / "new")["concat"] == "keep"
    assert lowering.lowering_for(gpu, tmp_path / "new", concat="split")["concat"] == "split"
    old = old_database(tmp_path / "old")     # a database from before the choice was recorded
    assert lowering.lowering_for(target, old)["concat"] == "keep"
    assert lowering.lowering_for(target, old, concat="split")["concat"] == "split"
    database.record_session(old, {"target": {}},
                            choices={"layout": "NHWC", "concat": "split"})
    assert lowering.lowering_for(target, old)["concat"] == "split"
    with pytest.raises(Exception, match="tvm_concat must be one of keep, split"):
        passes.lower_for_tuning(None, target, "NHWC", concat="inline")
