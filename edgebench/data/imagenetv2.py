"""ImageNetV2 (Recht et al. 2019): a second real labelled source, downloaded when reachable.

Layout after extraction: <dir>/imagenetv2-<variant>-format-val/<class index>/<hash>.jpeg
"""
from __future__ import annotations

import os
import urllib.request
from pathlib import Path

from . import archives
from .errors import DataError

VARIANTS = {
    "matched-frequency": "imagenetv2-matched-frequency",
    "threshold0.7": "imagenetv2-threshold0.7",
    "top-images": "imagenetv2-top-images",
}
URL = "https://huggingface.co/datasets/vaishaal/ImageNetV2/resolve/main/{name}.tar.gz"


def _variant(spec: str) -> str:
    v = spec.removeprefix("imagenetv2").lstrip("-") or "matched-frequency"
    if v not in VARIANTS:
        raise DataError(f"unknown ImageNetV2 variant '{v}'; known: {', '.join(VARIANTS)}")
    return VARIANTS[v]


def ensure_imagenetv2(spec: str, download_dir: str | None = None) -> str:
    name = _variant(spec)
    base = Path(download_dir or os.environ.get("EDGEBENCH_DATA", "~/.cache/edgebench/data")).expanduser()
    folder = base / f"{name}-format-val"
    if folder.is_dir():
        return str(folder)
    base.mkdir(parents=True, exist_ok=True)
    archive = base / f"{name}.tar.gz"
    url = URL.format(name=name)
    try:
        _download(url, archive)
    except OSError as e:
        raise DataError(f"ImageNetV2: could not download {url} ({e}); download it by hand and "
                        f"pass --data {folder}") from e
    archives.extract(archive, base)
    archive.unlink()
    if not folder.is_dir():
        raise DataError(f"ImageNetV2: {archive.name} did not contain {folder.name}/")
    return str(folder)


def _download(url: str, dest: Path) -> None:
    from rich.progress import (BarColumn, DownloadColumn, Progress, TextColumn,
                               TransferSpeedColumn)

    tmp = dest.with_suffix(".part")
    with urllib.request.urlopen(url, timeout=30) as r, open(tmp, "wb") as f, Progress(
            TextColumn("ImageNetV2"), BarColumn(), DownloadColumn(), TransferSpeedColumn()) as bar:
        task = bar.add_task("download", total=int(r.headers.get("Content-Length") or 0) or None)
        while chunk := r.read(1 << 20):
            f.write(chunk)
            bar.advance(task, len(chunk))
    tmp.rename(dest)
