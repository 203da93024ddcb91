"""ONNX export (shared with TensorRT) and the ONNX Runtime variants (``onnxruntime``: FP32 on
CPU, CUDA or TensorRT EP; ``onnxruntime-trt-fp16``: the TensorRT EP in FP16).

Export: torch.onnx.export with the current (dynamo) exporter and a dynamic batch dimension,
the legacy TorchScript exporter where a model needs it; the record says which. Cached by
content hash of model, weights, opset and exporter version.

Session: ``provider_config`` (one pure function, checked by tests without a GPU) decides
what each execution provider (EP) gets and which session config entries go with it.
- CUDA EP in the FP32 variant: ``use_tf32=0``. ORT turns TF32 on by default
  (``CUDAExecutionProviderInfo::use_tf32{true}``), so on Ampere and newer (the AGX Orin is
  Ampere, sm_87) FP32 Conv/MatMul/Gemm would run on TF32 tensor cores (10-bit mantissa) and
  spoil FP32 parity.
- TensorRT EP: FP16 in the ``onnxruntime-trt-fp16`` variant, FP32 in ``onnxruntime`` (there
  ``NVIDIA_TF32_OVERRIDE=0``: the TensorRT EP has no ``use_tf32`` option), an engine cache and
  a timing cache under the run's cache dir, and an explicit dynamic-batch profile (no engine
  rebuild when the throughput search grows the batch).
- No silent CPU fallback. ``session.get_providers()`` names the EPs a session registered, not
  where each node runs. With a GPU EP first, ``session.disable_cpu_ep_fallback=1`` makes ORT
  refuse a session that puts any node on the CPU EP; the cell fails with those nodes named (a
  second, diagnostic session lists them). ``--ort-allow-cpu-fallback`` runs such a model and
  puts its CPU nodes in the record. A requested EP that did not load here (missing from
  ``session.get_providers()``) makes the cell ``skipped``.
Every record carries the effective options (``session.get_provider_options()``), the session
config entries and the number of nodes each EP runs.

Layout of this package (one job per module):
  export.py       ``export_onnx`` (torch.onnx, dynamo then legacy exporter, cached and sealed),
                  ``OPSET``, ``INPUT_NAME``/``OUTPUT_NAME``; shared with tensorrt and tvm
  providers.py    the EP names and session config keys, the default EPs, ``provider_config``
                  (pure: provider options, session config, env), TensorRT EP cache dirs and
                  batch profile, ``tf32_note``
  session.py      ``session_options``, ``create_session``, the CPU-fallback diagnosis
                  (``CpuFallbackRefused``), node placement and effective EP options
  predictor.py    ``OrtPredictor``: the timed call (``run`` on the CPU, IO binding on a GPU)
  __init__.py     the registered ``Converter``s ``onnxruntime`` and ``onnxruntime-trt-fp16``,
                  and the names other code imports from ``converters.onnxruntime``

Importing this package imports neither onnxruntime nor onnx nor torch: the registry lists
every variant. ``import onnxruntime`` inside it is absolute and reaches ORT, not this package.
"""
from __future__ import annotations

import os
from pathlib import Path

from converters import register
from converters.base import Artifact, Availability, Converter, ModelSpec, Predictor

from .export import INPUT_NAME, OPSET, OUTPUT_NAME, export_onnx
from .predictor import OrtPredictor
from .quantize import CALIB_METHODS, DEFAULT_CALIB_METHOD, Calibrated, qdq_model
from .providers import (CPU_EP, CUDA_EP, DISABLE_CPU_FALLBACK, GPU_EPS, RECORD_ASSIGNMENT,
                        TRT_EP, TRT_OPT_BATCH, OrtProviderConfig, _requested, provider_config,
                        tf32_note, trt_cache_dirs, trt_profile)
from .session import (CpuFallbackRefused, _assignment, _effective_options, _node_list,
                      create_session, describe_session_options, not_loaded, session_options)

__all__ = ["CALIB_METHODS", "CPU_EP", "CUDA_EP", "DISABLE_CPU_FALLBACK", "GPU_EPS", "INPUT_NAME", "OPSET",
           "OUTPUT_NAME", "RECORD_ASSIGNMENT", "TRT_EP", "TRT_OPT_BATCH", "CpuFallbackRefused",
           "OnnxRuntimeConverter", "OnnxRuntimeInt8", "OnnxRuntimeTensorRT",
           "OnnxRuntimeTensorRTInt8", "OrtPredictor", "OrtProviderConfig",
           "create_session", "describe_session_options", "export_onnx", "provider_config",
           "session_options", "tf32_note", "trt_cache_dirs", "trt_profile"]


