"""FP32 ONNX -> FP16 ONNX, the only way to FP16 on strongly typed TensorRT (11+, or
``--trt-fp16-mode onnx`` on 9/10). Needs onnx and onnxconverter-common (edgebench[tensorrt]),
not TensorRT: tested on CPU with ONNX Runtime."""
from __future__ import annotations

import os
import warnings

FP16_MAX = 65504.0


def to_fp16_onnx(src: str, dst: str) -> dict:
    """FP32 ONNX -> FP16 ONNX for strongly typed TensorRT (11+): onnxconverter-common's
    ``convert_float_to_float16`` with ``keep_io_types=True`` (graph inputs/outputs stay
    float32, Cast nodes at the edges). ``max_finite_val`` is FP16's real max (65504), not the
    library default 1e4, so no representable weight is clamped; values below 1e-7 are
    flushed to +-1e-7 (library default) and counted. Returns facts for the record."""
    import onnx
    from onnxconverter_common import __version__ as occ_version
    from onnxconverter_common import float16

    model = onnx.load(src)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fp16 = float16.convert_float_to_float16(model, keep_io_types=True,
                                                max_finite_val=FP16_MAX)
    truncated = sum(1 for w in caught if "truncated" in str(w.message))
    tmp = dst + ".part"
    onnx.save(fp16, tmp)   # onnx writes the file itself; replace it whole once written
    os.replace(tmp, dst)
    return {"fp16_converter": f"onnxconverter-common {occ_version} convert_float_to_float16"
                              "(keep_io_types=True)",
            "fp16_values_flushed_to_1e-7": truncated}
