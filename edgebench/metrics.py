"""Metric definitions as pure functions on arrays (what each figure of the report is:
docs/reading-the-report.md#the-table-of-each-model)."""
from __future__ import annotations

import numpy as np

PERCENTILES = (50, 90, 95, 99)


def latency_summary(ms: np.ndarray, n_boot: int = 2000, seed: int = 0) -> dict:
    """min/mean/max, p50/p90/p95/p99 and a bootstrap 95% CI of p50 (percentile method)."""
    ms = np.asarray(ms, dtype=np.float64)
    out = {"mean": float(ms.mean()), "min": float(ms.min()), "max": float(ms.max())}
    for p, v in zip(PERCENTILES, np.percentile(ms, PERCENTILES)):
        out[f"p{p}"] = float(v)
    rng = np.random.default_rng(seed)
    boots = np.median(rng.choice(ms, size=(n_boot, ms.size), replace=True), axis=1)
    lo, hi = np.percentile(boots, [2.5, 97.5])
    out["ci95_low"], out["ci95_high"] = float(lo), float(hi)
    out["std"] = float(ms.std(ddof=1)) if ms.size > 1 else 0.0
    return {k: round(v, 4) for k, v in out.items()}


def topk_correct(logits: np.ndarray, labels: np.ndarray, k: int) -> np.ndarray:
    """Per-image bool: is the label among the k highest logits?"""
    topk = np.argsort(-logits, axis=1)[:, :k]
    return (topk == labels[:, None]).any(axis=1)


def parity(ref, out, names: list[str] | None = None) -> dict:
    """Compare a variant's logits with the reference's on the same images.

    top1_agreement: same arg-max; top5_agreement: same set of 5 highest classes;
    cosine_min: the smallest per-image cosine similarity of the logit vectors.
    A model whose output is not one [batch, classes] tensor (several outputs, given as
    tuples, or a map) is compared tensor by tensor (``parity_tensors``)."""
    if isinstance(ref, tuple) or isinstance(out, tuple) or np.ndim(ref) != 2:
        return parity_tensors(ref, out, names)
    ref = np.asarray(ref, dtype=np.float64)
    out = np.asarray(out, dtype=np.float64)
    if ref.shape != out.shape:
        raise ValueError(f"logit shapes differ: reference {ref.shape}, variant {out.shape}")
    diff = np.abs(ref - out)
    top5_r = np.sort(np.argsort(-ref, axis=1)[:, :5], axis=1)
    top5_o = np.sort(np.argsort(-out, axis=1)[:, :5], axis=1)
    ref_absmax = float(np.abs(ref).max())
    cos = (ref * out).sum(1) / (np.linalg.norm(ref, axis=1) * np.linalg.norm(out, axis=1) + 1e-30)
    return {
        "n_images": int(ref.shape[0]),
        "top1_agreement": float((ref.argmax(1) == out.argmax(1)).mean()),
        "top5_agreement": float((top5_r == top5_o).all(1).mean()),
        "max_abs_diff": float(diff.max()),
        "mean_abs_diff": float(diff.mean()),
        "cosine_min": float(cos.min()),
        "cosine_mean": float(cos.mean()),
        "ref_logit_absmax": ref_absmax,
        # Scale-free: random-weight models can have tiny logits that pass any absolute atol.
        "max_rel_diff": float(diff.max() / max(ref_absmax, 1e-30)),
        "ref_distinct_classes": int(np.unique(ref.argmax(1)).size),
        "non_finite": int((~np.isfinite(out)).sum()),
    }


def _tensor_diff(ref: np.ndarray, out: np.ndarray) -> dict:
    ref = np.asarray(ref, dtype=np.float64)
    out = np.asarray(out, dtype=np.float64)
    if ref.shape != out.shape:
        raise ValueError(f"output shapes differ: reference {ref.shape}, variant {out.shape}")
    diff = np.abs(ref - out)
    r, o = ref.reshape(len(ref), -1), out.reshape(len(out), -1)
    cos = (r * o).sum(1) / (np.linalg.norm(r, axis=1) * np.linalg.norm(o, axis=1) + 1e-30)
    scale = float(np.abs(ref).max()) if ref.size else 0.0
    return {"shape": ["batch", *ref.shape[1:]], "max_abs_diff": float(diff.max()),
            "mean_abs_diff": float(diff.mean()), "max_rel_diff": float(diff.max() / max(scale, 1e-30)),
            "ref_absmax": scale, "cosine_min": float(cos.min()), "cosine_mean": float(cos.mean()),
            "non_finite": int((~np.isfinite(out)).sum())}


