"""The report's per-layer section (the ``layers`` task, edgebench.layers): for each model, its
variants side by side: time per operator type, how many layers ran where, what stayed FP32 in
a reduced-precision variant, the top layers of each variant, and the layers matched across
variants by ONNX node name where the runtimes keep it; plus a stacked bar plot per model."""
from __future__ import annotations

from pathlib import Path

from .layer_types import TYPES
from .report_format import OK_STATUSES, fmt, latest_cells, md_table

DEFAULT_TOP = 10
PLOT_PREFIX = "layers_"


def _layer_records(records: list[dict]) -> list[dict]:
    """The layers records, an INT8 variant's other form (profiled in its cell) as one more
    column: "onnxruntime-int8 (cpu form)" beside "onnxruntime-int8 (tensorrt form)"."""
    out = []
    for r in latest_cells(records).values():
        if r["task"] != "layers" or r["status"] not in OK_STATUSES or not r.get("layers"):
            continue
        if "form" not in r:
            out.append(r)
            continue
        out.append({**r, "variant": f"{r['variant']} ({r['form']} form)"})
        out += [{**o, "model": r["model"], "variant": f"{r['variant']} ({form} form)"}
                for form, o in r.get("other_forms", {}).items()]
    return out


def _share(ms: float, total: float) -> str:
    return f"{fmt(ms, 3)} ({100 * ms / total:.0f}%)" if total else fmt(ms, 3)


def section(records: list[dict], meta: dict, plots: list[str] = ()) -> list[str]:
    recs = _layer_records(records)
    failed = [r for r in latest_cells(records).values()
              if r["task"] == "layers" and r["status"] not in OK_STATUSES]
    if not recs and not failed:
        return []
    top = int((meta.get("config") or {}).get("layers_top") or DEFAULT_TOP)
    lines = ["## Where the time goes: per-layer profiles", "",
             "Each variant's own profiler at batch 1 (the `layers` task): ONNX Runtime's "
             "per-node profile, TVM's VM instrument, torch.profiler, jax.profiler, TensorRT's "
             "IProfiler. Operator types are the same for every runtime; a fused kernel counts "
             "as its heaviest operator. A profile whose total is more than 15% off the "
             "variant's latency p50 is marked: read its shares, not its milliseconds.", ""]
    for model in dict.fromkeys(r["model"] for r in recs):
        mine = [r for r in recs if r["model"] == model]
        lines += [f"### {model}: time per operator type (ms at batch 1, share)", ""]
        heads = ["operator type", *(r["variant"] for r in mine)]
        rows = [[t, *(_share(r["by_type_ms"].get(t, 0.0), r["profile_total_ms"])
                      if r["by_type_ms"].get(t) else "–" for r in mine)] for t in TYPES
                if any(r["by_type_ms"].get(t) for r in mine)]
        rows.append(["**profile total**", *(fmt(r["profile_total_ms"], 3) for r in mine)])
        rows.append(["latency p50", *(fmt(r["against_latency"]["latency_p50_ms"], 3)
                                      for r in mine)])
        rows.append(["total / p50", *(_ratio_cell(r["against_latency"]) for r in mine)])
        lines += [md_table(heads, rows), ""]
        plot = f"{PLOT_PREFIX}{_slug(model)}.png"
        if plot in plots:
            lines += [f"![{plot}](plots/{plot})", ""]
        lines += _placement(mine) + _reduced(mine) + _matched(mine, top) + _tops(mine, top)
        notes = [f"- {r['variant']}: {n}" for r in mine for n in r.get("notes", [])]
        notes += [f"- {r['variant']}: {r['profiler']}" for r in mine]
        notes += [f"- {r['variant']}: profiled in the INT8 variant's layers cell, from the same "
                  "calibration; its p50 was timed there (an unprofiled session, a short "
                  "window), not by a latency cell" for r in mine
                  if r.get("latency_p50_ms_measured_here") is not None]
        lines += notes + [""]
    for r in failed:
        lines.append(f"- {r['model']} / {r['variant']}: layers {r['status']}: {r.get('reason')}")
    return lines + ([""] if failed else [])


def _ratio_cell(check: dict) -> str:
    if check.get("ratio") is None:
        return "not checked"
    return fmt(check["ratio"]) + ("" if check["reliable"] else " **unreliable**")


