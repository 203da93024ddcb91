"""TensorRT FP16 engines built from the shared ONNX export (``tensorrt-fp16``).

Version branches (``plan_for(version)``, a pure function, tested without a GPU):

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
                               and compute, FP32 graph inputs/outputs
=========  ==================  ============================================================

``--trt-fp16-mode onnx`` forces the FP16-ONNX path on TensorRT 10 as well (strongly typed
network), for comparing the two ways of getting FP16.

Inference: one execution context, one optimisation profile (batch min 1, opt
``--trt-opt-batch`` (8), max ``--trt-max-batch`` (64)), device buffers sized for the max batch.
CUDA memory and the stream come from **torch** (``torch.cuda``): the suite needs torch anyway,
NVIDIA ships CUDA torch wheels for JetPack (Jetson AI Lab index), and it avoids a second CUDA
binding (cuda-python / pycuda). Timing boundary, as for every variant: host NCHW float32 in ->
copy into pinned host memory -> H2D on the stream -> ``execute_async_v3`` -> D2H -> stream sync
-> host float32 logits out.

Caches (under the run's cache dir): ``tensorrt/<model>-<key>.engine`` (+ ``.json`` with build
facts) where key = model/weights (``spec.key``), ONNX file hash, TensorRT version, GPU name and
compute capability, profile and FP16 route; ``tensorrt/timing-<trt>-<gpu>-sm<cc>.cache``: the
timing cache, shared by all models on that GPU/TensorRT.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
import time
import warnings
from pathlib import Path

import numpy as np

from . import register
from .base import (Artifact, Availability, Converter, ModelSpec, OutOfMemory, Predictor,
                   SkipVariant)

DEFAULT_OPT_BATCH = 8
DEFAULT_MAX_BATCH = 64
FP16_MAX = 65504.0


# ----------------------------------------------------------------------------- pure logic

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
    onnx.save(fp16, tmp)
    os.replace(tmp, dst)
    return {"fp16_converter": f"onnxconverter-common {occ_version} convert_float_to_float16"
                              "(keep_io_types=True)",
            "fp16_values_flushed_to_1e-7": truncated}


# ----------------------------------------------------------------------------- runtime

def _trt():
    import tensorrt as trt

    return trt


def _device_identity() -> tuple[str, str]:
    import torch

    p = torch.cuda.get_device_properties(torch.cuda.current_device())
    return p.name, f"{p.major}.{p.minor}"


def _options(spec: ModelSpec) -> dict:
    o = spec.options or {}
    return {"opt_batch": int(o.get("trt_opt_batch") or DEFAULT_OPT_BATCH),
            "max_batch": int(o.get("max_batch") or o.get("trt_max_batch") or DEFAULT_MAX_BATCH),
            "workspace_mb": o.get("trt_workspace_mb"),
            "fp16_mode": o.get("trt_fp16_mode") or "auto"}


def _Logger(trt):
    """A TensorRT logger that prints warnings and keeps the errors, so a failed build or run
    can say why."""

    class Logger(trt.ILogger):
        def __init__(self):
            trt.ILogger.__init__(self)
            self.errors: list[str] = []

        def log(self, severity, msg):
            level = int(severity)
            if level <= int(trt.ILogger.Severity.ERROR):
                self.errors.append(str(msg))
            if level <= int(trt.ILogger.Severity.WARNING):
                print(f"[TensorRT] {msg}", flush=True)

    return Logger()


def build_engine(trt, plan: TrtPlan, onnx_path: str, input_size: tuple, opts: dict,
                 timing_cache: Path) -> tuple[bytes, dict]:
    logger = _Logger(trt)
    builder = trt.Builder(logger)
    flags = 0
    if plan.explicit_batch_flag:
        flags |= 1 << int(trt.NetworkDefinitionCreationFlag.EXPLICIT_BATCH)
    if plan.strongly_typed_flag:
        flags |= 1 << int(trt.NetworkDefinitionCreationFlag.STRONGLY_TYPED)
    network = builder.create_network(flags)
    parser = trt.OnnxParser(network, logger)
    if not parser.parse_from_file(onnx_path):
        errs = [str(parser.get_error(i)) for i in range(parser.num_errors)]
        raise RuntimeError("TensorRT ONNX parser failed: " + " | ".join(errs or logger.errors))
    config = builder.create_builder_config()
    if opts["workspace_mb"]:
        config.set_memory_pool_limit(trt.MemoryPoolType.WORKSPACE, int(opts["workspace_mb"]) << 20)
    if plan.fp16_via == "builder_flag":
        config.set_flag(trt.BuilderFlag.FP16)
    shapes = profile_shapes(input_size, opts["opt_batch"], opts["max_batch"])
    inp = network.get_input(0)
    profile = builder.create_optimization_profile()
    profile.set_shape(inp.name, *shapes)
    config.add_optimization_profile(profile)
    cache_bytes = timing_cache.read_bytes() if timing_cache.is_file() else b""
    cache = config.create_timing_cache(cache_bytes)
    config.set_timing_cache(cache, ignore_mismatch=False)
    t = time.perf_counter()
    serialized = builder.build_serialized_network(network, config)
    build_s = time.perf_counter() - t
    if serialized is None:
        raise RuntimeError("TensorRT engine build failed: " + " | ".join(logger.errors[-5:]))
    tmp = timing_cache.with_suffix(".part")
    tmp.write_bytes(bytes(memoryview(config.get_timing_cache().serialize())))
    os.replace(tmp, timing_cache)
    meta = {"build_s": round(build_s, 3), "profile": [list(s) for s in shapes],
            "timing_cache": str(timing_cache), "timing_cache_reused": bool(cache_bytes),
            "workspace_mb": opts["workspace_mb"], "input_name": inp.name}
    return bytes(memoryview(serialized)), meta


class TrtPredictor(Predictor):
    """Synchronous: host float32 NCHW in, host float32 logits out."""

    def __init__(self, trt, engine_bytes: bytes, plan: TrtPlan, meta: dict):
        import torch

        self.torch = torch
        self.trt = trt
        self.plan = plan
        self.meta = meta
        self.logger = _Logger(trt)
        self.runtime = trt.Runtime(self.logger)
        self.engine = self.runtime.deserialize_cuda_engine(engine_bytes)
        if self.engine is None:
            raise RuntimeError("deserialize_cuda_engine failed: " + " | ".join(self.logger.errors))
        self.context = self.engine.create_execution_context()
        if self.context is None:
            raise OutOfMemory("create_execution_context failed (device memory?)")
        self.stream = torch.cuda.Stream()
        if plan.io_api == "tensors":
            names = [self.engine.get_tensor_name(i) for i in range(self.engine.num_io_tensors)]
            ins = [n for n in names if self.engine.get_tensor_mode(n) == trt.TensorIOMode.INPUT]
            outs = [n for n in names if self.engine.get_tensor_mode(n) == trt.TensorIOMode.OUTPUT]
            self.in_name, self.out_name = ins[0], outs[0]
            _, _, max_shape = self.engine.get_tensor_profile_shape(self.in_name, 0)
            out_shape = list(self.engine.get_tensor_shape(self.out_name))
            dtypes = {n: self.engine.get_tensor_dtype(n) for n in (self.in_name, self.out_name)}
        else:  # TensorRT 8.4: binding indices
            self.in_idx = next(i for i in range(self.engine.num_bindings) if self.engine.binding_is_input(i))
            self.out_idx = next(i for i in range(self.engine.num_bindings) if not self.engine.binding_is_input(i))
            self.in_name = self.engine.get_binding_name(self.in_idx)
            self.out_name = self.engine.get_binding_name(self.out_idx)
            _, _, max_shape = self.engine.get_profile_shape(0, self.in_idx)
            out_shape = list(self.engine.get_binding_shape(self.out_idx))
            dtypes = {self.in_name: self.engine.get_binding_dtype(self.in_idx),
                      self.out_name: self.engine.get_binding_dtype(self.out_idx)}
        bad = {n: str(d) for n, d in dtypes.items() if d != trt.DataType.FLOAT}
        if bad:
            raise RuntimeError(f"engine I/O is not float32: {bad}")
        self.max_shape = tuple(int(d) for d in max_shape)
        self.max_batch = self.max_shape[0]
        self.classes = int(out_shape[-1])
        try:
            self.d_in = torch.empty(self.max_shape, dtype=torch.float32, device="cuda")
            self.d_out = torch.empty((self.max_batch, self.classes), dtype=torch.float32, device="cuda")
            self.h_in = torch.empty(self.max_shape, dtype=torch.float32, pin_memory=True)
            self.h_out = torch.empty((self.max_batch, self.classes), dtype=torch.float32, pin_memory=True)
        except torch.OutOfMemoryError as e:
            raise OutOfMemory(str(e)) from e
        self.h_in_np = self.h_in.numpy()
        self.h_out_np = self.h_out.numpy()
        if plan.io_api == "tensors":
            self.context.set_tensor_address(self.in_name, self.d_in.data_ptr())
            self.context.set_tensor_address(self.out_name, self.d_out.data_ptr())
        self.meta = dict(meta, max_batch=self.max_batch, io_api=plan.io_api,
                         cuda_memory="torch.cuda (pinned host staging, one stream)")

    def __call__(self, batch: np.ndarray) -> np.ndarray:
        n = int(batch.shape[0])
        if n > self.max_batch:
            # Above the optimisation profile: the throughput search treats it like OOM.
            raise OutOfMemory(f"batch {n} exceeds the engine's profile max {self.max_batch} "
                              "(--max-batch / --trt-max-batch)")
        shape = (n, *self.max_shape[1:])
        if tuple(batch.shape) != shape:
            raise ValueError(f"expected input {shape}, got {tuple(batch.shape)}")
        torch = self.torch
        np.copyto(self.h_in_np[:n], batch, casting="same_kind")
        with torch.cuda.stream(self.stream):
            self.d_in[:n].copy_(self.h_in[:n], non_blocking=True)
            if self.plan.io_api == "tensors":
                self.context.set_input_shape(self.in_name, shape)
                ok = self.context.execute_async_v3(self.stream.cuda_stream)
            else:
                self.context.set_binding_shape(self.in_idx, shape)
                bindings = [0] * self.engine.num_bindings
                bindings[self.in_idx] = self.d_in.data_ptr()
                bindings[self.out_idx] = self.d_out.data_ptr()
                ok = self.context.execute_async_v2(bindings, self.stream.cuda_stream)
            if not ok:
                raise RuntimeError("TensorRT enqueue failed: " + " | ".join(self.logger.errors[-3:]))
            self.h_out[:n].copy_(self.d_out[:n], non_blocking=True)
        self.stream.synchronize()
        return self.h_out_np[:n].copy()

    def close(self) -> None:
        for attr in ("context", "engine", "runtime", "d_in", "d_out", "h_in", "h_out"):
            if hasattr(self, attr):
                delattr(self, attr)
        self.torch.cuda.empty_cache()


@register
class TensorRTFP16(Converter):
    name = "tensorrt-fp16"
    precision = "fp16"
    description = "TensorRT FP16 engine from the ONNX export (one dynamic-batch profile)"
    cli_options = (
        ("--trt-opt-batch", {"type": int, "default": None, "metavar": "N",
                             "help": f"TensorRT profile's optimal batch (default {DEFAULT_OPT_BATCH})"}),
        ("--trt-max-batch", {"type": int, "default": None, "metavar": "N",
                             "help": "TensorRT profile's max batch when --max-batch is not given "
                                     f"(default {DEFAULT_MAX_BATCH})"}),
        ("--trt-workspace-mb", {"type": int, "default": None, "metavar": "MB",
                                "help": "TensorRT builder workspace limit (default: TensorRT's)"}),
        ("--trt-fp16-mode", {"choices": ["auto", "flag", "onnx"], "default": None,
                             "help": "how FP16 is requested: BuilderFlag.FP16 (flag, TensorRT <= 10), "
                                     "an FP16 ONNX on a strongly typed network (onnx, TensorRT >= 9; "
                                     "the only way on 11), or auto (flag where it exists)"}),
    )

    def versions(self) -> dict:
        out = {}
        try:
            out["tensorrt"] = _trt().__version__
        except ImportError:
            out["tensorrt"] = None
        try:
            import onnxconverter_common

            out["onnxconverter_common"] = onnxconverter_common.__version__
        except ImportError:
            pass
        return out

    def available(self, options: dict | None = None) -> Availability:
        try:
            trt = _trt()
        except ImportError as e:
            return Availability.no(f"{e} (on Jetson: apt python3-libnvinfer, and a venv with "
                                   "--system-site-packages; see jetson/README.md)")
        version = trt.__version__
        try:
            plan = plan_for(version, (options or {}).get("trt_fp16_mode") or "auto")
        except ValueError as e:
            return Availability.no(str(e), tensorrt=version)
        try:
            import torch
        except ImportError as e:
            return Availability.no(f"torch is needed for CUDA buffers: {e}", tensorrt=version)
        if not torch.cuda.is_available() or torch.cuda.device_count() == 0:
            return Availability.no("no CUDA device (torch.cuda.is_available() is False)",
                                   tensorrt=version, torch=torch.__version__)
        try:
            builder = trt.Builder(_Logger(trt))
        except Exception as e:  # noqa: BLE001 - a builder that cannot start is a reason
            return Availability.no(f"trt.Builder failed: {type(e).__name__}: {e}", tensorrt=version)
        if builder is None:
            return Availability.no("trt.Builder returned None (no usable CUDA device?)",
                                   tensorrt=version)
        del builder
        if plan.fp16_via == "fp16_onnx":
            try:
                import onnxconverter_common  # noqa: F401
            except ImportError as e:
                return Availability.no(f"TensorRT {version} needs an FP16 ONNX and {e}: "
                                       "pip install 'edgebench[tensorrt]'", tensorrt=version)
        name, cc = _device_identity()
        return Availability.yes(tensorrt=version, gpu=name, compute_capability=cc,
                                fp16_via=plan.fp16_via, io_api=plan.io_api)

    def convert(self, spec: ModelSpec, cache: Path) -> Artifact:
        from .onnxruntime import export_onnx

        trt = _trt()
        opts = _options(spec)
        plan = plan_for(trt.__version__, opts["fp16_mode"])
        onnx_art = export_onnx(spec, cache)
        onnx_sha = onnx_art.sha256() or ""
        gpu, cc = _device_identity()
        shapes = profile_shapes(spec.input_size, opts["opt_batch"], opts["max_batch"])
        key = engine_cache_key(spec.key(), onnx_sha, trt.__version__, gpu, cc, shapes, plan.fp16_via)
        folder = Path(cache) / "tensorrt"
        folder.mkdir(parents=True, exist_ok=True)
        engine_path = folder / f"{spec.name}-{key}.engine"
        meta_path = engine_path.with_suffix(".json")
        base_meta = {"tensorrt": trt.__version__, "gpu": gpu, "compute_capability": cc,
                     "fp16_via": plan.fp16_via, "io_api": plan.io_api, "engine_key": key,
                     "onnx": onnx_art.path, "onnx_sha256": onnx_sha,
                     "onnx_exporter": onnx_art.meta.get("exporter")}
        if engine_path.is_file() and meta_path.is_file():
            meta = {**json.loads(meta_path.read_text()), **base_meta}
            return Artifact(self.name, path=str(engine_path), cached=True, meta=meta)
        t = time.perf_counter()
        source = onnx_art.path
        extra: dict = {}
        if plan.fp16_via == "fp16_onnx":
            source = str(folder / f"{spec.name}-{key}.fp16.onnx")
            t16 = time.perf_counter()
            extra = to_fp16_onnx(onnx_art.path, source)
            extra["fp16_convert_s"] = round(time.perf_counter() - t16, 3)
        try:
            engine, build_meta = build_engine(trt, plan, source, spec.input_size, opts,
                                              timing_cache_path(folder, trt.__version__, gpu, cc))
        except RuntimeError as e:
            if "out of memory" in str(e).lower():
                raise OutOfMemory(str(e)) from e
            raise
        tmp = engine_path.with_suffix(".part")
        tmp.write_bytes(engine)
        os.replace(tmp, engine_path)
        convert_s = time.perf_counter() - t
        meta = {**base_meta, **build_meta, **extra, "convert_s": round(convert_s, 3),
                "onnx_export_s": onnx_art.meta.get("export_s")}
        meta_path.write_text(json.dumps(meta, indent=1))
        # convert_s covers FP16 conversion + engine build; the shared ONNX export is timed by
        # the onnx artifact (onnx_export_s) when it happened in this process.
        return Artifact(self.name, path=str(engine_path), convert_s=convert_s + onnx_art.convert_s,
                        meta=meta)

    def load(self, artifact: Artifact, spec: ModelSpec) -> Predictor:
        trt = _trt()
        plan = plan_for(trt.__version__, _options(spec)["fp16_mode"])
        try:
            return TrtPredictor(trt, Path(artifact.path).read_bytes(), plan, dict(artifact.meta))
        except ImportError as e:
            raise SkipVariant(str(e)) from e
