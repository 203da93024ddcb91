"""summary.csv, report.md and plots/ from the run's records. Every figure shown here is read
from results.jsonl; nothing is computed that the records do not hold, except BSR and
speed-ups, which are ratios of recorded figures in the same run.

This module renders one device's run (``write_all``) and is the command line
(``python -m edgebench.report RUN_DIR``): ``render`` picks the writer by run.json's ``kind``
(``RENDERERS``). Rows, summary.csv and table formatting shared with the fleet report are in
``report_format.py``."""
from __future__ import annotations

from pathlib import Path

from . import report_int8, report_layers, report_mlperf, report_powermodes, store
from .profiles import COMPARABLE
from .report_format import (
    fmt,
    has_power_modes,
    md_table,
    summary_rows,
    write_csv,
)
from .report_decision import decision_lines, label, pareto_plot, untuned
from .report_notes import model_line, row_label, memory_notes, tuned_batch_notes, warning_lines
from .util import atomic_write_text

# run.json "kind" -> the module whose ``write_all(out, records, meta)`` renders that kind of
# run; any other kind is a single-device run, rendered here. Looked up by name when a run is
# rendered: the fleet report builds on this module (per-device reports), so this module does
# not import it.
RENDERERS = {"fleet": "edgebench.fleet.report"}

# tests/test_fleet.py still imports the old private name; use report_format.fmt instead.


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
        return f"top1 {fmt(r.get('top1'))}%  top5 {fmt(r.get('top5'))}%  {r['samples_per_s']:.1f} img/s"
    if t == "parity":
        if r.get("top1_agreement") is None:      # not one [batch, classes] output
            return (f"{len(r.get('outputs') or [1])} output tensor(s)  max|d| "
                    f"{r['max_abs_diff']:.2e}  cos_min {r['cosine_min']:.6f}")
        return (f"top1 agree {r['top1_agreement']:.3f}  max|d| {r['max_abs_diff']:.2e}  "
                f"cos_min {r['cosine_min']:.6f}")
    if t == "layers":
        top = (r.get("layers") or [{}])[0]
        ratio = (r.get("against_latency") or {}).get("ratio")
        return (f"{r['layer_count']} layers, profile {r['profile_total_ms']:.2f} ms"
                + (f" ({ratio:.2f}x p50)" if ratio else "")
                + (f", slowest {top.get('name', '')[:40]} ({top.get('type')})" if top else ""))
    if r.get("mlperf"):         # LoadGen's scenarios: their metric, not a convert time
        m = r["mlperf"]
        return f"{m.get('scenario')}: {m.get('metric')} {fmt(m.get('value'))} {m.get('unit') or ''}".rstrip()
    return f"convert {r.get('convert_s', 0):.1f} s"


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
            # Like with like: the study's "average system memory usage during inference" is
            # the machine's used memory (CPU and GPU share it on the Orin), so ours is the
            # system-wide mean over the timed windows, not the process RSS.
            sysmem = r.get("system_memory_mean_mb")
            ours = {"top1": r["top1"], "top5": r["top5"], "latency_per_sample": r["latency_p50_ms"],
                    "max_throughput": r["max_samples_per_s"], "power": r["power_mean_w"],
                    "system_memory": sysmem / 1024 if sysmem is not None else None,
                    }.get(fig["metric"])
            bound = {"lower": "over ", "upper": "under "}.get(fig.get("bound"), "")
            approx = "about " if fig.get("approximate") else ""
            study = f"{bound}{approx}{fig.get('value_text') or fig.get('value')} {fig['unit']}"
            lines.append([r["model"], row_label(r), fig["metric"], study, fmt(ours), fig.get("note", "")])
    if not lines:
        return ""
    return ("## Beside the study (AGX Orin, published figures)\n\n" +
            md_table(["model", "variant", "metric", "study", "this run", "note"], lines) + "\n\n"
            "This run's system_memory is the system-wide used memory (GiB), mean over the timed "
            "windows, as the study's is; power is the latency window's mean.\n")


