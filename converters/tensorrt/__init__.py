"""TensorRT engines: FP16 from the shared ONNX export (``tensorrt-fp16``) and INT8 from the
calibrated QDQ ONNX (``tensorrt-int8``, explicit quantization: no calibrator, no calibration
cache; ``converters.onnxruntime.quantize.qdq_model``).

Layout of this package (one job per module):
  plan.py         what the installed TensorRT needs (version table: 8.4 to 11, DLA and the
                  FP16/INT8 precision flags per version), the builder settings as plain
                  data, engine and timing-cache keys: pure functions
  batches.py      the variants' options, the batch sizes a cell measures, the engine's
                  profiles and the DLA's batch limit: pure functions
  engine_log.py   reading the builder's layer placement and the engine inspector's summary
  onnx_fp16.py    FP32 ONNX -> FP16 ONNX for strongly typed TensorRT (11+; ``--trt-fp16-mode onnx``)
  build.py        importing tensorrt, its logger, the GPU's identity, ``apply_settings`` (the
                  settings -> builder-config calls), the engine build and timing cache
  predictor.py    ``TrtPredictor``: one execution context, torch.cuda buffers and stream,
                  optional CUDA graph, the timed call
  offline.py      ``--trt-offline-all-accelerators``: which devices serve MLPerf Offline, the
                  DLA engines' settings, building them at convert and attaching them at load
  __init__.py     ``TensorRTFP16`` (options, availability, the cached convert, load)
  int8.py         ``TensorRTINT8``, its subclass, which swaps only the source ONNX (QDQ) and
                  the plan's precision

Options (both variants; declared by tensorrt-fp16): ``--trt-max-batch`` / ``--trt-opt-batch``
(the profile; rule in batches.py), ``--trt-workspace-mb``, ``--trt-fp16-mode`` (FP16 only:
tensorrt-int8 ignores it and records so), ``--trt-cuda-graph``, ``--trt-dla-core N``
(+ ``--trt-dla-no-gpu-fallback``), ``--trt-offline-all-accelerators`` (the offline task on
the GPU and every DLA core at once; not with ``--trt-dla-core``). tensorrt-int8's calibration
set is the run's (``needs_calibration``; ``--int8-calib-*`` / ``--int8-exclude``, declared by
onnxruntime-int8).

What the record's ``variant_meta`` says (besides versions, GPU and the ONNX it came from):
``batches`` (the engine's max/opt batch and where each came from, the sizes the cell
measures, the sizes the predictor offers, notes such as a throughput search capped by
``--trt-max-batch``), ``trt_profiles`` (min/opt/max shape of every optimisation profile, read
back from the engine), ``builder`` (flags, workspace, device type, DLA core, GPU fallback,
profiling verbosity), ``dla`` (null, or the core, fallback, DLA limits, how many layers the
DLA can run and the builder's DLA/GPU layer placement), ``engine_layers`` (engine inspector
summary), ``cuda_graph`` (enabled, and how it is captured and replayed) and ``sync`` (where a
call waits for the device). With ``--trt-offline-all-accelerators``, ``offline_accelerators``:
the devices that serve Offline (``devices``: gpu, dla0, dla1, ...), those planned, why only the
GPU serves where it does (``gpu_only_because``: no DLA in this TensorRT, or 0 DLA cores), any
DLA engine left out and why (``not_used``), ``engine_keys`` per device and, per DLA engine, its
key, file, build (or reuse) time, profiles and DLA facts. The DLA engines' build time is not in
``convert_s``, which stays the GPU engine's.

INT8 records add ``int8`` (the quantizer's settings, calibration set hash and method, what
stayed FP32: ``qdq_model``'s meta), ``precision_flags``, ``network_typing`` and where the layers
outside the Q/DQ pairs run.

Caches (under the run's cache dir): ``tensorrt/<model>-<key>.engine`` (INT8:
``<model>-int8-<key>.engine``; + ``.json`` with build facts) where key = model/weights
(``spec.key``), the parsed ONNX's sha256 (the export, or the QDQ model: it changes with the
calibration), TensorRT version, GPU name and compute capability, builder settings (profiles,
flags, DLA core, workspace), FP16 route and, for INT8, the precision;
``tensorrt/timing-<trt>-<gpu>-sm<cc>.cache``: the timing cache, shared by all models on that
GPU/TensorRT. An engine's sha256 is checked before every deserialize. The Offline DLA engines
(``--trt-offline-all-accelerators``) are cached the same way, each with its own key (the DLA
core is in the builder settings; without ``--mlperf-offline-batch`` a core's engine is the one
``--trt-dla-core N`` builds, and is shared with it).

Importing this package imports neither tensorrt nor torch nor onnxconverter-common: the
registry lists every variant. ``import tensorrt`` (in build.py) is absolute and reaches
NVIDIA's module, not this package.
"""
from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path