def parity_tensors(ref, out, names: list[str] | None = None) -> dict:
    """Parity of a model whose output is not one [batch, classes] tensor: every output
    tensor against the reference's, with its shape, max abs and relative error and cosine
    ("outputs"); the record's top-level figures are the worst over the outputs. Arg-max
    agreements do not apply (null)."""
    refs = ref if isinstance(ref, tuple) else (ref,)
    outs = out if isinstance(out, tuple) else (out,)
    if len(refs) != len(outs):
        raise ValueError(f"output counts differ: reference {len(refs)}, variant {len(outs)}")
    names = list(names or []) + [f"output{i}" for i in range(len(names or []), len(refs))]
    per = [{"name": n, **_tensor_diff(r, o)} for n, r, o in zip(names, refs, outs)]
    return {"n_images": int(np.shape(refs[0])[0]), "top1_agreement": None, "top5_agreement": None,
            "max_abs_diff": max(p["max_abs_diff"] for p in per),
            "mean_abs_diff": float(np.mean([p["mean_abs_diff"] for p in per])),
            "cosine_min": min(p["cosine_min"] for p in per),
            "cosine_mean": min(p["cosine_mean"] for p in per),
            "ref_logit_absmax": max(p["ref_absmax"] for p in per),
            "max_rel_diff": max(p["max_rel_diff"] for p in per),
            "ref_distinct_classes": None, "non_finite": sum(p["non_finite"] for p in per),
            "outputs": per}


# The parity thresholds when nobody says otherwise (the CLI's --parity-* defaults).
PARITY_DEFAULTS = {"fp32_atol": 1e-3, "fp32_min_top1": 1.0,
                   "reduced_min_top1": 0.95, "reduced_min_top5": 0.80,
                   "int8_min_top1": 0.90, "int8_min_cosine": 0.95}


def parity_verdict(p: dict, precision: str, thresholds: dict) -> tuple[bool, str]:
    """FP32: max_abs_diff <= atol and top-1 agreement >= min_top1 (1.0 by default).
    FP16: judged on top-k agreement only.
    INT8 (post-training quantized): top-1 agreement >= int8_min_top1 (0.90) and the mean
    cosine similarity of the logit vectors >= int8_min_cosine (0.95). Quantization moves
    logits by design, so no logit tolerance applies; the cosine catches a broken model (wrong
    scales or layout) whose arg-max still agrees (a model that predicts one class for every
    image agrees trivially). What INT8 costs in accuracy is judged apart, by MLPerf's 99% rule
    (``int8_cost``)."""
    thresholds = {**PARITY_DEFAULTS, **thresholds}
    if p["non_finite"]:
        return False, f"{p['non_finite']} non-finite logits"
    if p.get("top1_agreement") is None:
        return _tensor_verdict(p, precision, thresholds)
    if precision == "fp32":
        atol, need = thresholds["fp32_atol"], thresholds["fp32_min_top1"]
        ok = p["max_abs_diff"] <= atol and p["top1_agreement"] >= need
        return ok, (f"fp32: max_abs_diff {p['max_abs_diff']:.3g} (<= {atol:g}), "
                    f"top1_agreement {p['top1_agreement']:.4f} (>= {need:g})")
    if precision == "int8":
        n1, cmin = thresholds["int8_min_top1"], thresholds["int8_min_cosine"]
        cos = p.get("cosine_mean", p["cosine_min"])
        ok = p["top1_agreement"] >= n1 and cos >= cmin
        return ok, (f"int8: top1_agreement {p['top1_agreement']:.4f} (>= {n1:g}), "
                    f"cosine_mean {cos:.4f} (>= {cmin:g})")
    n1, n5 = thresholds["reduced_min_top1"], thresholds["reduced_min_top5"]
    ok = p["top1_agreement"] >= n1 and p["top5_agreement"] >= n5
    return ok, (f"{precision}: top1_agreement {p['top1_agreement']:.4f} (>= {n1:g}), "
                f"top5_agreement {p['top5_agreement']:.4f} (>= {n5:g})")


