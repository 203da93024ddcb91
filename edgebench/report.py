"""summary.csv, report.md and plots/ from the run's records. Every figure shown here is read
from results.jsonl; nothing is computed that the records do not hold, except BSR and
speed-ups, which are ratios of recorded figures in the same run."""
from __future__ import annotations

import csv
import math
from pathlib import Path

from . import store

SUMMARY_COLUMNS = [
    "model", "variant", "device", "weights", "equivalent",
    "parity_status", "top1_agreement", "top5_agreement", "max_abs_diff", "max_rel_diff", "cosine_min",
    "accuracy_status", "top1", "top5", "n_images", "accuracy_samples_per_s",
    "latency_status", "latency_p50_ms", "latency_p90_ms", "latency_p99_ms", "latency_ci95_low",
    "latency_ci95_high", "cold_start_ms", "speedup_p50_vs_pytorch",
    "throughput_status", "best_batch", "max_samples_per_s", "convert_s",
    "peak_rss_mb", "rss_delta_mb", "power_mean_w", "energy_mj_per_sample", "reasons",
]


def _f(v, nd=2):
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return ""
    if isinstance(v, float):
        if v == 0 or abs(v) >= 1:
            return f"{v:.{nd}f}"
        return f"{v:.3g}" if abs(v) >= 1e-3 else f"{v:.2e}"
    return str(v)


def one_line(r: dict) -> str:
    """A short human summary of one record, for the progress log."""
    if r["status"] in ("failed", "timeout", "skipped"):
        return (r.get("reason") or "")[:160]
    t = r["task"]
    if t == "latency":
        lat = r["latency_ms"]
        return f"p50 {lat['p50']:.2f} ms  p99 {lat['p99']:.2f} ms  n={r['n']}"
    if t == "throughput":
        return f"{r['samples_per_s']:.1f} samples/s at batch {r['best_batch']}"
    if t == "accuracy":
        return f"top1 {_f(r.get('top1'))}%  top5 {_f(r.get('top5'))}%  {r['samples_per_s']:.1f} img/s"
    if t == "parity":
        return (f"top1 agree {r['top1_agreement']:.3f}  max|d| {r['max_abs_diff']:.2e}  "
                f"cos_min {r['cosine_min']:.6f}")
    return f"convert {r.get('convert_s', 0):.1f} s"


def _cells(records: list[dict]) -> dict[tuple, dict[str, dict]]:
    """(device_id, model, variant) -> {task: latest record}."""
    out: dict[tuple, dict[str, dict]] = {}
    for (dev, m, v, t), r in store.latest(records).items():
        out.setdefault((dev, m, v), {})[t] = r
    return out


def summary_rows(records: list[dict]) -> list[dict]:
    cells = _cells(records)
    rows = []
    for (dev, m, v), tasks in cells.items():
        par, acc, lat, thr = (tasks.get(t, {}) for t in ("parity", "accuracy", "latency", "throughput"))
        any_rec = next(iter(tasks.values()))
        ref_lat = cells.get((dev, m, "pytorch"), {}).get("latency", {})
        p50 = (lat.get("latency_ms") or {}).get("p50") if lat.get("status") in ("ok", "partial") else None
        ref_p50 = (ref_lat.get("latency_ms") or {}).get("p50") if ref_lat.get("status") in ("ok", "partial") else None
        # Memory of the measuring tasks that ran: a parity or convert cell may also hold the
        # PyTorch reference or the exporter's model, and a skipped cell never loaded anything.
        ran = [r for t, r in tasks.items() if t in ("accuracy", "latency", "throughput")
               and r.get("memory_mb") and r["status"] in ("ok", "partial")]
        peak = [r["memory_mb"]["peak"] for r in ran]
        delta = [r["memory_mb"]["delta"] for r in ran]
        by_reason: dict[str, list[str]] = {}
        for t, r in tasks.items():
            if r.get("reason") and r["status"] != "ok":
                by_reason.setdefault(r["reason"], []).append(t)
        reasons = "; ".join(f"{', '.join(ts)}: {why}" for why, ts in by_reason.items())
        conv = [r.get("convert_s") for r in tasks.values() if r.get("convert_s") is not None]
        equivalent = next((r.get("equivalent") for r in tasks.values() if "equivalent" in r), None)
        pw = (lat.get("power_w") or {}).get("mean") if lat.get("power_w") else None
        rows.append({
            "model": m, "variant": v, "device": dev or any_rec.get("device", {}).get("name", ""),
            "weights": any_rec.get("weights"), "equivalent": equivalent,
            "parity_status": par.get("status"), "top1_agreement": par.get("top1_agreement"),
            "top5_agreement": par.get("top5_agreement"), "max_abs_diff": par.get("max_abs_diff"),
            "max_rel_diff": par.get("max_rel_diff"),
            "cosine_min": par.get("cosine_min"),
            "accuracy_status": acc.get("status"), "top1": acc.get("top1"), "top5": acc.get("top5"),
            "n_images": acc.get("n_images"), "accuracy_samples_per_s": acc.get("samples_per_s"),
            "latency_status": lat.get("status"), "latency_p50_ms": p50,
            "latency_p90_ms": (lat.get("latency_ms") or {}).get("p90"),
            "latency_p99_ms": (lat.get("latency_ms") or {}).get("p99"),
            "latency_ci95_low": (lat.get("latency_ms") or {}).get("ci95_low"),
            "latency_ci95_high": (lat.get("latency_ms") or {}).get("ci95_high"),
            "cold_start_ms": lat.get("cold_start_ms"),
            "speedup_p50_vs_pytorch": (ref_p50 / p50) if (p50 and ref_p50) else None,
            "throughput_status": thr.get("status"), "best_batch": thr.get("best_batch"),
            "max_samples_per_s": thr.get("samples_per_s"),
            "convert_s": max(conv) if conv else None,
            "peak_rss_mb": max(peak) if peak else None, "rss_delta_mb": max(delta) if delta else None,
            "power_mean_w": pw, "energy_mj_per_sample": lat.get("energy_mj_per_sample"),
            "reasons": reasons,
        })
    return rows


