"""The loaded TVM variant: the Relax VM on one compiled library per batch size."""
from __future__ import annotations

import numpy as np

from edgebench.util import ALIGNMENT

from ..base import OutOfMemory, Predictor


def vm_input(batch: np.ndarray, inp):
    """What the VM is called with: ``batch`` itself where TVM can read it in place (float32,
    C-contiguous, 64-byte aligned: the suite's batches are, ``edgebench.util.aligned_empty``),
    as ONNX Runtime reads a numpy input; else ``inp`` (the predictor's own buffer for this
    batch size) with ``batch`` copied in (one more pass over the image every call)."""
    if (batch.dtype == np.float32 and batch.flags.c_contiguous
            and batch.ctypes.data % ALIGNMENT == 0):
        import tvm

        return tvm.runtime.from_dlpack(batch)
    inp.copyfrom(np.ascontiguousarray(batch, dtype=np.float32))
    return inp


class TvmPredictor(Predictor):
    """Calls the Relax VM; one compiled library per batch size. ``conv`` (the TvmConverter)
    compiles a batch size on first use where ``ctx`` says how (None: an exported artifact,
    only its batch sizes)."""

    def __init__(self, conv, spec, dev, libs: dict, ctx, cache, meta):
        self.conv, self.spec, self.dev = conv, spec, dev
        self.ctx, self.cache = ctx, cache
        self.libs = {int(b): p for b, p in libs.items()}
        self.meta = meta
        # An exported artifact runs only the batch sizes it holds (the measurements adapt);
        # a build here compiles any other size on first use.
        self.batch_sizes = sorted(self.libs) if ctx is None else None
        self._vms: dict = {}
        for b in list(self.libs)[:1]:
            self._get(b)

    def _get(self, b: int):
        if b in self._vms:
            return self._vms[b]
        import tvm
        # The runtime's VM (relax.VirtualMachine is the same class): importing tvm.relax
        # needs the compiler library, which a device running an exported artifact may lack.
        from tvm.runtime.vm import VirtualMachine

        if b not in self.libs:
            if self.ctx is None:
                raise ValueError(f"this exported TVM artifact holds batch sizes "
                                 f"{sorted(self.libs)}; batch {b} was not exported")
            path, meta, _ = self.conv._compiled(self.spec, self.cache, b, self.ctx)
            self.libs[b] = str(path)
            if meta.get("cache_rebuilt"):   # the worker copies it into the record
                why = f"batch {b}: {meta['cache_rebuilt']}"
                prev = self.meta.get("cache_rebuilt")
                self.meta["cache_rebuilt"] = f"{prev}; {why}" if prev else why
        lib = tvm.runtime.load_module(str(self.libs[b]))
        vm = VirtualMachine(lib, self.dev)
        shape = (b, *self.spec.input_size)
        inp = tvm.runtime.empty(shape, "float32", self.dev)
        self._vms[b] = (vm, vm["main"], inp)
        return self._vms[b]

    def __call__(self, batch: np.ndarray) -> np.ndarray:
        try:
            vm, fn, inp = self._get(int(batch.shape[0]))
            out = fn(vm_input(batch, inp))
            if not hasattr(out, "numpy"):
                out = out[0]
            return out.numpy()
        except (MemoryError,) as e:
            raise OutOfMemory(str(e)) from e
        except Exception as e:  # noqa: BLE001
            msg = str(e)
            if any(s in msg for s in ("out of memory", "Out of memory", "OUT_OF_MEMORY",
                                      "cannot allocate", "Failed to allocate")):
                raise OutOfMemory(msg.splitlines()[-1][:300]) from e
            raise

    def close(self) -> None:
        self._vms.clear()
