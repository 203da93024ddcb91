"""Model import: a torch module -> a Relax IRModule with the weights bound as constants.

torch.export + ``relax.frontend.torch.from_exported_program`` first; the ONNX importer (the
suite's shared ONNX export when a spec and cache are given) where that fails."""
from __future__ import annotations

from pathlib import Path

from edgebench.util import first_line

from .errors import TvmError

INPUT_NAME = "input"


def import_model(model, input_shape: tuple, importer: str = "auto", spec=None, cache=None):
    """torch module -> (Relax IRModule with weights bound, importer used, fallback note).

    ``importer``: ``auto`` (torch.export, then ONNX), ``torch.export`` or ``onnx``."""
    import torch

    errors = []
    if importer not in ("auto", "torch.export", "onnx"):
        raise TvmError(f"tvm_importer must be auto, torch.export or onnx (got '{importer}')")
    if spec is not None and spec.from_onnx:
        # A model handed over as an ONNX file: no torch module, its ONNX is the source.
        try:
            return _import_onnx(None, input_shape, spec, cache), "onnx", None
        except Exception as e:  # noqa: BLE001
            raise TvmError(f"TVM import failed: onnx importer: {first_line(e)}") from e
    if importer in ("auto", "torch.export"):
        try:
            from tvm.relax.frontend.torch import from_exported_program

            x = torch.randn(*input_shape)
            with torch.no_grad():
                ep = torch.export.export(model, (x,))
            mod = from_exported_program(ep, keep_params_as_input=False,
                                        unwrap_unit_return_tuple=True)
            return mod, "torch.export", None
        except Exception as e:  # noqa: BLE001 - fall back to ONNX below
            errors.append(f"torch.export importer: {first_line(e)}")
            if importer == "torch.export":
                raise TvmError("TVM import failed: " + errors[0]) from e
    try:
        mod = _import_onnx(model, input_shape, spec, cache)
        return mod, "onnx", (errors[0] if errors else None)
    except Exception as e:  # noqa: BLE001
        errors.append(f"onnx importer: {first_line(e)}")
        raise TvmError("TVM import failed: " + " | ".join(errors)) from e


def _import_onnx(model, input_shape, spec=None, cache=None):
    import onnx
    from tvm.relax.frontend.onnx import from_onnx

    if spec is not None and cache is not None:
        # The suite's shared ONNX export (dynamic batch, cached); the shape is fixed below.
        from converters.onnxruntime import INPUT_NAME as ORT_INPUT, export_onnx

        art = export_onnx(spec, Path(cache))
        proto = onnx.load(art.path)
        name = ORT_INPUT
    else:
        import io

        import torch

        buf = io.BytesIO()
        torch.onnx.export(model, (torch.randn(*input_shape),), buf, dynamo=False,
                          opset_version=18, input_names=[INPUT_NAME], output_names=["logits"])
        proto = onnx.load_from_string(buf.getvalue())
        name = INPUT_NAME
    return from_onnx(proto, shape_dict={name: list(input_shape)}, keep_params_in_input=False)
