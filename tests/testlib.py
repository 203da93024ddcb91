"""Test helpers: real images generated on the fly, and running the real CLIs."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
TINY = "test_efficientnet"   # a real timm model: 0.36 M parameters, 160x160 input


def make_image(path: Path, seed: int, size=(96, 80)) -> None:
    """A real JPEG/PNG with structure (gradients + noise), not a blank frame."""
    from PIL import Image

    rng = np.random.default_rng(seed)
    h, w = size[1], size[0]
    yy, xx = np.mgrid[0:h, 0:w]
    base = np.stack([(xx * (seed % 7 + 1)) % 256, (yy * (seed % 5 + 2)) % 256,
                     ((xx + yy) * 3) % 256], -1).astype(np.float32)
    img = np.clip(base + rng.normal(0, 25, base.shape), 0, 255).astype(np.uint8)
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(img).save(path)


def run_cli(module: str, *args: str, timeout: float = 600, env: dict | None = None,
            cwd: Path = REPO) -> subprocess.CompletedProcess:
    e = dict(os.environ, PYTHONUNBUFFERED="1", HF_HUB_OFFLINE="1", COLUMNS="200")
    e.update(env or {})
    return subprocess.run([sys.executable, "-m", module, *args], capture_output=True, text=True,
                          timeout=timeout, env=e, cwd=cwd)


def records(out: Path) -> list[dict]:
    p = out / "results.jsonl"
    return [json.loads(ln) for ln in p.read_text().splitlines() if ln.strip()] if p.exists() else []
