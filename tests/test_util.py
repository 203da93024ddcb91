"""edgebench.util's helpers that the measurements lean on."""
from __future__ import annotations

import numpy as np
import pytest


@pytest.mark.parametrize("shape, dtype", [((1, 3, 224, 224), np.float32), ((5,), np.uint8),
                                          ((2, 7, 3), np.float64)])
def test_aligned_empty_starts_on_a_64_byte_boundary_with_the_shape_asked(shape, dtype):
    from edgebench.util import ALIGNMENT, aligned_empty

    for _ in range(4):       # numpy's own allocations land 16 bytes past a boundary at times
        a = aligned_empty(shape, dtype)
        assert a.shape == shape and a.dtype == dtype and a.flags.c_contiguous
        assert a.ctypes.data % ALIGNMENT == 0
        a[...] = 1
        assert int(a.sum()) == a.size
    assert aligned_empty((4,), np.float32, alignment=4096).ctypes.data % 4096 == 0
