"""Talking to TensorRT: importing it, its logger, the GPU's identity, and the engine build
(one optimisation profile, FP16 as the plan says, a timing cache shared across models).

``import tensorrt`` here is absolute, so it reaches NVIDIA's top-level ``tensorrt`` module,
not this package (``converters.tensorrt``)."""
from __future__ import annotations

import os
import time
from pathlib import Path

from .plan import TrtPlan, profile_shapes


def trt_module():
    """NVIDIA's ``tensorrt`` module; ImportError (with Python's message) where it is missing."""
    import tensorrt as trt

    return trt


def device_identity() -> tuple[str, str]:
    """(GPU name, compute capability "major.minor") of torch's current CUDA device."""
    import torch

    p = torch.cuda.get_device_properties(torch.cuda.current_device())
    return p.name, f"{p.major}.{p.minor}"


def make_logger(trt):
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


def replace_bytes(path: Path, data: bytes) -> None:
    """Write ``data`` next to ``path`` (``.part``) and rename it over ``path``: a reader (or
    the next run's cache check) never sees half an engine or timing cache."""
    tmp = Path(path).with_suffix(".part")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def build_engine(trt, plan: TrtPlan, onnx_path: str, input_size: tuple, opts: dict,
                 timing_cache: Path) -> tuple[bytes, dict]:
    """Parse the ONNX, build a serialized engine with one dynamic-batch profile, and save the
    updated timing cache. Returns the engine's bytes and facts for the record."""
    logger = make_logger(trt)
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
    replace_bytes(timing_cache, bytes(memoryview(config.get_timing_cache().serialize())))
    meta = {"build_s": round(build_s, 3), "profile": [list(s) for s in shapes],
            "timing_cache": str(timing_cache), "timing_cache_reused": bool(cache_bytes),
            "workspace_mb": opts["workspace_mb"], "input_name": inp.name}
    return bytes(memoryview(serialized)), meta
