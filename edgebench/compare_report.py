"""What ``python -m edgebench.compare`` shows and writes: the console tables (rich),
compare.md, compare.csv (long format, one row per figure) and the trend plots in plots/."""
from __future__ import annotations

import csv
import io
import re
from pathlib import Path

from . import compare_stats as cs
from .compare_runs import OK, Pair, Run, mode_of, noise_pairs, seed_key
from .report_format import fmt, md_table
from .util import atomic_write_text

CSV_COLUMNS = ["a_run", "b_run", "section", "device", "model", "variant", "task", "batch_size",
               "metric", "a", "b", "change", "ratio", "ci95_low", "ci95_high", "verdict", "note"]
MODE_COLUMN = "power_mode"     # after "task", only when a row has a power mode (--power-modes)
MODE_HEAD = "power mode"       # its heading in the console and compare.md tables
_LIKELY = ("variants.", "options.", "device.", "device_state.", "config.profile", "config.",
           "env.", "machine.")
NO_CAUSE = ("no difference in versions, device state, profile or options recorded in run.json: "
            "a code or model change, or the machine's state (see docs/compare.md, noise)")
# run.json keys that say what ran, not how fast: never offered as a cause
_NOT_CAUSES = ("config.models", "config.variants", "config.tasks", "config.data", "config.labels",
               "config.max_images", "config.cell_timeout", "config.cache_dir", "config.seed",
               "config.weights", "config.python", "config.parity", "config.isolation",
               "machine.memory_total_mb", "machine.cpu_freq_mhz")


def cell(r: dict) -> str:
    dev = f"{r['device']} " if r.get("device") else ""
    bs = f" b={r['batch_size']}" if r.get("batch_size") is not None else ""
    return f"{dev}{r['model']} · {r['variant']} · {r['task']}{bs}"


def ratio_text(r: cs.Ratio) -> tuple[str, str]:
    ci = f"[{r.low:.3f}, {r.high:.3f}]" if r.has_ci else "no CI"
    return f"{r.point:.3f}", ci


def has_modes(p: Pair) -> bool:
    """Whether any row of ``p`` is in a power mode (a --power-modes run): then the tables and
    compare.csv gain a power mode column; without modes they look as they always did."""
    return any(r.get("power_mode") for rows in (p.perf, p.lost, p.quality, p.resources,
                                                p.status, p.only) for r in rows) \
        or any(k[2] for k in p.noise)


def counts(p: Pair) -> dict:
    v = [r["verdict"] for r in p.perf]
    return {"slower": v.count(cs.SLOWER), "faster": v.count(cs.FASTER),
            "same": v.count(cs.SAME), "lost": len(p.lost), "only": len(p.only)}


def likely_causes(p: Pair, limit: int = 8) -> list[str]:
    """Environment differences that can explain the slower cells of ``p``: the slower
    variants' own versions first, then whatever applies to every variant."""
    slow_vars = {r["variant"] for r in p.perf if r["verdict"] == cs.SLOWER}
    if not slow_vars:
        return []
    def rank(k: str) -> int:
        if k.startswith("variants."):
            return 0 if k.split(".")[1] in slow_vars else 9
        return 1 + next((i for i, pre in enumerate(_LIKELY) if k.startswith(pre)), 7)
    keys = sorted((d for d in p.env if rank(d[0]) < 9 and not d[0].startswith(_NOT_CAUSES)),
                  key=lambda d: rank(d[0]))
    return [f"{k}: {a} -> {b}" for k, a, b in keys[:limit]]


