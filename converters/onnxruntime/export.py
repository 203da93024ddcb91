"""The shared ONNX export: the model as an .onnx file with a dynamic batch dimension
(``export_onnx``), used by the ONNX Runtime variants, TensorRT (``tensorrt-fp16``) and TVM's
importer. torch.onnx.export with the current (dynamo) exporter, the legacy TorchScript exporter
where a model needs it (the record says which); graph input and output renamed to
``INPUT_NAME``/``OUTPUT_NAME`` (``_fix_names``). Cached under ``<cache>/onnx/`` by content hash
of model, weights, opset and torch version, and sealed (``edgebench.cache_integrity``). Imports
torch and onnx only when it runs.
"""
from __future__ import annotations

import os
import time
from pathlib import Path

from converters.base import Artifact, ModelSpec
from edgebench.cache_integrity import reuse, seal

OPSET = 18
INPUT_NAME, OUTPUT_NAME = "input", "logits"


def export_onnx(spec: ModelSpec, cache: Path, opset: int = OPSET) -> Artifact:
    """The model as an .onnx file with a dynamic batch dimension, cached by content hash.
    A model handed over as an ONNX file is its own export (``spec.onnx_path``: its canonical
    form, edgebench.models.onnx_file), used as it is."""
    if spec.from_onnx:
        if not spec.onnx_path or not os.path.isfile(spec.onnx_path):
            raise RuntimeError(f"{spec.name}: its canonical ONNX file is missing "
                               f"({spec.onnx_path or 'not prepared'})")
        return Artifact("onnx", path=spec.onnx_path, cached=True,
                        meta={"exporter": "none: the model is an ONNX file",
                              "onnx_sha256": spec.fingerprint})
    import torch

    key = spec.key("onnx", opset, torch.__version__)
    folder = Path(cache) / "onnx"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{spec.slug}-{key}.onnx"
    meta_path = path.with_suffix(".exporter")
    # A parser reads it (no code runs from it): checked by hash when its stamp changed.
    hit, rebuilt = reuse(path, executed=False, also=[meta_path], read=lambda: Artifact(
        "onnx", path=str(path), cached=True,
        meta={"exporter": meta_path.read_text(encoding="utf-8").strip(), "opset": opset}))
    if hit:
        return hit
    model = spec.build()
    x = torch.randn(2, *spec.input_size)
    outputs = output_names(spec)
    tmp = path.with_suffix(".part.onnx")
    t = time.perf_counter()
    errors = []
    exporter = None
    try:
        batch = torch.export.Dim("batch", min=1, max=4096)
        torch.onnx.export(model, (x,), str(tmp), dynamo=True, opset_version=opset,
                          input_names=[INPUT_NAME], output_names=outputs,
                          # positional: the forward's argument may have any name
                          dynamic_shapes=({0: batch},), external_data=False,
                          optimize=True, verbose=False)
        exporter = f"dynamo (torch {torch.__version__})"
    except Exception as e:  # noqa: BLE001 - fall back to the legacy exporter
        errors.append(f"dynamo exporter: {type(e).__name__}: {str(e).splitlines()[0][:300]}")
        try:
            torch.onnx.export(model, (x,), str(tmp), dynamo=False, opset_version=opset,
                              input_names=[INPUT_NAME], output_names=outputs,
                              dynamic_axes={n: {0: "batch"} for n in [INPUT_NAME, *outputs]})
            exporter = f"legacy torchscript (torch {torch.__version__})"
        except Exception as e2:  # noqa: BLE001
            errors.append(f"legacy exporter: {type(e2).__name__}: {str(e2).splitlines()[0][:300]}")
            raise RuntimeError("ONNX export failed: " + " | ".join(errors)) from e2
    convert_s = time.perf_counter() - t
    _fix_names(tmp)
    os.replace(tmp, path)
    seal(path)
    meta_path.write_text(exporter + "\n", encoding="utf-8")
    meta = {"exporter": exporter, "opset": opset, "export_s": round(convert_s, 3)}
    if rebuilt:
        meta["cache_rebuilt"] = rebuilt
    if errors:
        meta["exporter_fallback_reason"] = errors[0]
    return Artifact("onnx", path=str(path), convert_s=convert_s, meta=meta)


def output_names(spec: ModelSpec) -> list[str]:
    """The export's output names: ``OUTPUT_NAME`` for a classifier's one output; a model of
    several outputs keeps its own (``spec.outputs``, from edgebench.models.describe)."""
    if len(spec.outputs) <= 1:
        return [OUTPUT_NAME]
    return [n.replace(".", "_") for n in spec.outputs]


def _fix_names(path: Path) -> None:
    """The dynamo exporter may name the graph input after the forward() argument; the rest of
    the suite addresses it as INPUT_NAME/OUTPUT_NAME."""
    import onnx

    m = onnx.load(str(path))
    renames = {}
    if m.graph.input[0].name != INPUT_NAME:
        renames[m.graph.input[0].name] = INPUT_NAME
    if len(m.graph.output) == 1 and m.graph.output[0].name != OUTPUT_NAME:
        renames[m.graph.output[0].name] = OUTPUT_NAME
    if not renames:
        return
    for vi in list(m.graph.input) + list(m.graph.output):
        vi.name = renames.get(vi.name, vi.name)
    for node in m.graph.node:
        node.input[:] = [renames.get(n, n) for n in node.input]
        node.output[:] = [renames.get(n, n) for n in node.output]
    onnx.save(m, str(path))
