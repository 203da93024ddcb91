"""The loaded TVM variant: the Relax VM on one compiled library per batch size."""
from __future__ import annotations

import numpy as np

from edgebench.util import ALIGNMENT

from ..base import OutOfMemory, Predictor, host_outputs
from . import database


DLPACK_CPU = 1          # DLDeviceType kDLCPU


def reads_in_place(batch: np.ndarray, device_type: int) -> bool:
    """Whether the VM can read ``batch`` where it is: a CPU VM, float32, C-contiguous and
    64-byte aligned (TVM refuses less)."""
    return (device_type == DLPACK_CPU and batch.dtype == np.float32
            and batch.flags.c_contiguous and batch.ctypes.data % ALIGNMENT == 0)


def vm_input(batch: np.ndarray, inp, from_dlpack):
    """What the VM is called with: ``batch`` itself where ``reads_in_place``, as ONNX Runtime
    reads numpy, else ``inp`` (the predictor's device buffer) with ``batch`` copied in.
    ``from_dlpack`` is passed in so the timed call imports nothing."""
    if reads_in_place(batch, inp.device.dlpack_device_type()):
        return from_dlpack(batch)
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
        # The passes, the throughput search and MultiStream keep to tuned sizes: others
        # compile with untuned kernels. An artifact's manifest says which (export.py).
        self.tuned_batch_sizes = (database.tuned_batch_sizes(ctx["db_dir"]) or None
                                  if ctx is not None else meta.get("tuned_batch_sizes"))
        self._vms: dict = {}
        self._from_dlpack = None          # tvm.runtime.from_dlpack, set by the first _get
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
        self._from_dlpack = tvm.runtime.from_dlpack
        lib = tvm.runtime.load_module(str(self.libs[b]))
        vm = VirtualMachine(lib, self.dev)
        shape = (b, *self.spec.input_size)
        inp = tvm.runtime.empty(shape, "float32", self.dev)
        self._vms[b] = (vm, vm["main"], inp)
        return self._vms[b]

    def __call__(self, batch: np.ndarray) -> np.ndarray:
        try:
            vm, fn, inp = self._get(int(batch.shape[0]))
            out = fn(vm_input(batch, inp, self._from_dlpack))
            if hasattr(out, "numpy"):
                return out.numpy()
            # A tuple (Array) of tensors: one output unwrapped, several as a tuple.
            return host_outputs(list(out), lambda t: t.numpy() if hasattr(t, "numpy") else
                                host_outputs(list(t), lambda u: u.numpy()))
        except (MemoryError,) as e:
            raise OutOfMemory(str(e)) from e
        except Exception as e:  # noqa: BLE001
            msg = str(e)
            if any(s in msg for s in ("out of memory", "Out of memory", "OUT_OF_MEMORY",
                                      "cannot allocate", "Failed to allocate")):
                raise OutOfMemory(msg.splitlines()[-1][:300]) from e
            raise

    def profile_layers(self, batch: np.ndarray, runs: int) -> dict:
        from .layers import profile

        return profile(self, batch, runs)

    def close(self) -> None:
        self._vms.clear()
