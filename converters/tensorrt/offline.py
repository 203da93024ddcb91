"""MLPerf Offline on the whole accelerator (``--trt-offline-all-accelerators``): the GPU
engine and one engine per DLA core serve LoadGen's Offline query at once, fed from one queue
by ``edgebench/mlperf/multi.py``. The pure decisions (which devices, which builder settings,
how a batch splits into a DLA engine's static sizes) and the converter's two steps: building
the DLA engines at convert and attaching their predictors at load."""
from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from converters.base import Artifact, ModelSpec, OutOfMemory, Predictor, SkipVariant
from edgebench.cache_integrity import CacheCorrupted

from .build import dla_core_count, read_engine
from .plan import TrtPlan, builder_settings, measured_batches, plan_for, variant_options

if TYPE_CHECKING:
    from .predictor import TrtPredictor


GPU_DEVICE = "gpu"


class OfflineDevices(NamedTuple):
    """Which devices serve LoadGen's Offline query: (name, DLA core or None for the GPU)."""

    devices: list[tuple[str, int | None]]
    reason: str         # why only the GPU serves ("" when every DLA core serves too)


def offline_devices_plan(n_dla: int, trt_version: str, options: dict | None,
                         precision: str = "fp16") -> OfflineDevices:
    """The devices ``--trt-offline-all-accelerators`` serves Offline from: the GPU engine
    always, then ``dla<k>`` for each of the ``n_dla`` cores (``Builder.num_DLA_cores``) where
    this TensorRT (with the options' FP16 route) has DLA. ``options``: ``ModelSpec.options``.
    Never an error for want of DLA: gpu only, and ``reason`` says why."""
    gpu_only: list[tuple[str, int | None]] = [(GPU_DEVICE, None)]
    opts = variant_options(options)
    if not opts["offline_all_accelerators"]:
        return OfflineDevices(gpu_only, "--trt-offline-all-accelerators not given")
    plan = plan_for(trt_version, opts["fp16_mode"], precision)
    if plan.no_dla:
        return OfflineDevices(gpu_only, f"TensorRT {trt_version}: {plan.no_dla}")
    if n_dla <= 0:
        return OfflineDevices(gpu_only, f"this device has {n_dla} DLA cores "
                                        "(Builder.num_DLA_cores): the GPU serves alone")
    return OfflineDevices([*gpu_only, *((f"dla{k}", k) for k in range(n_dla))], "")


def offline_dla_settings(opts: dict, measured: dict, plan: TrtPlan, input_size: Iterable[int],
                         dla_core: int, offline_batch: int | None = None,
                         precision: str | None = None) -> dict:
    """Builder settings of the Offline engine for DLA core ``dla_core``: what
    ``--trt-dla-core <dla_core>`` builds (DLA default device, GPU fallback on, one static
    profile per measured batch size), plus a static profile at ``offline_batch``
    (``--mlperf-offline-batch``) when given. ``opts`` from ``variant_options``."""
    dla_opts = {**opts, "dla_core": int(dla_core), "gpu_fallback": True}
    if offline_batch:
        measured = {**measured, "offline": int(offline_batch)}
    return builder_settings(dla_opts, measured, plan, input_size, precision)


def offline_engines(conv, spec: ModelSpec, folder: Path, onnx_art: Artifact, plan: TrtPlan,
                    opts: dict, version: str, gpu: str, cc: str) -> dict:
    """``conv`` (a TensorRT converter) with --trt-offline-all-accelerators: one engine per DLA core beside the GPU's, from the
    same source ONNX, each built (or reused) as ``--trt-dla-core N`` would be, plus a static
    profile at ``--mlperf-offline-batch`` when given. What the record says of them; a DLA
    engine that cannot be built is left out, with the reason."""
    n_dla = dla_core_count()
    wanted = offline_devices_plan(n_dla, version, spec.options, conv.precision)
    measured = measured_batches(spec.options)
    offline_batch = (spec.options or {}).get("mlperf_offline_batch")
    engines: dict[str, dict] = {}
    not_used: dict[str, str] = {}
    for name, core in wanted.devices:
        if core is None:
            continue
        try:
            settings = offline_dla_settings(opts, measured, plan, spec.input_size, core,
                                            offline_batch, conv.precision)
            art = conv._engine(spec, folder, onnx_art, plan, settings, version, gpu, cc)
        except CacheCorrupted:
            raise
        except (SkipVariant, OutOfMemory, ValueError, RuntimeError) as e:
            not_used[name] = f"{type(e).__name__}: {e}"[:500]
            continue
        m = art.meta
        engines[name] = {"dla_core": core, "engine_key": m["engine_key"], "path": art.path,
                         "cached": art.cached, "convert_s": round(art.convert_s, 3),
                         "build_s": m.get("build_s"), "builder": m.get("builder"),
                         "trt_profiles": m.get("trt_profiles"), "dla": m.get("dla"),
                         "batches": settings["batches"]}
        if m.get("cache_rebuilt"):
            engines[name]["cache_rebuilt"] = m["cache_rebuilt"]
    return {"devices": [GPU_DEVICE, *engines], "num_dla_cores": n_dla,
            "planned": [name for name, _ in wanted.devices],
            "gpu_only_because": wanted.reason or None, "not_used": not_used,
            "engines": engines,
            "batch": ("the cell fits the Offline batch to the GPU predictor; a DLA engine "
                      "runs it in one call when it has a static profile at that size, "
                      "else in pieces of its sizes, largest first"),
            "scheduler": ("edgebench/mlperf/multi.py: one thread per device takes the next "
                          "batch from one queue when free; mlperf.device_shares counts "
                          "each device's samples")}


def attach_offline(predictor: TrtPredictor, plan: TrtPlan, opts: dict,
                   offline: dict | None) -> None:
    """``predictor.offline_devices``: the GPU engine's predictor and one ``TrtPredictor``
    per DLA engine ``convert`` made (own runtime, context, buffers, stream), and the
    record's ``offline_accelerators`` with the devices that really serve."""
    from .predictor import TrtPredictor

    offline = dict(offline or {"engines": {}, "not_used": {},
                               "gpu_only_because": "convert() recorded no DLA engines"})
    devices: dict[str, Predictor] = {GPU_DEVICE: predictor}
    not_used = dict(offline.get("not_used") or {})
    engines: dict[str, dict] = {}
    for name, e in (offline.get("engines") or {}).items():
        run = {"batch_sizes": None, "cuda_graph": opts["cuda_graph"],
               "dla_core": e["dla_core"], "split_batches": True}
        try:
            dla = TrtPredictor(read_engine(e["path"]), plan,
                               {"device": name, "engine_key": e["engine_key"]}, run)
        except CacheCorrupted:
            raise
        except (OutOfMemory, RuntimeError, ValueError) as err:
            not_used[name] = f"load: {type(err).__name__}: {err}"[:500]
            continue
        devices[name] = dla
        engines[name] = {**e, "batch_sizes": dla.batch_sizes,
                         "engine_layers": dla.meta.get("engine_layers"),
                         "split_batches": dla.meta.get("split_batches")}
    predictor.offline_devices = devices
    predictor.meta["offline_accelerators"] = {
        **offline, "devices": list(devices), "not_used": not_used, "engines": engines,
        "engine_keys": {GPU_DEVICE: predictor.meta.get("engine_key"),
                        **{n: e["engine_key"] for n, e in engines.items()}}}
