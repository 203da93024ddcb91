"""Targets: ``host`` (this CPU, all physical cores), ``jetson-agx-orin`` (its GPU),
``jetson-agx-orin-cpu`` (its Arm cores), a TVM tag or a JSON object; their names on disk and
in cache keys, devices and CPU threads. Imports ``tvm`` lazily."""
from __future__ import annotations

import hashlib
import json
import os
import re
from typing import Any

from edgebench.util import first_line, physical_cores

from .errors import TargetError

JETSON_NAME = "jetson-agx-orin"
JETSON_TAG = "nvidia/jetson-agx-orin-64gb"
# The AGX Orin 64GB's 12 Cortex-A78AE cores, LLVM aarch64 (cross-compiled on x86).
JETSON_CPU_NAME = "jetson-agx-orin-cpu"
JETSON_CPU = {"kind": "llvm", "mtriple": "aarch64-linux-gnu", "mcpu": "cortex-a78ae",
              "num-cores": 12}


def threads_for(target) -> int:
    """CPU threads TVM's kernels should run with for ``target``: its ``num-cores`` (the
    schedules are tuned for that many), else the physical cores."""
    host = target
    if target is not None and target.kind.name != "llvm" and target.host is not None:
        host = target.host
    n = host.attrs.get("num-cores") if host is not None and host.kind.name == "llvm" else None
    return int(n) if n else physical_cores()


_threads_source = None   # set by the first configure_threads() call of this process
_bind_source = None


def configure_threads(target=None) -> dict:
    """Give TVM's CPU thread pool as many threads as the target has cores, unpinned
    (``TVM_BIND_THREADS=0``, as ONNX Runtime's): without ``TVM_NUM_THREADS`` TVM takes half
    the hardware threads on x86 (experiments/FINDINGS.md#threads). The pool and tuning's
    runners read the variables at start, so call this before either; the user's values are
    kept. Returns {"threads", "source", "bind", "bind_source"} for the records."""
    import tvm

    global _threads_source, _bind_source
    if _threads_source is None:   # first call in this process: decide once (convert, then load)
        if os.environ.get("TVM_NUM_THREADS"):
            _threads_source = "TVM_NUM_THREADS (set by the user)"
        else:
            os.environ["TVM_NUM_THREADS"] = str(threads_for(target))
            _threads_source = "target num-cores" if target is not None else "physical cores"
        if os.environ.get("TVM_BIND_THREADS"):
            _bind_source = "TVM_BIND_THREADS (set by the user)"
        else:
            os.environ["TVM_BIND_THREADS"] = "0"
            _bind_source = "edgebench default (unpinned, as ONNX Runtime's threads)"
    source = _threads_source
    threads = int(os.environ["TVM_NUM_THREADS"])
    num = tvm.get_global_func("runtime.NumThreads", True)
    running = int(num()) if num is not None else threads
    out = {"threads": running, "source": source,
           "bind": os.environ.get("TVM_BIND_THREADS", "1") != "0", "bind_source": _bind_source}
    if running != threads:  # say what really runs
        out["note"] = (f"TVM runs {running} thread(s), not TVM_NUM_THREADS={threads}: its pool "
                       "had started before, or it caps the count at the CPUs it sees")
    return out


def host_target_dict() -> dict:
    """The machine's own CPU as LLVM names it (e.g. ``znver5``), all physical cores."""
    from tvm.target import codegen

    return {"kind": "llvm", "mcpu": str(codegen.llvm_get_system_cpu()),
            "num-cores": physical_cores()}


# What ``x86_measured`` answers, for records (``defaults``) and tuning.json.
DEFAULTS_MEASURED = "x86-measured"
DEFAULTS_PLAIN = "plain"


def x86_measured(target) -> bool:
    """Whether edgebench's CPU lowering defaults and recipes (cpu/) apply to ``target``: an
    LLVM target for x86-64, the only CPUs they were measured on; others get TVM's plain ones."""
    return target is not None and target.kind.name == "llvm" and host_arch(target) == "x86_64"


def defaults_for(target) -> str:
    """``x86-measured`` or ``plain``: which defaults a build or tuning session of ``target``
    gets where neither the user nor its database chose (``x86_measured``)."""
    return DEFAULTS_MEASURED if x86_measured(target) else DEFAULTS_PLAIN


def default_target_name(jetson: bool, cuda_driver: bool) -> str:
    """What ``--tvm-target`` means when not given: on a Jetson with a CUDA driver its GPU
    (beside TensorRT on the same device), elsewhere ``host``."""
    return JETSON_NAME if jetson and cuda_driver else "host"


def _probe_default_target() -> str:
    import ctypes

    from edgebench.telemetry.sysfs import is_jetson

    if not is_jetson():
        return "host"
    try:
        ctypes.CDLL("libcuda.so.1")     # the driver JetPack installs; no GPU call is made
        cuda = True
    except OSError:
        cuda = False
    return default_target_name(True, cuda)


