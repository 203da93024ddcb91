"""The TensorRT variant's own options and the batch sizes its engine serves: the options'
checks, the throughput search's sizes, the batches each task measures, the optimisation
profile's min/opt/max, and the DLA's batch limit. (plan.py: the TensorRT version's plan and
the builder settings built from these.)"""
from __future__ import annotations

DEFAULT_OPT_BATCH = 8
# The throughput search cap when the run gives none (the variant used outside a run).
DEFAULT_MAX_BATCH = 64
# "The maximum supported batch size is 4096" (DLA general restrictions); the builder's own
# figure (Builder.max_DLA_batch_size) is what the build checks.
DLA_MAX_BATCH_DOCUMENTED = 4096


def _int_option(o: dict, key: str, flag: str, minimum: int) -> int | None:
    v = o.get(key)
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, int):
        raise ValueError(f"{flag} {v!r}: must be an integer >= {minimum}")
    if v < minimum:
        raise ValueError(f"{flag} {v}: must be >= {minimum}")
    return v


def variant_options(spec_options: dict | None) -> dict:
    """The variant's own settings from ``ModelSpec.options`` (the CLI's --trt-* flags), checked:
    ValueError naming the flag for a value that cannot be right anywhere."""
    o = spec_options or {}
    mx = _int_option(o, "trt_max_batch", "--trt-max-batch", 1)
    opt = _int_option(o, "trt_opt_batch", "--trt-opt-batch", 1)
    dla_core = _int_option(o, "trt_dla_core", "--trt-dla-core", 0)
    fp16_mode = o.get("trt_fp16_mode") or "auto"
    if fp16_mode not in ("auto", "flag", "onnx"):
        raise ValueError(f"--trt-fp16-mode must be auto, flag or onnx, not {fp16_mode!r}")
    if mx is not None and opt is not None and opt > mx:
        raise ValueError(f"--trt-opt-batch {opt} is above --trt-max-batch {mx} (TensorRT needs "
                         "min <= opt <= max)")
    if dla_core is None and o.get("trt_dla_no_gpu_fallback"):
        raise ValueError("--trt-dla-no-gpu-fallback needs --trt-dla-core N")
    offline_all = bool(o.get("trt_offline_all_accelerators"))
    if offline_all and dla_core is not None:
        raise ValueError(f"--trt-offline-all-accelerators and --trt-dla-core {dla_core} cannot "
                         "be combined: the first serves Offline from the GPU engine and one "
                         "engine per DLA core, the second builds the variant's only engine "
                         "for one DLA core; give one of them")
    out = {"trt_max_batch": mx, "trt_opt_batch": opt,
           "workspace_mb": _int_option(o, "trt_workspace_mb", "--trt-workspace-mb", 1),
           "fp16_mode": fp16_mode, "dla_core": dla_core,
           "gpu_fallback": not o.get("trt_dla_no_gpu_fallback"),
           "cuda_graph": bool(o.get("trt_cuda_graph")),
           "offline_all_accelerators": offline_all}
    return out


def search_sizes(cap: int) -> list[int]:
    """The throughput search's batch sizes: 1, 2, 4, ... while <= cap (``measure.throughput``;
    its out-of-memory step-downs fall between two of these)."""
    out, b = [], 1
    while b <= cap:
        out.append(b)
        b *= 2
    return out


def measured_batches(spec_options: dict | None) -> dict:
    """The batch sizes a cell of this run measures. The run gives the throughput cap in
    ``options["max_batch"]`` (the worker passes the run profile's throughput max_batch) and
    the accuracy batch in ``options["accuracy_batch"]``; without the latter, the named
    run profile's (``options["profile"]``) is used."""
    o = spec_options or {}
    cap, cap_from = o.get("max_batch"), "the run profile's throughput max_batch"
    if not cap:
        cap, cap_from = DEFAULT_MAX_BATCH, f"default {DEFAULT_MAX_BATCH} (no run profile given)"
    acc, acc_from = o.get("accuracy_batch"), "the run profile's accuracy_batch"
    if not acc and o.get("profile"):
        from edgebench.profiles import PROFILES

        prof = PROFILES.get(str(o["profile"]))
        if prof:
            acc, acc_from = prof["accuracy_batch"], f"profile '{o['profile']}' accuracy_batch"
    if not acc:
        acc, acc_from = None, "unknown (no run profile given)"
    cap = int(cap)
    return {"latency": 1, "accuracy": acc, "parity": acc, "throughput": search_sizes(cap),
            "throughput_cap": cap, "throughput_cap_from": cap_from, "accuracy_from": acc_from}