def _power_section(rows: list[dict], records: list[dict]) -> list[str]:
    """Power and energy per model x variant, each over the one timed window behind the figure
    it sits beside; where there is none, why (never an estimate)."""
    out = []
    shown = [r for r in rows if r["power_mean_w"] is not None or r["throughput_power_mean_w"] is not None]
    if shown:
        modes = has_power_modes(rows)
        out += ["## Power and energy", "",
                "Mean power over the timed window; energy per sample = (mean - idle power "
                "measured before the task) x that window's time per sample. Latency: its one "
                "window (batch 1, or the smallest size the variant was built for); throughput: the best batch's window (every batch size's is "
                "in `by_batch` and in plots/energy.png).", "",
                md_table(["model", "variant", *(["power mode"] if modes else []), "latency W",
                          "net W", "latency mJ/sample", "throughput W @ batch",
                          "throughput mJ/sample"],
                         [[r["model"], r["variant"], *([r.get("power_mode") or "–"] if modes else []),
                           fmt(r["power_mean_w"]), fmt(r["power_net_w"]),
                           fmt(r["energy_mj_per_sample"], 3),
                           (f"{fmt(r['throughput_power_mean_w'])} @ {r.get('best_batch')}"
                            if r["throughput_power_mean_w"] is not None else ""),
                           fmt(r["throughput_energy_mj_per_sample"], 3)] for r in shown]), ""]
        caveats = {(r.get("power_w") or {}).get("caveat") for r in records if r.get("power_w")}
        caveats.discard(None)
        caveats.discard("")
        if caveats:
            out += ["Power source: " + "; ".join(sorted(caveats)), ""]
    power_reasons = {r.get("power_reason") for r in records if r.get("power_reason")}
    if power_reasons:
        out += ([] if shown else ["## Power", ""]) + [
            "No figure is estimated. Where power is empty, or its source stopped during a "
            "task (the record's power_w.gap says for how long): " + "; ".join(sorted(power_reasons)), ""]
    return out


def _compute_devices(meta: dict) -> str:
    """Where each variant computed, as its probe said ("pytorch cuda, onnxruntime cpu")."""
    vs = meta.get("variants", {})
    said = ", ".join(f"{v} `{p['compute_device']}`" for v, p in vs.items()
                     if p.get("ok") and p.get("compute_device"))
    # Runs recorded before the probes said it kept the device option at the top level.
    legacy = ", ".join(f"{k} `{v}`" for k, v in meta.items() if k.endswith("_device") and v)
    return said or legacy or "not recorded"


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


def _emulated_line(emu: dict) -> str:
    """The report's plain statement that the device was emulated (sysinfo.emulation())."""
    return (f"- **Emulated device, not measured hardware.** The suite ran as "
            f"{emu.get('process_arch')} code translated by {emu.get('by')} on an "
            f"{emu.get('host_arch')} machine ({emu.get('evidence')}). Parity, device "
            "detection and the telemetry readers ran for real; **timings, power and clocks "
            "are not measurements** of the device named: latencies are the emulator's, and "
            "power and clock readings come from whatever the emulated system provides "
            "(recreated files in edgebench's emulated Jetson, jetson/README.md).")


