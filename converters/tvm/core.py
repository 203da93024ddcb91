"""TVM core: targets, model import, the lowering pipeline, compile, the tuning-database view.

Everything here imports ``tvm``/``torch`` lazily (inside functions) so that listing the
converter registry stays cheap.

Pipeline (shared by tuning and compiling, so the workloads the tuner records are exactly the
ones the compiler looks up):

    torch.export -> relax.frontend.torch.from_exported_program   (ONNX importer as fallback)
    DecomposeOpsForInference, CanonicalizeBindings, LegalizeOps, AnnotateTIROpPattern,
    FoldConstant, FuseOps, FuseTIR, AttachAttrLayoutFreeBuffers          = ``lower_for_tuning``
    MetaScheduleApplyDatabase, SplitLayoutRewritePreproc, FoldConstant  = ``apply_database``
    tvm.compile(target)  (per-target default pipeline; on CUDA it adds dlight default schedules)

Weights are bound as constants, so a tuned schedule's weight-layout rewrite (MetaSchedule's
``cpu_weight_prepack`` idea) is folded into the constants at compile time instead of running
on every call.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import time
from pathlib import Path
from typing import Any

# Bump when the lowering pipeline changes: it invalidates compiled-library caches.
PIPELINE_VERSION = "tvm-pipeline-6"   # 6: NHWC builds fuse ReLU6 (clip_as_min_max); 5: fast exp/erf
JETSON_NAME = "jetson-agx-orin"
JETSON_TAG = "nvidia/jetson-agx-orin-64gb"
INPUT_NAME = "input"


class TvmError(RuntimeError):
    """A model TVM could not import, tune or build; the message carries the compiler's."""


class TargetError(ValueError):
    """A bad ``--target``/``tvm_target`` value (a usage error: exit code 2)."""


# ----------------------------------------------------------------------------- targets

def physical_cores() -> int:
    try:
        import psutil

        return psutil.cpu_count(logical=False) or os.cpu_count() or 1
    except ImportError:  # pragma: no cover - psutil is a core dependency
        return os.cpu_count() or 1


def threads_for(target) -> int:
    """CPU threads TVM's kernels should run with for ``target``: its ``num-cores`` (the
    schedules are tuned for that many), else the physical cores."""
    host = target
    if target is not None and target.kind.name != "llvm" and target.host is not None:
        host = target.host
    n = host.attrs.get("num-cores") if host is not None and host.kind.name == "llvm" else None
    return int(n) if n else physical_cores()


_threads_source = None   # set by the first configure_threads() call of this process


def configure_threads(target=None) -> dict:
    """Give TVM's CPU thread pool as many threads as the target has cores.

    Without ``TVM_NUM_THREADS`` TVM takes ``hardware_concurrency() / 2`` on x86 (it assumes
    two hyper-threads per core): 1 thread on this 2-vCPU machine, while the host target
    says ``num-cores`` 2. Tuning then measured every candidate on one core and the tuned
    build ran on one core, about 1.8x slower than with both. The pool reads the variable
    when it starts (the first parallel kernel), and tuning's runner processes inherit it,
    so call this before either. A value the user set is kept.

    Returns {"threads", "source"} for the records."""
    import tvm

    global _threads_source
    if _threads_source is None:   # first call in this process: decide once (convert, then load)
        if os.environ.get("TVM_NUM_THREADS"):
            _threads_source = "TVM_NUM_THREADS (set by the user)"
        else:
            os.environ["TVM_NUM_THREADS"] = str(threads_for(target))
            _threads_source = "target num-cores" if target is not None else "physical cores"
    source = _threads_source
    threads = int(os.environ["TVM_NUM_THREADS"])
    num = tvm.get_global_func("runtime.NumThreads", True)
    running = int(num()) if num is not None else threads
    out = {"threads": running, "source": source}
    if running != threads:  # say what really runs
        out["note"] = (f"TVM runs {running} thread(s), not TVM_NUM_THREADS={threads}: its pool "
                       "had started before, or it caps the count at the CPUs it sees")
    return out


def host_target_dict() -> dict:
    """The machine's own CPU as LLVM names it (e.g. ``znver5``), all physical cores."""
    from tvm.target import codegen

    return {"kind": "llvm", "mcpu": str(codegen.llvm_get_system_cpu()),
            "num-cores": physical_cores()}