# ----------------------------------------------------------------------- tables (shared)
def tables(p: Pair, changed_only: bool) -> list[tuple[str, list[str], list[list[str]], str]]:
    """(title, headers, rows, text when empty) for one pair; console and Markdown both.
    With power modes (has_modes) every cell table has a power mode column after the cell."""
    A, B = p.a.label, p.b.label
    modes = has_modes(p)

    def table(title, heads, recs, row, empty=""):
        if modes:
            heads = [heads[0], MODE_HEAD, *heads[1:]]
        rows = []
        for r in recs:
            x = row(r)
            rows.append([x[0], r.get("power_mode") or "", *x[1:]] if modes else x)
        out.append((title, heads, rows, empty))

    out: list = []
    table(f"LOST EQUIVALENCE ({A} -> {B})", ["cell", "what"], p.lost,
          lambda r: [f"{r['device'] + ' ' if r['device'] else ''}{r['model']} · {r['variant']}",
                     r["what"]])
    table(f"Performance {B}/{A}", ["cell", "metric", A, B, f"{B}/{A}", "95% CI", "verdict", "note"],
          p.perf, lambda r: [cell(r), r["metric"], fmt(r["a"]), fmt(r["b"]), *ratio_text(r["ratio"]),
                             r["verdict"], r["note"]],
          "no latency/throughput cell in both runs")
    table("Parity and accuracy", ["cell", "metric", A, B, "change"],
          [r for r in p.quality if not changed_only or r["change"]],
          lambda r: [cell(r), r["metric"], fmt(r["a"], 4), fmt(r["b"], 4),
                     "" if r["change"] is None else f"{r['change']:+.4g}"],
          "no change" if changed_only else "no parity/accuracy cell in both runs")
    table("Memory and energy", ["cell", "metric", A, B, f"{B}/{A}", "note"],
          [r for r in p.resources if not changed_only or r["note"]],
          lambda r: [cell(r), r["metric"], fmt(r["a"]), fmt(r["b"]),
                     "" if r["ratio"] is None else f"{r['ratio']:.3f}", r["note"]],
          "no change beyond the threshold" if changed_only else "no figures in both runs")
    table("Status changes", ["cell", A, B, "reason"], p.status,
          lambda r: [cell(r), r["a"], r["b"], (r["reason"] or "")[:120]])
    table("Cells in one run only", ["cell", "only in"], p.only, lambda r: [cell(r), r["in"]])
    out.append((f"Environment differences ({len(p.env)})", ["key", A, B],
                [[k, a[:80], b[:80]] for k, a, b in p.env],
                "none recorded (same versions, device state, profile and options)"))
    return out


def _noise_name(key: tuple) -> str:
    _, var, mode = key
    return f"{var} {mode}" if mode else var


# ------------------------------------------------------------------------------ console
def print_console(pairs: list[Pair], runs: list[Run], header: list[str], threshold: float) -> None:
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    con = Console()
    if not con.is_terminal:
        con = Console(width=200)
    for line in header:
        con.print(escape(line), highlight=False)
    for p in pairs:
        con.rule(escape(f"{p.a.label} -> {p.b.label}: {p.a.name} -> {p.b.name}"))
        for title, heads, rows, empty in tables(p, changed_only=True):
            if not rows:
                if empty:
                    con.print(f"[dim]{escape(title)}: {escape(empty)}[/]")
                continue
            t = Table(title=escape(title), title_style="bold red" if title.startswith("LOST") else "bold")
            for h in heads:
                t.add_column(escape(h), overflow="fold")
            at = heads.index("verdict") if "verdict" in heads else None
            for r in rows:
                style = {cs.SLOWER: "red", cs.FASTER: "green"}.get(r[at]) if at is not None else None
                t.add_row(*[escape(str(c)) for c in r], style=style)
            con.print(t)
        for line in likely_causes(p):
            con.print(f"  likely cause: {escape(line)}", highlight=False)
        if counts(p)["slower"] and not likely_causes(p):
            con.print(f"  likely cause: {NO_CAUSE}", highlight=False)
        if p.noise:
            con.print("  process noise (between-process sd, in the intervals): " + ", ".join(
                f"{_noise_name(k)} {100 * sd:.1f}% ({n} pairs)" for k, (sd, n) in sorted(p.noise.items())),
                highlight=False)
        c = counts(p)
        con.print(f"[bold]{p.a.label} -> {p.b.label}[/]: {c['slower']} slower, {c['faster']} faster, "
                  f"{c['same']} no significant change (threshold {threshold:.3g}%), "
                  f"{c['lost']} lost equivalence, {c['only']} in one run only")


# ----------------------------------------------------------------------------- markdown
NOISE_TEXT = ("Process noise: how far one worker process's median sits from another's for the "
              "same model, variant and batch size (each run measures batch 1 in its latency and "
              "its throughput cell). The performance intervals include it (docs/compare.md).")


