"""The report's "Power modes" section, for a run that swept nvpmodel power modes
(``--power-modes``): per model, one row per mode x variant with the clocks the mode set,
latency, throughput, energy per inference and power, or why a cell has no figure (a mode
switch that failed says so); and per model a plot of latency and throughput against energy
per inference (``plot``). Every figure is a record's; where energy is missing the record's
``power_reason`` is said, never an estimate."""
from __future__ import annotations

import re
from pathlib import Path

from .report_format import OK_STATUSES, fmt, latest_cells, md_table

TASKS = ("latency", "throughput")
PREFIX = "power_modes_"          # plots/power_modes_<model>.png
DASH = "–"
MARKERS = "osD^vP*Xph<>"

INTRO = ("Each cell measured once per nvpmodel power mode (`--power-modes`), with the clocks "
         "the mode set (largest CPU and GPU clock allowed, and whether jetson_clocks pinned "
         "them). Energy per inference is net of idle power: latency's at batch 1, "
         "throughput's at its best batch. A cell without a figure says why; nothing is "
         "estimated.")
PLOT_LINE = ("Plot: energy per inference (mJ, net of idle power) on the x axis, against "
             "latency p50 (left; lower-left is better) and throughput at the best batch (right; upper-left "
             "is better); one point per power mode x variant, marker per variant, colour and "
             "label per mode, a variant's points joined across modes. Only cells with a "
             "measured energy figure are drawn.")


def plot_name(model: str) -> str:
    """The file name, in plots/, of ``model``'s power-mode plot."""
    return PREFIX + re.sub(r"[^A-Za-z0-9._-]+", "_", model) + ".png"


def _esc(text) -> str:
    """Text safe inside a Markdown table cell."""
    return str(text).replace("|", "\\|").replace("\n", " ").strip()


def _cells(records: list[dict]) -> dict[str, dict[tuple[str, str], dict[str, dict]]]:
    """model -> (mode, variant) -> {task: latest record}, for the records that carry a power
    mode, rows ordered mode by mode (modes and variants in the order the run met them)."""
    found: dict[str, dict[tuple[str, str], dict[str, dict]]] = {}
    for r in latest_cells(records).values():
        mode = r.get("power_mode") or ""
        if mode:
            found.setdefault(r["model"], {}).setdefault((mode, r["variant"]), {})[r["task"]] = r
    out = {}
    for model, rows in found.items():
        modes = list(dict.fromkeys(k[0] for k in rows))
        variants = list(dict.fromkeys(k[1] for k in rows))
        out[model] = dict(sorted(rows.items(), key=lambda kv: (modes.index(kv[0][0]),
                                                               variants.index(kv[0][1]))))
    return out


def _ok(r: dict | None) -> bool:
    return bool(r) and r["status"] in OK_STATUSES


def _state(tasks: dict[str, dict], fallback: dict) -> dict:
    """The power_mode_state of a row's records (else of any record in its mode)."""
    for t in (*TASKS, *tasks):
        s = (tasks.get(t) or {}).get("power_mode_state")
        if s:
            return s
    return fallback


def _status(tasks: dict[str, dict]) -> str:
    """"ok", or each status and reason with the tasks it covers."""
    by: dict[tuple[str, str], list[str]] = {}
    for t, r in tasks.items():
        if r["status"] != "ok":
            by.setdefault((r["status"], r.get("reason") or ""), []).append(t)
    if not by:
        return "ok"
    return "; ".join(f"{st} ({', '.join(ts)})" + (f": {_esc(why)}" if why else "")
                     for (st, why), ts in by.items())


def _points(rows: dict[tuple[str, str], dict[str, dict]], task: str) -> dict[tuple[str, str], tuple]:
    """(mode, variant) -> (energy mJ per inference, latency p50 ms or samples/s), for the cells
    with both figures measured."""
    out = {}
    for key, tasks in rows.items():
        r = tasks.get(task)
        if not _ok(r) or r.get("energy_mj_per_sample") is None:
            continue
        y = (r.get("latency_ms") or {}).get("p50") if task == "latency" else r.get("samples_per_s")
        if y is not None:
            out[key] = (r["energy_mj_per_sample"], y)
    return out


def _energy(r: dict | None, key: tuple[str, str], missing: dict[str, list[str]]) -> str:
    if not _ok(r):
        return DASH
    e = r.get("energy_mj_per_sample")
    if e is None:
        why = r.get("power_reason") or "no power figure recorded"
        missing.setdefault(why, []).append(f"{key[0]} {key[1]} {r['task']}")
        return DASH
    return fmt(e, 3)


