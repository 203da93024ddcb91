"""Integrity of cached artifacts: each cache file's sha256 is recorded when it is written and
checked when it is reused; a file that fails is moved aside and rebuilt, and the record says so.

The record is a sidecar ``<file>.sha256`` holding ``"<sha256> <size>:<mtime_ns>"`` (the same
sidecar ``Artifact.sha256`` reads). Writers call ``seal(path)`` right after the atomic write
(``os.replace``); readers call ``check_cached(path, executed=...)`` on a cache hit.

What is hashed when:

* ``executed=True`` -- files that run code when loaded (TVM ``.so`` via dlopen, TensorRT
  engines, the JAX artifact's pickle): fully re-hashed on every reuse, in the process that
  loads them, right before loading. No size/mtime shortcut: ``os.utime`` restores an mtime,
  and a same-size overwrite keeps the size.
* ``executed=False`` -- data read by a parser that runs no code from it (ONNX protobuf, the
  uint8 image array, JSON): re-hashed only when the size+mtime stamp differs from the one
  recorded with the digest. An unchanged stamp is trusted because these files can be large
  (vgg16's ONNX is 553 MB, the ImageNet val array 7.5 GB) and are reused by every cell;
  truncation or any ordinary rewrite changes the stamp, so it is still caught by the hash.

A cached file without a recorded sha256 (written before hashes were recorded at creation, or
its sidecar was removed) is of unknown origin. Executed: rebuilt -- loading it would run
unverified code, and rebuilding costs one conversion. Not executed: sealed on first use -- a
parser reads it, a truncated one fails to parse rather than run, and the one cache that never
had sidecars (the preprocessed images, up to 7.5 GB for ImageNet val) would otherwise be
decoded again from scratch. (Earlier versions already wrote a sidecar for every converted
artifact the first time a cell used it, through ``Artifact.sha256``.)
"""
from __future__ import annotations

import contextlib
import hashlib
import os
from pathlib import Path

from .util import atomic_write_text, sha256_file

SUFFIX = ".sha256"          # sidecar: <file>.sha256
CORRUPT_SUFFIX = ".corrupt"  # a file that failed its check is moved to <file>.corrupt


class CacheCorrupted(RuntimeError):
    """An executed artifact's bytes do not match their recorded sha256 (refused to load)."""


def sidecar(path) -> Path:
    return Path(str(path) + SUFFIX)


def _stamp(path) -> str:
    st = os.stat(path)
    return f"{st.st_size}:{st.st_mtime_ns}"


def recorded(path) -> tuple[str, str] | None:
    """(digest, stamp) from the sidecar, or None when there is no readable record."""
    try:
        parts = sidecar(path).read_text(encoding="utf-8").split()
    except OSError:
        return None
    if len(parts) != 2 or len(parts[0]) != 64:
        return None
    return parts[0], parts[1]


def seal(path, digest: str | None = None) -> str:
    """Record ``path``'s sha256 (computed now unless the writer passes the digest of the
    bytes it wrote). Call right after the file is atomically in place."""
    digest = digest or sha256_file(path)
    atomic_write_text(sidecar(path), f"{digest} {_stamp(path)}\n")
    return digest


def verify(path, executed: bool, data: bytes | None = None) -> str | None:
    """None when ``path`` matches its recorded sha256, else why not. ``data``: the file's
    bytes already read by the caller (hashed instead of reading the file again, so what is
    checked is exactly what gets loaded)."""
    try:
        now = _stamp(path)
    except OSError as e:
        return f"unreadable ({e.strerror or e})"
    rec = recorded(path)
    if rec is None:
        if executed:
            return "no recorded sha256 (unknown origin: executed artifacts are rebuilt)"
        with contextlib.suppress(OSError):
            seal(path)           # a parsed file of unknown origin: adopted (module doc)
        return None
    want, stamp = rec
    if not executed and data is None and now == stamp:
        return None              # unchanged stamp on a non-executed file: see module doc
    got = hashlib.sha256(data).hexdigest() if data is not None else sha256_file(path)
    if got != want:
        size = now.split(":")[0]
        return (f"sha256 mismatch: recorded {want[:16]}..., file {got[:16]}... "
                f"({size} bytes; truncated or modified)")
    if now != stamp:             # same bytes, new stamp (copied, touched): remember the stamp
        with contextlib.suppress(OSError):
            seal(path, got)
    return None


def quarantine(path) -> Path | None:
    """Move a bad cache file aside to ``<file>.corrupt`` (replacing an older one, so at most
    one per artifact is kept for inspection) and drop its record. Returns the new path."""
    path = Path(path)
    sidecar(path).unlink(missing_ok=True)
    if not path.exists():
        return None
    bad = path.with_name(path.name + CORRUPT_SUFFIX)
    os.replace(path, bad)
    return bad


def check_cached(path, executed: bool, data: bytes | None = None) -> str:
    """On a cache hit: "" when ``path`` can be reused; otherwise the file is moved aside and
    the reason is returned -- the caller rebuilds as on a cache miss and records the reason
    (``cache_rebuilt``)."""
    why = verify(path, executed, data)
    if why is None:
        return ""
    bad = quarantine(path)
    return f"{Path(path).name}: {why}" + (f"; moved aside to {bad.name}" if bad else "")


def reuse(path, executed: bool, read=lambda: True, also=(), data: bytes | None = None):
    """The cache lookup every converter makes: ``(read(), "")`` when ``path`` and the files in
    ``also`` (its metadata) exist and ``path`` passes ``check_cached``; ``(None, why)`` when a
    cached file failed (moved aside, or ``read`` could not parse it: ``ValueError``) -- rebuild
    and record ``why`` as ``cache_rebuilt``; ``(None, "")`` on a miss."""
    path = Path(path)
    if not path.is_file() or not all(Path(p).is_file() for p in also):
        return None, ""
    why = check_cached(path, executed, data)
    if why:
        return None, why
    try:
        return read(), ""
    except ValueError as e:              # its metadata is torn: rebuild as on a miss
        return None, f"{path.name}: metadata unreadable ({e})"


def require(path, data: bytes | None = None) -> None:
    """Before loading an executed artifact: raise ``CacheCorrupted`` unless its bytes (the
    file, or ``data`` read from it) match the recorded sha256. Always a full hash."""
    why = verify(path, executed=True, data=data)
    if why is not None:
        raise CacheCorrupted(f"refusing to load {path}: {why}")


def digest(path) -> str:
    """The file's sha256, for the record (``artifact_sha256``): the recorded digest when the
    stamp is unchanged, else hashed now. A record with a different digest is never
    overwritten (the next ``verify`` must still see the mismatch); a missing one is written,
    so an artifact outside the caches is hashed once, not once per cell."""
    rec = recorded(path)
    stamp = _stamp(path)
    if rec is not None and rec[1] == stamp:
        return rec[0]
    got = sha256_file(path)
    if rec is None or rec[0] == got:
        with contextlib.suppress(OSError):
            seal(path, got)
    return got