def write_markdown(path: Path, pairs: list[Pair], runs: list[Run], header: list[str],
                   plots: list[Path], gate: str) -> None:
    lines = ["# edgebench compare", ""]
    lines += [md_table(["", "run", "created_at", "profile", "device"],
                       [[r.label, r.name, r.created_at or "unknown",
                         (r.meta.get("config") or {}).get("profile", "") if r.device is None
                         else ((r.meta.get("settings") or {}).get(r.device) or {}).get("profile", ""),
                         _device_name(r)] for r in runs]), ""]
    lines += [f"{h}  " for h in header] + [""]
    lines += ["## Summary", "", md_table(
        ["pair", "matched cells", "slower", "faster", "no significant change",
         "lost equivalence", "in one run only", "environment differences"],
        [[f"{p.a.label} -> {p.b.label}", p.matched, *counts(p).values(), len(p.env)]
         for p in pairs]), "", gate, ""]
    if plots:
        lines += ["## Trend", "", ("p50 latency (ms) and throughput (samples/s, from the median "
                                   "call) per run in created_at order; bars: 95% bootstrap CI."), ""]
        lines += [f"![{q.stem}](plots/{q.name})" for q in plots] + [""]
    for p in pairs:
        lines += [f"## {p.a.label} -> {p.b.label}", "", f"{p.a.label}: `{p.a.name}`  ",
                  f"{p.b.label}: `{p.b.name}`", ""]
        if p.noise:
            modes = any(mode for _, _, mode in p.noise)
            lines += [NOISE_TEXT, "", md_table(
                ["device", "variant", *([MODE_HEAD] if modes else []), "pairs", "between-process sd"],
                [[dev or "-", var, *([mode] if modes else []), n, f"{100 * sd:.1f}%"]
                 for (dev, var, mode), (sd, n) in sorted(p.noise.items())]), ""]
        causes = likely_causes(p)
        if causes:
            lines += ["Likely causes of the slower cells (environment differences):", ""]
            lines += [f"- `{c}`" for c in causes] + [""]
        elif counts(p)["slower"]:
            lines += [f"Likely cause of the slower cells: {NO_CAUSE}", ""]
        for title, heads, rows, empty in tables(p, changed_only=False):
            if rows:
                lines += [f"### {title}", "", md_table(heads, [[_md(c) for c in r] for r in rows]), ""]
            elif empty:
                lines += [f"### {title}", "", empty, ""]
    atomic_write_text(path, "\n".join(lines))


def _md(c) -> str:
    return str(c).replace("|", "\\|").replace("\n", " ")


def _device_name(r: Run) -> str:
    dev = r.meta.get("device") if r.device is None else \
        ((r.meta.get("devices") or {}).get(r.device) or {}).get("device")
    if not dev:
        rec = next(iter(r.cells.values()), {})
        dev = rec.get("device") or {}
    return f"{dev.get('kind', '')} {dev.get('name', '')}".strip()


# ---------------------------------------------------------------------------------- csv
def write_csv(path: Path, pairs: list[Pair]) -> None:
    buf = io.StringIO(newline="")
    modes = any(has_modes(p) for p in pairs)
    cols = CSV_COLUMNS
    if modes:
        at = CSV_COLUMNS.index("task") + 1
        cols = [*CSV_COLUMNS[:at], MODE_COLUMN, *CSV_COLUMNS[at:]]
    w = csv.DictWriter(buf, fieldnames=cols, extrasaction="ignore")   # no mode column: dropped
    w.writeheader()
    for p in pairs:
        base = {"a_run": p.a.name, "b_run": p.b.name}
        for r in p.lost:
            w.writerow({**base, "section": "lost_equivalence", **_key(r), "note": r["what"]})
        for r in p.perf:
            rt = r["ratio"]
            w.writerow({**base, "section": "performance", **_key(r), "metric": r["metric"],
                        "a": _num(r["a"]), "b": _num(r["b"]), "ratio": _num(rt.point),
                        "ci95_low": _num(rt.low), "ci95_high": _num(rt.high),
                        "verdict": r["verdict"], "note": r["note"]})
        for r in p.quality:
            w.writerow({**base, "section": "quality", **_key(r), "metric": r["metric"],
                        "a": _num(r["a"]), "b": _num(r["b"]), "change": _num(r["change"])})
        for r in p.resources:
            w.writerow({**base, "section": "resources", **_key(r), "metric": r["metric"],
                        "a": _num(r["a"]), "b": _num(r["b"]), "ratio": _num(r["ratio"]),
                        "note": r["note"]})
        for r in p.status:
            w.writerow({**base, "section": "status", **_key(r), "metric": "status",
                        "a": r["a"], "b": r["b"], "note": r["reason"]})
        for r in p.only:
            w.writerow({**base, "section": "only_in_one_run", **_key(r), "note": f"only in {r['in']}",
                        "a": "present" if r["in"] == p.a.label else "",
                        "b": "present" if r["in"] == p.b.label else ""})
        for k, a, b in p.env:
            w.writerow({**base, "section": "environment", "metric": k, "a": a, "b": b})
        for (dev, var, mode), (sd, n) in sorted(p.noise.items()):
            w.writerow({**base, "section": "process_noise", "device": dev, "variant": var,
                        MODE_COLUMN: mode,
                        "metric": "between-process sd of ln(median ms)", "a": _num(sd),
                        "note": f"from {n} pairs of batch-1 medians"})
    atomic_write_text(path, buf.getvalue())


