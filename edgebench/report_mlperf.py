"""The report's "MLPerf-style" section: per model, the three LoadGen scenarios for each
variant, LoadGen's verdict and whether the run followed MLPerf's rules; for ``resnet50`` on an
AGX Orin, MLPerf Inference v3.1's published figures beside them."""
from __future__ import annotations

from .mlperf import published
from .report_format import fmt, md_table

ORDER = ("singlestream", "multistream", "offline")


def _cell(r: dict | None) -> str:
    if r is None:
        return "–"
    m = r.get("mlperf") or {}
    if r["status"] != "ok" or m.get("value") is None:
        return f"{r['status']}: {r.get('reason', '')[:80]}"
    extra = ""
    if m.get("early_stopping_p90_ms"):
        extra = f" (early stopping {fmt(m['early_stopping_p90_ms'], 3)})"
    acc = (m.get("accuracy") or {}).get("top1")
    acc_s = f"; top-1 {fmt(acc)} %" if acc is not None else ""
    return f"{fmt(m['value'], 3)} {m['unit']}{extra} {m.get('validity') or ''}{acc_s}"


def section(records: list[dict], meta: dict) -> list[str]:
    cells = {(r["model"], r["variant"], r["task"]): r for r in records if r.get("mlperf")
             or r["task"] in ORDER}
    if not cells:
        return []
    out = ["## MLPerf-style scenarios (LoadGen)", "",
           "SingleStream: 90th percentile latency (LoadGen's early-stopping estimate beside it); "
           "MultiStream: 99th percentile latency of 8-sample queries; Offline: samples/s. "
           "VALID/INVALID is LoadGen's own verdict on the settings it ran with; LoadGen's logs "
           "are in `mlperf/` of the run folder.", ""]
    device = meta.get("device") or {}
    not_valid = sorted({(r.get("mlperf") or {}).get("not_mlperf_valid_because") or ""
                        for r in cells.values()} - {""})
    for why in not_valid:
        out.append(f"- **Not MLPerf-valid**: {why}.")
    weights = meta.get("models", {})
    for model in dict.fromkeys(k[0] for k in cells):
        w = (weights.get(model) or {}).get("weights", "")
        division = ("closed-division comparable (ResNet-50 v1.5)" if model == published.COMPARABLE_MODEL
                    else "MLPerf-style (open): only the closed division's ResNet-50 v1.5 is comparable")
        out += ["", f"### {model}: {division}", ""]
        if str(w).startswith("random"):
            out.append(f"- Weights {w}: random weights make the accuracy side meaningless.")
        elif w:
            out.append(f"- Weights: {w}.")
        rows = []
        for v in dict.fromkeys(k[1] for k in cells if k[0] == model):
            rows.append([v, *(_cell(cells.get((model, v, t))) for t in ORDER)])
        if published.comparable(model, device):
            p = published.ORIN_RESNET50
            rows.append([f"published: {published.SOURCE}",
                         *(f"{p[t]['value']} {p[t]['unit']} ({p[t]['accelerators']})" for t in ORDER)])
        out += ["", md_table(["variant", "SingleStream p90", "MultiStream p99", "Offline"], rows)]
        shares = [(v, (r.get("mlperf") or {}).get("device_shares")) for (m, v, t), r in cells.items()
                  if m == model and t == "offline"]
        for v, s in shares:
            if s:
                out.append(f"- {v} Offline on several accelerators: " + ", ".join(
                    f"{d} {x['samples']} samples ({x['share']:.0%})" for d, x in s.items()))
    return out + [""]