def write_markdown(path: Path, rows: list[dict], records: list[dict], meta: dict, plots: list[str]) -> None:
    m = meta.get("machine", {})
    dev = meta.get("device", {})
    lines = [f"# edgebench report — run {meta.get('run_id')}", ""]
    lines.append(f"- Device: {dev.get('name')} ({dev.get('kind')}, {m.get('cores_physical')} physical "
                 f"cores, {m.get('memory_total_mb')} MB), {m.get('os_release')}, Python {m.get('python')}")
    emu = dev.get("emulated") or m.get("emulated")
    if emu:
        lines.append(_emulated_line(emu))
    gpus = (meta.get("device_state") or {}).get("gpus") or []
    if gpus:  # NVML's list (desktop/server GPUs); a Jetson's GPU is the device itself
        lines.append("- GPU: " + "; ".join(
            f"{g.get('name')} (driver {g.get('driver')}, compute capability "
            f"{g.get('compute_capability')}, {g.get('memory_total_mb')} MB)" for g in gpus)
            + "; variants computed on: " + _compute_devices(meta))
    profile = meta.get("config", {}).get("profile")
    lines.append(f"- Profile: {profile}; data: "
                 f"{meta.get('data', {}).get('source')} ({meta.get('data', {}).get('n_images')} images)")
    smoke = profile is not None and profile not in COMPARABLE
    if smoke:
        lines.append(f"- **Profile {profile}: windows of a second or so, to see that every cell "
                     "runs. Its latency, throughput, power and energy figures are not for "
                     "comparison**; rerun with the quick or paper profile for that.")
    lines.append("- Weights: " + _weights_line(meta.get("models", {})))
    if budget_line(meta):
        lines.append(budget_line(meta))
    lines.append("- Timing boundary: host NCHW float32 in -> host logits out; copies and "
                 "synchronisation inside the timed region, the same for every variant.")
    vs = meta.get("variants", {})
    skipped = [f"{v}: {p['reason']}" for v, p in vs.items() if not p.get("ok")]
    if skipped:
        lines.append("- Variants that cannot run here: " + "; ".join(skipped))
    lines += [""] + decision_lines(rows, records, comparable=not smoke)
    warn = warning_lines(records, meta)
    if warn:
        lines += ["", "## Warnings", ""] + [f"- {w}" for w in warn]
    lines += ["", "## Results", ""]
    modes = has_power_modes(rows)     # a --power-modes run: a row per variant x power mode
    bare = untuned(records)           # TVM builds without a tuning database
    for model in dict.fromkeys(r["model"] for r in rows):
        lines += [f"### {model}", ""]
        about = model_line((meta.get("models", {}).get(model) or {}).get("model_info"))
        if about:
            lines += [about, ""]
        tab = []
        for r in (x for x in rows if x["model"] == model):
            eq = {True: "yes", False: "**NO**", None: "–"}[r["equivalent"]]
            rel = f" (rel {fmt(r['max_rel_diff'])})" if r.get("max_rel_diff") is not None else ""
            agree = (f"top-1 agree {fmt(r['top1_agreement'], 3)}" if r["top1_agreement"] is not None
                     else "every output")       # not one [batch, classes] output: no arg-max
            par = (f"{r['parity_status']}: {agree}, max abs diff {fmt(r['max_abs_diff'])}{rel}"
                   if r["max_abs_diff"] is not None else (r["parity_status"] or "–"))
            tab.append([label(bare, model, r["variant"]),
                        *([r.get("power_mode") or "–"] if modes else []), eq, par,
                        fmt(r["top1"]), fmt(r["top5"]), fmt(r["latency_p50_ms"]),
                        fmt(r["latency_p99_ms"]), fmt(r["speedup_p50_vs_pytorch"]), fmt(r["cold_start_ms"], 1),
                        (f"{fmt(r['max_samples_per_s'], 1)} @ {r['best_batch']}" if r["best_batch"] else "–"),
                        fmt(r["peak_rss_mb"], 0), fmt(r["system_memory_mean_mb"], 0),
                        fmt(r["device_memory_peak_mb"], 0), fmt(r["power_mean_w"]),
                        fmt(r["convert_s"], 1)])
        lines.append(md_table(["variant", *(["power mode"] if modes else []), "equivalent",
                               "parity", "top1 %", "top5 %", "p50 ms",
                                "p99 ms", "speed-up", "cold start ms", "samples/s @ batch",
                                "peak RSS MB", "system mem MB", "GPU/NvMap MB", "power W",
                                "convert s"], tab))
        notes = [f"- {row_label(r)}: {r['reasons']}" for r in rows if r["model"] == model and r["reasons"]]
        notes += tuned_batch_notes(records, model)
        if notes:
            lines += [""] + notes
        lines.append("")
    lines += report_int8.section(records, meta)
    lines += report_layers.section(records, meta, plots)
    lines += report_mlperf.section(records, meta)
    mode_plots = [p for p in plots if p.startswith(report_powermodes.PREFIX)]
    lines += report_powermodes.section(records, meta, mode_plots)
    lines += memory_notes()
    # An emulated device's figures, or a smoke run's, set beside the study's would read as a
    # comparison.
    paper = "" if emu or smoke else _paper_section(rows, meta)
    if paper:
        lines += [paper]
    lines += _power_section(rows, records)
    # the power-mode and per-layer plots sit in their sections
    other = [p for p in plots if p not in mode_plots and not p.startswith(report_layers.PLOT_PREFIX)]
    if other:
        lines += ["## Plots", ""] + [f"![{p}](plots/{p})" for p in other] + [""]
    lines += ["Figures come from `results.jsonl` (schema: `edgebench/schema/results.schema.json`); "
              "machine and versions in `run.json`."]
    atomic_write_text(path, "\n".join(lines) + "\n")


def write_all(out: Path, records: list[dict], meta: dict) -> list[str]:
    """summary.csv, plots/ and report.md; returns the plots made."""
    from . import plots as plotmod

    rows = summary_rows(records)
    write_csv(out / "summary.csv", rows)
    (out / "plots").mkdir(exist_ok=True)
    try:
        made = plotmod.make_all(out / "plots", records)
    except Exception as e:  # noqa: BLE001 - a plotting problem must not lose the report
        made = []
        meta.setdefault("report_warnings", []).append(f"plots failed: {e}")
    try:
        if pareto_plot(out / "plots" / "pareto.png", rows, records):
            made.append("pareto.png")
    except Exception as e:  # noqa: BLE001 - a plotting problem must not lose the report
        meta.setdefault("report_warnings", []).append(f"pareto plot failed: {e}")
    try:
        made += [p.name for p in report_powermodes.plot(records, out / "plots")]
    except Exception as e:  # noqa: BLE001 - a plotting problem must not lose the report
        meta.setdefault("report_warnings", []).append(f"power-mode plots failed: {e}")
    try:
        made += report_layers.plot(records, out / "plots")
    except Exception as e:  # noqa: BLE001 - a plotting problem must not lose the report
        meta.setdefault("report_warnings", []).append(f"per-layer plots failed: {e}")
    write_markdown(out / "report.md", rows, records, meta, made)
    return made


