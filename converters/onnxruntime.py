"""ONNX export (shared with TensorRT) and the ONNX Runtime variant.

Export: torch.onnx.export with the current (dynamo) exporter and a dynamic batch dimension,
the legacy TorchScript exporter where a model needs it; the record says which. Cached by
content hash of model, weights, opset and exporter version.

Session: the requested execution providers must really be in ``session.get_providers()``
(ORT silently falls back to CPU otherwise); a missing one makes the cell ``skipped``.
"""
from __future__ import annotations

import os
import time
from pathlib import Path

import numpy as np

from edgebench.util import physical_cores

from . import register
from .base import (Artifact, Availability, Converter, ModelSpec, OutOfMemory, Predictor,
                   SkipVariant)

OPSET = 18
INPUT_NAME, OUTPUT_NAME = "input", "logits"


def export_onnx(spec: ModelSpec, cache: Path, opset: int = OPSET) -> Artifact:
    """The model as an .onnx file with a dynamic batch dimension, cached by content hash."""
    import torch

    key = spec.key("onnx", opset, torch.__version__)
    folder = Path(cache) / "onnx"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{spec.name}-{key}.onnx"
    meta_path = path.with_suffix(".exporter")
    if path.is_file() and meta_path.is_file():
        return Artifact("onnx", path=str(path), cached=True,
                        meta={"exporter": meta_path.read_text().strip(), "opset": opset})
    model = spec.build()
    x = torch.randn(2, *spec.input_size)
    tmp = path.with_suffix(".part.onnx")
    t = time.perf_counter()
    errors = []
    exporter = None
    try:
        batch = torch.export.Dim("batch", min=1, max=4096)
        torch.onnx.export(model, (x,), str(tmp), dynamo=True, opset_version=opset,
                          input_names=[INPUT_NAME], output_names=[OUTPUT_NAME],
                          dynamic_shapes={"x": {0: batch}}, external_data=False,
                          optimize=True, verbose=False)
        exporter = f"dynamo (torch {torch.__version__})"
    except Exception as e:  # noqa: BLE001 - fall back to the legacy exporter
        errors.append(f"dynamo exporter: {type(e).__name__}: {str(e).splitlines()[0][:300]}")
        try:
            torch.onnx.export(model, (x,), str(tmp), dynamo=False, opset_version=opset,
                              input_names=[INPUT_NAME], output_names=[OUTPUT_NAME],
                              dynamic_axes={INPUT_NAME: {0: "batch"}, OUTPUT_NAME: {0: "batch"}})
            exporter = f"legacy torchscript (torch {torch.__version__})"
        except Exception as e2:  # noqa: BLE001
            errors.append(f"legacy exporter: {type(e2).__name__}: {str(e2).splitlines()[0][:300]}")
            raise RuntimeError("ONNX export failed: " + " | ".join(errors)) from e2
    convert_s = time.perf_counter() - t
    _fix_names(tmp)
    os.replace(tmp, path)
    meta_path.write_text(exporter + "\n")
    meta = {"exporter": exporter, "opset": opset, "export_s": round(convert_s, 3)}
    if errors:
        meta["exporter_fallback_reason"] = errors[0]
    return Artifact("onnx", path=str(path), convert_s=convert_s, meta=meta)


def _fix_names(path: Path) -> None:
    """The dynamo exporter may name the graph input after the forward() argument; the rest of
    the suite addresses it as INPUT_NAME/OUTPUT_NAME."""
    import onnx

    m = onnx.load(str(path))
    renames = {}
    if m.graph.input[0].name != INPUT_NAME:
        renames[m.graph.input[0].name] = INPUT_NAME
    if m.graph.output[0].name != OUTPUT_NAME:
        renames[m.graph.output[0].name] = OUTPUT_NAME
    if not renames:
        return
    for vi in list(m.graph.input) + list(m.graph.output):
        vi.name = renames.get(vi.name, vi.name)
    for node in m.graph.node:
        node.input[:] = [renames.get(n, n) for n in node.input]
        node.output[:] = [renames.get(n, n) for n in node.output]
    onnx.save(m, str(path))


def _requested(options: dict | None) -> list[str]:
    import onnxruntime as ort

    req = (options or {}).get("ort_providers")
    if req:
        return list(req)
    # Default: the best accelerator this build has, else CPU. The TensorRT EP is opt-in
    # (it builds engines on first use, which is its own variant's job).
    avail = ort.get_available_providers()
    return ["CUDAExecutionProvider", "CPUExecutionProvider"] if "CUDAExecutionProvider" in avail \
        else ["CPUExecutionProvider"]