def resolve_target(value: Any = None):
    """``host`` | ``jetson-agx-orin`` | a TVM target tag | a JSON object (text or dict)
    -> (tvm.target.Target, display name). Raises TargetError with the reason."""
    import tvm

    if value is None or value == "" or value == "host":
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
    elif isinstance(value, str) and value in _tags():
        return tvm.target.Target(value), value
    else:
        raise TargetError(
            f"unknown target '{value}': use 'host', '{JETSON_NAME}', a TVM target tag "
            f"(e.g. {JETSON_TAG}) or a JSON object such as "
            '\'{"kind": "llvm", "mcpu": "znver4", "num-cores": 8}\'')
    if not isinstance(d, dict) or "kind" not in d:
        raise TargetError("a JSON target must be an object with a \"kind\" "
                          '(e.g. {"kind": "llvm", "mcpu": "znver4", "num-cores": 8})')
    try:
        t = tvm.target.Target(d)
    except Exception as e:  # noqa: BLE001 - TVM's own message says what is wrong
        raise TargetError(f"TVM rejected the target {json.dumps(d)}: {_first_line(e)}") from None
    _check_llvm_cpu(t.host if t.host is not None and t.kind.name != "llvm" else t)
    return t, "json"


def _check_llvm_cpu(t) -> None:
    """TVM accepts any ``mcpu`` and LLVM later compiles for a generic CPU with only a
    warning; a typo would then silently produce a slow build."""
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


def _first_line(e: BaseException, limit: int = 400) -> str:
    s = str(e).strip()
    # TVM errors start with a long traceback; the useful line is the last non-empty one.
    lines = [ln for ln in s.splitlines() if ln.strip()]
    if not lines:
        return type(e).__name__
    msg = lines[-1] if len(lines) > 1 and ("Traceback" in lines[0] or "File " in s) else lines[0]
    return f"{type(e).__name__}: {msg.strip()[:limit]}"


# ----------------------------------------------------------------------------- import

def import_model(model, input_shape: tuple, importer: str = "auto", spec=None, cache=None):
    """torch module -> (Relax IRModule with weights bound, importer used, fallback note).

    ``importer``: ``auto`` (torch.export, then ONNX), ``torch.export`` or ``onnx``."""
    import torch

    errors = []
    if importer not in ("auto", "torch.export", "onnx"):
        raise TvmError(f"tvm_importer must be auto, torch.export or onnx (got '{importer}')")
    if importer in ("auto", "torch.export"):
        try:
            from tvm.relax.frontend.torch import from_exported_program

            x = torch.randn(*input_shape)
            with torch.no_grad():
                ep = torch.export.export(model, (x,))
            mod = from_exported_program(ep, keep_params_as_input=False,
                                        unwrap_unit_return_tuple=True)
            return mod, "torch.export", None
        except Exception as e:  # noqa: BLE001 - fall back to ONNX below
            errors.append(f"torch.export importer: {_first_line(e)}")
            if importer == "torch.export":
                raise TvmError("TVM import failed: " + errors[0]) from e
    try:
        mod = _import_onnx(model, input_shape, spec, cache)
        return mod, "onnx", (errors[0] if errors else None)
    except Exception as e:  # noqa: BLE001
        errors.append(f"onnx importer: {_first_line(e)}")
        raise TvmError("TVM import failed: " + " | ".join(errors)) from e


def _import_onnx(model, input_shape, spec=None, cache=None):
    import onnx
    from tvm.relax.frontend.onnx import from_onnx

    if spec is not None and cache is not None:
        # The suite's shared ONNX export (dynamic batch, cached); the shape is fixed below.
        from converters.onnxruntime import INPUT_NAME as ORT_INPUT, export_onnx

        art = export_onnx(spec, Path(cache))
        proto = onnx.load(art.path)
        name = ORT_INPUT
    else:
        import io

        import torch

        buf = io.BytesIO()
        torch.onnx.export(model, (torch.randn(*input_shape),), buf, dynamo=False,
                          opset_version=18, input_names=[INPUT_NAME], output_names=["logits"])
        proto = onnx.load_from_string(buf.getvalue())
        name = INPUT_NAME
    return from_onnx(proto, shape_dict={name: list(input_shape)}, keep_params_in_input=False)


# ----------------------------------------------------------------------------- lowering

LAYOUTS = ("NCHW", "NHWC")