def _key(r: dict) -> dict:
    return {k: ("" if r.get(k) is None else r[k])
            for k in ("device", "model", "variant", "task", MODE_COLUMN, "batch_size")}


def _num(v) -> str:
    return "" if v is None else f"{v:.6g}"


# ------------------------------------------------------------------------------- trends
def trend_series(runs: list[Run], n_boot: int, seed: int) -> dict[tuple, dict]:
    """(device, model, variant, power mode) -> {"latency": [(i, p50, lo, hi)],
    "throughput b=N": [...]}: one series per power mode (a mode is compared with itself)."""
    out: dict[tuple, dict] = {}
    for i, run in enumerate(runs):
        sd = {k: cs.process_sd(v) for k, v in noise_pairs(run).items()}
        for key, rec in run.cells.items():
            if key[3] not in ("latency", "throughput") or rec["status"] not in OK:
                continue
            raw = run.raw(rec)
            mode = mode_of(key)
            s = out.setdefault((*key[:3], mode), {})
            if key[3] == "latency":
                calls = (raw or {}).get("latency_ms")
                if calls:
                    med, lo, hi = cs.widen_median(*cs.median_ci(calls, n_boot, seed, seed_key(key)),
                                                  sd.get((key[0], key[2], mode)))
                else:
                    lat = rec["latency_ms"]
                    med, lo, hi = lat["p50"], lat.get("ci95_low"), lat.get("ci95_high")
                s.setdefault("latency", []).append((i, med, lo, hi))
                continue
            for e in rec["by_batch"]:
                b = e["batch_size"]
                calls = ((raw or {}).get("by_batch_ms") or {}).get(str(b))
                if calls:
                    med, lo, hi = cs.widen_median(
                        *cs.median_ci(calls, n_boot, seed, seed_key(key, b)),
                        sd.get((key[0], key[2], mode)))
                else:
                    med = e.get("latency_ms_p50") or b * 1000.0 / e["samples_per_s"]
                    lo = hi = None
                sps = [None if ms is None else b * 1000.0 / ms for ms in (med, hi, lo)]
                s.setdefault(f"throughput b={b}", []).append((i, *sps))
    return out


def trend_plots(out_dir: Path, runs: list[Run], n_boot: int, seed: int) -> list[Path]:
    """One PNG per device x model x variant (x power mode) with the p50 latency and the
    throughput at each batch size across the runs (x: runs in created_at order)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out_dir.mkdir(parents=True, exist_ok=True)
    made = []
    ticks = [f"{r.label}\n{(r.created_at or '')[:10]}" for r in runs]
    for (dev, model, variant, mode), series in trend_series(runs, n_boot, seed).items():
        lat = {k: v for k, v in series.items() if k == "latency"}
        thr = {k: v for k, v in series.items() if k != "latency"}
        panels = [(t, s) for t, s in (("p50 latency (ms)", lat), ("samples/s", thr)) if s]
        fig, axes = plt.subplots(1, len(panels), figsize=(5.5 * len(panels), 3.8), squeeze=False)
        for ax, (ylabel, group) in zip(axes[0], panels):
            for name, pts in group.items():
                xs = [x for x, *_ in pts]
                ys = [y for _, y, _, _ in pts]
                err = [[y - lo if lo is not None else 0 for _, y, lo, _ in pts],
                       [hi - y if hi is not None else 0 for _, y, _, hi in pts]]
                ax.errorbar(xs, ys, yerr=err, marker="o", capsize=3, label=name)
            ax.set_xticks(range(len(runs)), ticks, fontsize=8)
            ax.set_ylabel(ylabel)
            ax.grid(alpha=0.3)
            if len(group) > 1 or ylabel == "samples/s":
                ax.legend(fontsize=7)
        fig.suptitle(f"{dev + ' ' if dev else ''}{model} · {variant}"
                     + (f" · {mode}" if mode else ""), fontsize=10)
        fig.tight_layout()
        name = re.sub(r"[^A-Za-z0-9_.-]+", "_", "-".join(x for x in ("trend", dev, model, variant, mode) if x))
        path = out_dir / f"{name}.png"
        fig.savefig(path, dpi=100)
        plt.close(fig)
        made.append(path)
    return made
