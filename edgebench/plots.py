"""PNG plots in the spirit of the study's figures: latency per model (log scale), and against
batch size: throughput, process and system memory, power and energy per sample (each batch
size over its own timed window; made only where a power sensor gave figures)."""
from __future__ import annotations

from pathlib import Path

from .report_format import OK_STATUSES, latest_cells


def _mpl():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _ok(records, task):
    return [r for r in latest_cells(records).values()
            if r["task"] == task and r["status"] in OK_STATUSES]


def _series(r: dict) -> str:
    """A record's series: its variant, and its nvpmodel power mode in a --power-modes run."""
    return r["variant"] + (f" @ {r['power_mode']}" if r.get("power_mode") else "")


def latency_plot(path: Path, records: list[dict]) -> bool:
    recs = _ok(records, "latency")
    if not recs:
        return False
    plt = _mpl()
    models = list(dict.fromkeys(r["model"] for r in recs))
    variants = list(dict.fromkeys(_series(r) for r in recs))
    width = 0.8 / len(variants)
    fig, ax = plt.subplots(figsize=(max(6, 1.6 * len(models)), 4.5))
    for i, v in enumerate(variants):
        xs, ys, lo, hi = [], [], [], []
        for j, m in enumerate(models):
            r = next((r for r in recs if r["model"] == m and _series(r) == v), None)
            if r:
                lat = r["latency_ms"]
                xs.append(j + i * width)
                ys.append(lat["p50"])
                lo.append(lat["p50"] - lat["p5"] if "p5" in lat else lat["p50"] - lat["min"])
                hi.append(lat["p99"] - lat["p50"])
        ax.bar(xs, ys, width, label=v, yerr=[lo, hi], capsize=2)
    ax.set_yscale("log")
    ax.set_xticks([j + width * (len(variants) - 1) / 2 for j in range(len(models))])
    ax.set_xticklabels(models, rotation=20, ha="right", fontsize=8)
    ax.set_ylabel("batch-1 latency, ms (p50; whiskers min..p99)")
    ax.set_title("Latency per model")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def panels(plt, n: int, width: float = 4.2, height: float = 3.4):
    """A figure of ``n`` panels, three to a row: (figure, the panels' axes)."""
    cols = min(3, n)
    rows = (n + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(width * cols, height * rows), squeeze=False)
    return fig, list(axes.flat)


def save_panels(fig, axes: list, n: int, title: str, path: Path, fontsize=None) -> None:
    """Blank the panels past the ``n`` used, title the figure, write it and close it."""
    for ax in axes[n:]:
        ax.axis("off")
    fig.suptitle(title, fontsize=fontsize)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    _mpl().close(fig)


def _by_batch_plot(path: Path, records: list[dict], key: str, ylabel: str, title: str) -> bool:
    recs = [r for r in _ok(records, "throughput")
            if any(b.get(key) is not None for b in r.get("by_batch") or [])]
    if not recs:
        return False
    plt = _mpl()
    models = list(dict.fromkeys(r["model"] for r in recs))
    fig, axes = panels(plt, len(models))
    for ax, m in zip(axes, models):
        for r in (r for r in recs if r["model"] == m):
            pts = [(b["batch_size"], b.get(key)) for b in r["by_batch"] if b.get(key) is not None]
            if pts:
                ax.plot(*zip(*pts), marker="o", label=_series(r))
        ax.set_xscale("log", base=2)
        ax.set_title(m, fontsize=9)
        ax.set_xlabel("batch size")
        ax.set_ylabel(ylabel, fontsize=8)
        ax.legend(fontsize=7)
    save_panels(fig, axes, len(models), title, path)
    return True


def make_all(folder: Path, records: list[dict]) -> list[str]:
    made = []
    if latency_plot(folder / "latency.png", records):
        made.append("latency.png")
    if _by_batch_plot(folder / "throughput.png", records, "samples_per_s", "samples/s",
                      "Throughput against batch size"):
        made.append("throughput.png")
    if _by_batch_plot(folder / "memory.png", records, "peak_rss_mb", "peak process RSS, MB",
                      "Memory against batch size"):
        made.append("memory.png")
    if _by_batch_plot(folder / "system_memory.png", records, "system_memory_mean_mb",
                      "system used memory, MB (mean)",
                      "System memory against batch size (system-wide, as the study's)"):
        made.append("system_memory.png")
    if _by_batch_plot(folder / "energy.png", records, "energy_mj_per_sample",
                      "net energy, mJ/sample",
                      "Energy per sample against batch size (each over its own window)"):
        made.append("energy.png")
    if _by_batch_plot(folder / "power.png", records, "power_mean_w", "mean power, W",
                      "Power against batch size (timed window)"):
        made.append("power.png")
    return made