from converters import register
from converters.base import (Artifact, Availability, Converter, ModelSpec, OutOfMemory, Predictor,
                             SkipVariant)
from edgebench.cache_integrity import reuse, seal
from edgebench.util import atomic_write_json

from .build import (build_engine, device_identity, make_logger, read_engine,
                    replace_bytes, trt_module)
from .onnx_fp16 import to_fp16_onnx
from .offline import attach_offline, offline_devices_plan, offline_engines
from .plan import (DEFAULT_OPT_BATCH, TrtPlan, builder_settings, engine_cache_key, engine_fields,
                   measured_batches, plan_for, timing_cache_path, variant_options)


@register
class TensorRTFP16(Converter):
    name = "tensorrt-fp16"
    starts_from_onnx = True
    precision = "fp16"
    description = ("TensorRT FP16 engine from the ONNX export (one dynamic-batch profile; DLA: "
                   "one static profile per measured batch size)")
    cli_options: tuple = (
        ("--trt-max-batch", {"type": int, "default": None, "metavar": "N",
                             "help": "TensorRT engine's max batch. Default: the run profile's "
                                     "throughput max_batch (or its accuracy batch, if larger). "
                                     "Below that cap the throughput search stops at N, and the "
                                     "record says so"}),
        ("--trt-opt-batch", {"type": int, "default": None, "metavar": "N",
                             "help": "TensorRT profile's optimal batch (the shape tactics are "
                                     f"timed for; default {DEFAULT_OPT_BATCH}, never above the "
                                     "max batch)"}),
        ("--trt-workspace-mb", {"type": int, "default": None, "metavar": "MB",
                                "help": "TensorRT builder workspace limit (default: TensorRT's)"}),
        ("--trt-fp16-mode", {"choices": ["auto", "flag", "onnx"], "default": None,
                             "help": "tensorrt-fp16 only (tensorrt-int8 ignores it: its QDQ "
                                     "network's precision is fixed per TensorRT version): how "
                                     "FP16 is requested: BuilderFlag.FP16 (flag, TensorRT <= 10), "
                                     "an FP16 ONNX on a strongly typed network (onnx, TensorRT >= 9; "
                                     "the only way on 11), or auto (flag where it exists)"}),
        ("--trt-cuda-graph", {"action": "store_true",
                              "help": "capture the TensorRT enqueue in a CUDA graph and launch "
                                      "the graph, as trtexec --useCudaGraph (captured again when "
                                      "the input shape changes). Default: execute_async_v3 on "
                                      "every call"}),
        ("--trt-dla-core", {"type": int, "default": None, "metavar": "N",
                            "help": "build for DLA core N (AGX Orin: 0 or 1) with GPU fallback "
                                    "for layers the DLA cannot run; one static profile per "
                                    "measured batch size (DLA has no dynamic shapes). "
                                    "TensorRT 8.5-10.7 (JetPack 6) or 11.4.1+ (JetPack 7.2.2+)"}),
        ("--trt-dla-no-gpu-fallback", {"action": "store_true",
                                       "help": "with --trt-dla-core: no GPU fallback; a model with "
                                               "a layer the DLA cannot run is skipped, naming "
                                               "the layers"}),
        ("--trt-offline-all-accelerators", {
            "action": "store_true",
            "help": "for the offline task (MLPerf Offline), also build one engine per DLA core "
                    "(Builder.num_DLA_cores; GPU fallback on, static profiles as "
                    "--trt-dla-core builds them, plus one at --mlperf-offline-batch when given) "
                    "and serve LoadGen's query from the GPU engine and every DLA engine at "
                    "once; the record's mlperf.device_shares says how many samples each took"}),
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

    def check_options(self, options: dict) -> None:
        variant_options(options)    # ValueError naming the flag

    def compute_device(self, options: dict) -> str:
        # A DLA engine still runs the layers the DLA cannot take on the GPU (GPU fallback).
        return "dla" if variant_options(options)["dla_core"] is not None else "cuda"

    def available(self, options: dict | None = None) -> Availability:
        try:
            trt = trt_module()
        except ImportError as e:
            return Availability.no(f"{e} (on Jetson: apt python3-libnvinfer, and a venv with "
                                   "--system-site-packages; see jetson/README.md)")
        version = trt.__version__
        try:
            opts = variant_options(options)
            plan = plan_for(version, opts["fp16_mode"], self.precision)
        except ValueError as e:
            return Availability.no(str(e), tensorrt=version)
        if opts["dla_core"] is not None and plan.no_dla:
            return Availability.no(f"--trt-dla-core {opts['dla_core']}: TensorRT {version}: "
                                   f"{plan.no_dla}", tensorrt=version)
        try:
            import torch
        except ImportError as e:
            return Availability.no(f"torch is needed for CUDA buffers: {e}", tensorrt=version)
        if not torch.cuda.is_available() or torch.cuda.device_count() == 0:
            return Availability.no("no CUDA device (torch.cuda.is_available() is False)",
                                   tensorrt=version, torch=torch.__version__)
        try:
            builder = trt.Builder(make_logger())
        except Exception as e:  # noqa: BLE001 - a builder that cannot start is a reason
            return Availability.no(f"trt.Builder failed: {type(e).__name__}: {e}", tensorrt=version)
        if builder is None:
            return Availability.no("trt.Builder returned None (no usable CUDA device?)",
                                   tensorrt=version)
        n_dla = int(builder.num_DLA_cores)
        del builder
        if opts["dla_core"] is not None and opts["dla_core"] >= n_dla:
            return Availability.no(f"--trt-dla-core {opts['dla_core']}: this device has {n_dla} "
                                   "DLA core(s) (Builder.num_DLA_cores)", tensorrt=version)
        missing = self._source_missing(plan)
        if missing:
            return Availability.no(missing, tensorrt=version)
        name, cc = device_identity()
        offline: dict = {}
        if opts["offline_all_accelerators"]:
            devices, why = offline_devices_plan(n_dla, version, options, self.precision)
            offline = {"offline_devices": [d for d, _ in devices]}
            if why:
                offline["offline_gpu_only_because"] = why
        return Availability.yes(tensorrt=version, gpu=name, compute_capability=cc,
                                fp16_via=plan.fp16_via, io_api=plan.io_api, dla_cores=n_dla,
                                **offline, **self._plan_facts(plan))

    # -- what differs between the FP16 and INT8 variants (TensorRTINT8 overrides these) ------
    def _source_missing(self, plan: TrtPlan) -> str:
        """Why the ONNX this variant's network is parsed from cannot be made here ("" = can)."""
        if plan.network_source == "fp16_onnx":
            try:
                import onnxconverter_common  # noqa: F401
            except ImportError as e:
                return (f"TensorRT {'.'.join(map(str, plan.version))} needs an FP16 ONNX and "
                        f"{e}: pip install 'edgebench[tensorrt]'")
        return ""

    def _plan_facts(self, plan: TrtPlan) -> dict:
        """Plan facts for run.json (``available``) and the record, beyond ``fp16_via``."""
        return {}

    def _source_onnx(self, spec: ModelSpec, cache: Path) -> Artifact:
        """The ONNX the network is parsed from: the shared FP32 export."""
        from converters.onnxruntime import export_onnx

        return export_onnx(spec, cache)

    def _source_meta(self, spec: ModelSpec, source: Artifact) -> dict:
        """What the record says about that ONNX, besides its path and sha256."""
        return {"onnx_exporter": source.meta.get("exporter")}

    def _source_timing(self, source: Artifact) -> dict:
        """The source ONNX's own timing, recorded next to a fresh build's convert_s."""
        return {"onnx_export_s": source.meta.get("export_s")}

    def _settings(self, spec: ModelSpec, version: str) -> tuple[TrtPlan, dict, dict]:
        """(plan, options, builder settings) for this spec on this TensorRT: pure, so
        convert() and load() agree on the engine and the batch sizes it serves."""
        opts = variant_options(spec.options)
        plan = plan_for(version, opts["fp16_mode"], self.precision)
        settings = builder_settings(opts, measured_batches(spec.options), plan,
                                    spec.input_size, self.precision)
        return plan, opts, settings

    def convert(self, spec: ModelSpec, cache: Path) -> Artifact:
        if len(spec.outputs) > 1:
            # The predictor binds one output buffer (predictor.py); several are not wired yet.
            raise SkipVariant(f"the TensorRT variants run models of one output; {spec.name} has "
                              f"{len(spec.outputs)} ({', '.join(spec.outputs)})")
        trt = trt_module()
        try:
            plan, opts, settings = self._settings(spec, trt.__version__)
        except ValueError as e:
            raise SkipVariant(str(e)) from e
        onnx_art = self._source_onnx(spec, cache)
        gpu, cc = device_identity()
        folder = Path(cache) / "tensorrt"
        folder.mkdir(parents=True, exist_ok=True)
        art = self._engine(spec, folder, onnx_art, plan, settings, trt.__version__, gpu, cc)
        if not art.cached:
            # convert_s covers FP16 conversion + engine build; the shared ONNX export (and for
            # INT8 the calibration) is timed by its artifact when it happened in this process.
            art.convert_s += onnx_art.convert_s
        if opts["offline_all_accelerators"]:
            # Not in the GPU engine's .json (written above): a run without the option may
            # reuse that engine. The DLA engines' build time is theirs, not convert_s.
            art.meta["offline_accelerators"] = offline_engines(
                self, spec, folder, onnx_art, plan, opts, trt.__version__, gpu, cc)
        return art

    def _engine(self, spec: ModelSpec, folder: Path, onnx_art: Artifact, plan: TrtPlan,
                settings: dict, version: str, gpu: str, cc: str) -> Artifact:
        """The engine for ``settings`` from the source ONNX ``onnx_art``: reused from the cache
        (its bytes fully hashed) or built, sealed and cached. ``convert_s``: this build only."""
        onnx_sha = onnx_art.sha256() or ""
        key = engine_cache_key(spec.key(), onnx_sha, version, gpu, cc,
                               engine_fields(settings), plan.fp16_via, plan.precision)
        tag = "" if plan.precision == "fp16" else f"{plan.precision}-"
        engine_path = folder / f"{spec.slug}-{tag}{key}.engine"
        meta_path = engine_path.with_suffix(".json")
        # This run's batch plan (not the engine's: another run may reuse the engine).
        base_meta = {"tensorrt": version, "gpu": gpu, "compute_capability": cc,
                     "fp16_via": plan.fp16_via, "io_api": plan.io_api, "engine_key": key,
                     "onnx": onnx_art.path, "onnx_sha256": onnx_sha,
                     **self._source_meta(spec, onnx_art), **self._plan_facts(plan),
                     "batches": settings["batches"]}
        # What this process rebuilt from a corrupted cache: into the record, never the .json.
        notes = {}
        if onnx_art.meta.get("cache_rebuilt"):
            notes["onnx_cache_rebuilt"] = onnx_art.meta["cache_rebuilt"]
        if engine_path.is_file() and meta_path.is_file():
            # An engine is executed code: its bytes are fully hashed on every reuse. The
            # checked bytes go to load() in artifact.obj, so what is deserialized is what
            # was hashed (a later load without them reads and checks again: read_engine).
            data = engine_path.read_bytes()
            hit, rebuilt = reuse(engine_path, executed=True, also=[meta_path], data=data,
                                 read=lambda: Artifact(self.name, path=str(engine_path), cached=True, meta={
                                     **json.loads(meta_path.read_text(encoding="utf-8")), **base_meta, **notes},
                                     obj=data))
            if hit:
                return hit
            notes["cache_rebuilt"] = rebuilt
            del data
        t = time.perf_counter()
        if not onnx_art.path:
            raise RuntimeError(f"the {plan.network_source} source gave no file")
        source: str = onnx_art.path
        extra: dict = {}
        if plan.network_source == "fp16_onnx":
            source = str(folder / f"{spec.slug}-{key}.fp16.onnx")
            t16 = time.perf_counter()
            extra = to_fp16_onnx(onnx_art.path, source)
            extra["fp16_convert_s"] = round(time.perf_counter() - t16, 3)
        try:
            engine, build_meta = build_engine(source, settings,
                                              timing_cache_path(folder, version, gpu, cc))
        except ValueError as e:          # the DLA cannot take this engine (build.py says why)
            raise SkipVariant(str(e)) from e
        except RuntimeError as e:
            if "out of memory" in str(e).lower():
                raise OutOfMemory(str(e)) from e
            raise
        replace_bytes(engine_path, engine)
        seal(engine_path, hashlib.sha256(engine).hexdigest())
        convert_s = time.perf_counter() - t
        meta = {**base_meta, **build_meta, **extra, "convert_s": round(convert_s, 3),
                **self._source_timing(onnx_art)}
        atomic_write_json(meta_path, {k: v for k, v in meta.items() if k != "batches"})
        meta = {**meta, **notes}
        return Artifact(self.name, path=str(engine_path), convert_s=convert_s, meta=meta,
                        obj=bytes(engine))

    def load(self, artifact: Artifact, spec: ModelSpec) -> Predictor:
        from .predictor import TrtPredictor

        trt = trt_module()
        plan, opts, settings = self._settings(spec, trt.__version__)
        # The bytes convert() just hashed, else read and hashed now: checked before every
        # deserialize either way.
        if isinstance(artifact.obj, bytes):
            data = artifact.obj
        elif artifact.path:
            data = read_engine(artifact.path)
        else:
            raise RuntimeError("the TensorRT artifact has no engine file")
        artifact.obj = None
        run = {"batch_sizes": settings["batches"]["run_batch_sizes"],
               "cuda_graph": opts["cuda_graph"], "dla_core": opts["dla_core"]}
        try:
            predictor = TrtPredictor(data, plan, dict(artifact.meta), run)
        except ImportError as e:
            raise SkipVariant(str(e)) from e
        if opts["offline_all_accelerators"]:
            attach_offline(predictor, plan, opts, artifact.meta.get("offline_accelerators"))
        return predictor


# The INT8 variant registers itself (one module per variant class).
from .int8 import TensorRTINT8  # noqa: E402,F401 - registers tensorrt-int8
