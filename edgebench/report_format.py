"""What the single-run report (``report.py``) and the fleet report (``fleet/report.py``) share:
the summary rows built from the records (one per device x model x variant x power mode),
summary.csv, and the cell formatting of the Markdown tables. Imports nothing from either report.

- ``summary_rows``/``write_csv``  records -> rows -> ``summary.csv`` (``SUMMARY_COLUMNS``,
                                  and ``power_mode`` after ``variant`` when a run swept modes)
- ``latest_cells``                the last record of each cell, power mode included (the
                                  store's own ``store.latest``, keyed by ``store.cell_key``)
- ``fmt``                         one figure as a table cell (empty for None/NaN)
- ``md_table``                    a Markdown table
- ``OK_STATUSES``                 the statuses whose figures are shown
"""
from __future__ import annotations

import csv
import io
import math
from pathlib import Path

from .cell import REFERENCE_VARIANT
from .store import latest as latest_cells  # noqa: F401 - re-exported for the reports
from .util import atomic_write_text

OK_STATUSES = ("ok", "partial")

SUMMARY_COLUMNS = [
    "model", "variant", "device", "weights", "equivalent",
    "parity_status", "top1_agreement", "top5_agreement", "max_abs_diff", "max_rel_diff", "cosine_min",
    "accuracy_status", "top1", "top5", "n_images", "accuracy_samples_per_s",
    "latency_status", "latency_p50_ms", "latency_p90_ms", "latency_p99_ms", "latency_ci95_low",
    "latency_ci95_high", "cold_start_ms", "speedup_p50_vs_pytorch",
    "throughput_status", "best_batch", "max_samples_per_s", "convert_s",
    "peak_rss_mb", "rss_delta_mb", "system_memory_mean_mb", "system_memory_peak_mb",
    "system_memory_baseline_mb", "device_memory_peak_mb",
    "power_mean_w", "power_net_w", "energy_mj_per_sample",
    "throughput_power_mean_w", "throughput_energy_mj_per_sample", "reasons",
]
# What each memory and power column holds (report.md prints these beside its tables).
COLUMN_NOTES = {
    "peak_rss_mb": "process-tree RSS (the cell's worker and its children), largest sample",
    "system_memory_mean_mb": "system-wide used memory (MemTotal - MemFree - Buffers - Cached, "
                             "as jtop counts it; every process on the machine), time-weighted "
                             "mean over the timed windows of the throughput cell (of the latency "
                             "cell where no throughput ran): the study's \"system memory\"",
    "system_memory_peak_mb": "the same, largest sample in any timed window of the model x variant",
    "device_memory_peak_mb": "the device's own figure where readable: NvMapMemUsed on a Jetson "
                             "(GPU-mapped, inside system memory), NVML used memory on a discrete "
                             "GPU; device-wide",
    "power_mean_w": "latency window, mean power (source and caveat in results.jsonl)",
    "energy_mj_per_sample": "latency window: net power x time per sample",
    "throughput_energy_mj_per_sample": "best batch's window: net power / samples per s",
}


