"""Talking to TensorRT: importing it, its logger, the GPU's identity, and the engine build
(the optimisation profiles and builder settings ``plan.builder_settings`` chose, FP16 or
INT8 flags as the plan says, DLA when asked, a timing cache shared across models).

``import tensorrt`` here is absolute, so it reaches NVIDIA's top-level ``tensorrt`` module,
not this package (``converters.tensorrt``). The calls are written against TensorRT 10's
Python API and type-checked with ``tensorrt-stubs`` (tests/test_tensorrt_typecheck.py);
calls that only TensorRT 8.x has are marked where they are made.
"""
from __future__ import annotations

import os
import time
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from edgebench.cache_integrity import require

from .engine_log import parse_layer_placement
from .plan import LIST_CAP, dla_batch_check, engine_fields

if TYPE_CHECKING:
    import tensorrt as trt

# INFO messages a build keeps for the record (the DLA/GPU layer placement is among them).
MAX_INFO_MESSAGES = 20000


def trt_module() -> ModuleType:
    """NVIDIA's ``tensorrt`` module; ImportError (with Python's message) where it is missing,
    or where ``tensorrt`` is only type stubs (``tensorrt-stubs`` installs a ``tensorrt``
    folder of .pyi files, which Python imports as an empty namespace package)."""
    import tensorrt

    if not hasattr(tensorrt, "Builder") or not hasattr(tensorrt, "__version__"):
        where: object = list(getattr(tensorrt, "__path__", None) or [])
        where = where or getattr(tensorrt, "__file__", "?")
        raise ImportError(f"the 'tensorrt' found at {where} is not NVIDIA's TensorRT (no "
                          "Builder/__version__: type stubs only?)")
    return tensorrt


def device_identity() -> tuple[str, str]:
    """(GPU name, compute capability "major.minor") of torch's current CUDA device."""
    import torch

    p = torch.cuda.get_device_properties(torch.cuda.current_device())
    return p.name, f"{p.major}.{p.minor}"


def make_logger(keep_info: bool = False) -> Any:
    """A TensorRT logger that prints warnings and keeps the errors, so a failed build or run
    can say why; with ``keep_info`` it also keeps INFO messages (the builder's DLA/GPU layer
    placement is logged at INFO)."""
    import tensorrt as trt

    error = int(trt.ILogger.Severity.ERROR)
    warning = int(trt.ILogger.Severity.WARNING)
    info = int(trt.ILogger.Severity.INFO)

    class Logger(trt.ILogger):
        def __init__(self) -> None:
            trt.ILogger.__init__(self)
            self.errors: list[str] = []
            self.info: list[str] = []

        def log(self, severity: trt.ILogger.Severity, msg: str) -> None:
            level = int(severity)
            if level <= error:
                self.errors.append(str(msg))
            if level <= warning:
                print(f"[TensorRT] {msg}", flush=True)
            elif keep_info and level == info and len(self.info) < MAX_INFO_MESSAGES:
                self.info.append(str(msg))

    return Logger()


def dla_core_count() -> int:
    """How many DLA cores TensorRT sees on this device (``Builder.num_DLA_cores``: 2 on an AGX
    Orin, 0 on a device without DLA)."""
    import tensorrt as trt

    builder = trt.Builder(make_logger())
    n = int(builder.num_DLA_cores)
    del builder
    return n


def replace_bytes(path: Path, data: bytes) -> None:
    """Write ``data`` next to ``path`` (``.part``) and rename it over ``path``: a reader (or
    the next run's cache check) never sees half an engine or timing cache."""
    tmp = Path(path).with_suffix(".part")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def read_engine(path: str | Path) -> bytes:
    """The engine file's bytes, checked against the sha256 recorded when it was written: an
    engine is executed code, so every load hashes exactly the bytes it will deserialize
    (``CacheCorrupted`` when they do not match; no size/mtime shortcut)."""
    data = Path(path).read_bytes()
    require(path, data)
    return data


def network_flags(names: list[str]) -> int:
    """``create_network``'s flag bits from ``builder_settings()["network_flags"]``."""
    import tensorrt as trt

    bits = 0
    for name in names:
        if name == "EXPLICIT_BATCH":        # TensorRT 8.x; deprecated and ignored in 10
            bits |= 1 << int(trt.NetworkDefinitionCreationFlag.EXPLICIT_BATCH)
        elif name == "STRONGLY_TYPED":
            bits |= 1 << int(trt.NetworkDefinitionCreationFlag.STRONGLY_TYPED)
        else:
            raise ValueError(f"unknown network flag {name!r}")
    return bits


