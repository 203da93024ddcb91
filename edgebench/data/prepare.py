"""Decode and preprocess once per preprocessing config; every variant reads the same array.

The cache holds uint8 NCHW images after each model's own timm eval transform (resize,
center crop at crop_pct, interpolation). Normalisation (mean/std) is applied per batch when
it is handed out, so the cached file is 4x smaller than float32 and the full val set fits.
"""
from __future__ import annotations

import hashlib
import json
import os
import warnings
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Iterator

import numpy as np

from ..cache_integrity import check_cached, seal
from ..util import aligned_empty
from .sources import ImageList

TRANSFORM_KEYS = ("input_size", "interpolation", "crop_pct", "crop_mode")


def _transform(cfg: dict):
    from timm.data import create_transform

    # use_prefetcher=True stops before ToTensor/Normalize: it yields uint8 CHW.
    return create_transform(input_size=tuple(cfg["input_size"]), interpolation=cfg["interpolation"],
                            crop_pct=cfg["crop_pct"], crop_mode=cfg.get("crop_mode", "center"),
                            is_training=False, use_prefetcher=True)


def _decode_one(args) -> tuple[int, np.ndarray | None, str]:
    i, path, cfg = args
    from PIL import Image

    try:
        with Image.open(path) as im:
            im = im.convert("RGB")
            arr = np.asarray(_transform(cfg)(im))
        return i, arr, ""
    except Exception as e:  # noqa: BLE001 - any decode failure means "skip this file"
        return i, None, f"{type(e).__name__}: {e}"


def cache_key(images: ImageList, cfg: dict) -> str:
    h = hashlib.sha256()
    h.update(json.dumps({k: list(cfg[k]) if isinstance(cfg[k], tuple) else cfg[k]
                         for k in TRANSFORM_KEYS if k in cfg}, sort_keys=True).encode())
    for p, lab in zip(images.paths, images.labels):
        try:
            st = os.stat(p)
            h.update(f"{p}|{lab}|{st.st_size}|{int(st.st_mtime)}\n".encode())
        except OSError:
            h.update(f"{p}|missing\n".encode())
    return h.hexdigest()[:16]


class PreparedData:
    """Preprocessed images on disk (memory-mapped) with their labels."""

    def __init__(self, folder: Path, mean, std):
        meta = json.loads((folder / "meta.json").read_text(encoding="utf-8"))
        self.folder = folder
        self.meta = meta
        self.images = np.load(folder / "images.npy", mmap_mode="r")
        self.labels = np.asarray(meta["labels"], dtype=np.int64)
        self.names = meta["names"]
        self.skipped = meta["skipped"]
        mean = np.asarray(mean, dtype=np.float32).reshape(1, -1, 1, 1) * 255.0
        std = np.asarray(std, dtype=np.float32).reshape(1, -1, 1, 1) * 255.0
        self._mean, self._inv_std = mean, 1.0 / std

    def __len__(self) -> int:
        return len(self.labels)

    def normalize(self, u8: np.ndarray) -> np.ndarray:
        # In place on the one float copy: this runs inside the accuracy pass's timed window.
        # The copy is 64-byte aligned, as a runtime's own input buffer would be, so that
        # every runtime can read it where it is (TVM copies an unaligned input first).
        x = aligned_empty(u8.shape, np.float32)
        x[...] = u8
        x -= self._mean
        x *= self._inv_std
        return x

    def batch(self, start: int, size: int) -> np.ndarray:
        return self.normalize(np.asarray(self.images[start:start + size]))

    def batches(self, size: int, limit: int | None = None) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        n = min(len(self), limit or len(self))
        for s in range(0, n, size):
            e = min(s + size, n)
            yield self.batch(s, e - s), self.labels[s:e]

    def tiled(self, size: int) -> np.ndarray:
        """A batch of ``size`` real images, repeating them when the set is smaller."""
        idx = np.arange(size) % len(self)
        return self.normalize(np.asarray(self.images[idx]))


CACHE_FILES = ("images.npy", "meta.json")


