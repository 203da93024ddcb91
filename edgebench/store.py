"""Append-only JSONL result store. One line per finished cell, flushed and fsynced as the
cell ends, so a killed run loses nothing already written."""
from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Iterable

from .util import json_default as _json_default


RAW_KEY = "_raw_timings"              # where measure.py leaves per-call timings in a record
RAW_FILE = "raw_timings.jsonl"        # the run's sidecar: one line per record that had them


def append(path: Path, record: dict) -> None:
    """Append ``record`` to the JSONL store at ``path``. Per-call timings it carries go to
    the sidecar first (``RAW_FILE`` beside it); the record keeps their file and sha256."""
    raw = record.pop(RAW_KEY, None)
    if raw:
        side = {"model": record["model"], "variant": record["variant"], "task": record["task"],
                "device_id": record.get("device_id", ""), "started_at": record.get("started_at"),
                **raw}
        text = json.dumps(side, separators=(",", ":"), allow_nan=False)
        _append_line(Path(path).parent / RAW_FILE, text)
        record["raw_timings"] = {"file": RAW_FILE,
                                 "sha256": hashlib.sha256(text.encode()).hexdigest()}
    _append_line(path, json.dumps(record, default=_json_default, allow_nan=False))


def _append_line(path: Path, text: str) -> None:
    with open(path, "a", encoding="utf-8") as f:
        f.write(text + "\n")
        f.flush()
        os.fsync(f.fileno())


def read_raw(run_dir: Path, record: dict) -> dict | None:
    """The per-call timings behind ``record`` ({"latency_ms": [...]} or {"by_batch_ms":
    {"1": [...], ...}}), checked against the sha256 the record holds; None without them."""
    ref = record.get("raw_timings")
    side = Path(run_dir) / (ref or {}).get("file", RAW_FILE)
    if not ref or not side.is_file():
        return None
    with open(side, encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            if line and hashlib.sha256(line.encode()).hexdigest() == ref["sha256"]:
                return json.loads(line)
    return None




def repair(path: Path) -> str | None:
    """Before appending to a store a killed run left behind: a last line cut off mid-write
    (no newline) is moved to ``<name>.torn`` beside it and cut from the store, so the next
    record starts on a line of its own. Returns a warning naming what was set aside."""
    path = Path(path)
    if not path.is_file() or path.stat().st_size == 0:
        return None
    with open(path, "rb+") as f:
        f.seek(0, os.SEEK_END)
        end = f.tell()
        f.seek(max(0, end - 1))
        if f.read(1) == b"\n":
            return None
        f.seek(0)
        data = f.read()
        keep = data.rfind(b"\n") + 1
        torn = data[keep:]
        side = path.with_name(path.name + ".torn")
        with open(side, "ab") as t:
            t.write(torn + b"\n")
            t.flush()
            os.fsync(t.fileno())
        f.truncate(keep)
        f.flush()
        os.fsync(f.fileno())
    return (f"{path.name}: its last line was cut off mid-write ({len(torn)} bytes, a killed "
            f"run); set aside in {side.name}, and that cell runs again")


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
