"""Append-only JSONL result store. One line per finished cell, flushed and fsynced as the
cell ends, so a killed run loses nothing already written."""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Iterable


def append(path: Path, record: dict) -> None:
    line = json.dumps(record, default=_json_default, allow_nan=False) + "\n"
    with open(path, "a", encoding="utf-8") as f:
        f.write(line)
        f.flush()
        os.fsync(f.fileno())


def _json_default(o):
    import numpy as np

    if isinstance(o, np.generic):
        return o.item()
    if isinstance(o, np.ndarray):
        return o.tolist()
    if isinstance(o, Path):
        return str(o)
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")


def read(path: Path) -> list[dict]:
    """All complete records; a torn last line (killed mid-write) is ignored."""
    if not Path(path).is_file():
        return []
    out = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError:
                continue
    return out


def latest(records: Iterable[dict]) -> dict[tuple, dict]:
    """The last record of each (device, model, variant, task) cell."""
    out: dict[tuple, dict] = {}
    for r in records:
        out[cell_key(r)] = r
    return out


def cell_key(r: dict) -> tuple:
    return (r.get("device_id", ""), r["model"], r["variant"], r["task"])


def find(records: Iterable[dict], model: str, variant: str, task: str,
         device_id: str = "") -> dict | None:
    return latest(records).get((device_id, model, variant, task))
