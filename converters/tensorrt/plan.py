"""What the installed TensorRT needs, and what an engine depends on: pure functions of
version strings, shapes and options (tested without TensorRT or a GPU).

Version branches (``plan_for(version)``):

=========  ==================  ============================================================
TensorRT   JetPack             what changes here
=========  ==================  ============================================================
8.4        5.0                 ``create_network(1 << EXPLICIT_BATCH)``; binding-index I/O API
                               (``set_binding_shape``, ``execute_async_v2``); no DLA here
                               (DLA engines need the name-based API, see below)
8.5-8.6    5.1 (8.5), 6.0      still EXPLICIT_BATCH; name-based tensor API exists
           (8.6.2, the paper)  (``set_input_shape``, ``set_tensor_address``,
                               ``execute_async_v3``); ``set_memory_pool_limit``; DLA with
                               ``BuilderFlag.FP16``
10.0-10.7  6.1/6.2 (10.3)      networks always explicit batch (flag deprecated, not passed);
                               ``BuilderFlag.FP16`` on the FP32 ONNX (weak typing); DLA as 8.6
10.8+      7.x (Thor)          as 10.0, but no DLA ("TensorRT 10.7 was the last 10.x release
                               that supported DLA", NVIDIA's DLA docs)
11.x       none yet (NVIDIA:   weak typing removed: no ``BuilderFlag.FP16``; networks are
           "JetPack is not     strongly typed, so FP16 means an FP16 ONNX. We convert the
           supported" in 11.3  export with onnxconverter-common's
           and 11.4)           ``convert_float_to_float16(keep_io_types=True)``: FP16 weights
                               and compute, FP32 graph inputs/outputs (``onnx_fp16.py``).
                               DLA: none in 11.0-11.4.0; 11.4.1 has it again on AGX Orin with
                               JetPack 7.2.2+, strongly typed (the FP16 ONNX route)
=========  ==================  ============================================================

``--trt-fp16-mode onnx`` forces the FP16-ONNX path on TensorRT 10 as well (strongly typed
network), for comparing the two ways of getting FP16.

INT8 (``tensorrt-int8``, ``plan_for(version, precision="int8")``): explicit quantization,
the network parsed from the calibrated QDQ ONNX (``converters.onnxruntime.quantize``); no
calibrator, no calibration cache, no FP16 ONNX, ``--trt-fp16-mode`` ignored:

=========  ================  ==========================  ====================================
TensorRT   network flags     builder flags (GPU)         layers outside the Q/DQ pairs
=========  ================  ==========================  ====================================
8.4-8.6    EXPLICIT_BATCH    INT8, FP16 (weak typing)    FP16 or FP32, TensorRT's choice
10.x       none              INT8, FP16 (weak typing)    FP16 or FP32, TensorRT's choice
11.x       none (strongly    none (INT8/FP16 flags       FP32, as the QDQ ONNX types them
           typed, implied)   removed; the Q/DQ set INT8)
=========  ================  ==========================  ====================================

With ``--trt-dla-core`` GPU_FALLBACK is added (unless ``--trt-dla-no-gpu-fallback``); DLA
per version as for FP16 (8.5-10.7 weakly typed, 11.4.1+ strongly typed: there the FP32
layers outside the Q/DQ pairs cannot run on the DLA, which takes FP16/INT8 only, and the
recorded layer placement shows them on the GPU).

Batch sizes (``measured_batches``, ``batch_plan``): a cell runs batch 1 (cold start,
latency), the profile's accuracy batch (parity, accuracy) and the throughput search's sizes
1, 2, 4, ... up to the run profile's throughput ``max_batch`` (with halfway steps on
out-of-memory). The engine's optimisation profile covers all of them:

* GPU (default): one dynamic profile, min 1, opt ``--trt-opt-batch`` (default 8, never above
  max), max ``--trt-max-batch`` when given, else the larger of the run profile's throughput
  ``max_batch`` and its accuracy batch. A ``--trt-max-batch`` below the search cap ends the
  throughput search there, and the record says so (``batches.notes``; the measurement's own
  ``stop_reason`` names the largest size the variant was built for).
* DLA (``--trt-dla-core N``): DLA has no dynamic dimensions ("the profile's min, max, and opt
  values must be equal", NVIDIA's DLA restrictions), so the engine holds one static profile
  per batch size the cell measures (up to the same max), and the predictor offers exactly
  those sizes to the measurements.

Offline on the whole accelerator (``--trt-offline-all-accelerators``; NVIDIA's MLPerf harness
on the AGX Orin): the GPU engine above, plus one engine per DLA core, each built as
``--trt-dla-core N`` would build it (GPU fallback on, static profiles at the measured sizes,
plus ``--mlperf-offline-batch`` when given), all serving LoadGen's Offline query from one
queue (``edgebench/mlperf/multi.py``). ``offline_devices_plan`` decides the devices:

===========================  ======================  ===================================
TensorRT                     Builder.num_DLA_cores   devices serving Offline
===========================  ======================  ===================================
8.5-10.7 (FP16 by builder    2 (AGX Orin)            gpu, dla0 (core 0), dla1 (core 1)
flag; INT8), 11.4.1+
the same                     1                       gpu, dla0
the same                     0 (no DLA: Orin Nano,   gpu only; the reason is recorded
                             a desktop GPU)
8.4, 10.8-11.4.0, or 10.x    any                     gpu only; the reason (``no_dla``) is
with --trt-fp16-mode onnx                            recorded
===========================  ======================  ===================================

The cell fits the Offline batch to the GPU predictor; a DLA engine runs it in one call when
it is one of its static sizes, else in consecutive pieces of its sizes (``split_batch``).
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import re
from collections.abc import Iterable
from pathlib import Path

# The variant's options and the batch sizes its engine serves (batches.py); kept importable
# from here, where the converter and the tests have always found them.
from .batches import (DEFAULT_MAX_BATCH, DEFAULT_OPT_BATCH, DLA_MAX_BATCH_DOCUMENTED,  # noqa: F401
                      batch_plan, dla_batch_check, measured_batches, search_sizes,
                      variant_options)
LIST_CAP = 40            # names kept in the record per list (layer placement)
# Where an optimisation profile's shapes come from, for the record.
PROFILE_FIELDS = ("min", "opt", "max")


def parse_version(version: str) -> tuple[int, int, int]:
    nums = [int(x) for x in re.findall(r"\d+", version)[:3]]
    if not nums:
        raise ValueError(f"not a TensorRT version: {version!r}")
    while len(nums) < 3:
        nums.append(0)
    return nums[0], nums[1], nums[2]


PRECISIONS = ("fp16", "int8")


@dataclasses.dataclass(frozen=True)
class TrtPlan:
    version: tuple[int, int, int]
    explicit_batch_flag: bool     # pass 1 << EXPLICIT_BATCH to create_network (TRT < 10)
    fp16_via: str                 # "builder_flag" (weak typing) | "fp16_onnx" (strong typing) |
                                  # "none" (int8 on 11: float layers stay as the ONNX types them)
    strongly_typed_flag: bool     # pass 1 << STRONGLY_TYPED (only on the fp16_onnx route)
    io_api: str                   # "tensors" (>= 8.5) | "bindings"
    shipped_with: str             # informative: which JetPack carries this TensorRT
    no_dla: str = ""              # why this TensorRT (with this FP16 route) cannot use DLA; "" = can
    precision: str = "fp16"       # "fp16" | "int8"
    # The builder flags that set precision (BuilderFlag names), before any DLA flag.
    precision_flags: tuple[str, ...] = ("FP16",)
    # Which ONNX the network is parsed from: "onnx" (the FP32 export), "fp16_onnx" (the
    # export converted by onnx_fp16.py) or "qdq_onnx" (the calibrated INT8 QDQ model).
    network_source: str = "onnx"
    typing: str = "weak"          # "weak" (precision from builder flags) | "strong" (from types)


def dla_unsupported(v: tuple[int, int, int], fp16_via: str) -> str:
    """Why DLA cannot be used with TensorRT ``v`` on the ``fp16_via`` route ("" when it can)."""
    if v[:2] < (8, 5):
        return ("DLA needs TensorRT 8.5+ here: a DLA engine has one static profile per batch "
                "size, selected through the name-based tensor API that 8.4 lacks")
    if v[:2] <= (10, 7):
        if fp16_via == "fp16_onnx":
            return ("DLA on TensorRT 8.x/10.x takes FP16 from BuilderFlag.FP16 (--trt-fp16-mode "
                    "flag or auto); strongly typed DLA networks are documented from TensorRT "
                    "11.4.1 (JetPack 7.2.2+)")
        return ""
    if v < (11, 4, 1):
        return ("no DLA in this TensorRT: NVIDIA's docs say TensorRT 10.7 was the last 10.x "
                "release that supported DLA and 11.0 to 11.4.0 have none on Linux/JetPack "
                "(11.4.1 brings it back on AGX Orin with JetPack 7.2.2+)")
    return ""


def _fp16_via(version: str, fp16_mode: str) -> str:
    """How FP16 is requested on this TensorRT for ``--trt-fp16-mode``."""
    major = parse_version(version)[0]
    has_flag = major < 11
    if fp16_mode == "auto":
        return "builder_flag" if has_flag else "fp16_onnx"
    if fp16_mode == "flag":
        if not has_flag:
            raise ValueError(f"TensorRT {version} has no BuilderFlag.FP16 (removed in 11): "
                             "use --trt-fp16-mode onnx or auto")
        return "builder_flag"
    if fp16_mode == "onnx":
        if major < 9:
            raise ValueError(f"TensorRT {version} has no strongly typed networks (9.0+): "
                             "use --trt-fp16-mode flag or auto")
        return "fp16_onnx"
    raise ValueError(f"--trt-fp16-mode must be auto, flag or onnx, not {fp16_mode!r}")


def plan_for(version: str, fp16_mode: str = "auto", precision: str = "fp16") -> TrtPlan:
    """What the installed TensorRT needs for ``precision`` ("fp16" or "int8"). ``fp16_mode``
    (FP16 only; int8 ignores it): "auto" (builder flag where it exists, FP16 ONNX where it
    does not), "flag" or "onnx"."""
    v = parse_version(version)
    major, minor = v[0], v[1]
    if major < 8 or (major == 8 and minor < 4):
        raise ValueError(f"TensorRT {version} is older than 8.4 (JetPack 5.0): not supported")
    if precision not in PRECISIONS:
        raise ValueError(f"no TensorRT plan for precision {precision!r} ({', '.join(PRECISIONS)})")
    has_flag = major < 11       # BuilderFlag.FP16/INT8 (weak typing) exist before 11
    flags: tuple[str, ...]
    if precision == "int8":
        # Explicit quantization from the QDQ ONNX. Weak typing (<= 10): INT8 for the Q/DQ
        # layers and FP16 so the layers outside them may run in FP16. Strong typing (11):
        # no precision flags exist; the Q/DQ nodes make INT8, the rest keeps the ONNX's FP32.
        via = "builder_flag" if has_flag else "none"
        flags = ("INT8", "FP16") if has_flag else ()
        source = "qdq_onnx"
    else:
        via = _fp16_via(version, fp16_mode)
        flags = ("FP16",) if via == "builder_flag" else ()
        source = "fp16_onnx" if via == "fp16_onnx" else "onnx"
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
        no_dla=dla_unsupported(v, via),
        precision=precision,
        precision_flags=flags,
        network_source=source,
        typing="weak" if via == "builder_flag" else "strong",
    )


# ------------------------------------------------------------------ options

def builder_settings(opts: dict, measured: dict, plan: TrtPlan, input_size: Iterable[int],
                     precision: str | None = None) -> dict:
    """Everything the builder is told, as plain data: network-creation flags, builder flags,
    workspace limit, device (GPU or DLA core), profiling verbosity and the optimisation
    profiles' shapes (``apply_settings`` in build.py turns it into TensorRT calls). ``batches``
    is the batch plan (for the record and the predictor; not part of the engine).
    ValueError when the options cannot work with this TensorRT. ``precision`` defaults to
    the plan's."""
    precision = precision or plan.precision
    dla = opts["dla_core"] is not None
    if dla:
        if precision not in ("fp16", "int8"):
            raise ValueError(f"DLA runs FP16 or INT8 networks only, not {precision}")
        if plan.no_dla:
            raise ValueError(f"--trt-dla-core {opts['dla_core']}: {plan.no_dla}")
    chw = [int(d) for d in input_size]
    batches = batch_plan(opts, measured, dla)
    net_flags = (["EXPLICIT_BATCH"] if plan.explicit_batch_flag else []) + \
                (["STRONGLY_TYPED"] if plan.strongly_typed_flag else [])
    flags = list(plan.precision_flags) + \
        (["GPU_FALLBACK"] if dla and opts["gpu_fallback"] else [])
    return {"network_flags": net_flags, "builder_flags": flags,
            "workspace_bytes": (int(opts["workspace_mb"]) << 20) if opts["workspace_mb"] else None,
            "default_device_type": "DLA" if dla else "GPU",
            "dla_core": opts["dla_core"], "gpu_fallback": opts["gpu_fallback"] if dla else None,
            "profiling_verbosity": "DETAILED",
            "profiles": [dict(zip(PROFILE_FIELDS, ([b, *chw] for b in trio)))
                         for trio in batches["profile_batches"]],
            "batches": batches}