def section(records: list[dict], meta: dict, plots: list[str] | None = None) -> list[str]:
    """The "Power modes" section; [] for a run without power modes. ``plots``: the names in
    plots/ that were made (``plot``), linked under their model's table."""
    cells = _cells(records)
    if not cells:
        return []
    out = ["## Power modes", "", INTRO, "", PLOT_LINE, ""]
    for model, rows in cells.items():
        mode_state: dict[str, dict] = {}
        for (mode, _), tasks in rows.items():
            mode_state.setdefault(mode, {})
            if not mode_state[mode]:
                mode_state[mode] = _state(tasks, {})
        missing: dict[str, list[str]] = {}
        tab = []
        for key, tasks in rows.items():
            mode, variant = key
            lat, thr = tasks.get("latency"), tasks.get("throughput")
            st = _state(tasks, mode_state[mode])
            clocks = st.get("clocks") or {}
            jc = {True: "on", False: "off"}.get(st.get("jetson_clocks"), DASH)
            p50 = (lat.get("latency_ms") or {}).get("p50") if _ok(lat) else None
            sps = thr.get("samples_per_s") if _ok(thr) else None
            tab.append([
                mode, variant, jc,
                fmt(_highest(clocks.get("cpu_max_mhz")), 0) or DASH, fmt(clocks.get("gpu_max_mhz"), 0) or DASH,
                fmt(p50) or DASH,
                f"{fmt(sps, 1)} @ {thr.get('best_batch')}" if sps is not None else DASH,
                _energy(lat, key, missing), _energy(thr, key, missing),
                (fmt((lat.get("power_w") or {}).get("mean")) if _ok(lat) else "") or DASH,
                (fmt((thr.get("power_w") or {}).get("mean")) if _ok(thr) else "") or DASH,
                _status(tasks)])
        out += [f"### {model} across power modes", "",
                md_table(["mode", "variant", "jetson_clocks", "CPU max MHz", "GPU max MHz",
                          "p50 ms", "samples/s @ batch", "latency mJ/inference",
                          "throughput mJ/inference", "latency W", "throughput W", "status"],
                         tab), ""]
        for why, where in missing.items():
            out.append(f"- Energy {DASH} (no figure; none is estimated) for "
                       f"{', '.join(where)}: {_esc(why)}.")
        if any(_points(rows, t) for t in TASKS):
            name = plot_name(model)
            if plots is not None and name in plots:
                out.append(f"![{model} across power modes](plots/{name})")
        else:
            reasons = list(dict.fromkeys(
                r.get("power_reason") for tasks in rows.values() for r in tasks.values()
                if r.get("power_reason")))
            if not reasons:
                reasons = ["no cell in a power mode finished" if not any(
                    _ok(r) for tasks in rows.values() for r in tasks.values())
                    else "no power_reason recorded"]
            out.append(f"- No plot for {model}: no energy figures: "
                       f"{_esc('; '.join(reasons))}.")
        out.append("")
    return out


def plot(records: list[dict], plots_dir: Path) -> list[Path]:
    """One PNG per model that has an energy figure in some power mode
    (``plots_dir/plot_name(model)``): energy per inference against latency p50 and against
    throughput. Returns the files written."""
    from matplotlib.lines import Line2D

    from .plots import _mpl

    made = []
    for model, rows in _cells(records).items():
        pts = {t: _points(rows, t) for t in TASKS}
        if not any(pts.values()):
            continue
        plt = _mpl()
        modes = list(dict.fromkeys(k[0] for k in rows))
        variants = list(dict.fromkeys(k[1] for k in rows))
        cmap = plt.get_cmap("tab10")
        colour = {m: cmap(i % 10) for i, m in enumerate(modes)}
        marker = {v: MARKERS[i % len(MARKERS)] for i, v in enumerate(variants)}
        fig, axes = plt.subplots(1, 2, figsize=(11, 4.5))
        for ax, t, ylabel in zip(axes, TASKS, ("latency p50, ms (batch 1)",
                                               "throughput, samples/s (best batch)")):
            for v in variants:
                line = [(m, *pts[t][(m, v)]) for m in modes if (m, v) in pts[t]]
                if len(line) > 1:
                    ax.plot([p[1] for p in line], [p[2] for p in line], color="0.65",
                            linewidth=1, zorder=1)
                for m, x, y in line:
                    ax.scatter([x], [y], marker=marker[v], color=colour[m], s=50, zorder=2,
                               edgecolors="black", linewidths=0.5)
                    ax.annotate(m, (x, y), textcoords="offset points", xytext=(5, 4), fontsize=7)
            if not pts[t]:
                ax.text(0.5, 0.5, "no energy figures", transform=ax.transAxes, ha="center",
                        va="center", color="0.4")
            ax.set_xlabel("energy per inference, mJ (net of idle)")
            ax.set_ylabel(ylabel)
            ax.set_title(t, fontsize=9)
            ax.grid(alpha=0.3)
        drawn = [k for t in TASKS for k in pts[t]]       # the legend: what has a point
        handles = ([Line2D([], [], marker=marker[v], color="black", linestyle="", label=v)
                    for v in variants if any(k[1] == v for k in drawn)]
                   + [Line2D([], [], marker="o", color=colour[m], linestyle="", label=m)
                      for m in modes if any(k[0] == m for k in drawn)])
        axes[1].legend(handles=handles, fontsize=7, loc="best")
        fig.suptitle(f"{model}: latency and throughput against energy, per power mode")
        fig.tight_layout()
        path = Path(plots_dir) / plot_name(model)
        fig.savefig(path, dpi=110)
        plt.close(fig)
        made.append(path)
    return made


def _highest(v):
    """The CPU cap: powermodes.clock_snapshot records one per cpufreq policy (cluster)."""
    if isinstance(v, dict):
        vals = [x for x in v.values() if isinstance(x, (int, float))]
        return max(vals) if vals else None
    return v
