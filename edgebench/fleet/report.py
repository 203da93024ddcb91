"""The fleet run's outputs: devices side by side in report.md, every row in summary.csv, and
each device's own report (edgebench.report, unchanged) in devices/<id>/.

Every figure is read from results.jsonl. Speed-ups and BSR compare a variant with PyTorch on
the same device only (the worker computes BSR against the same device's PyTorch sweep);
nothing here divides one device's figure by another's."""
from __future__ import annotations

from pathlib import Path

from .. import store
from ..plan import REFERENCE_VARIANT
from ..report import write_all as write_device_report
from ..report_format import OK_STATUSES, fmt, md_table, summary_rows, write_csv
from ..util import atomic_write_text


def device_meta(meta: dict, dev_id: str) -> dict:
    """What edgebench.report.write_all expects in run.json, for one device."""
    d = meta.get("devices", {}).get(dev_id, {})
    s = meta.get("settings", {}).get(dev_id, {})
    return {"run_id": meta.get("run_id"), "config": {"profile": s.get("profile"), "device_id": dev_id},
            "machine": d.get("machine", {}), "device": d.get("device", {"name": dev_id}),
            "device_state": d.get("device_state", {}), "variants": d.get("variants", {}),
            "models": d.get("models", {}), "data": d.get("data", {})}


def _devices(records: list[dict], meta: dict) -> list[str]:
    order = list(meta.get("settings", {})) + [r.get("device_id", "") for r in records]
    return list(dict.fromkeys(x for x in order if x))


def _status_counts(latest: dict, dev: str) -> str:
    counts: dict[str, int] = {}
    for (d, *_), r in latest.items():
        if d == dev:
            counts[r["status"]] = counts.get(r["status"], 0) + 1
    return ", ".join(f"{n} {s}" for s, n in sorted(counts.items())) or "–"


def _by_row(rows: list[dict]) -> tuple[list[tuple[str, str]], dict]:
    keys = list(dict.fromkeys((r["model"], r["variant"]) for r in rows))
    return keys, {(r["model"], r["variant"], r["device"]): r for r in rows}


def _side_by_side(title: str, rows: list[dict], devs: list[str], cols: list[tuple[str, callable]],
                  note: str = "") -> list[str]:
    keys, idx = _by_row(rows)
    if not keys:
        return []
    headers = ["model", "variant"] + [f"{d}: {name}" for d in devs for name, _ in cols]
    table = []
    for m, v in keys:
        vals = [(fn(idx[(m, v, d)]) if (m, v, d) in idx else "") for d in devs for _, fn in cols]
        if any(vals):
            table.append([m, v] + [x or "–" for x in vals])
    if not table:
        return []
    out = [f"## {title}", ""]
    if note:
        out += [note, ""]
    return out + [md_table(headers, table), ""]


def _bsr_section(latest: dict, devs: list[str]) -> list[str]:
    sweeps = {}
    for (d, m, v, t, *_), r in latest.items():
        if t == "throughput" and r["status"] in OK_STATUSES and r.get("by_batch"):
            sweeps[(m, v, d)] = {b["batch_size"]: b for b in r["by_batch"]}
    if not sweeps:
        return []
    out = ["## Batch scaling (seed 002: RTR, ASE, BSR)", "",
           "ASE(b) = T(b) / (b·T(1)) for every variant; BSR(b) = ASE_variant(b) / "
           "ASE_pytorch(b) with PyTorch on the **same device** (> 1: the variant keeps its "
           "batch-scaling efficiency better than PyTorch there). Empty: no figure at that batch.",
           ""]
    for model in dict.fromkeys(m for m, _, _ in sweeps):
        batches = sorted({b for (m, _, _), s in sweeps.items() if m == model for b in s})
        ase_rows, bsr_rows = [], []
        for (m, v, d), s in sweeps.items():
            if m != model:
                continue
            ase_rows.append([v, d] + [fmt(s[b].get("ase"), 3) if b in s else "" for b in batches])
            if v != REFERENCE_VARIANT:
                bsr_rows.append([v, d] + [fmt(s[b].get("bsr"), 3) if b in s else "" for b in batches])
        order = {d: i for i, d in enumerate(devs)}
        ase_rows.sort(key=lambda x: (x[0] != REFERENCE_VARIANT, x[0], order.get(x[1], 99)))
        bsr_rows.sort(key=lambda x: (x[0], order.get(x[1], 99)))
        heads = ["variant", "device"] + [f"b={b}" for b in batches]
        out += [f"### {model}", "", "ASE", "", md_table(heads, ase_rows), ""]
        if bsr_rows:
            out += ["BSR vs PyTorch on the same device", "", md_table(heads, bsr_rows), ""]
    return out