def layout_for(target, db_dir=None, wanted: str | None = None) -> str:
    """The conv2d layout a build or a tuning session uses.

    ``wanted`` (the user's option) first; then the layout the database in ``db_dir`` was
    tuned in (its workloads exist only in that layout; a database from before layouts were
    recorded is NCHW); else NHWC on CPU (LLVM) targets and NCHW on GPUs. NHWC on CPU: with
    the channels innermost every conv vectorises over channels, and MobileNetV2 tuned in
    NHWC at 512 trials ran 8-29% faster than in NCHW (docs/tvm.md, "NHWC")."""
    if wanted:
        return wanted.upper()
    if db_dir is not None:
        recorded = read_db_meta(db_dir).get("layout")
        if recorded:
            return str(recorded).upper()
        if database_exists(db_dir):
            return "NCHW"
    return "NHWC" if target is not None and target.kind.name == "llvm" else "NCHW"


def _const_np(c):
    """numpy value of a Relax constant (``GenericConst.value`` in TVM 0.27, ``.data`` before)."""
    v = getattr(c, "value", None)
    if v is None:
        v = c.data
    return v.numpy()


def fold_batch_norm(mod):
    """conv2d(x, W) -> batch_norm(., gamma, beta, mean, var) with constant parameters becomes
    conv2d(x, W * s) + (beta - mean * s), s = gamma / sqrt(var + eps), computed here in
    float64 numpy. (TVM's FoldBatchnormToConv2D does the same but leaves the arithmetic to
    FoldConstant, which compiles and runs one TIR function per constant: minutes for a
    MobileNet on 2 cores.) The fused conv kernels then carry a bias add instead of four
    per-channel BN operations."""
    import numpy as np
    from tvm import relax
    from tvm.relax.dpl import TupleGetItemPattern, is_const, is_op, rewrite_call, wildcard

    x, w = wildcard(), is_const()
    conv = is_op("relax.nn.conv2d")(x, w)
    g, b, m, v = is_const(), is_const(), is_const(), is_const()
    bn = is_op("relax.nn.batch_norm")(conv, g, b, m, v)
    pattern = TupleGetItemPattern(bn, 0)

    def rewriter(expr, matches):
        call = matches[conv]
        attrs = call.attrs
        if attrs["kernel_layout"] != "OIHW" or attrs["data_layout"] != "NCHW" or \
                int(matches[bn].attrs["axis"]) != 1:
            return expr
        w0 = _const_np(matches[w])
        if w0.dtype != np.float32:
            return expr
        weight = w0.astype(np.float64)
        gamma, beta, mean, var = (_const_np(matches[t]).astype(np.float64)
                                  for t in (g, b, m, v))
        scale = gamma / np.sqrt(var + float(matches[bn].attrs["epsilon"]))
        if weight.shape[0] != scale.shape[0]:
            return expr
        new_w = (weight * scale[:, None, None, None]).astype(np.float32)
        bias = (beta - mean * scale).astype(np.float32).reshape(1, -1, 1, 1)
        out = relax.Call(call.op, (matches[x], relax.const(new_w)), attrs)
        return relax.op.add(out, relax.const(bias))

    for gv, func in list(mod.functions.items()):
        if isinstance(func, relax.Function):
            mod[gv] = rewrite_call(pattern, rewriter, func)
    return mod


def clip_as_min_max(mod):
    """``clip(x, lo, hi)`` -> ``minimum(maximum(x, lo), hi)`` with constant bounds.

    Relax's ConvertLayout has no layout rule for ``clip``: converting to NHWC wrapped every
    ReLU6 of MobileNet in a transpose back to NCHW and out again, each its own kernel, and
    cut the conv's fusion with its activation. Binary elementwise ops with a scalar follow
    any layout, so after this rewrite conv+bias+ReLU6 fuse into one NHWC kernel."""
    from tvm import relax

    from .relax_rewrite import rewrite_calls

    def bound(v):
        v = getattr(v, "value", v)
        return float(getattr(v, "value", v))

    def rule(bb, call):
        if getattr(call.op, "name", None) != "relax.clip":
            return None
        dtype = str(getattr(call.args[0].ty, "dtype", ""))
        if not dtype.startswith("float"):
            return None
        lo = relax.const(bound(call.args[1]), dtype)
        hi = relax.const(bound(call.args[2]), dtype)
        return relax.op.minimum(relax.op.maximum(call.args[0], lo), hi)

    return rewrite_calls(mod, rule)