@register
class OnnxRuntimeConverter(Converter):
    name = "onnxruntime"
    starts_from_onnx = True
    onnx_reference = True          # its CPU provider in FP32 (reference_predictor)
    precision = "fp32"
    description = "ONNX Runtime (export via torch.onnx; CPU, CUDA or TensorRT execution provider)"
    # onnx (pure Python and protobuf, no thread; about 0.6 s a cell here). Not onnxruntime:
    # its import starts a native thread, which a forked child would not have.
    preload = ("onnx",)
    cli_options = (
        ("--ort-providers", {"nargs": "+", "default": None, "metavar": "PROVIDER",
                             "help": "ONNX Runtime execution providers in priority order, e.g. "
                                     "CUDAExecutionProvider. Default: CUDA when this onnxruntime "
                                     "build has it, else CPU. A provider missing here makes the "
                                     "cell 'skipped'. Behind a GPU provider no node may fall back "
                                     "to the CPU (see --ort-allow-cpu-fallback). The "
                                     "onnxruntime-trt-fp16 variant always uses TensorRT, then CUDA"}),
        ("--ort-threads", {"type": int, "default": None, "metavar": "N",
                           "help": "ONNX Runtime intra-op threads (default: physical cores)"}),
        ("--ort-allow-cpu-fallback", {"action": "store_true",
                                      "help": "let nodes that a GPU execution provider does not "
                                              "take run on the CPU (default: such a session is "
                                              "refused and the cell fails, naming the nodes); "
                                              "the record lists them"}),
    )

    def versions(self) -> dict:
        import onnx
        import onnxruntime as ort

        return {"onnxruntime": ort.__version__, "onnx": onnx.__version__,
                "ort_device": ort.get_device(),
                "ort_available_providers": ort.get_available_providers()}

    def available(self, options=None) -> Availability:
        try:
            import onnx  # noqa: F401
            import onnxruntime as ort
        except ImportError as e:
            return Availability.no(f"onnxruntime not installed ({e}); pip install 'edgebench[onnx]'")
        req = self._providers(options)
        missing = [p for p in req if p not in ort.get_available_providers()]
        if missing:
            return Availability.no(
                f"requested execution provider(s) {', '.join(missing)} not in this onnxruntime "
                f"build ({ort.__version__}, has: {', '.join(ort.get_available_providers())})",
                **self.versions())
        # Into run.json (variants.<name>.versions): the session options cells will use.
        opts = options or {}
        so = describe_session_options(session_options(opts.get("ort_threads")))
        cfg = provider_config(req, ".", self.precision,
                              allow_cpu_fallback=bool(opts.get("ort_allow_cpu_fallback")))
        return Availability.yes(**self.versions(), providers=cfg.names, session_options=so,
                                session_config=cfg.session_config)

    def _providers(self, options: dict | None) -> list[str]:
        """The execution providers this variant asks for, in priority order."""
        return _requested(options)

    def compute_device(self, options: dict) -> str:
        # The first EP computes; behind a GPU EP no node may fall back to the CPU.
        return "cuda" if self._providers(options)[0] in GPU_EPS else "cpu"

    def convert(self, spec: ModelSpec, cache: Path) -> Artifact:
        art = export_onnx(spec, cache)
        art.variant = self.name
        return art

    def reference_predictor(self, spec: ModelSpec) -> Predictor:
        """A model handed over as an ONNX file has no PyTorch module: its reference is its own
        graph on ONNX Runtime's CPU provider in FP32, with the suite's session options."""
        import onnxruntime as ort

        if not spec.from_onnx:
            raise NotImplementedError("onnxruntime is the reference of ONNX-file models only")
        so = session_options(spec.options.get("ort_threads"))
        sess = ort.InferenceSession(spec.onnx_path, sess_options=so, providers=[CPU_EP])
        return _batch_limited(OrtPredictor(sess, "cpu", {"providers": [CPU_EP]}), spec)

    def load(self, artifact: Artifact, spec: ModelSpec) -> Predictor:
        return self._load(artifact, spec)

    def profile_layers(self, artifact: Artifact, spec: ModelSpec, predictor, batch, runs: int):
        """ORT's per-node profile, from a second session made as the cell's with the
        profiler on (the cell's own session stays unprofiled)."""
        import tempfile

        from .layers import profile

        with tempfile.TemporaryDirectory() as tmp:
            profiled = self._load(artifact, spec, profile_prefix=str(Path(tmp) / "ort"))
            try:
                return profile(profiled, batch, runs)
            finally:
                profiled.close()

    def _load(self, artifact: Artifact, spec: ModelSpec, profile_prefix: str = "") -> Predictor:
        import onnxruntime as ort

        opts = spec.options
        path = Path(artifact.path).resolve()
        # The run's cache dir: export_onnx keeps the model at <cache>/onnx/<model>-<key>.onnx.
        cfg = provider_config(self._providers(opts), path.parent.parent, self.precision,
                              engine_key=path.stem, input_shape=spec.input_size,
                              max_batch=opts.get("max_batch"),
                              allow_cpu_fallback=bool(opts.get("ort_allow_cpu_fallback")),
                              ort_version=ort.__version__)
        for _, o in cfg.providers:
            for key in ("trt_engine_cache_path", "trt_timing_cache_path"):
                if key in o:
                    Path(o[key]).mkdir(parents=True, exist_ok=True)
        os.environ.update(cfg.env)        # this cell's own process, before its first session
        so = session_options(opts.get("ort_threads"))
        if profile_prefix:                 # the layers task's session (profile_layers)
            so.enable_profiling, so.profile_file_prefix = True, profile_prefix
        sess = create_session(ort, str(path), so, cfg)
        unloaded = not_loaded(ort, sess, cfg)
        if unloaded:
            raise unloaded
        got = sess.get_providers()
        primary = cfg.names[0]
        meta = {"providers": got, **describe_session_options(so), **artifact.meta,
                "provider_options": _effective_options(sess, cfg)}
        if primary != CPU_EP:
            meta["session_config"] = dict(cfg.session_config)
            meta["cpu_fallback"] = ("allowed (--ort-allow-cpu-fallback)"
                                    if DISABLE_CPU_FALLBACK not in cfg.session_config
                                    else f"refused ({DISABLE_CPU_FALLBACK}=1)")
            meta["tf32"] = tf32_note(cfg)
            if cfg.env:
                meta["env"] = dict(cfg.env)
            placed = _assignment(sess)
            if placed is not None:
                meta["nodes_by_provider"] = {ep: len(n) for ep, n in placed.items()}
                if not placed.get(primary):
                    raise RuntimeError(f"{primary} runs none of the model's "
                                       f"{sum(len(n) for n in placed.values())} nodes "
                                       f"({meta['nodes_by_provider']}): no figure for {primary}")
                if placed.get(CPU_EP):
                    meta["cpu_nodes"] = _node_list(placed[CPU_EP], most=50)
        device = "cuda" if primary in GPU_EPS else "cpu"
        meta["io_binding"] = device == "cuda"
        return _batch_limited(OrtPredictor(sess, device, meta), spec)


