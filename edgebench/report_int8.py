"""The report's INT8 section: what each INT8 variant costs in accuracy against FP32 (MLPerf's
99% rule), how much faster it is than its FP32 counterpart, the calibration behind it, and,
for a model that breaks the rule, the layers that drift most and what usually helps."""
from __future__ import annotations

from .report_format import fmt, md_table

HELP = ("What usually helps: keep the layers that drift most in FP32 (`--int8-exclude NODE ...`, "
        "candidates in the table below), calibrate finer (more images with "
        "`--int8-calib-images`, another `--int8-calib-method`: percentile or minmax), or "
        "quantization-aware training (out of edgebench's scope).")


def _p50(records: list[dict], model: str, variant: str) -> float | None:
    for r in records:
        if (r["model"], r["variant"], r["task"], r["status"]) == (model, variant, "latency", "ok"):
            return (r.get("latency_ms") or {}).get("p50")
    return None


def _best(records: list[dict], model: str, variant: str) -> float | None:
    for r in records:
        if (r["model"], r["variant"], r["task"]) == (model, variant, "throughput") \
                and r["status"] in ("ok", "partial"):
            return r.get("samples_per_s")
    return None


def _ratio(a, b) -> str:
    return f"x{a / b:.2f}" if a and b else "–"


def section(records: list[dict], meta: dict) -> list[str]:
    variants = meta.get("variants", {})
    parity = [r for r in records if r["task"] == "parity" and r.get("int8_cost")]
    if not parity:
        return []
    rows, flagged, not_judged = [], [], set()
    for r in parity:
        c, m, v = r["int8_cost"], r["model"], r["variant"]
        base = (variants.get(v) or {}).get("compares_with") or ""
        int8 = (r.get("variant_meta") or {}).get("int8", {})
        cal = int8.get("calibration", {})
        verdict = {"pass": "pass", "fail": "**FAIL**", None: "–"}[c.get("mlperf_99")]
        if c.get("mlperf_99") is None:
            not_judged.add(c.get("mlperf_99_reason", ""))
        if c.get("mlperf_99") == "fail" or r["status"] == "failed":
            flagged.append(r)
        rows.append([m, v, r["status"], fmt(c.get("top1_agreement"), 3),
                     fmt(c.get("fp32_top1")), fmt(c.get("int8_top1")), fmt(c.get("top1_delta")),
                     fmt(c.get("top5_delta")), verdict,
                     f"{_ratio(_p50(records, m, v), _p50(records, m, base))} vs {base}" if base else "–",
                     f"{_ratio(_best(records, m, v), _best(records, m, base))} vs {base}" if base else "–",
                     (f"{cal.get('n')} {cal.get('method')} ({cal.get('source')}); "
                      f"{int8.get('form', 'tensorrt')} form") if cal else "–"])
    out = ["## INT8: accuracy cost and speed", "",
           "Each INT8 variant against the FP32 reference on the same images (top-1 deltas in "
           "points, INT8 minus FP32); MLPerf's rule: INT8 keeps >= 99% of FP32's top-1. "
           "p50 and samples/s as a ratio to the variant's FP32 counterpart in this run "
           "(below 1 for p50 is faster). Parity for INT8 is its own rule (top-1 agreement and "
           "mean logit cosine; `edgebench.metrics.parity_verdict`). Both forms come from one "
           "calibration: the TensorRT INT8 variants run the symmetric tensorrt form, "
           "onnxruntime-int8 the cpu form, the fast one on ONNX Runtime's CPU provider "
           "(`--int8-form tensorrt` runs the other; docs/int8.md).", "",
           md_table(["model", "variant", "parity", "top-1 agree", "FP32 top1 %", "INT8 top1 %",
                     "Δ top1", "Δ top5", "MLPerf 99%", "p50 ratio", "samples/s ratio",
                     "calibration"], rows), ""]
    for why in sorted(w for w in not_judged if w):
        out.append(f"- MLPerf's 99% rule not judged: {why}.")
    for r in flagged:
        c = r["int8_cost"]
        what = ("fails INT8 parity" if r["status"] == "failed"
                else f"breaks MLPerf's 99% rule ({c.get('mlperf_99_reason')})")
        out += ["", f"### {r['model']} · {r['variant']}: {what}", "", HELP]
        drift = c.get("layer_drift")
        if drift and drift.get("worst"):
            out += ["", f"Layers that drift most from FP32 ({drift['method']}, "
                        f"{drift['n_images']} images):", "",
                    md_table(["node", "op", "SQNR vs FP32 dB", "SQNR of its own Q/DQ dB"],
                             [[d["node"] or d["tensor"], d["op_type"], fmt(d["sqnr_vs_fp32_db"]),
                               fmt(d["sqnr_local_db"])] for d in drift["worst"][:8]])]
    return out + [""]
