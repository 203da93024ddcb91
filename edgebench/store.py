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
    """One whole line or nothing: when the write fails (a full disk), the file is cut back
    to where it was (truncating needs no free space), so no torn line stays behind.
    Unbuffered, so nothing is left in a buffer to be written later at close."""
    data = (text + "\n").encode("utf-8")
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        start = os.lseek(fd, 0, os.SEEK_END)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            os.fsync(fd)
        except OSError as e:
            try:
                os.ftruncate(fd, start)
            except OSError:
                pass                 # repair() sets a torn line aside on --resume
            raise OSError(e.errno, e.strerror, str(path)) from e
    finally:
        os.close(fd)


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


class RecordsError(ValueError):
    """A results.jsonl that is not one: the message names the file and the line."""


RECORD_KEYS = ("model", "variant", "task", "status")


def read_checked(path: Path) -> tuple[list[dict], str | None]:
    """The records of the store at ``path``, each checked to be a result record (a JSON
    object whose model, variant, task and status are strings). A last line cut off
    mid-write (no newline: a killed run) is left out and named in the warning returned;
    anything else that is not a record raises RecordsError naming the file and the line."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise RecordsError(f"{path}: not a results file (not UTF-8 text)") from None
    except OSError as e:
        raise RecordsError(f"{path}: cannot be read ({e.strerror or e})") from None
    lines, out, warning = text.splitlines(), [], None
    for i, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            r = json.loads(line)
        except json.JSONDecodeError as e:
            if i == len(lines) and not text.endswith("\n"):
                warning = f"{path}: ignored the incomplete last line {i} (a killed run)"
                continue
            raise RecordsError(f"{path} line {i}: not a JSON record ({e.msg})") from None
        if not isinstance(r, dict) or not all(isinstance(r.get(k), str) for k in RECORD_KEYS):
            raise RecordsError(f"{path} line {i}: not a result record (model, variant, task "
                               "and status must be strings)")
        out.append(r)
    return out, warning


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
    """The last record of each (device, model, variant, task, power mode) cell."""
    out: dict[tuple, dict] = {}
    for r in records:
        out[cell_key(r)] = r
    return out


def cell_key(r: dict) -> tuple:
    """A cell is its device, model, variant and task, and the nvpmodel power mode it ran in
    when the run swept modes (--power-modes; "" otherwise)."""
    return (r.get("device_id", ""), r["model"], r["variant"], r["task"],
            r.get("power_mode") or "")


def find(records: Iterable[dict], model: str, variant: str, task: str,
         device_id: str = "", power_mode: str = "") -> dict | None:
    return latest(records).get((device_id, model, variant, task, power_mode or ""))
