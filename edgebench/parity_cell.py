"""The parity cell: a variant's outputs against the reference's on the same images.

The reference (``reference_variant``: the run's, PyTorch FP32 on the CPU; an ONNX file's own
graph on ONNX Runtime's CPU provider) computes each model's outputs once; they are cached
under what computed them (``reference_key``) so every variant is compared with the very same
reference. A model of several outputs is compared tensor by tensor (``metrics.parity``).
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np

from .cell import Cell


def reference_variant(cell: Cell) -> str:
    """What every variant of this model is judged against: the run's reference variant, or
    the one the model names (an ONNX file: ONNX Runtime's CPU provider, FP32)."""
    info = cell.inputs.model_info or {}
    return info.get("reference_variant") or cell.run.reference_variant


def reference_key(cell: Cell, spec, conv) -> str:
    """The cache key of a model's reference logits: the model and weights, the parity images,
    and what computed them: the reference variant, its libraries' versions and the machine's
    architecture. A reference kept from another torch (a venv upgraded between runs) or
    another machine sharing the cache folder would otherwise be compared with this run's
    variants as if this run had computed it."""
    import platform

    versions = {k: v for k, v in conv.versions().items()
                if not k.endswith("_threads")}     # a thread count changes the rounding only
    return spec.key("reference", Path(cell.inputs.data_folder).name, cell.inputs.parity_images,
                    reference_variant(cell), platform.machine(),
                    json.dumps(versions, sort_keys=True))


def reference_outputs(cell: Cell, spec, data, cache: Path) -> np.ndarray:
    """The reference variant's FP32 CPU logits for the parity images, computed once per
    model/data and cached, so every variant is compared with the very same reference."""
    import converters

    from .measure import run_all

    inp, prof = cell.inputs, cell.run.prof
    conv = converters.get(reference_variant(cell))
    path = cache / "reference" / f"{spec.slug}-{reference_key(cell, spec, conv)}.npy"
    several = path.with_suffix(".npz")          # a model of several outputs: one array each
    if path.is_file():
        return np.load(path)
    if several.is_file():
        with np.load(several) as z:
            return tuple(z[f"o{i}"] for i in range(len(z.files)))
    ref = conv.reference_predictor(spec)
    logits, _, _ = run_all(ref, data, prof["accuracy_batch"], inp.parity_images)
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(logits, tuple):
        np.savez(several.with_suffix(".part.npz"), **{f"o{i}": o for i, o in enumerate(logits)})
        os.replace(several.with_suffix(".part.npz"), several)
    else:
        np.save(path.with_suffix(".part.npy"), logits)
        os.replace(path.with_suffix(".part.npy"), path)
    ref.close()
    return logits


def run(cell: Cell, predictor, precision: str, spec, data, cache: Path):
    """The parity cell on a loaded predictor: (status, fields, reason)."""
    from . import metrics
    from .measure import budgeted_pass, pass_batch

    prof = cell.run.prof
    ref = reference_outputs(cell, spec, data, cache)
    out, _, _ = budgeted_pass(predictor, data, prof["accuracy_batch"],
                              cell.inputs.parity_images, budget_s=prof.get("pass_budget_s"))
    n_out, n_ref = _count(out), _count(ref)
    p = metrics.parity(_first(ref, n_out), out, spec.outputs)
    ok, why = metrics.parity_verdict(p, precision, cell.run.parity_thresholds)
    p["precision"] = precision
    p["criterion"] = why
    p["batch_size"] = pass_batch(predictor, prof["accuracy_batch"])
    if precision == "int8" and p.get("top1_agreement") is not None:
        p["int8_cost"] = metrics.int8_cost(ref, out, data.labels, *labels_real(cell))
    if not ok:
        return "failed", p, f"parity failed: {why}"
    if n_out < n_ref:
        return "partial", p, (f"{n_out} of {n_ref} images within the "
                              f"{prof['pass_budget_s']:g} s budget of this profile")
    return "ok", p, ""


def _count(outputs) -> int:
    """Images in a pass's output(s): one array, or a tuple of them (several outputs)."""
    return len(outputs[0] if isinstance(outputs, tuple) else outputs)


def _first(outputs, n: int):
    return tuple(o[:n] for o in outputs) if isinstance(outputs, tuple) else outputs[:n]


def labels_real(cell: Cell) -> tuple[bool, str]:
    """Can top-1 against the labels say anything here? Not with seeded random weights, and
    not on the bundled sample (its labels are our reading of 16 crops of 4 photos)."""
    inp = cell.inputs
    if str(inp.weights).startswith("random-seed-"):
        return False, f"random weights ({inp.weights}): top-1 against labels means nothing"
    if (inp.data_info or {}).get("source") == "sample":
        return False, "the bundled 16-image sample is not an accuracy benchmark"
    return True, ""
