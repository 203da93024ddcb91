"""Making an ONNX Runtime session: the session options (``session_options``: every graph
optimisation, one sequential stream, intra-op threads = physical cores) and how they are
described in the record, ``create_session`` on a ``provider_config`` with ORT's own Python-side
CPU retry off, and the diagnosis when ORT refuses a session because a node would fall back to
the CPU EP (a second session that names those nodes: ``CpuFallbackRefused``, or ``SkipVariant``
when a requested EP did not load, or when TensorRT's libraries are missing); plus where ORT
placed each node (``_assignment``) and the options each EP really runs with
(``_effective_options``).
"""
from __future__ import annotations

from collections import Counter

from converters.base import SkipVariant
from edgebench.util import physical_cores

from .providers import CPU_EP, DISABLE_CPU_FALLBACK, RECORD_ASSIGNMENT, OrtProviderConfig

# ORT's words when disable_cpu_ep_fallback refuses a session (inference_session.cc).
_REFUSED = ("fallback to CPU EP has been explicitly disabled", "assigned to the default CPU EP")


class CpuFallbackRefused(RuntimeError):
    """A session would have run nodes on the CPU EP behind a GPU EP's name."""


def _node_list(nodes: list[tuple[str, str]], most: int = 8) -> str:
    """'ops: Conv x2, Relu x1; nodes: conv0 (Conv), ...' (ops first: a reason is cut at 500
    characters)."""
    ops = ", ".join(f"{op} x{n}" for op, n in Counter(op for _, op in nodes).most_common())
    shown = ", ".join(f"{name} ({op})" for name, op in nodes[:most])
    more = f" and {len(nodes) - most} more" if len(nodes) > most else ""
    return f"ops: {ops}; nodes: {shown}{more}"


def _assignment(sess) -> dict[str, list[tuple[str, str]]] | None:
    """EP -> [(node name, op type)] as ORT placed them (needs RECORD_ASSIGNMENT); None where
    this onnxruntime cannot say (older than the API)."""
    try:
        subgraphs = sess.get_provider_graph_assignment_info()
    except Exception:  # noqa: BLE001 - missing API, or recording was not enabled
        return None
    out: dict[str, list[tuple[str, str]]] = {}
    for sg in subgraphs:
        out.setdefault(sg.ep_name, []).extend((n.name, n.op_type) for n in sg.get_nodes())
    return out


def _explain_refusal(ort, path: str, cfg: OrtProviderConfig, message: str) -> Exception:
    """ORT refused the session (a node on the CPU EP) without naming a node: make a second
    session that allows the fallback and records where every node went, and say which nodes
    (and ops) would have run on the CPU. A requested EP that did not even load is a 'skipped'
    cell, as when this onnxruntime build lacks it."""
    so = session_options(1)
    so.add_session_config_entry(RECORD_ASSIGNMENT, "1")
    try:
        diag = ort.InferenceSession(path, sess_options=so, providers=cfg.providers + [(CPU_EP, {})],
                                    enable_fallback=0)
    except Exception as e:  # noqa: BLE001
        return CpuFallbackRefused(f"CPU fallback refused ({DISABLE_CPU_FALLBACK}=1): {message} "
                                  f"(the nodes could not be listed: {str(e).splitlines()[0][:200]})")
    unloaded = not_loaded(ort, diag, cfg)
    if unloaded:
        return unloaded
    placed = _assignment(diag)
    if placed is None:
        return CpuFallbackRefused(f"CPU fallback refused ({DISABLE_CPU_FALLBACK}=1): {message} "
                                  f"(onnxruntime {ort.__version__} cannot list the nodes)")
    cpu = placed.get(CPU_EP, [])
    total = sum(len(v) for v in placed.values())
    return CpuFallbackRefused(
        f"CPU fallback refused ({DISABLE_CPU_FALLBACK}=1; --ort-allow-cpu-fallback allows it): "
        f"{len(cpu)} of {total} nodes would run on {CPU_EP}, not on {' / '.join(cfg.names)}; "
        f"{_node_list(cpu)}")


