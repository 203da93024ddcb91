"""What each ONNX Runtime execution provider (EP) gets: the EPs a variant asks for by default
(``_requested``), their names and the session config keys ORT spells, and ``provider_config``,
one pure function (checked by tests without a GPU) that turns a list of EPs and a precision
into provider options, session config entries and environment variables (TF32 off on the CUDA
EP, the TensorRT EP's FP16 flag, engine/timing caches and batch profile, the refusal of CPU
fallback behind a GPU EP); ``tf32_note`` puts the TF32 choice in words for the record. Touches
no file; imports onnxruntime only in ``_requested``.
"""
from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

from .export import INPUT_NAME


def _requested(options: dict | None) -> list[str]:
    import onnxruntime as ort

    req = (options or {}).get("ort_providers")
    if req:
        return list(req)
    # Default: the best accelerator this build has, else CPU. The TensorRT EP is opt-in here
    # (it builds engines on first use); onnxruntime-trt-fp16 is the variant made for it.
    avail = ort.get_available_providers()
    return ["CUDAExecutionProvider", "CPUExecutionProvider"] if "CUDAExecutionProvider" in avail \
        else ["CPUExecutionProvider"]


# -- execution providers: what each one gets ---------------------------------------------
CPU_EP, CUDA_EP, TRT_EP = ("CPUExecutionProvider", "CUDAExecutionProvider",
                           "TensorrtExecutionProvider")
GPU_EPS = (CUDA_EP, TRT_EP)        # their predictors bind the input in GPU memory
# Session config keys, as onnxruntime_session_options_config_keys.h spells them.
DISABLE_CPU_FALLBACK = "session.disable_cpu_ep_fallback"
RECORD_ASSIGNMENT = "session.record_ep_graph_assignment_info"   # get_provider_graph_assignment_info()
TRT_OPT_BATCH = 8                  # the TensorRT EP profile's optimal batch (as tensorrt-fp16's default)


class OrtProviderConfig(NamedTuple):
    """How a session is made. ``providers``: (EP name, options) pairs in priority order, for
    ``InferenceSession(providers=...)``; option values are strings as ORT's Python binding
    wants them (the TensorRT EP's booleans "True"/"False"). ``session_config``: entries for
    ``SessionOptions.add_session_config_entry``. ``env``: variables the worker sets before
    its first session (read when a TensorRT engine is built)."""

    providers: list
    session_config: dict
    env: dict

    @property
    def names(self) -> list[str]:
        return [name for name, _ in self.providers]


def trt_cache_dirs(cache_dir, engine_key: str, precision: str,
                   ort_version: str = "") -> tuple[Path, Path]:
    """The TensorRT EP's engine cache (one folder per ONNX artifact and precision) and its
    timing cache (one for every model: tactic timings depend on the GPU and TensorRT, not on
    the model), under the run's cache dir and keyed by the ORT version."""
    root = Path(cache_dir) / "ort-trt" / (f"ort-{ort_version}" if ort_version else "ort")
    return root / f"{engine_key}-{precision}", root / "timing"


def trt_profile(input_shape, max_batch: int, opt_batch: int = TRT_OPT_BATCH) -> dict:
    """Explicit min/opt/max shapes of the input's dynamic batch (trtexec's --minShapes ...):
    one engine covers every batch size the cell measures, instead of the TensorRT EP building
    a new one each time the throughput search passes the largest batch seen so far."""
    top = int(max_batch)
    if top < 1:
        raise ValueError(f"max_batch must be >= 1, not {max_batch}")
    chw = "x".join(str(int(d)) for d in input_shape)
    opt = max(1, min(int(opt_batch), top))
    return {f"trt_profile_{k}_shapes": f"{INPUT_NAME}:{b}x{chw}"
            for k, b in (("min", 1), ("opt", opt), ("max", top))}