def batch_plan(opts: dict, measured: dict, dla: bool) -> dict:
    """The engine's batch range and the sizes the predictor offers the measurements (see the
    module doc). ``opts`` from ``variant_options``, ``measured`` from ``measured_batches``."""
    cap, acc = measured["throughput_cap"], measured["accuracy"]
    given_max, given_opt = opts["trt_max_batch"], opts["trt_opt_batch"]
    notes: list[str] = []
    if given_max is not None:
        mx, mx_from = given_max, "--trt-max-batch"
    else:
        mx = max(cap, acc or 1)
        mx_from = f"{measured['throughput_cap_from']} ({cap})"
        if acc and acc > cap:
            mx_from += f", raised to the accuracy batch {acc}"
    offline = measured.get("offline")        # offline_dla_settings only: the Offline batch
    wanted = sorted({1, *measured["throughput"], *([acc] if acc else []),
                     *([offline] if offline else [])})
    if mx < cap:
        notes.append(f"the engine's max batch {mx} ({mx_from}) is below this run's throughput "
                     f"search cap {cap}: the search stops at {mx}")
    if acc and acc > mx:
        runs_at = max(b for b in [*search_sizes(mx), mx] if b <= acc)
        notes.append(f"the accuracy/parity batch {acc} is above the engine's max batch {mx}: "
                     f"they run at batch {runs_at}")
    if dla:
        sizes = sorted({b for b in wanted if b <= mx} | ({mx} if mx < cap else set()))
        if given_opt is not None:
            notes.append(f"--trt-opt-batch {given_opt} not used: DLA profiles are static "
                         "(min = opt = max)")
        if offline and offline > mx:
            notes.append(f"the Offline batch {offline} is above the engine's max batch {mx}: "
                         "it runs in pieces of the static sizes")
        if mx > sizes[-1]:
            notes.append(f"DLA: one static profile per measured batch size, none above "
                         f"{sizes[-1]} (--trt-max-batch {mx} is above every size this run "
                         "measures)")
        return {"dynamic": False, "max_batch": sizes[-1], "max_batch_from": mx_from,
                "opt_batch": None, "opt_batch_from": "DLA: static profiles (min = opt = max)",
                "profile_batches": [[b, b, b] for b in sizes], "measured": wanted,
                "run_batch_sizes": sizes, "notes": notes}
    if given_opt is not None:
        opt, opt_from = given_opt, "--trt-opt-batch"
    else:
        opt, opt_from = DEFAULT_OPT_BATCH, f"default {DEFAULT_OPT_BATCH}"
    if opt > mx:
        notes.append(f"opt batch {opt} ({opt_from}) lowered to the max batch {mx}")
        opt, opt_from = mx, f"{opt_from}, lowered to the max batch"
    if mx >= cap and (not acc or acc <= mx):
        run_sizes = None      # any size 1..mx: the search and every step-down fit
    else:
        run_sizes = sorted({*search_sizes(mx), mx, *([acc] if acc and acc <= mx else [])})
    return {"dynamic": True, "max_batch": mx, "max_batch_from": mx_from,
            "opt_batch": opt, "opt_batch_from": opt_from, "profile_batches": [[1, opt, mx]],
            "measured": wanted, "run_batch_sizes": run_sizes, "notes": notes}


def dla_batch_check(sizes: list[int], max_dla_batch: int, gpu_fallback: bool) -> str:
    """A note for the record when some batch sizes exceed the DLA's max batch (they run on
    the GPU with GPU fallback); ValueError without fallback (the build would fail)."""
    over = [b for b in sizes if b > max_dla_batch]
    if not over:
        return ""
    if not gpu_fallback:
        raise ValueError(f"batch sizes {over} exceed the DLA's max batch {max_dla_batch} "
                         "(Builder.max_DLA_batch_size) and GPU fallback is off: give "
                         f"--trt-max-batch {max_dla_batch} or less")
    return (f"batch sizes {over} exceed the DLA's max batch {max_dla_batch} "
            "(Builder.max_DLA_batch_size): their layers run on the GPU (GPU fallback)")


def split_batch(n: int, sizes: list[int]) -> list[int]:
    """A batch of ``n`` as consecutive pieces the engine has static profiles for (``sizes``),
    largest first: ``[n]`` when ``n`` is one of them. ValueError when ``sizes`` cannot make
    ``n`` (a DLA engine always has size 1, so it always can)."""
    if n < 1:
        raise ValueError(f"batch {n}: must be >= 1")
    if n in sizes:
        return [n]
    pieces, rest = [], n
    for s in sorted({int(b) for b in sizes if b >= 1}, reverse=True):
        while rest >= s:
            pieces.append(s)
            rest -= s
    if rest:
        raise ValueError(f"batch {n} cannot be made of the engine's static sizes {sorted(sizes)}")
    return pieces
