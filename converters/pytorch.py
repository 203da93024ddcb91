"""PyTorch eager (the FP32 reference) and torch.compile (inductor)."""
from __future__ import annotations

import os
import time
from pathlib import Path

import numpy as np

from . import register
from .base import Artifact, Availability, Converter, ModelSpec, OutOfMemory, Predictor, host_outputs


def _device(options: dict | None) -> str:
    return (options or {}).get("torch_device") or "cpu"


def strict_fp32(device: str) -> dict:
    """On CUDA, turn TF32 off so the FP32 variants compute in FP32. PyTorch runs cuDNN
    convolutions in TF32 by default (``torch.backends.cudnn.allow_tf32`` is True, 10-bit
    mantissa): on an H100 that put mobilenetv2 0.0084 (compiled) and 0.0079 (eager) away
    from the CPU reference, 8x the FP32 parity budget (results/reference-runs/
    2026-11-23-h100: 1-before-fixes, tf32-check.txt). Returns what was set, for the records."""
    import torch

    if not device.startswith("cuda"):
        return {}
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    return {"tf32": False, "note_tf32": "cudnn.allow_tf32 and cuda.matmul.allow_tf32 set False: "
                                        "FP32 variants compute in FP32 on the GPU"}


class TorchPredictor(Predictor):
    def __init__(self, module, device: str, meta: dict):
        import torch

        self.torch = torch
        self.module = module
        self.device = torch.device(device)
        self.cuda = self.device.type == "cuda"
        self.meta = meta

    def __call__(self, batch: np.ndarray) -> np.ndarray:
        torch = self.torch
        try:
            with torch.inference_mode():
                x = torch.from_numpy(batch).to(self.device, non_blocking=False)
                y = self.module(x)
                # .cpu() synchronises a CUDA stream; several outputs come back as a tuple
                out = host_outputs(y, lambda t: t.float().cpu().numpy())
        except torch.OutOfMemoryError as e:
            raise OutOfMemory(str(e)) from e
        return out

    def profile_layers(self, batch: np.ndarray, runs: int) -> dict:
        from .torch_layers import profile

        return profile(self, batch, runs)

    def close(self) -> None:
        if self.cuda:
            self.torch.cuda.empty_cache()


@register
class PyTorchEager(Converter):
    name = "pytorch"
    precision = "fp32"
    description = "PyTorch eager, FP32 (the reference every variant is compared with)"
    preload = ("torch",)
    cli_options = (
        ("--torch-device", {"default": "auto", "metavar": "auto|cpu|cuda[:N]",
                            "help": "device for the PyTorch variants: auto (default: cuda when "
                                    "torch sees a GPU, else cpu), cpu or cuda. The parity "
                                    "reference is always CPU FP32"}),
    )

    def settle_options(self, options: dict) -> dict:
        # Asked in the probe, i.e. in the interpreter the PyTorch variants run in.
        if _device(options) != "auto":
            return {}
        import torch

        return {"torch_device": "cuda" if torch.cuda.is_available() else "cpu"}

    def compute_device(self, options: dict) -> str:
        return _device(options).split(":")[0]

    def reference_predictor(self, spec: ModelSpec) -> Predictor:
        return TorchPredictor(spec.build(), "cpu", {})

    def available(self, options=None) -> Availability:
        import torch

        dev = _device(options)
        if dev.startswith("cuda") and not torch.cuda.is_available():
            return Availability.no(f"--torch-device {dev}: torch.cuda.is_available() is False",
                                   torch=torch.__version__)
        return Availability.yes(**self.versions())

    def versions(self) -> dict:
        import torch

        return {"torch": torch.__version__, "torch_cuda": torch.version.cuda,
                "torch_threads": torch.get_num_threads()}

    def convert(self, spec: ModelSpec, cache: Path) -> Artifact:
        # Before anything runs on the GPU; convert and load share the worker process.
        fp32 = strict_fp32(_device(spec.options))
        t = time.perf_counter()
        module = spec.build().to(_device(spec.options))
        return Artifact(self.name, obj=module, convert_s=time.perf_counter() - t,
                        meta={"build_s": round(time.perf_counter() - t, 3), **fp32})

    def load(self, artifact: Artifact, spec: ModelSpec) -> Predictor:
        import torch

        return TorchPredictor(artifact.obj, _device(spec.options),
                              {"torch_threads": torch.get_num_threads()})


