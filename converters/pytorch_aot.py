"""AOTInductor: the model exported once (``torch.export``, dynamic batch), compiled by
inductor into a ``.pt2`` package (kernels + a C++ wrapper), and loaded by every cell.

What it measures differs from ``pytorch-compile`` (torch.compile, JIT), so it is a variant of
its own rather than a cache for that one:
- no Python in the call path: the package's C++ wrapper launches the kernels, where the JIT
  variant runs dynamo's guards and inductor's Python wrapper on every call (on the 2-core
  reference machine mobilenetv2 at batch 1 ran 6.9 ms here against 7.9 ms JIT:
  experiments/FINDINGS.md#aotinductor-against-torchcompile);
- one graph for every batch size (a symbolic batch dimension), where the JIT variant
  specialises batch 1 and recompiles for a dynamic batch on the next size;
- compiled once per model, weights and torch version, on the first cell that needs it (its
  ``convert_s``); later cells and later runs load the package (``load_s``, cached).

Opt-in (``--variants pytorch-aot``): a package's compile (34.5 s for mobilenetv2 on the 2-core
reference machine) comes on top of the JIT variant's, and the default run has no time for it.
"""
from __future__ import annotations

import os
import time
from pathlib import Path

from edgebench.cache_integrity import reuse, seal

from . import register
from .base import Artifact, ModelSpec, Predictor
from .pytorch import PyTorchEager, TorchPredictor, _device, strict_fp32


def package_path(spec: ModelSpec, cache: Path, max_batch: int) -> Path:
    import torch

    device = _device(spec.options)
    key = spec.key("aoti", torch.__version__, device, max_batch)
    return Path(cache) / "pytorch-aot" / f"{spec.slug}-{key}.pt2"


def compile_package(spec: ModelSpec, path: Path, max_batch: int) -> dict:
    """Export with a symbolic batch in [1, max_batch] and compile into ``path``: timings."""
    import torch

    device = _device(spec.options)
    model = spec.build().to(device)
    # An example batch of 2: torch.export specialises a dimension whose example is 0 or 1.
    x = torch.randn(2, *spec.input_size, device=device)
    batch = torch.export.Dim("batch", min=1, max=max(2, max_batch))
    t0 = time.perf_counter()
    with torch.inference_mode():
        exported = torch.export.export(model, (x,), dynamic_shapes={"x": {0: batch}})
    t1 = time.perf_counter()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".part.pt2")
    torch._inductor.aoti_compile_and_package(exported, package_path=str(tmp))
    t2 = time.perf_counter()
    os.replace(tmp, path)
    seal(path)
    return {"export_s": round(t1 - t0, 3), "compile_s": round(t2 - t1, 3)}


@register
class PyTorchAOT(PyTorchEager):
    name = "pytorch-aot"
    description = ("AOTInductor (torch.export + aoti_compile_and_package), FP32: compiled once "
                   "per model into a .pt2 package with a C++ wrapper, dynamic batch")
    in_default_run = False
    preload = ("torch", "torch._inductor", "torch.export")

    def worker_env(self, options: dict, cache_dir: str) -> dict:
        # Inductor's own caches (kernels, autotuning) beside the packages.
        return {"TORCHINDUCTOR_CACHE_DIR": str(Path(cache_dir).resolve() / "inductor")}

    def available(self, options=None):
        base = super().available(options)
        if not base.ok:
            return base
        try:
            import torch._inductor
            torch._inductor.aoti_load_package  # noqa: B018 - the API this variant needs
        except (ImportError, AttributeError) as e:
            return type(base).no(f"AOTInductor unavailable in this torch: {e}")
        return base

    def convert(self, spec: ModelSpec, cache: Path) -> Artifact:
        fp32 = strict_fp32(_device(spec.options))
        max_batch = int(spec.options.get("max_batch") or 16)
        path = package_path(spec, cache, max_batch)
        meta = {**fp32, "max_batch": max_batch, "backend": "inductor (AOT)",
                "package": path.name}
        hit, rebuilt = reuse(path, executed=True,
                             read=lambda: Artifact(self.name, path=str(path), cached=True, meta=meta))
        if hit:
            return hit
        t = time.perf_counter()
        meta.update(compile_package(spec, path, max_batch))
        if rebuilt:
            meta["cache_rebuilt"] = rebuilt
        return Artifact(self.name, path=str(path), convert_s=time.perf_counter() - t, meta=meta)

    def load(self, artifact: Artifact, spec: ModelSpec) -> Predictor:
        import torch

        device = _device(spec.options)
        runner = torch._inductor.aoti_load_package(artifact.path)
        return TorchPredictor(runner, device, {"torch_threads": torch.get_num_threads(),
                                               "batch_range": [1, artifact.meta["max_batch"]]})