def write_csv(path: Path, rows: list[dict]) -> None:
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=SUMMARY_COLUMNS)
        w.writeheader()
        for r in rows:
            w.writerow({k: ("" if r.get(k) is None else r.get(k)) for k in SUMMARY_COLUMNS})


def _warnings(records: list[dict], meta: dict) -> list[str]:
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
    for r in store.latest(records).values():
        if r["task"] == "parity" and "max_abs_diff" in r:
            if r.get("ref_distinct_classes", 99) < 5:
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


def _md_table(headers: list[str], rows: list[list]) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(lines)


def _paper_section(rows: list[dict], meta: dict) -> str:
    try:
        from .reference import is_agx_orin, paper_figures
    except ImportError:
        return ""
    if not is_agx_orin(meta.get("device_state", {})):
        return ""
    lines = []
    for r in rows:
        for fig in paper_figures(r["model"], r["variant"]):
            peak = r.get("peak_rss_mb")
            ours = {"top1": r["top1"], "top5": r["top5"], "latency_per_sample": r["latency_p50_ms"],
                    "max_throughput": r["max_samples_per_s"], "power": r["power_mean_w"],
                    "system_memory": peak / 1024 if peak is not None else None,
                    }.get(fig["metric"])
            bound = {"lower": "over ", "upper": "under "}.get(fig.get("bound"), "")
            approx = "about " if fig.get("approximate") else ""
            study = f"{bound}{approx}{fig.get('value_text') or fig.get('value')} {fig['unit']}"
            lines.append([r["model"], r["variant"], fig["metric"], study, _f(ours), fig.get("note", "")])
    if not lines:
        return ""
    return ("## Beside the study (AGX Orin, published figures)\n\n" +
            _md_table(["model", "variant", "metric", "study", "this run", "note"], lines) + "\n")


def _weights_line(models: dict) -> str:
    """Models grouped by the weights they ran with (and why), most models first."""
    groups: dict[tuple, list[str]] = {}
    for name, info in models.items():
        groups.setdefault((info.get("weights"), info.get("weights_note")), []).append(name)
    parts = []
    for (weights, note), names in groups.items():
        who = f"all {len(names)} models" if len(groups) == 1 and len(names) > 1 else ", ".join(names)
        parts.append(f"{weights} for {who}" + (f" ({note})" if note else ""))
    return "; ".join(parts) or "–"


