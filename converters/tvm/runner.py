"""Where tuning candidates are built and measured: MetaSchedule's builder (here, in worker
processes) and runner (local worker processes, or the device registered with a TVM RPC
tracker under a key). ``cfg`` is a ``tuning.TuneConfig``."""
from __future__ import annotations

from edgebench.util import first_line, physical_cores

from .errors import RpcError


def parse_tracker(value: str) -> tuple[str, int]:
    host, sep, port = (value or "").rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"--rpc-tracker must be HOST:PORT (got '{value}')")
    return host, int(port)


def check_rpc(tracker: str, key: str, timeout_s: float = 10.0) -> dict:
    """Ask the tracker for a server with ``key`` and run a trivial remote call, so a bad
    tracker/key fails in seconds, not after the first batch of candidates."""
    from tvm import rpc

    host, port = parse_tracker(tracker)
    try:
        t = rpc.connect_tracker(host, port)
    except Exception as e:  # noqa: BLE001
        raise RpcError(f"cannot reach the RPC tracker at {host}:{port}: {first_line(e)}") \
            from None
    try:
        summary = t.summary()
    except Exception as e:  # noqa: BLE001
        raise RpcError(f"RPC tracker at {host}:{port} did not answer: {first_line(e)}") \
            from None
    servers = [str(item.get("key", "")).split(":", 1)[-1]
               for item in summary.get("server_info", [])]
    queue = summary.get("queue_info", {}) or {}
    known = sorted(set(servers) | {k for k, q in queue.items() if q.get("free") or
                                   k in servers})
    if key not in servers:
        raise RpcError(f"no RPC server with key '{key}' is registered with the tracker at "
                       f"{host}:{port} (registered keys: {', '.join(known) or 'none'}); on "
                       f"the device run: python -m tvm.exec.rpc_server --tracker "
                       f"{host}:{port} --key {key}")
    try:
        sess = t.request(key, priority=1, session_timeout=int(timeout_s) + 5, max_retry=2)
        sess.cpu(0).exist  # a round trip
    except Exception as e:  # noqa: BLE001
        raise RpcError(f"the RPC server with key '{key}' did not answer via {host}:{port}: "
                       f"{first_line(e)}") from None
    return {"tracker": f"{host}:{port}", "key": key}


def make_builder(cfg):
    from . import _msbuild

    workers = cfg.builder_workers or physical_cores()
    # Over RPC the remote links the candidates itself (TVM's default .tar export): the
    # device's architecture may differ from this machine's.
    kwargs = dict(max_workers=workers, timeout_sec=cfg.build_timeout_s, f_build=_msbuild.build,
                  f_export=None if cfg.rpc_tracker else _msbuild.export_so)
    return KeptPoolBuilder(**kwargs)


class KeptPoolBuilder:
    """MetaSchedule's LocalBuilder with its worker processes kept from one batch to the next.

    LocalBuilder starts a new pool for every batch, so every batch pays each worker's start
    (Python, TVM and its backends imported again) before the first candidate compiles. Here
    the pool lives for ``RECYCLE_AFTER`` batches, then starts again: TVM restarts its pool
    for a memory leak in workers used many times. Same worker function, so the candidates
    are built and exported exactly as LocalBuilder builds them."""

    RECYCLE_AFTER = 16          # batches per pool

    def __init__(self, *, max_workers, timeout_sec, f_build, f_export):
        self.max_workers, self.timeout_sec = max_workers, timeout_sec
        self.f_build, self.f_export = f_build, f_export
        self._pool, self._batches = None, 0

    def build(self, build_inputs):
        from tvm.s_tir.meta_schedule.builder import BuilderResult
        from tvm.s_tir.meta_schedule.builder.local_builder import (_serialize_params,
                                                                   _worker_func)
        from tvm.support.popen_pool import PopenPoolExecutor, StatusKind

        if self._pool is None or self._batches >= self.RECYCLE_AFTER:
            self.shutdown()
            self._pool = PopenPoolExecutor(max_workers=self.max_workers,
                                           timeout=self.timeout_sec)
        self._batches += 1
        jobs = [(self.f_build, self.f_export, b.mod, b.target, _serialize_params(b.params))
                for b in build_inputs]
        results = []
        for res in self._pool.map_with_error_catching(lambda x: _worker_func(*x), jobs):
            if res.status == StatusKind.COMPLETE:
                results.append(BuilderResult(res.value, None))
            elif res.status == StatusKind.TIMEOUT:
                # the worker was killed; the pool starts another for its next job
                results.append(BuilderResult(None, f"LocalBuilder: Timeout, killed after "
                                                   f"{self.timeout_sec} seconds"))
            else:
                results.append(BuilderResult(None, "LocalBuilder: An exception occurred\n"
                                             + str(res.value)))
        return results

    def shutdown(self, wait: bool = True):
        if self._pool is not None:
            self._pool.shutdown(wait=wait)
        self._pool, self._batches = None, 0