def _batch_limited(predictor: OrtPredictor, spec: ModelSpec) -> OrtPredictor:
    """An ONNX file with a static batch dimension runs that batch size only."""
    if spec.static_batch:
        predictor.batch_sizes = [int(spec.static_batch)]
        predictor.meta["batch_sizes"] = predictor.batch_sizes
    return predictor

@register
class OnnxRuntimeTensorRT(OnnxRuntimeConverter):
    """ONNX Runtime's TensorRT EP in FP16, with the CUDA EP for the nodes TensorRT does not
    take (ORT's recommended pairing; such nodes stay on the GPU, and none may go to the CPU).
    Its engines and timing cache live under the run's cache dir (``trt_cache_dirs``)."""

    name = "onnxruntime-trt-fp16"
    onnx_reference = False
    precision = "fp16"
    description = ("ONNX Runtime, TensorRT execution provider in FP16 (CUDA EP for the nodes "
                   "TensorRT does not take; engine and timing caches)")
    cli_options = ()      # --ort-threads and --ort-allow-cpu-fallback come with onnxruntime

    def _providers(self, options: dict | None) -> list[str]:
        return [TRT_EP, CUDA_EP]


# The INT8 family's options (edgebench.data.calibration says where the images come from).
INT8_OPTIONS = (
    ("--int8-calib-images", {"type": int, "default": None, "metavar": "N",
                             "help": "INT8 calibration images. Default: the profile's "
                                     "(quick 128, smoke 16, paper 500) or as many as there are. "
                                     "They never overlap the evaluated images: from "
                                     "--int8-calib-data, else the images of --data this run does "
                                     "not evaluate, else the bundled datasets/calibration/"}),
    ("--int8-calib-method", {"choices": list(CALIB_METHODS), "default": None,
                             "help": f"INT8 calibration method (default {DEFAULT_CALIB_METHOD}: "
                                     "TensorRT's own calibrator and Model Optimizer's default)"}),
    ("--int8-calib-data", {"default": None, "metavar": "PATH",
                           "help": "a folder of calibration images (any layout), e.g. MLPerf's "
                                   "calibration list from ImageNet train; needed with "
                                   "--profile paper --data, which evaluates every image"}),
    ("--int8-form", {"choices": ["tensorrt", "cpu"], "default": None,
                     "help": "onnxruntime-int8 only: the QDQ model it runs. cpu (default): "
                             "ONNX Runtime's CPU form (uint8 activations with a zero point, "
                             "Relu/Clip folded into QLinearConv), the fast one on ORT's CPU "
                             "provider; tensorrt: the symmetric INT8 form the TensorRT INT8 "
                             "variants always run, from the same calibration (docs/int8.md)"}),
    ("--int8-both-forms", {"action": "store_true",
                           "help": "onnxruntime-int8's layers task also profiles the other INT8 "
                                   "form of the same calibration beside its own (one more "
                                   "quantization of the model, then cached), "
                                   "with that form's p50 timed in the cell: why one form is "
                                   "slower, node by node (docs/layers.md)"}),
    ("--int8-layer-drift", {"action": "store_true",
                            "help": "compute the per-layer drift table (which layers' outputs "
                                    "drift most from FP32) in every INT8 parity cell. Default: "
                                    "only for a model that fails INT8 parity or MLPerf's 99%% "
                                    "rule"}),
    ("--int8-exclude", {"nargs": "+", "default": None, "metavar": "NODE",
                        "help": "ONNX node names kept in FP32 (the report's per-layer drift table "
                                "names the candidates); 'none' also drops the default rules "
                                "(few-channel and small depthwise convolutions stay FP32)"}),
)