def _check_cache(folder: Path) -> str:
    """Why the cached folder cannot be reused (its bad files moved aside); empty when it can.
    Not executed (np.load without pickles, JSON): hashed when a file's stamp changed."""
    whys = [w for w in (check_cached(folder / name, executed=False) for name in CACHE_FILES) if w]
    return "; ".join(whys)


def _reserved_memmap(path: Path, shape: tuple) -> np.memmap:
    """A new uint8 .npy memory map whose disk blocks are reserved up front: a page stored
    into a sparse file on a full disk kills the process with SIGBUS, a failed reservation
    here is an OSError (ENOSPC) naming the file."""
    arr = np.lib.format.open_memmap(path, mode="w+", dtype=np.uint8, shape=shape)
    fd = os.open(path, os.O_RDWR)
    try:
        os.posix_fallocate(fd, 0, os.fstat(fd).st_size)
    except OSError as e:
        del arr
        raise OSError(e.errno, e.strerror, str(path)) from e
    finally:
        os.close(fd)
    return arr


def prepare(images: ImageList, cfg: dict, cache_dir: Path, workers: int | None = None,
            progress=None) -> Path:
    """Decode + preprocess ``images`` for ``cfg`` into cache_dir/data/<key>/ unless it is
    already there; returns that folder. Unreadable files are skipped and named."""
    return prepare_checked(images, cfg, cache_dir, workers, progress)[0]


def prepare_checked(images: ImageList, cfg: dict, cache_dir: Path, workers: int | None = None,
                    progress=None) -> tuple[Path, str]:
    """``prepare``, also returning why a cached folder failed its sha256 check and was
    rebuilt ("" when it was reused or new). A rebuild is also warned about."""
    folder = Path(cache_dir) / "data" / cache_key(images, cfg)
    rebuilt = ""
    if (folder / "meta.json").is_file():
        rebuilt = _check_cache(folder)
        if not rebuilt:
            return folder, ""
        warnings.warn(f"preprocessed-data cache {folder} rebuilt: {rebuilt}", stacklevel=2)
    folder.mkdir(parents=True, exist_ok=True)
    c, h, w = cfg["input_size"]
    n = len(images.paths)
    tmp = folder / "images.tmp.npy"
    out = _reserved_memmap(tmp, (n, c, h, w))
    ok = np.zeros(n, dtype=bool)
    skipped: list[dict] = []
    jobs = [(i, p, dict(cfg)) for i, p in enumerate(images.paths)]
    workers = workers or min(os.cpu_count() or 1, 8)
    task = progress.add_task(f"preprocess {h}x{w} {cfg['interpolation']}", total=n) if progress else None

    def take(result):
        i, arr, err = result
        if arr is None:
            skipped.append({"path": images.paths[i], "error": err})
            warnings.warn(f"skipping unreadable image {images.paths[i]}: {err}", stacklevel=2)
        else:
            out[i] = arr
            ok[i] = True
        if progress:
            progress.advance(task)

    if workers > 1 and n > 64:
        with ProcessPoolExecutor(workers) as pool:
            for r in pool.map(_decode_one, jobs, chunksize=32):
                take(r)
    else:
        for j in jobs:
            take(_decode_one(j))
    keep = np.flatnonzero(ok)
    final = _reserved_memmap(folder / "images.npy.part", (len(keep), c, h, w))
    for s in range(0, len(keep), 1024):
        final[s:s + 1024] = out[keep[s:s + 1024]]
    final.flush()
    del out, final
    tmp.unlink()
    os.replace(folder / "images.npy.part", folder / "images.npy")
    seal(folder / "images.npy")
    meta = {"source": images.name, "root": images.root, "layout": images.layout,
            "config": {k: cfg[k] for k in TRANSFORM_KEYS if k in cfg},
            "labels": [images.labels[i] for i in keep],
            "names": [os.path.basename(images.paths[i]) for i in keep],
            "skipped": skipped}
    (folder / "meta.json.part").write_text(json.dumps(meta), encoding="utf-8")
    os.replace(folder / "meta.json.part", folder / "meta.json")
    seal(folder / "meta.json")
    return folder, rebuilt
