"""Small helpers that more than one module needs, kept once (a leaf module: it imports
nothing from edgebench or converters, so anything may import it).

- ``REPO_ROOT``          the checkout this code runs from
- ``atomic_write_text``  write a file so a kill mid-write leaves the old one or the new one
- ``atomic_write_json``  the same for JSON (numpy scalars/arrays and paths serialised)
- ``sha256_file``        content hash of a file, streamed
- ``first_line``         the line of an exception worth showing a user
- ``physical_cores``     CPU cores without SMT siblings
- ``aligned_empty``      a numpy array whose data starts on a 64-byte boundary
"""
from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]


def json_default(o):
    """``json.dumps(default=...)`` for what records carry besides plain JSON types."""
    import numpy as np

    if isinstance(o, np.generic):
        return o.item()
    if isinstance(o, np.ndarray):
        return o.tolist()
    if isinstance(o, Path):
        return str(o)
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")


def atomic_write_text(path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file in the same folder and
    ``os.replace``: readers see the old file or the new one, never half of one."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.part")
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def atomic_write_json(path, obj, indent: int | None = 1) -> None:
    atomic_write_text(path, json.dumps(obj, indent=indent, default=json_default) + "\n")


def sha256_file(path, chunk: int = 1 << 20) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(chunk), b""):
            h.update(block)
    return h.hexdigest()


def first_line(e: BaseException | str, limit: int = 400) -> str:
    """``Type: message`` with the message's useful line. Errors that carry a whole traceback
    as text (TVM, Ray) put the real error on their last line; others on their first."""
    text = str(e).strip()
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    if not lines:
        why = ""
    elif len(lines) > 1 and ("Traceback" in lines[0] or 'File "' in text):
        why = lines[-1]
    else:
        why = lines[0]
    name = type(e).__name__ if isinstance(e, BaseException) else ""
    if name and (not why or why.startswith(name)):
        out = why or name
    else:
        out = f"{name}: {why}" if name else why
    return out[:limit]


# What runtimes' own CPU allocators give (TVM's and ORT's: 64 bytes); TVM reads an input in
# place only from such an address (converters/tvm/predictor.py).
ALIGNMENT = 64


def aligned_empty(shape, dtype, alignment: int = ALIGNMENT):
    """An uninitialised C-contiguous array of ``shape`` and ``dtype`` whose data pointer is a
    multiple of ``alignment`` bytes (numpy's own allocations are 16-byte aligned; an empty
    array has no data to align)."""
    import numpy as np

    dtype = np.dtype(dtype)
    nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    raw = np.empty(nbytes + alignment, np.uint8)
    start = -raw.ctypes.data % alignment
    return raw[start:start + nbytes].view(dtype).reshape(shape)


def physical_cores() -> int:
    try:
        import psutil

        return psutil.cpu_count(logical=False) or os.cpu_count() or 1
    except ImportError:  # pragma: no cover - psutil is a core dependency
        return os.cpu_count() or 1


def load_toml(text: str) -> dict:
    """Parse TOML text. ``tomllib`` is Python >= 3.11; JetPack 6's system Python is 3.10,
    where its backport ``tomli`` (same API, pinned for Python < 3.11) takes its place."""
    try:
        import tomllib  # novermin: 3.11+, with tomli below for 3.10
    except ModuleNotFoundError:       # Python 3.10
        import tomli as tomllib
    return tomllib.loads(text)