def _placement(mine: list[dict]) -> list[str]:
    def counts(d: dict) -> str:
        return ", ".join(f"{w} {n}" for w, n in sorted(d.items(), key=lambda x: -x[1]))

    rows = [[r["variant"], r["layer_count"], counts(r["placement"]),
             counts(r.get("onnx_nodes_by_provider") or {}) or "–"] for r in mine]
    return ["Where the layers ran (profiled layers; and behind an ONNX Runtime GPU EP, where "
            "ORT placed each ONNX node):", "",
            md_table(["variant", "layers", "ran on", "ONNX nodes by EP"], rows), ""]


def _reduced(mine: list[dict]) -> list[str]:
    rows = []
    for r in mine:
        red = r.get("reduced_precision")
        if not red:
            continue
        if red.get("fp32_layers") is None:
            rows.append([r["variant"], red["precision"], "–", "–", red.get("note", "")])
            continue
        ops = ", ".join(f"{op} {n}" for op, n in sorted(red["fp32_ops"].items(),
                                                          key=lambda x: -x[1]))
        rows.append([r["variant"], red["precision"],
                     f"{red['fp32_layers']} ({_share(red['fp32_ms'], r['profile_total_ms'])})",
                     f"{red['quantize_dequantize_layers']} "
                     f"({_share(red['quantize_dequantize_ms'], r['profile_total_ms'])})", ops])
    if not rows:
        return []
    return ["Layers that stayed FP32 in a reduced-precision variant (ms at batch 1, share):", "",
            md_table(["variant", "precision", "FP32 layers", "quantize/dequantize",
                      "FP32 operators"], rows), ""]


def _matched(mine: list[dict], top: int) -> list[str]:
    """The slowest layers of the first variant whose layers carry ONNX node names, with the
    same nodes' time in the other such variants."""
    named = [r for r in mine if r.get("matching") == "onnx node name"]
    others = [r["variant"] for r in mine if r not in named]
    if len(named) < 2:
        return ([f"Layers are matched across variants by operator type only ({', '.join(others)}"
                 " fuse or rename them).", ""] if others else [])
    first, rest = named[0], named[1:]
    times = [{x["name"]: x["ms"] for x in r["layers"]} for r in rest]
    rows = [[x["name"], x["op"], fmt(x["ms"], 3), *(fmt(t.get(x["name"]), 3) for t in times)]
            for x in first["layers"][:top]]
    found = sum(1 for x in first["layers"] for t in times if x["name"] in t)
    lines = [f"Matched by ONNX node name ({found} of {len(first['layers']) * len(rest)} "
             f"node times found; a runtime that fuses or renames a node has none):", "",
             md_table(["node", "op", first["variant"], *(r["variant"] for r in rest)], rows), ""]
    if others:
        lines += [f"By operator type only: {', '.join(others)} (fused or renamed kernels).", ""]
    return lines


def _tops(mine: list[dict], top: int) -> list[str]:
    lines = []
    for r in mine:
        rows = [[i + 1, x["name"][:70], x.get("op") or "–", x["type"], x.get("where") or "–",
                 x.get("precision") or "–", _share(x["ms"], r["profile_total_ms"])]
                for i, x in enumerate(r["layers"][:top])]
        lines += [f"Top {min(top, len(r['layers']))} layers of {r['variant']}:", "",
                  md_table(["#", "layer", "op", "type", "ran on", "precision", "ms (share)"],
                           rows), ""]
    return lines


def _slug(model: str) -> str:
    from .models import slug

    return slug(model)


def plot(records: list[dict], folder: Path) -> list[str]:
    """One stacked bar plot per model: time per operator type per variant."""
    recs = _layer_records(records)
    if not recs:
        return []
    from .plots import _mpl

    plt = _mpl()
    made = []
    for model in dict.fromkeys(r["model"] for r in recs):
        mine = [r for r in recs if r["model"] == model]
        fig, ax = plt.subplots(figsize=(max(5, 1.3 * len(mine) + 2), 4.2))
        bottom = [0.0] * len(mine)
        for t in TYPES:
            ms = [r["by_type_ms"].get(t, 0.0) for r in mine]
            if any(ms):
                ax.bar(range(len(mine)), ms, bottom=bottom, label=t)
                bottom = [b + m for b, m in zip(bottom, ms)]
        ax.set_xticks(range(len(mine)))
        ax.set_xticklabels([r["variant"] for r in mine], rotation=20, ha="right", fontsize=8)
        ax.set_ylabel("ms per inference at batch 1 (profiled)")
        ax.set_title(f"{model}: time per operator type")
        ax.legend(fontsize=7)
        fig.tight_layout()
        name = f"{PLOT_PREFIX}{_slug(model)}.png"
        fig.savefig(folder / name, dpi=110)
        plt.close(fig)
        made.append(name)
    return made