def write_markdown(path: Path, rows: list[dict], records: list[dict], meta: dict, plots: list[str]) -> None:
    m = meta.get("machine", {})
    dev = meta.get("device", {})
    lines = [f"# edgebench report — run {meta.get('run_id')}", ""]
    lines.append(f"- Device: {dev.get('name')} ({dev.get('kind')}, {m.get('cores_physical')} physical "
                 f"cores, {m.get('memory_total_mb')} MB), {m.get('os_release')}, Python {m.get('python')}")
    gpus = (meta.get("device_state") or {}).get("gpus") or []
    if gpus:  # NVML's list (desktop/server GPUs); a Jetson's GPU is the device itself
        lines.append("- GPU: " + "; ".join(
            f"{g.get('name')} (driver {g.get('driver')}, compute capability "
            f"{g.get('compute_capability')}, {g.get('memory_total_mb')} MB)" for g in gpus)
            + f"; PyTorch variants ran on `{meta.get('torch_device')}`")
    lines.append(f"- Profile: {meta.get('config', {}).get('profile')}; data: "
                 f"{meta.get('data', {}).get('source')} ({meta.get('data', {}).get('n_images')} images)")
    lines.append("- Weights: " + _weights_line(meta.get("models", {})))
    lines.append("- Timing boundary: host NCHW float32 in -> host logits out; copies and "
                 "synchronisation inside the timed region, the same for every variant.")
    vs = meta.get("variants", {})
    skipped = [f"{v}: {p['reason']}" for v, p in vs.items() if not p.get("ok")]
    if skipped:
        lines.append("- Variants that cannot run here: " + "; ".join(skipped))
    warn = _warnings(records, meta)
    if warn:
        lines += ["", "## Warnings", ""] + [f"- {w}" for w in warn]
    lines += ["", "## Results", ""]
    for model in dict.fromkeys(r["model"] for r in rows):
        lines += [f"### {model}", ""]
        tab = []
        for r in (x for x in rows if x["model"] == model):
            eq = {True: "yes", False: "**NO**", None: "–"}[r["equivalent"]]
            rel = f" (rel {_f(r['max_rel_diff'])})" if r.get("max_rel_diff") is not None else ""
            par = (f"{r['parity_status']}: top-1 agree {_f(r['top1_agreement'], 3)}, max abs diff {_f(r['max_abs_diff'])}{rel}"
                   if r["max_abs_diff"] is not None else (r["parity_status"] or "–"))
            tab.append([r["variant"], eq, par, _f(r["top1"]), _f(r["top5"]), _f(r["latency_p50_ms"]),
                        _f(r["latency_p99_ms"]), _f(r["speedup_p50_vs_pytorch"]), _f(r["cold_start_ms"], 1),
                        (f"{_f(r['max_samples_per_s'], 1)} @ {r['best_batch']}" if r["best_batch"] else "–"),
                        _f(r["peak_rss_mb"], 0), _f(r["power_mean_w"]), _f(r["convert_s"], 1)])
        lines.append(_md_table(["variant", "equivalent", "parity", "top1 %", "top5 %", "p50 ms",
                                "p99 ms", "speed-up", "cold start ms", "samples/s @ batch",
                                "peak RSS MB", "power W", "convert s"], tab))
        notes = [f"- {r['variant']}: {r['reasons']}" for r in rows if r["model"] == model and r["reasons"]]
        if notes:
            lines += [""] + notes
        lines.append("")
    paper = _paper_section(rows, meta)
    if paper:
        lines += [paper]
    power_reasons = {r.get("power_reason") for r in records if r.get("power_reason")}
    if power_reasons:
        lines += ["## Power", "", "No figure is estimated. Where power is empty: " +
                  "; ".join(sorted(power_reasons)), ""]
    if plots:
        lines += ["## Plots", ""] + [f"![{p}](plots/{p})" for p in plots] + [""]
    lines += ["Figures come from `results.jsonl` (schema: `edgebench/schema/results.schema.json`); "
              "machine and versions in `run.json`."]
    path.write_text("\n".join(lines) + "\n")


def write_all(out: Path, records: list[dict], meta: dict) -> None:
    from . import plots as plotmod

    rows = summary_rows(records)
    write_csv(out / "summary.csv", rows)
    (out / "plots").mkdir(exist_ok=True)
    try:
        made = plotmod.make_all(out / "plots", records)
    except Exception as e:  # noqa: BLE001 - a plotting problem must not lose the report
        made = []
        meta.setdefault("report_warnings", []).append(f"plots failed: {e}")
    write_markdown(out / "report.md", rows, records, meta, made)


def render(out: Path) -> Path:
    """(Re)write summary.csv, report.md and plots/ of a run directory (edgebench.full or
    edgebench.fleet) from its records, e.g. for a run that was stopped before its own report
    step. Returns report.md's path."""
    import json

    out = Path(out)
    results, run_json = out / "results.jsonl", out / "run.json"
    for p in (results, run_json):
        if not p.is_file():
            raise FileNotFoundError(f"{p} does not exist: not an edgebench run directory")
    meta = json.loads(run_json.read_text())
    if meta.get("kind") == "fleet":   # devices side by side, one sub-report per device
        from .fleet import report as fleet_report

        fleet_report.write_all(out, store.read(results), meta)
    else:
        write_all(out, store.read(results), meta)
    return out / "report.md"


def main(argv=None) -> int:
    import argparse
    import sys

    p = argparse.ArgumentParser(
        prog="python -m edgebench.report",
        description="Rewrite report.md, summary.csv and plots/ of run directories from their "
                    "results.jsonl and run.json (for a run stopped before its report step, "
                    "or after a report change).")
    p.add_argument("runs", nargs="+", metavar="RUN_DIR",
                   help="run directories of edgebench.full or edgebench.fleet")
    args = p.parse_args(argv)
    rc = 0
    for d in args.runs:
        try:
            print(render(Path(d)))
        except (OSError, ValueError) as e:
            print(f"edgebench.report: {e}", file=sys.stderr)
            rc = 2
    return rc


if __name__ == "__main__":
    raise SystemExit(main())
