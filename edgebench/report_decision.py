"""What report.md opens with: per model, the variant to ship, and the run's one Pareto plot.

The variant to ship is the fastest by batch-1 p50 latency among the variants whose parity
passed (the reference variant counts as passed: it is what parity compares against), with its
speed-up over PyTorch, p99, memory and, where a sensor gave it, energy per inference; then the
runner-up, the variants that failed parity and those that could not run, each with its one-line
reason. A TVM build without a tuning database is named "(untuned)": set beside tuned runtimes it
says little about TVM. Everything comes from the summary rows and the records."""
from __future__ import annotations

from pathlib import Path

from .report_format import OK_STATUSES, fmt, latest_cells


def untuned(records: list[dict]) -> set[tuple[str, str]]:
    """(model, variant) pairs whose cells ran a compiler-tuned runtime without its tuning (a
    TVM build with no database or an artifact exported untuned: ``database.tuning_meta``'s
    ``status``); computed once per report."""
    out = set()
    for r in latest_cells(records).values():
        if ((r.get("variant_meta") or {}).get("tuning") or {}).get("status") == "untuned":
            out.add((r["model"], r["variant"]))
    return out


def label(untuned_pairs: set, model: str, variant: str) -> str:
    return variant + (" (untuned)" if (model, variant) in untuned_pairs else "")


def _passed(row: dict) -> bool:
    return row["equivalent"] is True and row["latency_status"] in OK_STATUSES \
        and row["latency_p50_ms"] is not None


def _figures(row: dict) -> str:
    parts = [f"p50 {fmt(row['latency_p50_ms'], 3)} ms"]
    if row.get("speedup_p50_vs_pytorch") and row["variant"] != "pytorch":
        parts.append(f"{row['speedup_p50_vs_pytorch']:.2f}x PyTorch's speed")
    if row.get("latency_p99_ms") is not None:
        parts.append(f"p99 {fmt(row['latency_p99_ms'], 3)} ms")
    if row.get("peak_rss_mb") is not None:
        parts.append(f"peak RSS {fmt(row['peak_rss_mb'], 0)} MB")
    if row.get("energy_mj_per_sample") is not None:
        parts.append(f"{fmt(row['energy_mj_per_sample'])} mJ per inference")
    if row.get("top1") is not None:
        parts.append(f"top-1 {fmt(row['top1'])} %")
    return ", ".join(parts)


def _short(reasons: str, limit: int = 110) -> str:
    """A row's first reason, without the tasks it applies to, cut at ``limit`` characters."""
    first = reasons.split("; ")[0]
    first = first.split(": ", 1)[1] if ": " in first else first
    return first if len(first) <= limit else first[:limit - 1].rstrip() + "…"


def decision_lines(rows: list[dict], records: list[dict], comparable: bool = True) -> list[str]:
    """The '## Which runtime to ship' section (empty where no row has a latency)."""
    out, bare = [], untuned(records)
    for model in dict.fromkeys(r["model"] for r in rows):
        mine = [r for r in rows if r["model"] == model and not r.get("power_mode")]
        ranked = sorted((r for r in mine if _passed(r)), key=lambda r: r["latency_p50_ms"])
        if ranked:
            best = ranked[0]
            line = (f"- **{model}: {label(bare, model, best['variant'])}**: "
                    f"{_figures(best)}")
            if len(ranked) > 1:
                nxt = ranked[1]
                line += (f". Runner-up: {label(bare, model, nxt['variant'])}, p50 "
                         f"{fmt(nxt['latency_p50_ms'], 3)} ms "
                         f"({nxt['latency_p50_ms'] / best['latency_p50_ms']:.2f}x the first's)")
            out.append(line + ".")
        else:
            out.append(f"- **{model}**: no variant both passed parity and measured a latency.")
        failed = [r for r in mine if r["equivalent"] is False]
        if failed:
            out.append("  - failed parity (its figures come from a different model): " + "; ".join(
                f"{label(bare, model, r['variant'])}" for r in failed))
        gone = [r for r in mine if r not in ranked and r not in failed and r["reasons"]]
        if gone:
            out.append("  - did not run or measure: " + "; ".join(
                f"{r['variant']} ({_short(r['reasons'])})" for r in gone))
    if not out:
        return []
    head = ["## Which runtime to ship", "",
            "The fastest variant by batch-1 p50 latency whose outputs passed parity, per model "
            "(reading the report: docs/reading-the-report.md)."]
    if not comparable:
        head.append("**This profile's windows are too short to compare: the choice below is "
                    "only a first look.**")
    return head + [""] + out


def pareto_plot(path: Path, rows: list[dict], records: list[dict]) -> bool:
    """p50 latency against energy per inference (or peak memory where no power was measured),
    parity-passing variants only, a panel per model; the Pareto front joined."""
    ok = [r for r in rows if _passed(r) and not r.get("power_mode")]
    if not ok:
        return False
    energy = all(r.get("energy_mj_per_sample") is not None for r in ok)
    key, ylabel = (("energy_mj_per_sample", "energy per inference, mJ") if energy
                   else ("peak_rss_mb", "peak process memory, MB (no power measured)"))
    ok = [r for r in ok if r.get(key) is not None]
    if not ok:
        return False
    from matplotlib.ticker import NullFormatter

    from .plots import _mpl, panels, save_panels

    models = list(dict.fromkeys(r["model"] for r in ok))
    # one panel alone is drawn wider: its title and labels need the room
    fig, axes = panels(_mpl(), len(models), 6.5 if len(models) == 1 else 4.4, 3.8)
    bare = untuned(records)
    for ax, m in zip(axes, models):
        pts = sorted(((r["latency_p50_ms"], r[key], label(bare, m, r["variant"]))
                      for r in ok if r["model"] == m))
        front, best_y = [], float("inf")
        for x, y, name in pts:                       # sorted by latency: lower y each step
            if y < best_y:
                front.append((x, y))
                best_y = y
        ax.plot(*zip(*front), color="0.6", zorder=1, label="Pareto front")
        for x, y, name in pts:
            ax.scatter([x], [y], zorder=2)
            ax.annotate(name, (x, y), fontsize=7, xytext=(3, 3), textcoords="offset points")
        xs = [x for x, _, _ in pts]
        if max(xs) / min(xs) > 20:                        # spans decades: log, major labels only
            ax.set_xscale("log")
            ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_title(m if len(m) < 40 else "..." + m[-37:], fontsize=9)
        ax.set_xlabel("batch-1 latency p50, ms")
        ax.set_ylabel(ylabel, fontsize=8)
    save_panels(fig, axes, len(models), "Latency against " + ("energy" if energy else "memory")
                + " (variants that passed parity)", path, fontsize=10)
    return True
