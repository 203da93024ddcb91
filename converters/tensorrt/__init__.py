"""TensorRT FP16 engines built from the shared ONNX export (``tensorrt-fp16``).

Layout of this package (one job per module):
  plan.py         what the installed TensorRT needs (version table: 8.4 to 11), the variant's
                  options, profile shapes, engine and timing-cache keys: pure functions
  onnx_fp16.py    FP32 ONNX -> FP16 ONNX for strongly typed TensorRT (11+; ``--trt-fp16-mode onnx``)
  build.py        importing tensorrt, its logger, the GPU's identity, the engine build and
                  timing cache
  predictor.py    ``TrtPredictor``: one execution context, torch.cuda buffers, the timed call
  __init__.py     the registered ``Converter``: availability, the cached convert, load

Caches (under the run's cache dir): ``tensorrt/<model>-<key>.engine`` (+ ``.json`` with build
facts) where key = model/weights (``spec.key``), ONNX file hash, TensorRT version, GPU name and
compute capability, profile and FP16 route; ``tensorrt/timing-<trt>-<gpu>-sm<cc>.cache``: the
timing cache, shared by all models on that GPU/TensorRT.

Importing this package imports neither tensorrt nor torch nor onnxconverter-common: the
registry lists every variant. ``import tensorrt`` (in build.py) is absolute and reaches
NVIDIA's module, not this package.
"""
from __future__ import annotations

import json
import time
from pathlib import Path

from converters import register
from converters.base import (Artifact, Availability, Converter, ModelSpec, OutOfMemory, Predictor,
                             SkipVariant)
from edgebench.util import atomic_write_json

from .build import build_engine, device_identity, make_logger, replace_bytes, trt_module
from .onnx_fp16 import to_fp16_onnx
from .plan import (DEFAULT_MAX_BATCH, DEFAULT_OPT_BATCH, engine_cache_key, plan_for,
                   profile_shapes, timing_cache_path, variant_options)


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
            out["tensorrt"] = trt_module().__version__
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
            trt = trt_module()
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
            builder = trt.Builder(make_logger(trt))
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
        name, cc = device_identity()
        return Availability.yes(tensorrt=version, gpu=name, compute_capability=cc,
                                fp16_via=plan.fp16_via, io_api=plan.io_api)

    def convert(self, spec: ModelSpec, cache: Path) -> Artifact:
        from converters.onnxruntime import export_onnx

        trt = trt_module()
        opts = variant_options(spec.options)
        plan = plan_for(trt.__version__, opts["fp16_mode"])
        onnx_art = export_onnx(spec, cache)
        onnx_sha = onnx_art.sha256() or ""
        gpu, cc = device_identity()
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
        replace_bytes(engine_path, engine)
        convert_s = time.perf_counter() - t
        meta = {**base_meta, **build_meta, **extra, "convert_s": round(convert_s, 3),
                "onnx_export_s": onnx_art.meta.get("export_s")}
        atomic_write_json(meta_path, meta)
        # convert_s covers FP16 conversion + engine build; the shared ONNX export is timed by
        # the onnx artifact (onnx_export_s) when it happened in this process.
        return Artifact(self.name, path=str(engine_path), convert_s=convert_s + onnx_art.convert_s,
                        meta=meta)

    def load(self, artifact: Artifact, spec: ModelSpec) -> Predictor:
        from .predictor import TrtPredictor

        trt = trt_module()
        plan = plan_for(trt.__version__, variant_options(spec.options)["fp16_mode"])
        try:
            return TrtPredictor(trt, Path(artifact.path).read_bytes(), plan, dict(artifact.meta))
        except ImportError as e:
            raise SkipVariant(str(e)) from e
