"""What the installed TensorRT needs, and what an engine depends on: pure functions of
version strings, shapes and options (tested without TensorRT or a GPU).

Version branches (``plan_for(version)``):

=========  ==================  ============================================================
TensorRT   JetPack             what changes here
=========  ==================  ============================================================
8.4        5.0                 ``create_network(1 << EXPLICIT_BATCH)``; binding-index I/O API
                               (``set_binding_shape``, ``execute_async_v2``)
8.5-8.6    5.1 (8.5), 6.0      still EXPLICIT_BATCH; name-based tensor API exists
           (8.6.2, the paper)  (``set_input_shape``, ``set_tensor_address``,
                               ``execute_async_v3``); ``set_memory_pool_limit``
10.x       6.1/6.2 (10.3),     networks always explicit batch (flag deprecated, not passed);
           7.x (Thor)          ``BuilderFlag.FP16`` on the FP32 ONNX (weak typing)
11.x       none yet (NVIDIA:   weak typing removed: no ``BuilderFlag.FP16``; networks are
           "JetPack is not     strongly typed, so FP16 means an FP16 ONNX. We convert the
           supported" in 11.3  export with onnxconverter-common's
           and 11.4)           ``convert_float_to_float16(keep_io_types=True)``: FP16 weights
                               and compute, FP32 graph inputs/outputs (``onnx_fp16.py``)
=========  ==================  ============================================================

``--trt-fp16-mode onnx`` forces the FP16-ONNX path on TensorRT 10 as well (strongly typed
network), for comparing the two ways of getting FP16.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import re
from pathlib import Path

DEFAULT_OPT_BATCH = 8
DEFAULT_MAX_BATCH = 64


def parse_version(version: str) -> tuple[int, int, int]:
    nums = [int(x) for x in re.findall(r"\d+", version)[:3]]
    if not nums:
        raise ValueError(f"not a TensorRT version: {version!r}")
    while len(nums) < 3:
        nums.append(0)
    return nums[0], nums[1], nums[2]


@dataclasses.dataclass(frozen=True)
class TrtPlan:
    version: tuple[int, int, int]
    explicit_batch_flag: bool     # pass 1 << EXPLICIT_BATCH to create_network (TRT < 10)
    fp16_via: str                 # "builder_flag" (weak typing) | "fp16_onnx" (strong typing)
    strongly_typed_flag: bool     # pass 1 << STRONGLY_TYPED (only on the fp16_onnx route)
    io_api: str                   # "tensors" (>= 8.5) | "bindings"
    shipped_with: str             # informative: which JetPack carries this TensorRT


def plan_for(version: str, fp16_mode: str = "auto") -> TrtPlan:
    """What the installed TensorRT needs. ``fp16_mode``: "auto" (builder flag where it exists,
    FP16 ONNX where it does not), "flag" or "onnx"."""
    v = parse_version(version)
    major, minor = v[0], v[1]
    if major < 8 or (major == 8 and minor < 4):
        raise ValueError(f"TensorRT {version} is older than 8.4 (JetPack 5.0): not supported")
    has_flag = major < 11
    if fp16_mode == "auto":
        via = "builder_flag" if has_flag else "fp16_onnx"
    elif fp16_mode == "flag":
        if not has_flag:
            raise ValueError(f"TensorRT {version} has no BuilderFlag.FP16 (removed in 11): "
                             "use --trt-fp16-mode onnx or auto")
        via = "builder_flag"
    elif fp16_mode == "onnx":
        if major < 9:
            raise ValueError(f"TensorRT {version} has no strongly typed networks (9.0+): "
                             "use --trt-fp16-mode flag or auto")
        via = "fp16_onnx"
    else:
        raise ValueError(f"--trt-fp16-mode must be auto, flag or onnx, not {fp16_mode!r}")
    if major == 8:
        shipped = {4: "JetPack 5.0", 5: "JetPack 5.1", 6: "JetPack 6.0"}.get(minor, "")
    elif major == 10:
        shipped = "JetPack 6.1/6.2" if minor == 3 else ""
    else:
        shipped = ""
    return TrtPlan(
        version=v,
        explicit_batch_flag=major < 10,
        fp16_via=via,
        strongly_typed_flag=(via == "fp16_onnx" and major < 11),  # implied in 11, ignored if set
        io_api="tensors" if (major, minor) >= (8, 5) else "bindings",
        shipped_with=shipped,
    )


def variant_options(spec_options: dict | None) -> dict:
    """The variant's settings from ``ModelSpec.options`` (the CLI's --trt-* and --max-batch)."""
    o = spec_options or {}
    return {"opt_batch": int(o.get("trt_opt_batch") or DEFAULT_OPT_BATCH),
            "max_batch": int(o.get("max_batch") or o.get("trt_max_batch") or DEFAULT_MAX_BATCH),
            "workspace_mb": o.get("trt_workspace_mb"),
            "fp16_mode": o.get("trt_fp16_mode") or "auto"}


def profile_shapes(input_size: tuple, opt_batch: int, max_batch: int) -> tuple[tuple, tuple, tuple]:
    if max_batch < 1:
        raise ValueError("max_batch must be >= 1")
    opt = max(1, min(opt_batch, max_batch))
    c_h_w = tuple(int(d) for d in input_size)
    return (1, *c_h_w), (opt, *c_h_w), (max_batch, *c_h_w)


def engine_cache_key(spec_key: str, onnx_sha256: str, trt_version: str, gpu_name: str,
                     compute_capability: str, shapes: tuple, fp16_via: str) -> str:
    """Everything the engine depends on: the model and weights (``spec.key``), the exact ONNX
    file, TensorRT's version, the GPU (name and SM version: engines are not portable across
    either), the optimisation profile and how FP16 was requested."""
    blob = json.dumps({"spec": spec_key, "onnx": onnx_sha256, "trt": trt_version,
                       "gpu": gpu_name, "sm": compute_capability,
                       "profile": [list(s) for s in shapes], "fp16": fp16_via}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9.]+", "-", text).strip("-").lower()


def timing_cache_path(folder: Path, trt_version: str, gpu_name: str, cc: str) -> Path:
    return Path(folder) / f"timing-{_slug(trt_version)}-{_slug(gpu_name)}-sm{cc.replace('.', '')}.cache"