CPU_INT8_FORM = "cpu"      # docs/int8.md#speed-on-the-cpu-two-forms-of-one-calibration


@register
class OnnxRuntimeInt8(Calibrated, OnnxRuntimeConverter):
    """The calibrated QDQ model (``quantize.qdq_model``) on ONNX Runtime's CPU provider, whose
    QLinearConv/QGemm kernels are real INT8 (VNNI, AMX or AVX2 on x86; ARM's dot-product
    instructions on aarch64)."""

    name = "onnxruntime-int8"
    onnx_reference = False
    precision = "int8"
    description = ("ONNX Runtime INT8 on the CPU: the calibrated QDQ model in ONNX Runtime's "
                   "CPU form (uint8 activations, per-channel INT8 weights) made from the ONNX "
                   "export")
    cli_options = INT8_OPTIONS
    compares_with = "onnxruntime"
    # Opt-in: calibration and four more cells per model would take the default run past its
    # 15.3 min cold / 8.2 min warm on 2 cores (docs/int8.md#speed-on-the-cpu-two-forms-of-one-calibration).
    in_default_run = False

    def _providers(self, options: dict | None) -> list[str]:
        return [CPU_EP]

    def convert(self, spec: ModelSpec, cache: Path) -> Artifact:
        # ORT's CPU provider runs its own form fastest; the TensorRT variants keep theirs
        art = qdq_model(spec, cache, spec.options.get("int8_form") or CPU_INT8_FORM)
        art.variant = self.name
        return art

    def diagnose(self, artifact: Artifact, spec: ModelSpec, images) -> dict | None:
        from .quantize_debug import layer_drift

        fp32 = artifact.meta.get("int8", {}).get("fp32_onnx")
        return layer_drift(fp32, artifact.path, images) if fp32 and artifact.path else None

    def profile_layers(self, artifact: Artifact, spec: ModelSpec, predictor, batch, runs: int):
        """Its own form's profile; with --int8-both-forms the other form's from the same
        calibration beside it (with that form's p50, timed here unprofiled): why one form is
        slower, node by node."""
        from .layers import other_form_profile

        own = super().profile_layers(artifact, spec, predictor, batch, runs)
        form = artifact.meta.get("int8", {}).get("form", CPU_INT8_FORM)
        own["form"] = form
        if not spec.options.get("int8_both_forms"):
            return own
        other = "tensorrt" if form == "cpu" else "cpu"
        cache = Path(artifact.path).parent.parent            # <cache>/int8/<model>.qdq.onnx
        art = qdq_model(spec, cache, other)
        own["other_forms"] = {other: other_form_profile(
            lambda: self.load(art, spec),
            lambda: OnnxRuntimeConverter.profile_layers(self, art, spec, None, batch, runs),
            batch, runs)}
        return own


@register
class OnnxRuntimeTensorRTInt8(Calibrated, OnnxRuntimeTensorRT):
    """ONNX Runtime's TensorRT EP on the same QDQ model: INT8 where the Q/DQ nodes say,
    FP16 elsewhere (CUDA EP for the nodes TensorRT does not take)."""

    name = "onnxruntime-trt-int8"
    precision = "int8"
    description = ("ONNX Runtime, TensorRT execution provider in INT8 on the calibrated QDQ "
                   "model (FP16 for unquantized layers)")
    compares_with = "onnxruntime-trt-fp16"
    in_default_run = False

    def convert(self, spec: ModelSpec, cache: Path) -> Artifact:
        art = qdq_model(spec, cache)
        art.variant = self.name
        return art

    def diagnose(self, artifact: Artifact, spec: ModelSpec, images) -> dict | None:
        from .quantize_debug import layer_drift

        fp32 = artifact.meta.get("int8", {}).get("fp32_onnx")
        return layer_drift(fp32, artifact.path, images) if fp32 and artifact.path else None