def budget_line(meta: dict) -> str | None:
    """Where the run's wall time went, in one line (run.json's time_budget)."""
    b = meta.get("time_budget")
    if not b:
        return None
    names = (("measure_s", "measuring"), ("convert_s", "convert/compile/load"),
             ("process_s", "process start"), ("prepare_s", "data+weights"),
             ("probe_s", "probes"), ("report_s", "report"), ("cell_other_s", "other in cells"),
             ("other_s", "other"))
    parts = ", ".join(f"{label} {b[k]:.0f} s" for k, label in names if k in b)
    tasks = "".join(f"; {t} cells {s:.0f} s ({100 * s / b['total_s']:.0f}%)"
                    for t, s in (b.get("tasks_s") or {}).items() if b["total_s"])
    return (f"- Time: {b['total_s'] / 60:.1f} min for {b.get('cells_run', 0)} cells run: "
            f"{parts}{tasks}")


class RunDirError(ValueError):
    """A folder given to render that is not a readable run directory (the message says why)."""


def read_run(out: Path) -> tuple[list[dict], dict, str | None]:
    """The records and run.json of run directory ``out``, checked: RunDirError naming the
    folder or file and what is wrong. The third value warns of a torn last record."""
    import json

    out = Path(out)
    if not out.exists():
        raise RunDirError(f"{out}: no such folder (not an edgebench run directory)")
    if not out.is_dir():
        raise RunDirError(f"{out}: a file, not a run folder (not an edgebench run directory)")
    results, run_json = out / "results.jsonl", out / "run.json"
    for p in (results, run_json):
        if not p.is_file():
            raise RunDirError(f"{p} does not exist: not an edgebench run directory")
    try:
        meta = json.loads(run_json.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as e:
        raise RunDirError(f"{run_json}: unreadable ({type(e).__name__}: {e})") from None
    if not isinstance(meta, dict):
        raise RunDirError(f"{run_json}: not a JSON object")
    try:
        records, warning = store.read_checked(results)
    except store.RecordsError as e:
        raise RunDirError(str(e)) from None
    return records, meta, warning


def render(out: Path) -> Path:
    """(Re)write summary.csv, report.md and plots/ of a run directory (edgebench.full or
    edgebench.fleet) from its records, e.g. for a run that was stopped before its own report
    step. Returns report.md's path. RunDirError when ``out`` is not a readable run."""
    import importlib

    out = Path(out)
    records, meta, _ = read_run(out)
    kind = meta.get("kind")
    writer = importlib.import_module(RENDERERS[kind]).write_all if kind in RENDERERS else write_all
    try:
        writer(out, records, meta)
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        # records or run.json that are JSON but not what edgebench writes (hand-edited, or
        # another tool's): say which run and what, not a traceback
        from .util import first_line

        raise RunDirError(f"{out}: its records or run.json are not an edgebench run's "
                          f"({first_line(e)})") from None
    return out / "report.md"


NAME = "edgebench report"     # the command in its messages ("edgebench report: error: ...")


def main(argv=None) -> int:
    import sys

    from .errors import EXIT_USAGE, ArgumentParser

    p = ArgumentParser(
        prog="python -m edgebench.report", error_name=NAME,
        description="Rewrite report.md, summary.csv and plots/ of run directories from their "
                    "results.jsonl and run.json (for a run stopped before its report step, "
                    "or after a report change).",
        epilog="exit codes: 0 every run rendered, 2 a RUN_DIR is not a readable run directory "
               "(the others are still rendered; one line on stderr for each)")
    p.add_argument("runs", nargs="+", metavar="RUN_DIR",
                   help="run directories of edgebench.full or edgebench.fleet")
    args = p.parse_args(argv)
    rc = 0
    for d in args.runs:
        try:
            print(render(Path(d)))
        except RunDirError as e:
            print(f"{NAME}: error: {e}", file=sys.stderr)
            rc = EXIT_USAGE
        except OSError as e:     # the run folder is not writable, the disk is full, ...
            print(f"{NAME}: error: {d}: cannot write the report "
                  f"({e.strerror or e}: {e.filename or ''})", file=sys.stderr)
            rc = EXIT_USAGE
    return rc


if __name__ == "__main__":
    raise SystemExit(main())
