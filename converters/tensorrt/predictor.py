"""Running a built engine: ``TrtPredictor``, synchronous host float32 NCHW in, host float32
logits out.

CUDA memory, the stream and CUDA graphs come from **torch** (``torch.cuda``): the suite needs
torch anyway, NVIDIA ships CUDA torch wheels for JetPack (Jetson AI Lab index), and it avoids
a second CUDA binding (cuda-python / pycuda). One execution context, device buffers sized for
the largest profile. Timing boundary, as for every variant: host NCHW float32 in -> copy into
pinned host memory -> H2D on the stream -> ``execute_async_v3`` (v2 with binding indices on
TensorRT 8.4), or the replay of a CUDA graph that captured it -> D2H -> stream sync -> host
float32 logits out.

CUDA graphs (``--trt-cuda-graph``, as trtexec's ``--useCudaGraph``): only the enqueue is
captured, the copies stay outside, as in trtexec. TensorRT wants one enqueue after an input
shape change before a capture (the context finishes deferred updates on it), and a graph is
valid only for the shape and context state it was captured with. So the predictor keeps one
graph, for the current input shape: the first call at a new shape sets the shape, enqueues
once (that call's result) and captures; later calls at that shape launch the graph; a call
at another shape discards it and captures again. The measurements' warm-up calls run at the
measured shape, so the captures fall outside their timed windows (except the accuracy pass's
last, shorter batch).

Engines with several optimisation profiles (DLA: one static profile per batch size) switch
profile with ``set_optimization_profile_async`` before setting the shape.

Offline on every accelerator (``--trt-offline-all-accelerators``): the GPU engine's predictor
holds ``offline_devices`` ({"gpu": itself, "dla0": ..., "dla1": ...}), one ``TrtPredictor``
per engine, each with its own runtime, execution context, buffers and stream, so the Offline
scheduler's threads (``edgebench/mlperf/multi.py``) run them at once. A DLA predictor built with
``split_batches`` runs a batch its static profiles lack in consecutive pieces of their sizes
(``batches.split_batch``): the Offline batch is fitted to the GPU predictor. Closing the GPU
predictor closes them.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from converters.base import OutOfMemory, Predictor

from .build import make_logger
from .engine_log import summarize_engine_information
from .batches import split_batch
from .plan import PROFILE_FIELDS, TrtPlan, sync_point

# torch.cuda.CUDAGraph.capture_begin: "thread_local" forbids unsafe CUDA calls only in this
# thread, so a telemetry thread in the process cannot invalidate a capture.
CAPTURE_MODE = "thread_local"


def _dims(d: Any) -> tuple[int, ...]:
    """A ``trt.Dims`` as a tuple (by index: TensorRT 8.x's Dims has no __iter__)."""
    return tuple(int(d[i]) for i in range(len(d)))


class TrtPredictor(Predictor):
    """Synchronous: host float32 NCHW in, host float32 logits out."""

    # Set on the GPU engine's predictor by --trt-offline-all-accelerators (an annotation only:
    # a predictor without the option has no such attribute, and Offline runs as usual).
    offline_devices: dict[str, Predictor]

    def __init__(self, engine_bytes: bytes, plan: TrtPlan, meta: dict, run: dict):
        """``run``: ``batch_sizes`` (the sizes to offer the measurements, None for any up to the
        profile's max), ``cuda_graph`` (bool), ``dla_core`` (None or the core) and
        ``split_batches`` (bool: run a batch the static profiles lack in pieces of their sizes)."""
        import tensorrt as trt
        import torch

        self.torch = torch
        self.plan = plan
        self.logger = make_logger()
        self.runtime = trt.Runtime(self.logger)
        self.dla_core = run.get("dla_core")
        if run.get("dla_core") is not None:
            # The DLA core the engine's DLA layers run on (IRuntime::setDLACore, as trtexec).
            self.runtime.DLA_core = int(run["dla_core"])
        self.engine = self.runtime.deserialize_cuda_engine(engine_bytes)
        if self.engine is None:
            raise RuntimeError("deserialize_cuda_engine failed: " + " | ".join(self.logger.errors))
        self.context = self.engine.create_execution_context()
        if self.context is None:
            raise OutOfMemory("create_execution_context failed (device memory?)")
        self.stream = torch.cuda.Stream()
        self.cuda_graph = bool(run.get("cuda_graph"))
        self.split_batches = bool(run.get("split_batches"))
        self._graph: Any = None                 # torch.cuda.CUDAGraph for _graph_shape
        self._graph_shape: tuple | None = None
        self._profile = 0
        n_profiles = int(self.engine.num_optimization_profiles)
        if plan.io_api == "tensors":
            self._io_tensors()
            ranges = [[_dims(s) for s in self.engine.get_tensor_profile_shape(self.in_name, k)]
                      for k in range(n_profiles)]
            out_shape = _dims(self.engine.get_tensor_shape(self.out_name))
        else:  # TensorRT 8.4: binding indices, one profile (DLA is refused there: plan.no_dla)
            self._io_bindings()
            engine: Any = self.engine
            ranges = [[_dims(s) for s in engine.get_profile_shape(0, self.in_idx)]]
            out_shape = _dims(engine.get_binding_shape(self.out_idx))
        # Profile k covers batch sizes ranges[k][0][0] .. ranges[k][2][0] (min .. max).
        self.profiles = [dict(zip(PROFILE_FIELDS, (list(s) for s in r))) for r in ranges]
        self.max_shape = max((r[2] for r in ranges), key=lambda s: s[0])
        self.max_batch = int(self.max_shape[0])
        self.classes = int(out_shape[-1])
        static = all(r[0][0] == r[2][0] for r in ranges)
        if static:                              # DLA: exactly the built sizes
            self.batch_sizes = sorted({r[0][0] for r in ranges})
        else:
            self.batch_sizes = run.get("batch_sizes")
        try:
            self.d_in = torch.empty(self.max_shape, dtype=torch.float32, device="cuda")
            self.d_out = torch.empty((self.max_batch, self.classes), dtype=torch.float32, device="cuda")
            self.h_in = torch.empty(self.max_shape, dtype=torch.float32, pin_memory=True)
            self.h_out = torch.empty((self.max_batch, self.classes), dtype=torch.float32, pin_memory=True)
        except torch.OutOfMemoryError as e:
            raise OutOfMemory(str(e)) from e
        self.h_in_np = self.h_in.numpy()
        self.h_out_np = self.h_out.numpy()
        self._set_addresses()
        self.meta = dict(meta, max_batch=self.max_batch, io_api=plan.io_api,
                         trt_profiles=self.profiles,
                         trt_profiles_from="read back from the engine (per profile: min, opt, max)",
                         batch_sizes=self.batch_sizes,
                         cuda_memory="torch.cuda (pinned host staging, one stream)",
                         sync=sync_point(plan.io_api, self.cuda_graph),
                         cuda_graph=self._graph_record(),
                         engine_layers=self._inspect())
        if self.split_batches:
            self.meta["split_batches"] = ("a batch size without a static profile runs in "
                                          "consecutive pieces of these sizes, largest first")

    # -- set-up -------------------------------------------------------------------------
    def _io_tensors(self) -> None:
        import tensorrt as trt

        engine = self.engine
        names = [engine.get_tensor_name(i) for i in range(engine.num_io_tensors)]
        ins = [n for n in names if engine.get_tensor_mode(n) == trt.TensorIOMode.INPUT]
        outs = [n for n in names if engine.get_tensor_mode(n) == trt.TensorIOMode.OUTPUT]
        self.in_name, self.out_name = ins[0], outs[0]
        self._check_float({n: engine.get_tensor_dtype(n) for n in (self.in_name, self.out_name)})

    def _io_bindings(self) -> None:
        engine: Any = self.engine       # TensorRT 8.4's binding API (removed in 10)
        self.in_idx = next(i for i in range(engine.num_bindings) if engine.binding_is_input(i))
        self.out_idx = next(i for i in range(engine.num_bindings) if not engine.binding_is_input(i))
        self.in_name = engine.get_binding_name(self.in_idx)
        self.out_name = engine.get_binding_name(self.out_idx)
        self._check_float({self.in_name: engine.get_binding_dtype(self.in_idx),
                           self.out_name: engine.get_binding_dtype(self.out_idx)})

    @staticmethod
    def _check_float(dtypes: dict) -> None:
        import tensorrt as trt

        bad = {n: str(d) for n, d in dtypes.items() if d != trt.DataType.FLOAT}
        if bad:
            raise RuntimeError(f"engine I/O is not float32: {bad}")

    def _set_addresses(self) -> None:
        if self.plan.io_api == "tensors":
            self.context.set_tensor_address(self.in_name, self.d_in.data_ptr())
            self.context.set_tensor_address(self.out_name, self.d_out.data_ptr())

    def _graph_record(self) -> dict:
        if not self.cuda_graph:
            return {"enabled": False}
        return {"enabled": True,
                "api": "torch.cuda.CUDAGraph: capture_begin/capture_end (cudaStreamBeginCapture, "
                       "cudaStreamEndCapture, cudaGraphInstantiate), replay (cudaGraphLaunch)",
                "captured": "the enqueue only; host/device copies outside the graph (as trtexec "
                            "--useCudaGraph)",
                "per_shape": "one graph for the current input shape: at a new shape, "
                             "set_input_shape, one enqueue (TensorRT's required call before a "
                             "capture; it gives that call's result), then capture; a shape change "
                             "discards the graph and captures again",
                "capture_mode": CAPTURE_MODE}

    def _inspect(self) -> dict:
        """The engine inspector's layer summary (TensorRT 8.2+; layer types need an engine
        built with ProfilingVerbosity.DETAILED)."""
        import tensorrt as trt

        try:
            inspector = self.engine.create_engine_inspector()
            text = inspector.get_engine_information(trt.LayerInformationFormat.JSON)
            return summarize_engine_information(text)
        except Exception as e:  # noqa: BLE001 - an inspector that cannot report is a note
            return {"error": f"{type(e).__name__}: {e}"[:300]}

    # -- a call -------------------------------------------------------------------------
    def _profile_for(self, n: int) -> int:
        for k, p in enumerate(self.profiles):
            if p["min"][0] <= n <= p["max"][0]:
                return k
        raise OutOfMemory(f"batch {n} is not in any of the engine's profiles "
                          f"({[p['max'][0] for p in self.profiles]}); the cell offers only "
                          "these sizes (--trt-max-batch)")

    def _prepare(self, shape: tuple) -> None:
        """Select the profile for ``shape`` and set the input shape on the context."""
        k = self._profile_for(shape[0])
        if self.plan.io_api == "tensors":
            if k != self._profile:
                if not self.context.set_optimization_profile_async(k, self.stream.cuda_stream):
                    raise RuntimeError(f"set_optimization_profile_async({k}) failed: "
                                       + " | ".join(self.logger.errors[-3:]))
                self._profile = k
                self._set_addresses()
            if not self.context.set_input_shape(self.in_name, shape):
                raise ValueError(f"set_input_shape{shape} refused: " + " | ".join(self.logger.errors[-3:]))
        else:
            ctx: Any = self.context     # TensorRT 8.4's binding API (removed in 10)
            if not ctx.set_binding_shape(self.in_idx, shape):
                raise ValueError(f"set_binding_shape{shape} refused: " + " | ".join(self.logger.errors[-3:]))

    def _enqueue(self) -> None:
        if self.plan.io_api == "tensors":
            ok = self.context.execute_async_v3(self.stream.cuda_stream)
        else:
            ctx: Any = self.context     # TensorRT 8.4's binding API (removed in 10)
            engine: Any = self.engine
            bindings = [0] * int(engine.num_bindings)
            bindings[self.in_idx] = self.d_in.data_ptr()
            bindings[self.out_idx] = self.d_out.data_ptr()
            ok = ctx.execute_async_v2(bindings, self.stream.cuda_stream)
        if not ok:
            raise RuntimeError("TensorRT enqueue failed: " + " | ".join(self.logger.errors[-3:]))

    def _run_graph(self, shape: tuple) -> None:
        """Launch the graph for ``shape``, capturing it first when the shape is new."""
        if self._graph is not None and self._graph_shape == shape:
            self._graph.replay()                # on the current stream (self.stream)
            return
        self._graph = self._graph_shape = None
        self._prepare(shape)
        self._enqueue()                         # required before capture; this call's result
        graph = self.torch.cuda.CUDAGraph()
        try:
            graph.capture_begin(capture_error_mode=CAPTURE_MODE)
            try:
                self._enqueue()
            finally:
                graph.capture_end()
        except Exception as e:
            raise RuntimeError(f"CUDA graph capture of the TensorRT enqueue failed at input shape "
                               f"{shape}: {type(e).__name__}: {e} (run without --trt-cuda-graph)") from e
        self._graph, self._graph_shape = graph, shape

    def __call__(self, batch: np.ndarray) -> np.ndarray:
        n = int(batch.shape[0])
        if self.split_batches and self.batch_sizes is not None and n not in self.batch_sizes:
            start = 0
            outs: list[np.ndarray] = []
            for size in split_batch(n, self.batch_sizes):
                outs.append(self._call(batch[start:start + size]))
                start += size
            return np.concatenate(outs)
        return self._call(batch)

    def _call(self, batch: np.ndarray) -> np.ndarray:
        n = int(batch.shape[0])
        if n > self.max_batch:
            # Above the optimisation profile: the throughput search treats it like OOM.
            raise OutOfMemory(f"batch {n} exceeds the engine's profile max {self.max_batch} "
                              "(--trt-max-batch)")
        shape = (n, *self.max_shape[1:])
        if tuple(batch.shape) != shape:
            raise ValueError(f"expected input {shape}, got {tuple(batch.shape)}")
        torch = self.torch
        np.copyto(self.h_in_np[:n], batch, casting="same_kind")
        with torch.cuda.stream(self.stream):
            self.d_in[:n].copy_(self.h_in[:n], non_blocking=True)
            if self.cuda_graph:
                self._run_graph(shape)
            else:
                self._prepare(shape)
                self._enqueue()
            self.h_out[:n].copy_(self.d_out[:n], non_blocking=True)
        self.stream.synchronize()
        return self.h_out_np[:n].copy()

    def profile_layers(self, batch: np.ndarray, runs: int) -> dict:
        from .profile_layers import profile

        return profile(self, batch, runs)

    def close(self) -> None:
        for other in getattr(self, "offline_devices", {}).values():
            if other is not self:
                other.close()
        for attr in ("offline_devices", "_graph", "context", "engine", "runtime", "d_in", "d_out",
                     "h_in", "h_out"):
            if hasattr(self, attr):
                delattr(self, attr)
        self.torch.cuda.empty_cache()