def not_loaded(ort, sess, cfg: OrtProviderConfig) -> SkipVariant | None:
    """SkipVariant when a requested EP is missing from ``sess``: ORT leaves out an EP whose
    libraries did not load with only a log line, and a figure from the others must not be
    labelled with its name."""
    got = sess.get_providers()
    missing = [p for p in cfg.names if p not in got]
    if not missing:
        return None
    return SkipVariant(f"requested {', '.join(missing)} did not load here (onnxruntime "
                       f"{ort.__version__}; the session has only {', '.join(got)}): its "
                       "libraries are missing or do not match, see the cell log")


# What onnxruntime-gpu raises when a session asks for the TensorRT EP and TensorRT's libraries
# (libnvinfer) do not load: the EP is compiled into every onnxruntime-gpu wheel and listed by
# get_available_providers() whether TensorRT is installed or not (onnxruntime_pybind_state.cc,
# RegisterTensorRTPluginsAsCustomOps; recorded on an H100 without TensorRT, ORT 1.31.1:
# experiments/FINDINGS.md#onnx-runtimes-gpu-providers-on-an-h100).
_TRT_LIBS_MISSING = "Please install TensorRT libraries"


def tensorrt_libraries_missing(ort, message: str) -> SkipVariant | None:
    """SkipVariant when ``message`` (a failed session's) says TensorRT's libraries are missing:
    this machine cannot run the variant, which is not a failure of the variant."""
    if _TRT_LIBS_MISSING not in message:
        return None
    return SkipVariant(
        f"the TensorRT execution provider is in this onnxruntime build ({ort.__version__}) but "
        "TensorRT's libraries did not load here (libnvinfer; the cell log has the loader's "
        "message): install TensorRT for this CUDA (on Jetson it comes with JetPack) and put "
        "its lib folder on LD_LIBRARY_PATH")


def create_session(ort, path: str, so, cfg: OrtProviderConfig):
    """``InferenceSession`` on ``cfg``, with ORT's own Python-side fallback off (it retries a
    failed session on the CPU EP alone: another silent fallback), and ORT's errors turned
    into reasons a reader can act on."""
    for key, value in cfg.session_config.items():
        so.add_session_config_entry(key, value)
    try:
        return ort.InferenceSession(path, sess_options=so, providers=cfg.providers,
                                    enable_fallback=0)
    except Exception as e:  # noqa: BLE001
        msg = str(e).strip()
        if any(s in msg for s in _REFUSED):
            raise _explain_refusal(ort, path, cfg, msg.splitlines()[0][:300]) from e
        missing_trt = tensorrt_libraries_missing(ort, msg)
        if missing_trt is not None:
            raise missing_trt from e
        if "Unknown provider option" in msg:
            raise RuntimeError(
                f"onnxruntime {ort.__version__} does not know a provider option edgebench sets "
                f"({msg.splitlines()[0][:200]}); the CUDA EP's use_tf32 and the TensorRT EP's "
                "cache options need a recent onnxruntime-gpu (1.31 has them all)") from e
        raise


def session_options(threads: int | None = None):
    """CPU inference as an expert sets it: every graph optimisation, one sequential stream,
    intra-op threads = physical cores (SMT siblings only contend for the same FMA units)."""
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.intra_op_num_threads = threads or physical_cores()
    so.inter_op_num_threads = 1
    return so


def describe_session_options(so) -> dict:
    """The options a session was made with, for run.json and every record."""
    return {"graph_optimization_level": so.graph_optimization_level.name,
            "execution_mode": so.execution_mode.name,
            "intra_op_num_threads": so.intra_op_num_threads,
            "inter_op_num_threads": so.inter_op_num_threads}


def _effective_options(sess, cfg: OrtProviderConfig) -> dict:
    """The options each EP really runs with (ORT fills in its defaults), or the ones passed
    where this onnxruntime cannot say."""
    try:
        return {ep: dict(o) for ep, o in sess.get_provider_options().items()}
    except Exception:  # noqa: BLE001
        return {name: dict(o) for name, o in cfg.providers}