def write_markdown(path: Path, records: list[dict], meta: dict, rows: list[dict]) -> None:
    latest = store.latest(records)
    devs = _devices(records, meta)
    lines = [f"# edgebench fleet report — run {meta.get('run_id')}", ""]
    dtab = []
    for d in devs:
        info = meta.get("devices", {}).get(d, {})
        m, node = info.get("machine", {}), info.get("node", {})
        status = info.get("status", "–") + (f": {info['reason']}" if info.get("reason") else "")
        dtab.append([d, status, (node.get("hostname") or "–"),
                     (node.get("node_id") or "")[:12] or "–",
                     (info.get("device") or {}).get("name", "–"),
                     f"{m.get('cores_physical', '–')} / {m.get('memory_total_mb', '–')}",
                     m.get("os_release") or "–",
                     meta.get("settings", {}).get(d, {}).get("profile", "–"),
                     (info.get("data") or {}).get("source", "–"),
                     _status_counts(latest, d)])
    lines += ["## Devices", "", md_table(
        ["device", "status", "host", "Ray node", "device name", "cores / MB", "OS", "profile",
         "data", "cells"], dtab), ""]
    weights = [f"{d}/{mod}: {i.get('weights')}" for d in devs
               for mod, i in meta.get("devices", {}).get(d, {}).get("models", {}).items()]
    if weights:
        lines += ["Weights: " + "; ".join(weights), ""]
    if any(str(w).split(": ", 1)[-1].startswith("random") for w in weights):
        lines += ["**Random weights** on some devices: Top-1/Top-5 are meaningless there; "
                  "latency, throughput, memory and parity (logit error) still are.", ""]
    lines += ["Each device measured its own cells (conversion and compilation on the device); "
              "devices ran at the same time, each one cell at a time. Per-device reports: " +
              ", ".join(f"[{d}](devices/{d}/report.md)" for d in devs
                        if (path.parent / "devices" / d / "report.md").exists()) + ".", ""]
    lines += _side_by_side(
        "Latency and speed-up over PyTorch on the same device", rows, devs,
        [("p50 ms", lambda r: fmt(r["latency_p50_ms"])),
         ("p99 ms", lambda r: fmt(r["latency_p99_ms"])),
         ("speed-up", lambda r: (fmt(r["speedup_p50_vs_pytorch"]) + "×")
          if r["speedup_p50_vs_pytorch"] else "")],
        "Batch 1, host NCHW float32 in -> host logits out. Speed-up = PyTorch p50 / variant p50, "
        "both on that device.")
    lines += _side_by_side(
        "Throughput (best batch)", rows, devs,
        [("samples/s @ batch", lambda r: f"{fmt(r['max_samples_per_s'], 1)} @ {r['best_batch']}"
          if r["best_batch"] else "")])
    lines += _bsr_section(latest, devs)
    lines += _side_by_side(
        "Power, energy and memory", rows, devs,
        [("power W", lambda r: fmt(r["power_mean_w"])),
         ("mJ/sample", lambda r: fmt(r["energy_mj_per_sample"])),
         ("peak RSS MB", lambda r: fmt(r["peak_rss_mb"], 0))],
        "Power during the latency task, net energy per sample; empty where the device has no "
        "sensor (never estimated).")
    reasons = {}
    for (d, *_), r in latest.items():
        if r.get("power_w") is None and r.get("power_reason") and r["status"] in OK_STATUSES:
            reasons.setdefault(d, set()).add(r["power_reason"])
    if reasons:
        lines += [f"- {d}: no power figure: {'; '.join(sorted(v))}" for d, v in reasons.items()] + [""]
    not_ok = [r for r in latest.values() if r["status"] not in OK_STATUSES]
    if not_ok:
        lines += ["## Cells not ok", "", md_table(
            ["device", "model", "variant", "task", "status", "reason"],
            [[r.get("device_id", ""), r["model"], r["variant"], r["task"], r["status"],
              (r.get("reason") or "").replace("|", "/").replace("\n", " ")[:300]]
             for r in not_ok]), ""]
    lines += ["Figures come from `results.jsonl` (schema: `edgebench/schema/results.schema.json`; "
              "fleet records also carry `device_id` and `fleet` {node_id, hostname, node_ip, "
              "resource}); the config and each device's machine info are in `run.json`."]
    atomic_write_text(path, "\n".join(lines) + "\n")


def write_all(out: Path, records: list[dict], meta: dict) -> None:
    rows = summary_rows(records)
    write_csv(out / "summary.csv", rows)
    for d in _devices(records, meta):
        recs = [r for r in records if r.get("device_id") == d]
        if not recs:
            continue
        ddir = out / "devices" / d
        ddir.mkdir(parents=True, exist_ok=True)
        try:
            write_device_report(ddir, recs, device_meta(meta, d))
        except Exception as e:  # noqa: BLE001 - one device's report must not lose the others
            meta.setdefault("report_warnings", []).append(f"device {d}: report failed: {e}")
    write_markdown(out / "report.md", records, meta, rows)
