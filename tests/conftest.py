"""Shared fixtures (helpers live in testlib.py)."""
from __future__ import annotations

from pathlib import Path

import pytest

from testlib import make_image


@pytest.fixture(scope="session")
def cache_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("cache")


@pytest.fixture(scope="session")
def wnid_folder(tmp_path_factory) -> Path:
    """ImageNet-val style class folders with 8 generated images over 4 classes."""
    root = tmp_path_factory.mktemp("imagenet_val")
    for i, wnid in enumerate(["n01440764", "n01443537", "n02123045", "n07920052"]):
        for j in range(2):
            make_image(root / wnid / f"ILSVRC2012_val_{i * 2 + j + 1:08d}.JPEG", seed=i * 10 + j)
    return root
