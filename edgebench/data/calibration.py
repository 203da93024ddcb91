"""The INT8 calibration set: which images calibrate, and the proof that none of them is an
image accuracy or parity is measured on (MLPerf keeps a separate calibration list for the
same reason: a model calibrated on its test images scores better than it will in use).

Where the calibration images come from, first that applies:
  1. ``--int8-calib-data PATH``: any folder of images (class folders, a flat folder, nested);
  2. ``--data`` given: the images of that set the run does not evaluate (the evaluation
     subset is ``--max-images`` evenly spread; the rest is free), evenly spread;
  3. neither: the bundled calibration set, ``datasets/calibration/`` (40 CC0 images, none
     of them in the bundled evaluation sample).
An overlap with the evaluation images, by path or by content (same size and same first
64 KiB: a copy of a file counts), is refused before anything runs (exit 2).
"""
from __future__ import annotations

import dataclasses
import hashlib
import os
from pathlib import Path

from .sources import IMAGE_EXTS, REPO_ROOT, DataError, ImageList

CALIBRATION_DIR = REPO_ROOT / "datasets" / "calibration"


def _images_under(root: Path) -> list[str]:
    return sorted(str(p) for p in root.rglob("*")
                  if p.is_file() and p.suffix.lower() in IMAGE_EXTS and not p.name.startswith("."))


def folder_images(path: str, name: str = "calibration") -> ImageList:
    """Every image file under ``path`` (labels unknown: calibration needs none)."""
    root = Path(path).expanduser()
    if not root.is_dir():
        raise DataError(f"--int8-calib-data: '{path}' is not a folder")
    paths = _images_under(root)
    if not paths:
        raise DataError(f"--int8-calib-data: '{path}' holds no image files "
                        f"({', '.join(sorted(IMAGE_EXTS))})")
    return ImageList(name, str(root.resolve()), "any", paths, [-1] * len(paths))


def bundled_calibration() -> ImageList:
    lst = folder_images(str(CALIBRATION_DIR), "bundled-calibration")
    return dataclasses.replace(lst, license=(CALIBRATION_DIR / "LICENSE.md")
                               .read_text(encoding="utf-8").splitlines()[0])


def _fingerprint(path: str) -> tuple[int, str] | None:
    try:
        with open(path, "rb") as f:
            head = f.read(1 << 16)
        return os.path.getsize(path), hashlib.sha256(head).hexdigest()
    except OSError:
        return None


def overlap(calib: ImageList, evaluated: ImageList) -> list[tuple[str, str]]:
    """(calibration file, evaluation file) pairs that are the same image: the same path, or
    the same size and first 64 KiB."""
    by_path = {os.path.realpath(p): p for p in evaluated.paths}
    pairs = [(c, by_path[os.path.realpath(c)]) for c in calib.paths
             if os.path.realpath(c) in by_path]
    seen = {os.path.realpath(c) for c, _ in pairs}
    prints: dict[tuple[int, str], str] = {}
    for p in evaluated.paths:
        fp = _fingerprint(p)
        if fp is not None:
            prints.setdefault(fp, p)
    for c in calib.paths:
        if os.path.realpath(c) in seen:
            continue
        fp = _fingerprint(c)
        if fp is not None and fp in prints:
            pairs.append((c, prints[fp]))
    return pairs


def not_evaluated(images: ImageList, evaluated: ImageList) -> ImageList:
    """The images of ``images`` that are not in ``evaluated`` (by path)."""
    used = set(evaluated.paths)
    keep = [i for i, p in enumerate(images.paths) if p not in used]
    return dataclasses.replace(images, name=f"{images.name} (not evaluated)",
                               paths=[images.paths[i] for i in keep],
                               labels=[images.labels[i] for i in keep])


def choose(evaluated: ImageList, all_images: ImageList, data_given: bool,
           calib_data: str | None, count: int | None, default_count: int) -> ImageList:
    """The calibration images for this run (DataError with the reason when it cannot be
    done as asked). ``count`` None: up to ``default_count`` (the profile's)."""
    if calib_data:
        pool, where = folder_images(calib_data), f"--int8-calib-data {calib_data}"
    elif data_given:
        pool = not_evaluated(all_images, evaluated)
        where = (f"the images of --data that this run does not evaluate ({len(all_images)} "
                 f"in all, {len(evaluated)} evaluated)")
    else:
        pool, where = bundled_calibration(), f"the bundled calibration set ({CALIBRATION_DIR})"
    if not len(pool):
        raise DataError(f"INT8 calibration: no images are left for it in {where}; give a "
                        "separate set with --int8-calib-data PATH (e.g. MLPerf's calibration "
                        "list of ImageNet train images)")
    if count is not None and count > len(pool):
        raise DataError(f"--int8-calib-images {count}: only {len(pool)} calibration images "
                        f"are available in {where}")
    n = count if count is not None else min(default_count, len(pool))
    chosen = pool.limit(n)
    clash = overlap(chosen, evaluated)
    if clash:
        c, e = clash[0]
        raise DataError(f"INT8 calibration images overlap the evaluation images: {len(clash)} "
                        f"of {len(chosen)} (first: {c} is {e}); calibrating on the images "
                        "accuracy and parity are measured on would flatter INT8. Use a separate "
                        "set (--int8-calib-data) or fewer evaluation images (--max-images)")
    return chosen


def files_hash(images: ImageList) -> str:
    """A hash of the calibration list: each file's name, size and first 64 KiB, in order."""
    h = hashlib.sha256()
    for p in images.paths:
        fp = _fingerprint(p)
        h.update(f"{os.path.basename(p)}|{fp}\n".encode())
    return h.hexdigest()[:16]