def lower_for_tuning(mod, target, layout: str = "NCHW"):
    """Relax module -> fused Relax + TIR module whose PrimFuncs are the tuning workloads.

    ``layout``: the conv2d data layout TVM computes in (the model's input stays NCHW)."""
    import tvm
    from tvm import relax

    if layout not in LAYOUTS:
        raise TvmError(f"tvm_layout must be one of {', '.join(LAYOUTS)} (got '{layout}')")
    convert = [relax.transform.ConvertLayout({"relax.nn.conv2d": ["NHWC", "OHWI"]}),
               relax.transform.CanonicalizeBindings()] if layout == "NHWC" else []
    from . import fast_math

    mod = fold_batch_norm(mod)
    if layout == "NHWC":
        mod = clip_as_min_max(mod)
    with target:
        mod = tvm.transform.Sequential([
            relax.transform.DecomposeOpsForInference(),
            relax.transform.CanonicalizeBindings(),
            *convert,
        ])(mod)
        if fast_math.applies_to(target):
            mod = fast_math.rewrite(mod)
        return tvm.transform.Sequential([
            relax.transform.LegalizeOps(),
            relax.transform.AnnotateTIROpPattern(),
            relax.transform.FoldConstant(),
            relax.transform.FuseOps(),
            relax.transform.FuseTIR(),
            relax.transform.AttachAttrLayoutFreeBuffers(),
        ])(mod)


def apply_database(mod, target, db_dir: str | None):
    """Apply the best records of the tuning database in ``db_dir`` (if any) and fold the
    weight-layout rewrites the tuned schedules introduced into the constants."""
    from tvm import relax
    from tvm.s_tir import meta_schedule as ms

    if not db_dir or not database_exists(db_dir):
        return mod
    db = ms.database.JSONDatabase(work_dir=str(db_dir), allow_missing=False)
    with target, db:
        mod = relax.transform.MetaScheduleApplyDatabase(enable_warning=False)(mod)
        mod = relax.transform.SplitLayoutRewritePreproc()(mod)
        mod = relax.transform.FoldConstant()(mod)
    return mod


def compile_module(mod, target):
    import tvm

    with tvm.transform.PassContext(opt_level=3):
        return tvm.compile(mod, target=target)


# ----------------------------------------------------------------------------- tuning database

DB_WORKLOAD = "database_workload.json"
DB_RECORDS = "database_tuning_record.json"
DB_META = "tuning.json"


def db_dir_for(tuning_dir, target, model: str, input_size) -> Path:
    c, h, w = input_size
    return Path(tuning_dir) / target_slug(target) / f"{model}-{c}x{h}x{w}"


def database_exists(db_dir) -> bool:
    p = Path(db_dir)
    return (p / DB_WORKLOAD).is_file() and (p / DB_RECORDS).is_file() \
        and (p / DB_RECORDS).stat().st_size > 0


