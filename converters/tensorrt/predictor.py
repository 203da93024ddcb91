"""Running a built engine: ``TrtPredictor``, synchronous host float32 NCHW in, host float32
logits out.

CUDA memory and the stream come from **torch** (``torch.cuda``): the suite needs torch anyway,
NVIDIA ships CUDA torch wheels for JetPack (Jetson AI Lab index), and it avoids a second CUDA
binding (cuda-python / pycuda). One execution context, one optimisation profile, device
buffers sized for the profile's max batch. Timing boundary, as for every variant: host NCHW
float32 in -> copy into pinned host memory -> H2D on the stream -> ``execute_async_v3`` (v2
with binding indices on TensorRT 8.4) -> D2H -> stream sync -> host float32 logits out.
"""
from __future__ import annotations

import numpy as np

from converters.base import OutOfMemory, Predictor

from .build import make_logger
from .plan import TrtPlan


class TrtPredictor(Predictor):
    """Synchronous: host float32 NCHW in, host float32 logits out."""

    def __init__(self, trt, engine_bytes: bytes, plan: TrtPlan, meta: dict):
        import torch

        self.torch = torch
        self.trt = trt
        self.plan = plan
        self.meta = meta
        self.logger = make_logger(trt)
        self.runtime = trt.Runtime(self.logger)
        self.engine = self.runtime.deserialize_cuda_engine(engine_bytes)
        if self.engine is None:
            raise RuntimeError("deserialize_cuda_engine failed: " + " | ".join(self.logger.errors))
        self.context = self.engine.create_execution_context()
        if self.context is None:
            raise OutOfMemory("create_execution_context failed (device memory?)")
        self.stream = torch.cuda.Stream()
        if plan.io_api == "tensors":
            names = [self.engine.get_tensor_name(i) for i in range(self.engine.num_io_tensors)]
            ins = [n for n in names if self.engine.get_tensor_mode(n) == trt.TensorIOMode.INPUT]
            outs = [n for n in names if self.engine.get_tensor_mode(n) == trt.TensorIOMode.OUTPUT]
            self.in_name, self.out_name = ins[0], outs[0]
            _, _, max_shape = self.engine.get_tensor_profile_shape(self.in_name, 0)
            out_shape = list(self.engine.get_tensor_shape(self.out_name))
            dtypes = {n: self.engine.get_tensor_dtype(n) for n in (self.in_name, self.out_name)}
        else:  # TensorRT 8.4: binding indices
            self.in_idx = next(i for i in range(self.engine.num_bindings) if self.engine.binding_is_input(i))
            self.out_idx = next(i for i in range(self.engine.num_bindings) if not self.engine.binding_is_input(i))
            self.in_name = self.engine.get_binding_name(self.in_idx)
            self.out_name = self.engine.get_binding_name(self.out_idx)
            _, _, max_shape = self.engine.get_profile_shape(0, self.in_idx)
            out_shape = list(self.engine.get_binding_shape(self.out_idx))
            dtypes = {self.in_name: self.engine.get_binding_dtype(self.in_idx),
                      self.out_name: self.engine.get_binding_dtype(self.out_idx)}
        bad = {n: str(d) for n, d in dtypes.items() if d != trt.DataType.FLOAT}
        if bad:
            raise RuntimeError(f"engine I/O is not float32: {bad}")
        self.max_shape = tuple(int(d) for d in max_shape)
        self.max_batch = self.max_shape[0]
        self.classes = int(out_shape[-1])
        try:
            self.d_in = torch.empty(self.max_shape, dtype=torch.float32, device="cuda")
            self.d_out = torch.empty((self.max_batch, self.classes), dtype=torch.float32, device="cuda")
            self.h_in = torch.empty(self.max_shape, dtype=torch.float32, pin_memory=True)
            self.h_out = torch.empty((self.max_batch, self.classes), dtype=torch.float32, pin_memory=True)
        except torch.OutOfMemoryError as e:
            raise OutOfMemory(str(e)) from e
        self.h_in_np = self.h_in.numpy()
        self.h_out_np = self.h_out.numpy()
        if plan.io_api == "tensors":
            self.context.set_tensor_address(self.in_name, self.d_in.data_ptr())
            self.context.set_tensor_address(self.out_name, self.d_out.data_ptr())
        self.meta = dict(meta, max_batch=self.max_batch, io_api=plan.io_api,
                         cuda_memory="torch.cuda (pinned host staging, one stream)")

    def __call__(self, batch: np.ndarray) -> np.ndarray:
        n = int(batch.shape[0])
        if n > self.max_batch:
            # Above the optimisation profile: the throughput search treats it like OOM.
            raise OutOfMemory(f"batch {n} exceeds the engine's profile max {self.max_batch} "
                              "(--max-batch / --trt-max-batch)")
        shape = (n, *self.max_shape[1:])
        if tuple(batch.shape) != shape:
            raise ValueError(f"expected input {shape}, got {tuple(batch.shape)}")
        torch = self.torch
        np.copyto(self.h_in_np[:n], batch, casting="same_kind")
        with torch.cuda.stream(self.stream):
            self.d_in[:n].copy_(self.h_in[:n], non_blocking=True)
            if self.plan.io_api == "tensors":
                self.context.set_input_shape(self.in_name, shape)
                ok = self.context.execute_async_v3(self.stream.cuda_stream)
            else:
                self.context.set_binding_shape(self.in_idx, shape)
                bindings = [0] * self.engine.num_bindings
                bindings[self.in_idx] = self.d_in.data_ptr()
                bindings[self.out_idx] = self.d_out.data_ptr()
                ok = self.context.execute_async_v2(bindings, self.stream.cuda_stream)
            if not ok:
                raise RuntimeError("TensorRT enqueue failed: " + " | ".join(self.logger.errors[-3:]))
            self.h_out[:n].copy_(self.d_out[:n], non_blocking=True)
        self.stream.synchronize()
        return self.h_out_np[:n].copy()

    def close(self) -> None:
        for attr in ("context", "engine", "runtime", "d_in", "d_out", "h_in", "h_out"):
            if hasattr(self, attr):
                delattr(self, attr)
        self.torch.cuda.empty_cache()