def session_options(threads: int | None = None):
    """CPU inference as an expert sets it: every graph optimisation, one sequential stream,
    intra-op threads = physical cores (SMT siblings only contend for the same FMA units)."""
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.intra_op_num_threads = threads or physical_cores()
    so.inter_op_num_threads = 1
    return so


def describe_session_options(so) -> dict:
    """The options a session was made with, for run.json and every record."""
    return {"graph_optimization_level": so.graph_optimization_level.name,
            "execution_mode": so.execution_mode.name,
            "intra_op_num_threads": so.intra_op_num_threads,
            "inter_op_num_threads": so.inter_op_num_threads}


class OrtPredictor(Predictor):
    def __init__(self, sess, device: str, meta: dict):
        import onnxruntime as ort

        self.sess = sess
        self.ort = ort
        self.device = device               # "cpu" or "cuda"
        self.meta = meta
        self.out_names = [OUTPUT_NAME]
        if device == "cuda":
            self.binding = sess.io_binding()

    def __call__(self, batch: np.ndarray) -> np.ndarray:
        try:
            if self.device == "cpu":
                return self.sess.run(self.out_names, {INPUT_NAME: batch})[0]
            # GPU: the host->device copy, run and device->host copy all sit inside the call,
            # the same boundary as every other variant.
            b = self.binding
            b.clear_binding_inputs()
            b.clear_binding_outputs()
            x = self.ort.OrtValue.ortvalue_from_numpy(batch, "cuda", 0)
            b.bind_ortvalue_input(INPUT_NAME, x)
            b.bind_output(OUTPUT_NAME, "cpu")
            self.sess.run_with_iobinding(b)
            return b.copy_outputs_to_cpu()[0]
        except Exception as e:  # noqa: BLE001
            msg = str(e).lower()
            if "out of memory" in msg or "failed to allocate" in msg or "bad_alloc" in msg:
                raise OutOfMemory(str(e)) from e
            raise


@register
class OnnxRuntimeConverter(Converter):
    name = "onnxruntime"
    precision = "fp32"
    description = "ONNX Runtime (export via torch.onnx; CPU, CUDA or TensorRT execution provider)"
    cli_options = (
        ("--ort-providers", {"nargs": "+", "default": None, "metavar": "PROVIDER",
                             "help": "ONNX Runtime execution providers in priority order, e.g. "
                                     "CUDAExecutionProvider CPUExecutionProvider. Default: CUDA "
                                     "when this onnxruntime build has it, else CPU. A provider "
                                     "missing here makes the cell 'skipped'"}),
        ("--ort-threads", {"type": int, "default": None, "metavar": "N",
                           "help": "ONNX Runtime intra-op threads (default: physical cores)"}),
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
        req = _requested(options)
        missing = [p for p in req if p not in ort.get_available_providers()]
        if missing:
            return Availability.no(
                f"requested execution provider(s) {', '.join(missing)} not in this onnxruntime "
                f"build ({ort.__version__}, has: {', '.join(ort.get_available_providers())})",
                **self.versions())
        # Into run.json (variants.onnxruntime.versions): the session options cells will use.
        so = describe_session_options(session_options((options or {}).get("ort_threads")))
        return Availability.yes(**self.versions(), providers=req, session_options=so)

    def convert(self, spec: ModelSpec, cache: Path) -> Artifact:
        art = export_onnx(spec, cache)
        art.variant = self.name
        return art

    def load(self, artifact: Artifact, spec: ModelSpec) -> Predictor:
        import onnxruntime as ort

        req = _requested(spec.options)
        so = session_options(spec.options.get("ort_threads"))
        sess = ort.InferenceSession(artifact.path, sess_options=so, providers=req)
        got = sess.get_providers()
        if got[0] != req[0]:
            # ORT fell back silently: a CPU figure must not be labelled with another provider.
            raise SkipVariant(f"requested {req[0]} but the session runs on {', '.join(got)}")
        device = "cuda" if got[0] in ("CUDAExecutionProvider", "TensorrtExecutionProvider") else "cpu"
        meta = {"providers": got, **describe_session_options(so), "io_binding": device == "cuda",
                **artifact.meta}
        return OrtPredictor(sess, device, meta)