ENGINE_FIELDS = ("network_flags", "builder_flags", "workspace_bytes", "default_device_type",
                 "dla_core", "gpu_fallback", "profiling_verbosity", "profiles")


def engine_fields(settings: dict) -> dict:
    """The part of ``builder_settings`` the engine depends on (its cache key)."""
    return {k: settings[k] for k in ENGINE_FIELDS}


def engine_cache_key(spec_key: str, onnx_sha256: str, trt_version: str, gpu_name: str,
                     compute_capability: str, build: dict, fp16_via: str,
                     precision: str = "fp16") -> str:
    """Everything the engine depends on: the model and weights (``spec.key``), the exact ONNX
    file the network is parsed from (the export, or for INT8 the calibrated QDQ model, whose
    sha256 changes with the calibration set and quantizer settings), TensorRT's version, the
    GPU (name and SM version: engines are not portable across either), the builder settings
    (``engine_fields``: profiles, flags, DLA core, workspace), how FP16 was requested and the
    precision (named in the key only when not FP16, so FP16 engines keep their keys)."""
    fields = {"spec": spec_key, "onnx": onnx_sha256, "trt": trt_version, "gpu": gpu_name,
              "sm": compute_capability, "build": build, "fp16": fp16_via}
    if precision != "fp16":
        fields["precision"] = precision
    blob = json.dumps(fields, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def sync_point(io_api: str, cuda_graph: bool) -> str:
    """Where a predictor call waits for the device, for the record."""
    enqueue = "execute_async_v3" if io_api == "tensors" else "execute_async_v2"
    what = f"the CUDA graph launch (captured {enqueue})" if cuda_graph else enqueue
    return (f"cudaStreamSynchronize (torch.cuda.Stream.synchronize) once per call, after {what} "
            "and the device-to-host copy of the logits, all on one stream")


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9.]+", "-", text).strip("-").lower()


def timing_cache_path(folder: Path, trt_version: str, gpu_name: str, cc: str) -> Path:
    return Path(folder) / f"timing-{_slug(trt_version)}-{_slug(gpu_name)}-sm{cc.replace('.', '')}.cache"
