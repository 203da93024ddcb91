"""The lines report.md sets around its tables: the warnings section, the notes under each
model's table (a TVM build's tuned batch sizes) and what the memory columns hold. Each from
the records alone."""
from __future__ import annotations

from .report_format import OK_STATUSES, latest_cells


def warning_lines(records: list[dict], meta: dict) -> list[str]:
    out = []
    weights = {m: i.get("weights") for m, i in meta.get("models", {}).items()}
    rnd = [m for m, w in weights.items() if str(w).startswith("random")]
    if rnd:
        out.append(f"**Random weights** for {', '.join(rnd)}: pretrained weights were not "
                   "available, so Top-1/Top-5 are meaningless; latency, throughput, memory and "
                   "parity (logit error) still are.")
    if meta.get("data", {}).get("source") == "sample":
        out.append("**Bundled 16-image sample**: not an accuracy benchmark. Use `--data` with "
                   "ImageNet val for Top-1/Top-5.")
    for r in latest_cells(records).values():
        if r["task"] == "parity" and "max_abs_diff" in r:
            if (r.get("ref_distinct_classes") or 99) < 5:
                out.append(f"{r['model']} / {r['variant']}: the reference predicts only "
                           f"{r['ref_distinct_classes']} distinct classes on these images, so "
                           "top-1 agreement says little; judge parity by the logit error.")
            scale = r.get("ref_logit_absmax")
            atol = (meta.get("config") or {}).get("parity_atol") or 1e-3
            if scale is not None and scale < 100 * atol:
                out.append(f"{r['model']} / {r['variant']}: the reference logits are small "
                           f"(max |logit| {scale:.3g}), so the absolute tolerance {atol:g} is "
                           f"loose here; the relative error max|d|/max|logit| is "
                           f"{r.get('max_rel_diff', r['max_abs_diff'] / max(scale, 1e-30)):.2e}.")
            if r["status"] == "failed":
                out.append(f"**{r['model']} / {r['variant']} failed parity** ({r.get('criterion')}): "
                           "its accuracy and speed figures come from a non-equivalent model.")
    try:
        from .telemetry.device_state import clock_warnings
        for rec in records:
            out.extend(clock_warnings(meta.get("device_state", {}), rec.get("device_states") or []))
    except Exception:  # noqa: BLE001 - the clock check is optional
        pass
    return list(dict.fromkeys(out))


def model_line(info: dict | None) -> str:
    """What the model is, under its heading: a zoo model of ImageNet's head says nothing new;
    a head of its own, a factory or an ONNX file names its kind, classes, outputs, content
    hash, preprocessing and parity reference."""
    if not info or (info.get("kind") in ("timm", "torchvision") and info.get("num_classes") == 1000
                    and not info.get("weights_sha256")):
        return ""
    kind = {"timm": "timm architecture", "torchvision": "torchvision architecture",
            "factory": "your factory", "onnx": "ONNX file"}.get(info.get("kind"), info.get("kind"))
    outs = info.get("outputs") or []
    classes = (f"{info['num_classes']} classes" if info.get("num_classes") is not None else
               "outputs " + ", ".join(f"{o['name']} {o['shape']}" for o in outs)
               + " (not one [batch, classes] tensor: no Top-1/Top-5)")
    sha = info.get("weights_sha256") or info.get("onnx_sha256") or info.get("factory_sha256")
    parts = [f"{kind} {info.get('architecture')}", classes,
             *([f"sha256 {sha[:12]}"] if sha else []),
             f"input {'x'.join(map(str, info.get('input_size') or []))}, preprocessing: "
             f"{info.get('preprocess_source')}",
             f"parity reference: {info.get('reference')}",
             *([f"labels: {info['labels']}"] if info.get("labels") else [])]
    return "Model: " + "; ".join(parts) + "."


def row_label(r: dict) -> str:
    """A row's variant, with its nvpmodel power mode when the run swept modes."""
    return r["variant"] + (f" @ {r['power_mode']}" if r.get("power_mode") else "")


def tuned_batch_notes(records: list[dict], model: str) -> list[str]:
    """A line for each variant whose tuning database holds tuned kernels for some batch sizes
    only (a TVM build's ``variant_meta.tuning.batch_sizes``): its throughput search keeps to
    them (its samples/s stop there because another size would run untuned kernels, not because
    the gain had stopped), or, where it ran others (an artifact exported at untuned sizes
    alone runs those), which ran untuned."""
    out = []
    for r in latest_cells(records).values():
        tuned = ((r.get("variant_meta") or {}).get("tuning") or {}).get("batch_sizes")
        if r["model"] != model or r["task"] != "throughput" or not tuned \
                or r["status"] not in OK_STATUSES:
            continue
        sizes = ", ".join(map(str, tuned))
        untuned = [b["batch_size"] for b in r.get("by_batch") or () if b["batch_size"] not in tuned]
        if untuned:
            out.append(f"- {row_label(r)}: throughput's batch sizes {', '.join(map(str, untuned))} "
                       f"ran with untuned kernels (its tuning database holds tuned kernels for "
                       f"{sizes}).")
            continue
        out.append(f"- {row_label(r)}: throughput searched only the batch sizes its tuning database "
                   f"holds tuned kernels for ({sizes}); another would run untuned. "
                   f"`python -m edgebench.tune --model {model} --batch-size {2 * max(tuned)}` "
                   "tunes another size into the same database.")
    return out


def memory_notes() -> list[str]:
    from .report_format import COLUMN_NOTES

    return ["Memory columns: **peak RSS** " + COLUMN_NOTES["peak_rss_mb"] + "; **system mem** "
            + COLUMN_NOTES["system_memory_mean_mb"] + "; **GPU/NvMap** "
            + COLUMN_NOTES["device_memory_peak_mb"] + ". Peaks and baselines of each are in "
            "summary.csv.", ""]