def provider_config(providers: list[str], cache_dir, precision: str = "fp32", *,
                    engine_key: str = "model", input_shape=None, max_batch: int | None = None,
                    opt_batch: int = TRT_OPT_BATCH, allow_cpu_fallback: bool = False,
                    ort_version: str = "") -> OrtProviderConfig:
    """The execution providers with their options, and the session config entries, for a
    session on ``providers`` (priority order) of a ``precision`` ("fp32"/"fp16"/"int8") variant.

    - CUDA EP, FP32: ``use_tf32=0`` (ORT's default is 1: TF32 on Ampere and newer).
    - TensorRT EP: ``trt_fp16_enable`` as the precision says (INT8: a QDQ model, explicit
      quantization, so ``trt_int8_enable`` with FP16 on for the layers left unquantized, as
      weakly typed TensorRT 10 needs, and no calibration table); engine cache and timing cache on,
      in ``trt_cache_dirs(cache_dir, ...)``; the batch profile when ``input_shape`` and
      ``max_batch`` are given. FP32: ``NVIDIA_TF32_OVERRIDE=0`` in ``env`` (the TensorRT EP has
      no use_tf32 option; TensorRT reads the variable when it builds an engine).
    - A GPU (any non-CPU) EP first: ``session.disable_cpu_ep_fallback=1`` and the CPU EP left
      out of the list (ORT rejects the two together), so a node that would run on the CPU
      fails the session; ``session.record_ep_graph_assignment_info=1`` so the record can say
      which EP runs each node. ``allow_cpu_fallback`` keeps the CPU EP and drops the refusal.
    - CPU EP only: no session config entry at all (the refusal is meaningless there, and ORT
      rejects it beside an explicit CPU EP).
    Pure: touches no file and imports nothing (the caller creates the cache folders)."""
    if precision not in ("fp32", "fp16", "int8"):
        raise ValueError(f"precision must be 'fp32', 'fp16' or 'int8', not {precision!r}")
    names = list(dict.fromkeys(providers))
    if not names:
        raise ValueError("no execution provider requested")
    on_gpu = names[0] != CPU_EP
    refuse = on_gpu and not allow_cpu_fallback
    if refuse:
        names = [n for n in names if n != CPU_EP]
    out, env = [], {}
    for name in names:
        opts: dict[str, str] = {}
        if name == CUDA_EP and precision == "fp32":
            opts["use_tf32"] = "0"
        elif name == TRT_EP:
            engines, timing = trt_cache_dirs(cache_dir, engine_key, precision, ort_version)
            opts = {"trt_fp16_enable": "True" if precision in ("fp16", "int8") else "False",
                    "trt_engine_cache_enable": "True", "trt_engine_cache_path": str(engines),
                    "trt_timing_cache_enable": "True", "trt_timing_cache_path": str(timing)}
            if precision == "int8":
                opts["trt_int8_enable"] = "True"      # scales come from the Q/DQ nodes
            if input_shape and max_batch:
                opts.update(trt_profile(input_shape, max_batch, opt_batch))
            if precision == "fp32":
                env["NVIDIA_TF32_OVERRIDE"] = "0"
        out.append((name, opts))
    config = {}
    if on_gpu:
        config[RECORD_ASSIGNMENT] = "1"
    if refuse:
        config[DISABLE_CPU_FALLBACK] = "1"
    return OrtProviderConfig(out, config, env)


def tf32_note(cfg: OrtProviderConfig) -> dict:
    """What each GPU EP of ``cfg`` does about TF32, in words for the record."""
    notes = {}
    for name, opts in cfg.providers:
        if name == CUDA_EP:
            notes[name] = ("off (use_tf32=0)" if opts.get("use_tf32") == "0"
                           else "on (ORT's default use_tf32=1)")
        elif name == TRT_EP:
            notes[name] = ("off (NVIDIA_TF32_OVERRIDE=0)" if cfg.env.get("NVIDIA_TF32_OVERRIDE") == "0"
                           else "TensorRT's default (allowed), FP16 engine"
                           if opts.get("trt_fp16_enable") == "True" else "TensorRT's default (allowed)")
    return notes