def database_fingerprint(db_dir) -> str:
    """Content hash of the records file ('none' without one): part of every cache key."""
    p = Path(db_dir) / DB_RECORDS
    if not database_exists(db_dir):
        return "none"
    h = hashlib.sha256()
    with open(p, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()[:16]


def read_db_meta(db_dir) -> dict:
    p = Path(db_dir) / DB_META
    if p.is_file():
        try:
            return json.loads(p.read_text())
        except json.JSONDecodeError:
            return {}
    return {}


def _records_by_workload(db_dir) -> tuple[list[str], dict[int, list[float]]]:
    """(workload structural hashes by line, {workload index: [median run seconds, ...]})."""
    p = Path(db_dir)
    hashes = []
    if (p / DB_WORKLOAD).is_file():
        for line in (p / DB_WORKLOAD).read_text().splitlines():
            if line.strip():
                hashes.append(str(json.loads(line)[0]))
    recs: dict[int, list[float]] = {}
    if (p / DB_RECORDS).is_file():
        with open(p / DB_RECORDS) as f:
            for line in f:
                if not line.strip():
                    continue
                try:
                    idx, rec = json.loads(line)
                except (json.JSONDecodeError, ValueError):
                    continue  # a torn last line after a kill: ignored, as MetaSchedule does
                secs = rec[1] if len(rec) > 1 and rec[1] else [1e10]
                secs = sorted(float(s) for s in secs)
                recs.setdefault(int(idx), []).append(secs[len(secs) // 2])
    return hashes, recs


def task_hash(task_mod) -> str:
    """The structural hash MetaSchedule's JSON database files a workload under."""
    import tvm_ffi

    return str(tvm_ffi.structural_hash(task_mod))


def extract_tasks(lowered_mod, target):
    from tvm.s_tir import meta_schedule as ms

    return ms.relax_integration.extract_tasks(lowered_mod, target)


def tuning_summary(db_dir, tasks, target=None) -> dict:
    """What the database holds for these tasks: trial count, tasks with a record, and the
    tuner's own latency estimate (sum over tasks of weight x best measured run)."""
    hashes, recs = _records_by_workload(db_dir) if db_dir else ([], {})
    by_hash: dict[str, list[float]] = {}
    for i, hsh in enumerate(hashes):
        by_hash.setdefault(hsh, []).extend(recs.get(i, []))
    trials = tuned = 0
    est = 0.0
    est_complete = True
    per_task = []
    for t in tasks:
        runs = by_hash.get(task_hash(t.dispatched[0]), [])
        ok = [r for r in runs if r < 1e9]
        trials += len(runs)
        if ok:
            tuned += 1
            est += t.weight * min(ok)
        else:
            est_complete = False
        per_task.append({"name": t.task_name, "weight": int(t.weight), "trials": len(runs),
                         "best_us": round(min(ok) * 1e6, 2) if ok else None})
    return {"trials": trials, "tasks_total": len(tasks), "tasks_tuned": tuned,
            "estimate_ms": round(est * 1e3, 4) if est_complete and tasks else None,
            "per_task": per_task}


# ----------------------------------------------------------------------------- build

def build_library(model, input_size, batch: int, target, *, db_dir=None, importer="auto",
                  layout="NCHW", spec=None, cache=None, out_path: Path | None = None) -> dict:
    """Import, lower, apply the database and compile one static batch size.

    Returns {"executable", "importer", "importer_note", "tuning", "timings"}; the executable is
    also exported to ``out_path`` when given (host-native export)."""
    timings = {}
    t0 = time.perf_counter()
    shape = (batch, *input_size)
    mod, used, note = import_model(model, shape, importer, spec=spec, cache=cache)
    timings["import_s"] = time.perf_counter() - t0
    t = time.perf_counter()
    try:
        lowered = lower_for_tuning(mod, target, layout)
        tasks = extract_tasks(lowered, target)
        summary = tuning_summary(db_dir, tasks) if db_dir and database_exists(db_dir) \
            else tuning_summary(None, tasks)
        applied = apply_database(lowered, target, db_dir)
        timings["lower_s"] = time.perf_counter() - t
        t = time.perf_counter()
        ex = compile_module(applied, target)
    except TvmError:
        raise
    except Exception as e:  # noqa: BLE001 - the compiler's message goes into the record
        raise TvmError(f"TVM build failed ({used} importer): {_first_line(e, 1500)}") from e
    timings["compile_s"] = time.perf_counter() - t
    if out_path is not None:
        t = time.perf_counter()
        out_path.parent.mkdir(parents=True, exist_ok=True)
        tmp = out_path.with_name(out_path.name + f".{os.getpid()}.part.so")
        ex.export_library(str(tmp))
        os.replace(tmp, out_path)
        timings["export_s"] = time.perf_counter() - t
    return {"executable": ex, "importer": used, "importer_note": note, "tuning": summary,
            "timings": {k: round(v, 3) for k, v in timings.items()}}


def database_profile(db_dir) -> tuple[str, str]:
    """(layout, design space) a database was tuned in, from its ``tuning.json``: before
    layouts were recorded NCHW, before design spaces were recorded "default"."""
    return _profile_of(read_db_meta(db_dir) if db_dir else {})


def _profile_of(meta: dict) -> tuple[str, str]:
    wide = any((s.get("design_space") or {}).get("wide-vector")
               for s in meta.get("sessions", []))
    return str(meta.get("layout") or "NCHW").upper(), "wide-vector" if wide else "default"


def tuning_meta(db_dir, summary: dict) -> dict:
    """The ``tuning`` block every record carries."""
    meta = read_db_meta(db_dir) if db_dir else {}
    status = "tuned" if summary.get("tasks_tuned") else "untuned"
    tuning_s = meta.get("tuning_s") if status == "tuned" else None
    return {"status": status, "trials": int(summary.get("trials", 0)) if status == "tuned" else 0,
            "tuning_s": round(tuning_s, 1) if isinstance(tuning_s, (int, float)) else None,
            "database": str(db_dir) if db_dir else None,
            "tasks_tuned": summary.get("tasks_tuned", 0),
            "tasks_total": summary.get("tasks_total", 0),
            "tuner_estimate_ms": summary.get("estimate_ms"),
            "design_space": _profile_of(meta)[1] if status == "tuned" else None}