def apply_settings(builder: trt.Builder, config: trt.IBuilderConfig, input_name: str,
                   settings: dict) -> None:
    """Turn ``plan.builder_settings`` into builder-config calls: flags, workspace, profiling
    verbosity, device (DLA core with optional GPU fallback) and one optimisation profile per
    entry of ``settings["profiles"]``. Nothing is decided here."""
    import tensorrt as trt

    for name in settings["builder_flags"]:
        if name == "FP16":                  # weak typing (TensorRT <= 10); removed in 11
            config.set_flag(trt.BuilderFlag.FP16)
        elif name == "INT8":                # weak typing, QDQ network (explicit quantization:
            config.set_flag(trt.BuilderFlag.INT8)   # no calibrator); removed in 11
        elif name == "GPU_FALLBACK":        # layers the DLA cannot run go to the GPU
            config.set_flag(trt.BuilderFlag.GPU_FALLBACK)
        else:
            raise ValueError(f"unknown builder flag {name!r}")
    if settings["workspace_bytes"]:
        config.set_memory_pool_limit(trt.MemoryPoolType.WORKSPACE, int(settings["workspace_bytes"]))
    if settings["profiling_verbosity"] == "DETAILED":   # layer details for the engine inspector
        config.profiling_verbosity = trt.ProfilingVerbosity.DETAILED
    if settings["default_device_type"] == "DLA":
        config.default_device_type = trt.DeviceType.DLA
        config.DLA_core = int(settings["dla_core"])
    for p in settings["profiles"]:
        profile = builder.create_optimization_profile()
        profile.set_shape(input_name, trt.Dims(p["min"]), trt.Dims(p["opt"]), trt.Dims(p["max"]))
        config.add_optimization_profile(profile)


def _dla_facts(builder: trt.Builder, network: trt.INetworkDefinition,
               config: trt.IBuilderConfig, settings: dict) -> dict:
    """Before the build: the DLA's limits and which network layers TensorRT says the DLA can
    run (``IBuilderConfig.can_run_on_DLA``). ValueError when the DLA cannot take the job."""
    n_cores = int(builder.num_DLA_cores)
    core = int(settings["dla_core"])
    if core >= n_cores:
        raise ValueError(f"--trt-dla-core {core}: this device has {n_cores} DLA core(s) "
                         "(Builder.num_DLA_cores)")
    max_dla = int(builder.max_DLA_batch_size)
    sizes = [p["max"][0] for p in settings["profiles"]]
    note = dla_batch_check(sizes, max_dla, bool(settings["gpu_fallback"]))
    layers = [network.get_layer(i) for i in range(network.num_layers)]
    not_capable = [layer.name for layer in layers if not config.can_run_on_DLA(layer)]
    facts: dict[str, Any] = {
        "core": core, "num_dla_cores": n_cores, "gpu_fallback": settings["gpu_fallback"],
        "default_device_type": "DLA", "max_dla_batch_size": max_dla,
        "network_layers": len(layers), "dla_capable_layers": len(layers) - len(not_capable),
        "not_dla_capable": not_capable[:LIST_CAP]}
    if note:
        facts["note"] = note
    if not_capable and not settings["gpu_fallback"]:
        raise ValueError(f"{len(not_capable)} layer(s) cannot run on the DLA and "
                         f"--trt-dla-no-gpu-fallback is set: {', '.join(not_capable[:5])}")
    return facts


def build_engine(onnx_path: str, settings: dict, timing_cache: Path) -> tuple[bytes, dict]:
    """Parse the ONNX, build a serialized engine with the profiles and settings of
    ``settings`` (``plan.builder_settings``), and save the updated timing cache. Returns the
    engine's bytes and facts for the record."""
    import tensorrt as trt

    dla = settings["default_device_type"] == "DLA"
    logger = make_logger(keep_info=dla)
    builder = trt.Builder(logger)
    network = builder.create_network(network_flags(settings["network_flags"]))
    parser = trt.OnnxParser(network, logger)
    if not parser.parse_from_file(onnx_path):
        errs = [str(parser.get_error(i)) for i in range(parser.num_errors)]
        raise RuntimeError("TensorRT ONNX parser failed: " + " | ".join(errs or logger.errors))
    config = builder.create_builder_config()
    inp = network.get_input(0)
    apply_settings(builder, config, inp.name, settings)
    dla_facts = _dla_facts(builder, network, config, settings) if dla else None
    cache_bytes = timing_cache.read_bytes() if timing_cache.is_file() else b""
    cache = config.create_timing_cache(cache_bytes)
    config.set_timing_cache(cache, ignore_mismatch=False)
    t = time.perf_counter()
    serialized = builder.build_serialized_network(network, config)
    build_s = time.perf_counter() - t
    if serialized is None:
        raise RuntimeError("TensorRT engine build failed: " + " | ".join(logger.errors[-5:]))
    replace_bytes(timing_cache, bytes(memoryview(config.get_timing_cache().serialize())))
    if dla_facts is not None:
        placement = parse_layer_placement(logger.info)
        dla_facts["placement"] = placement
        dla_facts["placement_from"] = (
            "the builder's INFO log ('Layers Running on DLA' / 'Layers Running on GPU')"
            if placement is not None else
            "not logged by this TensorRT: only the pre-build DLA capability per layer is known")
    builder_record = {k: v for k, v in engine_fields(settings).items() if k != "profiles"}
    meta = {"build_s": round(build_s, 3), "builder": builder_record,
            "trt_profiles": settings["profiles"], "dla": dla_facts,
            "timing_cache": str(timing_cache), "timing_cache_reused": bool(cache_bytes),
            "workspace_mb": (settings["workspace_bytes"] >> 20) if settings["workspace_bytes"] else None,
            "input_name": inp.name}
    return bytes(memoryview(serialized)), meta