def _tensor_verdict(p: dict, precision: str, thresholds: dict) -> tuple[bool, str]:
    """Outputs that are not one [batch, classes] tensor: FP32 by the largest absolute error
    over every output; FP16 and INT8, whose values move by design, by the smallest mean
    cosine similarity over the outputs (``int8_min_cosine``)."""
    n = len(p.get("outputs") or [1])
    if precision == "fp32":
        atol = thresholds["fp32_atol"]
        return p["max_abs_diff"] <= atol, (f"fp32, {n} output tensor(s): max_abs_diff "
                                           f"{p['max_abs_diff']:.3g} (<= {atol:g})")
    cmin = thresholds["int8_min_cosine"]
    cos = p.get("cosine_mean", p["cosine_min"])
    return cos >= cmin, (f"{precision}, {n} output tensor(s): cosine_mean {cos:.4f} "
                         f"(>= {cmin:g})")


def batch_scaling(by_batch: list[dict], ref_by_batch: list[dict] | None = None) -> list[dict]:
    """Adds RTR(b) = T(b)/T(1), ASE(b) = T(b)/(b*T(1)) and, given the reference variant's
    sweep, BSR(b) = ASE(b)/ASE_ref(b) (seed paper 002)."""
    t1 = next((r["samples_per_s"] for r in by_batch if r["batch_size"] == 1), None)
    ref_ase = {r["batch_size"]: r.get("ase") for r in (ref_by_batch or [])}
    for r in by_batch:
        b, t = r["batch_size"], r["samples_per_s"]
        r["rtr"] = round(t / t1, 4) if t1 else None
        r["ase"] = round(t / (b * t1), 4) if t1 else None
        ra = ref_ase.get(b)
        r["bsr"] = round(r["ase"] / ra, 4) if (r["ase"] and ra) else None
    return by_batch


MLPERF_KEEP = 0.99      # MLPerf's closed division: a quantized model keeps >= 99% of FP32's top-1


def int8_cost(ref: np.ndarray, out: np.ndarray, labels: np.ndarray, labels_real: bool,
              why_not_real: str = "") -> dict:
    """What INT8 costs against the FP32 reference on the same images: top-1/top-5 of both
    and their deltas (INT8 minus FP32, in points), the top-1 agreement, and MLPerf's rule
    as a verdict ("pass"/"fail") where the labels (and weights) are real, else null with
    the reason."""
    labels = np.asarray(labels)
    n = min(len(ref), len(out), len(labels))
    ref, out, labels = ref[:n], out[:n], labels[:n]
    cost = {"n_images": int(n),
            "top1_agreement": float((ref.argmax(1) == out.argmax(1)).mean()) if n else None}
    known = labels >= 0
    if n and known.any():
        r, o, y = ref[known], out[known], labels[known]
        f1, f5 = topk_correct(r, y, 1).mean() * 100, topk_correct(r, y, 5).mean() * 100
        q1, q5 = topk_correct(o, y, 1).mean() * 100, topk_correct(o, y, 5).mean() * 100
        cost.update(fp32_top1=round(float(f1), 4), int8_top1=round(float(q1), 4),
                    top1_delta=round(float(q1 - f1), 4), fp32_top5=round(float(f5), 4),
                    int8_top5=round(float(q5), 4), top5_delta=round(float(q5 - f5), 4))
    if labels_real and "fp32_top1" in cost and cost["fp32_top1"] > 0:
        kept = cost["int8_top1"] / cost["fp32_top1"]
        cost["top1_kept"] = round(float(kept), 5)
        cost["mlperf_99"] = "pass" if kept >= MLPERF_KEEP else "fail"
        cost["mlperf_99_reason"] = (f"INT8 keeps {kept:.2%} of FP32's top-1 "
                                    f"({'>=' if kept >= MLPERF_KEEP else '<'} 99%)")
    else:
        cost["mlperf_99"] = None
        cost["mlperf_99_reason"] = why_not_real or "no labelled images"
    return cost
