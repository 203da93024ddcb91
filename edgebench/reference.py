"""Figures the reproduced study (seed 003: five inference frameworks on a Jetson AGX Orin)
states in its text, for the report to print beside our own figures when we run on an AGX Orin.

The data is ``edgebench/reference_data/orin-paper-2025.csv`` (a copy of
``../shared/reference/orin-paper-2025.csv``; provenance in ``reference_data/README.md``).
The paper's software: PyTorch 2.3.0, ONNX Runtime 1.17.1, TensorRT 8.6.2.3 (JetPack 6.0),
TVM 0.21.0, JAX 0.4.28. Only prose figures are known (its tables are not in our copy);
bounds ("over 280 ms", "under 5 ms") and approximations are flagged on every row.
"""
from __future__ import annotations

import csv
import functools
import os
import re
from pathlib import Path

PAPER = "seed 003 (Jetson AGX Orin, five inference frameworks, 2025)"
_HERE = Path(__file__).resolve().parent
CANDIDATES = (
    _HERE / "reference_data" / "orin-paper-2025.csv",
    _HERE.parent.parent / "shared" / "reference" / "orin-paper-2025.csv",
)


def _csv_path() -> Path:
    env = os.environ.get("EDGEBENCH_REFERENCE_CSV")
    for p in ([Path(env)] if env else []) + list(CANDIDATES):
        if p.is_file():
            return p
    raise FileNotFoundError("orin-paper-2025.csv not found in " + ", ".join(map(str, CANDIDATES)))


def _row(raw: dict) -> dict:
    note = raw.get("note", "")
    text = raw.get("value", "").strip()
    row = {"metric": raw["metric"], "model": raw["model"], "variant": raw["variant"],
           "value": None, "low": None, "high": None, "value_text": text,
           "unit": raw.get("unit") or None, "note": note, "source": PAPER,
           "bound": None, "approximate": False}
    m = re.fullmatch(r"([\d.]+)\s*-\s*([\d.]+)", text)
    if m:
        row["low"], row["high"] = float(m.group(1)), float(m.group(2))
    elif text:
        row["value"] = float(text)
    low = note.lower()
    if "lower bound" in low:
        row["bound"] = "lower"      # the true figure is above this ("over 280 ms")
    elif "upper bound" in low:
        row["bound"] = "upper"      # the true figure is below this ("under 5 ms")
    row["approximate"] = any(w in low for w in ("approximately", "around", "nearly"))
    return row


@functools.lru_cache(maxsize=1)
def load() -> tuple[dict, ...]:
    with open(_csv_path(), newline="", encoding="utf-8") as f:
        return tuple(_row(r) for r in csv.DictReader(f))


def paper_figures(model: str, variant: str, metric: str | None = None) -> list[dict]:
    """Every figure the paper states for ``model`` x ``variant`` (rows for all models, '*',
    included), optionally one metric. Each row: metric, model, variant, value (float or
    None), low/high (for ranges), value_text, unit, bound ('lower'|'upper'|None),
    approximate, note, source. A 'failure' row (value None) records that the paper could
    not build that variant."""
    return [dict(r) for r in load()
            if r["variant"] == variant and r["model"] in (model, "*")
            and (metric is None or r["metric"] == metric)]


def is_agx_orin(device_state: dict | None) -> bool:
    """True when ``device_state()`` describes a Jetson AGX Orin (any memory size): the only
    board the paper's figures can be compared with. Orin NX / Nano share the SoC (tegra234)
    but not the figures."""
    if not device_state:
        return False
    model = str(device_state.get("board_model") or "")
    if re.search(r"\bAGX\s+Orin\b", model, re.IGNORECASE):
        return True
    # AGX Orin modules are P3701 (dev kit carrier P3737); the model string may be custom.
    compat = device_state.get("compatible") or []
    return any("p3701" in str(c).lower() for c in compat)