def resolve_target(value: Any = None):
    """``host`` | ``jetson-agx-orin`` | ``jetson-agx-orin-cpu`` | a TVM target tag | a JSON object (text or dict)
    -> (tvm.target.Target, display name); None or "" is ``default_target_name``'s for this
    machine. Raises TargetError with the reason."""
    import tvm

    if value is None or value == "":
        value = _probe_default_target()
    if value == "host":
        return tvm.target.Target(host_target_dict()), "host"
    if isinstance(value, dict):
        d = value
    elif isinstance(value, str) and value.strip().startswith("{"):
        try:
            d = json.loads(value)
        except json.JSONDecodeError as e:
            raise TargetError(f"target is not valid JSON: {e}") from None
    elif value == JETSON_NAME:
        return tvm.target.Target(JETSON_TAG), JETSON_NAME
    elif value == JETSON_CPU_NAME:
        return tvm.target.Target(dict(JETSON_CPU)), JETSON_CPU_NAME
    elif isinstance(value, str) and value in _tags():
        return tvm.target.Target(value), value
    else:
        raise TargetError(
            f"unknown target '{value}': use 'host', '{JETSON_NAME}', '{JETSON_CPU_NAME}', a TVM target tag "
            f"(e.g. {JETSON_TAG}) or a JSON object such as "
            '\'{"kind": "llvm", "mcpu": "znver4", "num-cores": 8}\'')
    if not isinstance(d, dict) or "kind" not in d:
        raise TargetError("a JSON target must be an object with a \"kind\" "
                          '(e.g. {"kind": "llvm", "mcpu": "znver4", "num-cores": 8})')
    try:
        t = tvm.target.Target(d)
    except Exception as e:  # noqa: BLE001 - TVM's own message says what is wrong
        raise TargetError(f"TVM rejected the target {json.dumps(d)}: {first_line(e)}") from None
    _check_llvm_cpu(t.host if t.host is not None and t.kind.name != "llvm" else t)
    return t, "json"


def _check_llvm_cpu(t) -> None:
    """Reject an ``mcpu`` LLVM does not know (it would build for a generic CPU, slowly)."""
    if t is None or t.kind.name != "llvm" or not t.attrs.get("mcpu"):
        return
    from tvm.target import codegen

    triple = str(t.attrs.get("mtriple", "") or codegen.llvm_get_system_triple())
    cpu = str(t.attrs["mcpu"])
    if not codegen.llvm_is_valid_cpu(cpu, triple):
        raise TargetError(f"TVM rejected the target: LLVM does not know mcpu '{cpu}' for "
                          f"{triple} (this machine's is "
                          f"'{codegen.llvm_get_system_cpu()}')")


def _tags() -> set:
    import tvm

    try:
        return set(tvm.target.list_tags())
    except Exception:  # noqa: BLE001
        return {JETSON_TAG}


def target_json(target) -> str:
    """Canonical text of a target (sorted keys) for cache keys and manifests."""
    return json.dumps(target_dict(target), sort_keys=True)


def target_dict(target) -> dict:
    d = json.loads(str(target))
    if d.get("host") and isinstance(d["host"], str):  # older TVM printed host as text
        d["host"] = json.loads(d["host"])
    return d


def target_slug(target) -> str:
    """A folder name for a target's tuning databases: kind-cpu/arch-hash."""
    d = target_dict(target)
    what = d.get("mcpu") or d.get("arch") or d.get("model") or "generic"
    h = hashlib.sha256(target_json(target).encode()).hexdigest()[:8]
    return re.sub(r"[^A-Za-z0-9_.-]", "_", f"{d.get('kind', 'target')}-{what}-{h}")


def host_arch(target) -> str:
    """The CPU architecture of ``target``'s host code: its ``mtriple``'s, else this machine's."""
    import platform

    host = target.host if target.host is not None else target
    triple = str(host.attrs.get("mtriple", "") or "")
    return triple.split("-")[0] if triple else platform.machine()


def native(arch: str) -> bool:
    """Whether code for CPU architecture ``arch`` runs on this machine: the one place that
    decides (compiling here, exporting, loading an artifact, the tune command's checks)."""
    import platform

    here = platform.machine()
    return arch == here or {arch, here} == {"aarch64", "arm64"}


def is_gpu(target) -> bool:
    return target.kind.name in ("cuda", "rocm", "vulkan", "metal", "opencl")


def device_for(target):
    import tvm

    return tvm.cuda(0) if target.kind.name == "cuda" else tvm.device(target.kind.name, 0) \
        if is_gpu(target) else tvm.cpu(0)


def tvm_versions() -> dict:
    import tvm

    out = {"tvm": tvm.__version__}
    try:
        import tvm_ffi

        out["tvm_ffi"] = tvm_ffi.__version__
    except Exception:  # noqa: BLE001
        pass
    return out
