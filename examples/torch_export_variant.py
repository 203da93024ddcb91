"""A complete runtime variant in one file: the model captured with ``torch.export`` and run
as the exported ATen graph (FP32, CPU), saved as a .pt2 file and cached.

It is the worked example of docs/adding-a-variant.md, and tests/test_adding_a_variant.py
runs it through ``python -m edgebench.full`` end to end. To use it without moving it:

    EDGEBENCH_VARIANT_MODULES=examples.torch_export_variant \\
        python -m edgebench.full --models squeezenet1_1 --variants pytorch torch-export

To make it a built-in variant, move it to converters/ (the registry finds it there).
"""
from __future__ import annotations

import os
import time
from pathlib import Path

import numpy as np

from converters import register
from converters.base import Artifact, Availability, Converter, ModelSpec, OutOfMemory, Predictor


class ExportedPredictor(Predictor):
    """Host NCHW float32 in, host logits out: the timing boundary every variant keeps."""

    def __init__(self, module):
        import torch

        self.torch, self.module = torch, module

    def __call__(self, batch: np.ndarray) -> np.ndarray:
        try:
            with self.torch.inference_mode():
                return self.module(self.torch.from_numpy(batch)).numpy()
        except MemoryError as e:          # lets the throughput search step down
            raise OutOfMemory(str(e)) from e


@register
class TorchExport(Converter):
    name = "torch-export"
    precision = "fp32"                 # parity holds it to the FP32 thresholds
    description = "torch.export (ATen graph run as an FX module), FP32, CPU"
    # Options become flags of python -m edgebench.full and reach spec.options by dest name.
    cli_options = (
        ("--export-max-batch", {"type": int, "default": 64, "metavar": "N",
                                "help": "torch-export: largest batch the exported graph accepts "
                                        "(default 64)"}),
    )

    def available(self, options=None) -> Availability:
        try:
            import torch
        except ImportError as e:
            return Availability.no(f"torch is not importable: {e}")
        return Availability.yes(torch=torch.__version__)

    def convert(self, spec: ModelSpec, cache: Path) -> Artifact:
        import torch

        max_batch = int(spec.options.get("export_max_batch") or 64)
        path = Path(cache) / "torch-export" / \
            f"{spec.name}-{spec.key('torch-export', torch.__version__, max_batch)}.pt2"
        meta = {"max_batch": max_batch, "torch": torch.__version__}   # lands in every record
        if path.is_file():             # cached by content hash: later cells only load it
            return Artifact(self.name, path=str(path), cached=True, meta=meta)
        t = time.perf_counter()
        batch = torch.export.Dim("batch", min=1, max=max_batch)
        example = (torch.zeros(2, *spec.input_size),)
        program = torch.export.export(spec.build(), example, dynamic_shapes=({0: batch},))
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}")
        torch.export.save(program, tmp)
        os.replace(tmp, path)          # a killed conversion leaves no half-written artifact
        return Artifact(self.name, path=str(path), convert_s=time.perf_counter() - t, meta=meta)

    def load(self, artifact: Artifact, spec: ModelSpec) -> Predictor:
        import torch

        return ExportedPredictor(torch.export.load(artifact.path).module())
