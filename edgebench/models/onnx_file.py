"""A model handed over as an ONNX file: ``--models path/to/model.onnx``.

The variants that start from ONNX run it as it is; those that need the source model
(PyTorch eager, torch.compile, AOTInductor, JAX) are skipped with that reason. Parity is
judged against ONNX Runtime's CPU provider in FP32.

The file must have one image input of floats, NCHW (rank 4). Its dynamic dimensions are
fixed from ``--input-size`` (channels, height, width) and the batch sizes the run calls; a
static batch dimension stays what it is, and the run keeps to that batch size.

``canonical`` writes the form every variant reads, cached by the file's sha256: the input
renamed to the suite's ``input``, the channel and spatial dimensions fixed, a single output
renamed ``logits``. Nothing else of the graph changes.
"""
from __future__ import annotations

from pathlib import Path

from .errors import ModelError

FLOAT = 1                 # onnx.TensorProto.FLOAT
INPUT_NAME, OUTPUT_NAME = "input", "logits"   # converters.onnxruntime.export's names
WEIGHTS = "onnx-file"     # the weights field: the file's own initializers


def is_onnx(name: str) -> bool:
    return name.lower().endswith(".onnx")


def check_path(path: str) -> Path:
    p = Path(path).expanduser()
    if not p.exists():
        raise ModelError(f"--models {path}: no such ONNX file")
    if p.is_dir():
        raise ModelError(f"--models {path}: is a folder, not an ONNX file")
    return p


def _load(path: str):
    import onnx

    p = check_path(path)
    try:
        model = onnx.load(str(p))
    except Exception as e:  # noqa: BLE001 - a protobuf error, a truncated file, ...
        raise ModelError(f"--models {path}: not a readable ONNX model ({type(e).__name__}: "
                         f"{(str(e).strip().splitlines() or [''])[0][:200]})") from None
    if not model.graph.node:
        raise ModelError(f"--models {path}: not a readable ONNX model (no graph nodes)")
    return model


def _dims(value_info) -> list:
    """A tensor's dimensions: an int where static, the symbol's name (or None) where not."""
    out = []
    for d in value_info.type.tensor_type.shape.dim:
        if d.HasField("dim_value") and d.dim_value > 0:
            out.append(int(d.dim_value))
        else:
            out.append(d.dim_param or None)
    return out


def inspect(path: str, input_size: tuple | None = None) -> dict:
    """What the file holds and how it will be run, or ModelError naming what is wrong:
    input name and dims, the (C, H, W) it runs at, a static batch size (or None), outputs."""
    model = _load(path)
    inits = {i.name for i in model.graph.initializer}
    inputs = [i for i in model.graph.input if i.name not in inits]
    if len(inputs) != 1:
        names = ", ".join(i.name for i in inputs) or "none"
        raise ModelError(f"--models {path}: {len(inputs)} inputs ({names}); edgebench runs "
                         "models with one image input")
    inp = inputs[0]
    etype = inp.type.tensor_type.elem_type
    if etype != FLOAT:
        import onnx

        tname = onnx.TensorProto.DataType.Name(etype) if etype else "not a tensor"
        raise ModelError(f"--models {path}: input '{inp.name}' is {tname}; edgebench feeds "
                         "float32 NCHW images (export the model with a float input)")
    dims = _dims(inp)
    if len(dims) != 4:
        raise ModelError(f"--models {path}: input '{inp.name}' has rank {len(dims)} "
                         f"({dims}); edgebench feeds NCHW images (rank 4)")
    static = tuple(d if isinstance(d, int) else None for d in dims[1:])
    if input_size is not None:
        clash = [f"{n} {s} (given {g})" for n, s, g in zip("CHW", static, input_size)
                 if s is not None and s != g]
        if clash:
            raise ModelError(f"--input-size {'x'.join(map(str, input_size))}: the ONNX file's "
                             f"input is fixed at {', '.join(clash)}")
        size = tuple(input_size)
    else:
        from .args import IMAGENET_DEFAULTS

        size = tuple(s if s is not None else d
                     for s, d in zip(static, IMAGENET_DEFAULTS["input_size"]))
    outputs = [{"name": o.name, "shape": _dims(o)} for o in model.graph.output]
    opset = max((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")),
                default=None)
    return {"input_name": inp.name, "input_dims": dims, "input_size": list(size),
            "size_given": input_size is not None or None not in static,
            "static_batch": dims[0] if isinstance(dims[0], int) else None,
            "outputs": outputs, "opset": opset, "ir_version": int(model.ir_version)}


def _fixed(model, facts: dict):
    """The model with the suite's input/output names and its C, H, W fixed."""
    inp_name = facts["input_name"]
    renames = {inp_name: INPUT_NAME} if inp_name != INPUT_NAME else {}
    if len(model.graph.output) == 1 and model.graph.output[0].name != OUTPUT_NAME:
        renames[model.graph.output[0].name] = OUTPUT_NAME
    for vi in list(model.graph.input) + list(model.graph.output):
        vi.name = renames.get(vi.name, vi.name)
    for node in model.graph.node:
        node.input[:] = [renames.get(n, n) for n in node.input]
        node.output[:] = [renames.get(n, n) for n in node.output]
    inp = next(i for i in model.graph.input if i.name == INPUT_NAME)
    dims = inp.type.tensor_type.shape.dim
    if not (dims[0].HasField("dim_value") and dims[0].dim_value > 0):
        dims[0].Clear()
        dims[0].dim_param = "batch"
    for d, v in zip(list(dims)[1:], facts["input_size"]):
        d.Clear()
        d.dim_value = int(v)
    return model


def canonical_bytes(path: str, facts: dict) -> bytes:
    return _fixed(_load(path), facts).SerializeToString()


def try_run(path: str, facts: dict) -> list[dict]:
    """Run the fixed model once on ONNX Runtime's CPU provider at its batch size (1 unless
    static) and return each output's name and shape. ModelError with ORT's own message
    where the model rejects the input."""
    import numpy as np
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.log_severity_level = 3
    try:
        sess = ort.InferenceSession(canonical_bytes(path, facts), so,
                                    providers=["CPUExecutionProvider"])
        b = facts["static_batch"] or 1
        outs = sess.run(None, {INPUT_NAME: np.zeros((b, *facts["input_size"]), np.float32)})
    except ModelError:
        raise
    except Exception as e:  # noqa: BLE001 - ORT's message is the user's answer
        size = "x".join(map(str, facts["input_size"]))
        raise ModelError(f"--models {path}: ONNX Runtime cannot run it at input {size}: "
                         f"{(str(e).strip().splitlines() or [''])[0][:300]}") from None
    return [{"name": o.name, "shape": list(np.shape(v))}
            for o, v in zip(sess.get_outputs(), outs)]


def canonical(path: str, facts: dict, cache: Path) -> str:
    """The canonical file under ``<cache>/onnx/`` (written once per sha256 and size)."""
    import os

    from edgebench.util import sha256_file

    sha = facts.get("sha256") or sha256_file(path)
    size = "x".join(map(str, facts["input_size"]))
    out = Path(cache) / "onnx" / f"{Path(path).stem}-{sha[:16]}-{size}.user.onnx"
    if not out.is_file():
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = out.with_suffix(".part")
        tmp.write_bytes(canonical_bytes(path, facts))
        os.replace(tmp, out)
    return str(out)
