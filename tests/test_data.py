"""Data sources: every accepted layout, bad inputs, and the preprocessing cache, on real
image files generated here."""
from __future__ import annotations

import os
import warnings

import numpy as np
import pytest
import torch

from edgebench.data import DataError, PreparedData, prepare, resolve_source
from edgebench.data.sources import SAMPLE_DIR
from edgebench.models import data_config

from testlib import TINY, make_image

WNIDS = ["n01440764", "n01443537", "n02123045"]   # timm indices 0, 1, 281


def test_bundled_sample_has_license_and_labels():
    lst = resolve_source(None)
    assert lst.name == "sample" and len(lst) == 16
    assert (SAMPLE_DIR / "LICENSE.md").is_file() and "CC0" in lst.license
    assert sorted(set(lst.labels)) == [281, 657, 872, 967]


def test_wnid_folders(wnid_folder):
    lst = resolve_source(str(wnid_folder))
    assert lst.layout == "wnid-folders" and len(lst) == 8
    assert lst.labels[:2] == [0, 0] and lst.labels[4:6] == [281, 281]


def test_flat_with_wnid_labels_file(tmp_path):
    for k in range(1, 4):
        make_image(tmp_path / f"ILSVRC2012_val_{k:08d}.JPEG", seed=k)
    (tmp_path / "labels.txt").write_text("\n".join(["n02123045", "n01440764", "n01443537"]) + "\n", encoding="utf-8")
    lst = resolve_source(str(tmp_path))
    assert lst.layout == "flat-with-labels"
    assert lst.labels == [281, 0, 1]


def test_flat_with_partial_copy_uses_image_numbers(tmp_path):
    # Only images 2 and 3 present: labels must come from positions 2 and 3, not 1 and 2.
    for k in (2, 3):
        make_image(tmp_path / f"ILSVRC2012_val_{k:08d}.JPEG", seed=k)
    (tmp_path / "labels.txt").write_text("n02123045\nn01440764\nn01443537\n", encoding="utf-8")
    assert resolve_source(str(tmp_path)).labels == [0, 1]


def test_flat_with_torchvision_devkit_meta(tmp_path):
    """The devkit path goes through torchvision's own meta file (what parse_devkit_archive
    writes), read with torchvision's load_meta_file."""
    from torchvision.datasets import imagenet as tv

    for k in range(1, 3):
        make_image(tmp_path / f"ILSVRC2012_val_{k:08d}.JPEG", seed=k)
    torch.save(({w: (w,) for w in WNIDS}, ["n01443537", "n02123045"]), tmp_path / tv.META_FILE)
    assert resolve_source(str(tmp_path)).labels == [1, 281]


def test_flat_without_labels_is_a_clear_error(tmp_path):
    make_image(tmp_path / "ILSVRC2012_val_00000001.JPEG", seed=1)
    with pytest.raises(DataError, match="no labels"):
        resolve_source(str(tmp_path))


def test_imagenetv2_index_folders(tmp_path):
    make_image(tmp_path / "0" / "a.jpeg", seed=1)
    make_image(tmp_path / "999" / "b.jpeg", seed=2)
    lst = resolve_source(str(tmp_path))
    assert lst.layout == "class-index-folders" and lst.labels == [0, 999]


def test_missing_path_and_unknown_layout(tmp_path):
    with pytest.raises(DataError, match="does not exist"):
        resolve_source(str(tmp_path / "nope"))
    make_image(tmp_path / "x.png", seed=3)        # loose images, no class folders, no labels
    with pytest.raises(DataError, match="accepted layouts"):
        resolve_source(str(tmp_path))


def test_corrupt_and_non_image_files_are_skipped_and_named(tmp_path, cache_dir):
    make_image(tmp_path / "n01440764" / "good.JPEG", seed=1)
    (tmp_path / "n01440764" / "broken.JPEG").write_bytes(b"\xff\xd8\xff\xe0 not really a jpeg")
    (tmp_path / "n01440764" / "notes.txt").write_text("not an image", encoding="utf-8")
    lst = resolve_source(str(tmp_path))
    assert len(lst) == 3
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        folder = prepare(lst, data_config(TINY), cache_dir)
    named = " ".join(str(w.message) for w in caught)
    assert "broken.JPEG" in named and "notes.txt" in named
    data = PreparedData(folder, (0.5,) * 3, (0.5,) * 3)
    assert len(data) == 1 and len(data.skipped) == 2


def test_preprocessing_matches_timm_and_is_cached(wnid_folder, cache_dir):
    from PIL import Image
    from timm.data import create_transform

    cfg = data_config(TINY)
    lst = resolve_source(str(wnid_folder))
    folder = prepare(lst, cfg, cache_dir)
    stamp = os.stat(folder / "images.npy").st_mtime_ns
    assert prepare(lst, cfg, cache_dir) == folder                      # reused, not redone
    assert os.stat(folder / "images.npy").st_mtime_ns == stamp
    data = PreparedData(folder, cfg["mean"], cfg["std"])
    ref = create_transform(**{k: cfg[k] for k in ("input_size", "interpolation", "crop_pct",
                                                   "mean", "std")}, is_training=False)
    with Image.open(lst.paths[0]) as im:
        expected = ref(im.convert("RGB")).numpy()
    batch = data.batch(0, 1)
    # aligned as runtimes align their own buffers, so TVM reads it in place
    assert batch.ctypes.data % 64 == 0 and batch.flags.c_contiguous
    got = batch[0]
    assert got.shape == tuple(cfg["input_size"])
    np.testing.assert_allclose(got, expected, atol=1e-5)
    # Another preprocessing config gets its own cache entry.
    other = dict(cfg, input_size=(3, 128, 128))
    assert prepare(lst, other, cache_dir) != folder