# How the runner finds a candidate's weights: warm (in the caches from the calls before, as
# MetaSchedule measures by default), or cold (every argument but the data flushed from the
# CPU's caches before each call, as a kernel finds its weights in a network, which reads each
# layer's once per inference). Cold re-ranks ran six networks 0.974-1.031x their warm ones,
# so warm stays the default; ResNet-152's recipe measures cold (experiments/FINDINGS.md).
RUNNER_CACHES = ("warm", "cold")
COLD_REPEAT = 8          # cold calls per measurement, each timed on its own


def caches_for(target, db_dir=None, wanted: str | None = None) -> str:
    """The runner's caches for a tuning session: ``wanted`` (the user's option)
    first; then what the database in ``db_dir`` was measured with (its records compare only
    with records measured the same way; one from before the choice was recorded: warm);
    else warm. GPUs are always warm: the flush is a CPU one."""
    from . import lowering, targets

    if targets.is_gpu(target):
        return "warm"
    recorded = lowering.recorded_choice(db_dir, "runner_caches", None, before="warm", new=None)
    if wanted and recorded and wanted != recorded:
        from .errors import TvmError

        raise TvmError(f"the database in {db_dir} measured its candidates with {recorded} "
                       f"caches: --runner-caches {wanted} would mix measurements that do not "
                       f"compare; tune into another --tuning-dir")
    return wanted or recorded or "warm"


def evaluator_config(cfg):
    """MetaSchedule's EvaluatorConfig for ``cfg.runner_caches``. Cold: one call per repeat,
    each after a flush; MetaSchedule flushes before each repeat only, and min_repeat_ms would
    add warm calls to it."""
    from tvm.s_tir import meta_schedule as ms

    if cfg.runner_caches == "cold":
        return ms.runner.EvaluatorConfig(number=1, repeat=COLD_REPEAT, min_repeat_ms=0,
                                         enable_cpu_cache_flush=True)
    return ms.runner.EvaluatorConfig(number=cfg.number, repeat=cfg.repeat,
                                     min_repeat_ms=cfg.min_repeat_ms,
                                     enable_cpu_cache_flush=False)


def make_runner(cfg):
    from tvm.s_tir import meta_schedule as ms

    ev = evaluator_config(cfg)
    if cfg.rpc_tracker:
        host, port = parse_tracker(cfg.rpc_tracker)
        rc = ms.runner.RPCConfig(tracker_host=host, tracker_port=port, tracker_key=cfg.rpc_key,
                                 session_timeout_sec=cfg.rpc_session_timeout_s)
        return ms.runner.RPCRunner(rpc_config=rc, evaluator_config=ev, max_workers=1)
    return ms.runner.LocalRunner(timeout_sec=cfg.run_timeout_s, evaluator_config=ev,
                                 f_alloc_argument=alloc_valid_indices)


def alloc_valid_indices(device, args_info, alloc_repeat):
    """MetaSchedule's argument allocation for the local runner, with integer arguments set
    to zero instead of random values.

    The default fills every argument at random, index tensors included, so a ``take``
    (gather) kernel reads far out of bounds and the runner's process dies: Swin-T's six
    relative-position-bias gathers got "LocalRunner: An exception occurred" for every
    candidate and kept TVM's default schedule. Zero is a valid index for any gather; float
    arguments stay random. (The RPC runner allocates on the device with its own default.)"""
    import numpy as np
    from tvm.s_tir.meta_schedule.runner.local_runner import default_alloc_argument

    repeated = default_alloc_argument(device, args_info, alloc_repeat)
    for args in repeated:
        for a in args:
            if "int" in str(a.dtype):
                a.copyfrom(np.zeros(a.shape, dtype=str(a.dtype)))
    return repeated