def fmt(v, nd=2):
    """A figure as a table cell: ``nd`` decimals from 1 up, 3 significant digits below,
    scientific below 1e-3; "" for None and NaN."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return ""
    if isinstance(v, float):
        if v == 0 or abs(v) >= 1:
            return f"{v:.{nd}f}"
        return f"{v:.3g}" if abs(v) >= 1e-3 else f"{v:.2e}"
    return str(v)


def md_table(headers: list[str], rows: list[list]) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(lines)


def _cells(records: list[dict]) -> dict[tuple, dict[str, dict]]:
    """(device_id, model, variant, power mode) -> {task: latest record}."""
    out: dict[tuple, dict[str, dict]] = {}
    for (dev, m, v, t, mode), r in latest_cells(records).items():
        out.setdefault((dev, m, v, mode), {})[t] = r
    return out


def summary_rows(records: list[dict]) -> list[dict]:
    cells = _cells(records)
    rows = []
    for (dev, m, v, mode), tasks in cells.items():
        par, acc, lat, thr = (tasks.get(t, {}) for t in ("parity", "accuracy", "latency", "throughput"))
        any_rec = next(iter(tasks.values()))
        # the speed-up is against the reference in the same power mode
        ref_lat = cells.get((dev, m, REFERENCE_VARIANT, mode), {}).get("latency", {})
        p50 = (lat.get("latency_ms") or {}).get("p50") if lat.get("status") in OK_STATUSES else None
        ref_p50 = (ref_lat.get("latency_ms") or {}).get("p50") if ref_lat.get("status") in OK_STATUSES else None
        # Memory of the measuring tasks that ran: a parity or convert cell may also hold the
        # PyTorch reference or the exporter's model, and a skipped cell never loaded anything.
        ran = [r for t, r in tasks.items() if t in ("accuracy", "latency", "throughput")
               and r.get("memory_mb") and r["status"] in OK_STATUSES]
        peak = [r["memory_mb"]["peak"] for r in ran]
        delta = [r["memory_mb"]["delta"] for r in ran]
        system = {r["task"]: r["memory_mb"].get("system") for r in ran if r["memory_mb"].get("system")}
        sys_main = system.get("throughput") or system.get("latency") or system.get("accuracy") or {}
        sys_peak = [s_["peak"] for s_ in system.values() if s_.get("peak") is not None]
        dev_peak = [r["memory_mb"]["device"]["peak"] for r in ran if r["memory_mb"].get("device")]
        by_reason: dict[str, list[str]] = {}
        for t, r in tasks.items():
            if r.get("reason") and r["status"] != "ok":
                by_reason.setdefault(r["reason"], []).append(t)
        reasons = "; ".join(f"{', '.join(ts)}: {why}" for why, ts in by_reason.items())
        conv = [r.get("convert_s") for r in tasks.values() if r.get("convert_s") is not None]
        equivalent = next((r.get("equivalent") for r in tasks.values() if "equivalent" in r), None)
        lat_pw = lat.get("power_w") or {}
        thr_pw = (thr.get("power_w") or {}) if thr.get("status") in OK_STATUSES else {}
        lat_ms = lat.get("latency_ms") or {}
        rows.append({
            "model": m, "variant": v, "power_mode": mode, "device": dev or any_rec.get("device", {}).get("name", ""),
            "weights": any_rec.get("weights"), "equivalent": equivalent,
            "parity_status": par.get("status"), "top1_agreement": par.get("top1_agreement"),
            "top5_agreement": par.get("top5_agreement"), "max_abs_diff": par.get("max_abs_diff"),
            "max_rel_diff": par.get("max_rel_diff"),
            "cosine_min": par.get("cosine_min"),
            "accuracy_status": acc.get("status"), "top1": acc.get("top1"), "top5": acc.get("top5"),
            "n_images": acc.get("n_images"), "accuracy_samples_per_s": acc.get("samples_per_s"),
            "latency_status": lat.get("status"), "latency_p50_ms": p50,
            "latency_p90_ms": lat_ms.get("p90"), "latency_p99_ms": lat_ms.get("p99"),
            "latency_ci95_low": lat_ms.get("ci95_low"), "latency_ci95_high": lat_ms.get("ci95_high"),
            "cold_start_ms": lat.get("cold_start_ms"),
            "speedup_p50_vs_pytorch": (ref_p50 / p50) if (p50 and ref_p50) else None,
            "throughput_status": thr.get("status"), "best_batch": thr.get("best_batch"),
            "max_samples_per_s": thr.get("samples_per_s"),
            "convert_s": max(conv) if conv else None,
            "peak_rss_mb": max(peak) if peak else None, "rss_delta_mb": max(delta) if delta else None,
            "system_memory_mean_mb": sys_main.get("mean"),
            "system_memory_peak_mb": max(sys_peak) if sys_peak else None,
            "system_memory_baseline_mb": sys_main.get("baseline"),
            "device_memory_peak_mb": max(dev_peak) if dev_peak else None,
            "power_mean_w": lat_pw.get("mean"), "power_net_w": lat_pw.get("net"),
            "energy_mj_per_sample": lat.get("energy_mj_per_sample"),
            "throughput_power_mean_w": thr_pw.get("mean"),
            "throughput_energy_mj_per_sample": (thr.get("energy_mj_per_sample")
                                                if thr.get("status") in OK_STATUSES else None),
            "reasons": reasons,
        })
    return rows


def has_power_modes(rows_or_records) -> bool:
    """Whether any row or record carries an nvpmodel power mode (a ``--power-modes`` run)."""
    return any(r.get("power_mode") for r in rows_or_records)


def csv_columns(rows: list[dict]) -> list[str]:
    """SUMMARY_COLUMNS, with ``power_mode`` after ``variant`` only when a row has one."""
    cols = list(SUMMARY_COLUMNS)
    if has_power_modes(rows):
        cols.insert(cols.index("variant") + 1, "power_mode")
    return cols


def write_csv(path: Path, rows: list[dict]) -> None:
    cols = csv_columns(rows)
    buf = io.StringIO(newline="")
    w = csv.DictWriter(buf, fieldnames=cols)
    w.writeheader()
    for r in rows:
        w.writerow({k: ("" if r.get(k) is None else r.get(k)) for k in cols})
    atomic_write_text(path, buf.getvalue())
