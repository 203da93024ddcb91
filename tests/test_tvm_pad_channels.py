"""Conv output channels padded to whole vectors (pad_channels, ``--out-channels pad``): which
convs qualify on which CPU, what the lowering becomes, and parity of a real build."""
from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

tvm = pytest.importorskip("tvm", reason="apache-tvm not installed (pip install 'edgebench[tvm]')")

from tvmlib import old_database  # noqa: E402 - after the skip


def test_only_channels_that_pad_cheaply_to_whole_vectors_are_padded():
    from converters.tvm.cpu import pad_channels

    assert pad_channels.padded(1000, 16) == 1008      # SqueezeNet's classes on AVX-512
    assert pad_channels.padded(1000, 8) is None       # whole on AVX2
    assert pad_channels.padded(1024, 16) is None
    assert pad_channels.padded(24, 16) is None        # 32 would add a third
    assert pad_channels.padded(40, 8) is None
    assert pad_channels.padded(250, 8) == 256
    # pad-pair: to whole pairs of vectors where that adds little too, else to whole vectors
    assert pad_channels.padded_to(1000, 16) == 1008
    assert pad_channels.padded_to(1000, 16, pair=True) == 1024
    assert pad_channels.padded_to(200, 16, pair=True) == 208     # 224 would add 1/8
    assert pad_channels.padded_to(1008, 16, pair=True) is None   # whole vectors stay
    assert pad_channels.padded_to(1000, 8, pair=True) is None
    zen4 = tvm.target.Target({"kind": "llvm", "mcpu": "znver4"})
    zen3 = tvm.target.Target({"kind": "llvm", "mcpu": "znver3"})
    assert pad_channels.float_lanes(zen4) == 16 and pad_channels.float_lanes(zen3) == 8
    assert pad_channels.float_lanes(tvm.target.Target({"kind": "cuda"})) is None


def _head_net(classes: int):
    """A stem, a Fire-style concat and a 1x1 conv to ``classes`` + ReLU + global mean: the
    head SqueezeNet has."""
    import torch
    from torch import nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b = nn.Conv2d(3, 8, 3, stride=2), nn.Conv2d(3, 8, 3, stride=2)
            self.head = nn.Conv2d(16, classes, 1)

        def forward(self, x):
            x = torch.cat([torch.relu(self.a(x)), torch.relu(self.b(x))], 1)
            return torch.relu(self.head(x)).mean((2, 3))

    torch.manual_seed(0)
    return Net().eval()


def _conv_widths(mod) -> list[int]:
    return sorted(int(b.value.ty.shape.values[1]) for b in mod["main"].body.blocks[0].bindings
                  if getattr(getattr(b.value, "op", None), "name", "") == "relax.nn.conv2d")


def test_pad_pair_pads_a_1000_class_head_to_whole_pairs_of_avx512_vectors():
    from converters.tvm import importer, passes
    from converters.tvm.cpu import pad_channels

    zen4 = tvm.target.Target({"kind": "llvm", "mcpu": "znver4"})       # 16 floats
    mod, _, _ = importer.import_model(_head_net(1000), (1, 3, 15, 15))
    folded = passes.fold_batch_norm(mod)
    assert _conv_widths(pad_channels.rewrite(folded, zen4)) == [8, 8, 1008]
    assert _conv_widths(pad_channels.rewrite(folded, zen4, pair=True)) == [8, 8, 1024]


def test_a_padded_head_is_sliced_back_and_keeps_parity():
    import torch

    from converters.tvm import build, importer, passes, targets
    from converters.tvm.cpu import concat_split, pad_channels

    target, _ = targets.resolve_target("host")
    lanes = pad_channels.float_lanes(target)
    net = _head_net(250)                 # not whole for 4, 8 or 16 lanes; pads by 2 or 6
    mod, _, _ = importer.import_model(net, (1, 3, 15, 15))
    rewritten = pad_channels.rewrite(passes.fold_batch_norm(mod), target)
    ops = Counter(concat_split._calls(rewritten))
    assert ops["relax.strided_slice"] == 1 and ops["relax.nn.conv2d"] == 3
    assert _conv_widths(rewritten) == [8, 8, pad_channels.padded(250, lanes)]

    x = np.random.RandomState(0).standard_normal((1, 3, 15, 15)).astype(np.float32)
    ref = net(torch.from_numpy(x)).detach().numpy()
    for form in pad_channels.CHOICES:
        res = build.build_library(net, (3, 15, 15), 1, target, layout="NHWC", concat="split",
                                  out_channels=form)
        got = tvm.relax.VirtualMachine(res["executable"], tvm.cpu())["main"](
            tvm.runtime.tensor(x)).numpy()
        # the build itself pads: its head kernel carries the slice back to 250 channels
        sliced = [t.task_name for t in res["tasks"] if "strided_slice" in t.task_name]
        assert bool(sliced) == (form in pad_channels.PADDED), (form, sliced)
        assert got.shape == ref.shape == (1, 250)
        assert np.abs(got - ref).max() <= 1e-5, form


def test_new_nhwc_databases_pad_and_older_ones_keep(tmp_path):
    from converters.tvm import database, lowering, passes, targets

    target, _ = targets.resolve_target("host")
    assert lowering.lowering_for(target, tmp_path / "new")["out_channels"] == "pad"
    assert lowering.lowering_for(target, tmp_path / "new", layout="NCHW")["out_channels"] == \
        "keep"
    old = old_database(tmp_path / "old")     # a database from before the choice was recorded
    assert lowering.lowering_for(target, old)["out_channels"] == "keep"
    database.record_session(old, {"target": {}},
                            choices={"layout": "NHWC", "out_channels": "pad"})
    assert lowering.lowering_for(target, old)["out_channels"] == "pad"
    with pytest.raises(Exception, match="tvm_out_channels must be one of keep, pad"):
        passes.lower_for_tuning(None, target, "NHWC", out_channels="round")