@register
class PyTorchCompile(PyTorchEager):
    name = "pytorch-compile"
    description = "torch.compile (inductor backend), FP32"
    # inductor's import (~1.5 s) starts no thread or worker pool: those start at compile time
    preload = ("torch", "torch._inductor", "torch._dynamo")
    compiles_in_process = True

    def worker_env(self, options: dict, cache_dir: str) -> dict:
        # Inductor's FX-graph and AOTAutograd caches live with the run's other artifacts: the
        # first cell of a model compiles, later cells (and later runs) read the kernels back.
        # An environment variable, as inductor fixes its folder when it is first imported.
        # Inductor's compile-worker pool stays on (one worker per core: the C++ kernels compile
        # in parallel; with one compile thread mobilenetv2's first graph took 33.8 s, with the
        # pool 26.5 s); the model branch shuts it down before it forks cells (before_fork).
        return {"TORCHINDUCTOR_CACHE_DIR": str(Path(cache_dir).resolve() / "inductor")}

    def before_fork(self) -> None:
        # The pool's worker processes and its reader thread do not survive fork, and idle
        # workers would hold memory while the cells measure.
        from torch._inductor.async_compile import shutdown_compile_workers

        shutdown_compile_workers()

    def after_fork(self) -> None:
        # A graph a forked cell must still compile is compiled in the cell's own process,
        # not sent to a pool it does not have.
        import torch._inductor.config as inductor_config

        inductor_config.compile_threads = 1

    def available(self, options=None) -> Availability:
        base = super().available(options)
        if not base.ok:
            return base
        try:
            import torch._inductor  # noqa: F401 - the backend must import
        except Exception as e:  # noqa: BLE001
            return Availability.no(f"inductor unavailable: {e}")
        return base

    def convert(self, spec: ModelSpec, cache: Path) -> Artifact:
        """Compile time is the real work: torch.compile is lazy, so compile here with one
        batch-1 call and count that call as conversion."""
        import torch
        import torch._inductor.config as inductor_config
        from torch._dynamo.utils import counters

        art = super().convert(spec, cache)
        mode = spec.options.get("compile_mode", "default")
        before = dict(counters["inductor"])
        t = time.perf_counter()
        compiled = torch.compile(art.obj, backend="inductor", mode=None if mode == "default" else mode)
        # The first call goes through the predictor that measures later: a tensor made
        # outside inference mode carries another dispatch key set, and dynamo's guard on it
        # made the first measured batch-1 call compile the graph again (about 5 s for resnet152:
        # experiments/FINDINGS.md#torchcompiles-first-call-compiled-again).
        TorchPredictor(compiled, _device(spec.options), {})(
            np.zeros((1, *spec.input_size), dtype=np.float32))
        compile_s = time.perf_counter() - t
        hits, misses = (counters["inductor"][k] - before.get(k, 0)
                        for k in ("fxgraph_cache_hit", "fxgraph_cache_miss"))
        return Artifact(self.name, obj=compiled, convert_s=art.convert_s + compile_s,
                        cached=hits > 0 and misses == 0,
                        meta={**art.meta, "compile_s": round(compile_s, 3),
                              "compile_mode": mode, "backend": "inductor",
                              "inductor_cache": {"dir": os.environ.get("TORCHINDUCTOR_CACHE_DIR"),
                                                 "fxgraph_hits": hits, "fxgraph_misses": misses},
                              "compile_threads": inductor_config.compile_threads,
                              "note": "JIT (dynamo traces, inductor compiles on first call); "
                                      "on the CPU compiled once per model and run in a branch "
                                      "of the fork server, its cells forked from it "
                                      "(compiled_in); elsewhere each cell's process traces "
                                      "again, its kernels from inductor's cache"})
