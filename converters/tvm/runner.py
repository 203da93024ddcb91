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
    """MetaSchedule's LocalBuilder (same worker function) with its worker processes kept
    for ``RECYCLE_AFTER`` batches instead of started anew for each: a worker's start costs
    seconds, and TVM restarts pools for leaks
    (experiments/FINDINGS.md#builder-workers-and-gather-kernels)."""

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


# How the runner finds a candidate's weights: warm (MetaSchedule's default), or cold (every
# argument but the data flushed before each call, as in a network)
# (experiments/FINDINGS.md#cold-weights-in-the-tuners-runner).
RUNNER_CACHES = ("warm", "cold")
COLD_REPEAT = 8          # cold calls per measurement, each timed on its own


def caches_for(target, db_dir=None, wanted: str | None = None) -> str:
    """The runner's caches for a session: ``wanted``, else what the database in ``db_dir``
    was measured with (records compare only alike), else warm. GPUs: always warm."""
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
    """MetaSchedule's EvaluatorConfig for ``cfg.runner_caches``. Cold: one call per repeat
    (the flush comes before each repeat only)."""
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
    to zero: random indices make gather (``take``) kernels read out of bounds and crash the
    runner (experiments/FINDINGS.md#builder-workers-and-gather-kernels)."""
    import numpy as np
    from tvm.s_tir.meta_schedule.runner.local_runner import default_alloc_argument

    repeated = default_alloc_argument(device, args_info, alloc_repeat)
    for args in repeated:
        for a in args:
            if "int" in str(a.dtype):
                a.copyfrom(np.zeros(a.shape, dtype=str(a.dtype)))
    return repeated
