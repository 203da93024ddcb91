"""relax_rewrite.dense_conv2d: which Relax conv2d calls the layout rewrites (pad_channels,
input_transpose, concat_split, winograd) may take."""
from __future__ import annotations

import numpy as np
import pytest

tvm = pytest.importorskip("tvm", reason="apache-tvm not installed (pip install 'edgebench[tvm]')")


def _conv(layout="NCHW", kernel_layout=None, out_layout=None, groups=1):
    """A real Relax conv2d call over an 8-channel input, 4 output channels."""
    from tvm import relax

    kernel_layout = kernel_layout or {"NCHW": "OIHW", "NHWC": "OHWI"}[layout]
    x_shape = (1, 8, 6, 6) if layout == "NCHW" else (1, 6, 6, 8)
    w = np.zeros({"OIHW": (4, 8 // groups, 3, 3), "OHWI": (4, 3, 3, 8 // groups),
                  "HWIO": (3, 3, 8 // groups, 4)}[kernel_layout], "float32")
    x = relax.Var("x", relax.TensorType(x_shape, "float32"))
    return relax.op.nn.conv2d(x, relax.const(w), groups=groups, data_layout=layout,
                              kernel_layout=kernel_layout, out_layout=out_layout)


def test_dense_conv2d_takes_one_group_in_matching_layouts_only():
    from tvm import relax

    from converters.tvm.relax_rewrite import dense_conv2d

    assert dense_conv2d(_conv("NCHW"), "NCHW")
    assert dense_conv2d(_conv("NHWC"), "NHWC")
    # the data layout asked for, not another
    assert not dense_conv2d(_conv("NHWC"), "NCHW")
    assert not dense_conv2d(_conv("NCHW"), "NHWC")
    # a kernel layout that does not go with the data's
    assert not dense_conv2d(_conv("NHWC", kernel_layout="HWIO"), "NHWC")
    # grouped (and so depthwise) convs mix each group's channels only
    assert not dense_conv2d(_conv("NCHW", groups=2), "NCHW")
    # the output in another layout: refused unless the caller does not care
    other = _conv("NCHW", out_layout="NHWC")
    assert not dense_conv2d(other, "NCHW")
    assert dense_conv2d(other, "NCHW", out_layout=False)
    # not a conv at all
    x = relax.Var("x", relax.TensorType((1, 8, 6, 6), "float32"))
    assert not dense_conv2d(relax.op.add(x, x), "NCHW")
