"""Helpers shared by the TVM tests (test_tvm*.py): the tiny model they build, the tuning
command run as a subprocess, and the database's records."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from edgebench.metrics import PARITY_DEFAULTS

REPO = Path(__file__).resolve().parents[1]
MODEL = "test_resnet"          # timm's tiny test network: 0.47 M parameters, 22 TVM tasks in NHWC
SIZE = (3, 64, 64)
SIZE_ARG = "3x64x64"
TOL = PARITY_DEFAULTS["fp32_atol"]    # the suite's FP32 parity budget


def _spec(options=None):
    from edgebench.models import make_spec, random_weights

    # The weights `--weights random` resolves to (batch norm re-estimated for this model).
    spec = make_spec(MODEL, random_weights(MODEL, 0), options or {})
    spec.input_size = SIZE
    return spec


def _torch_logits(spec, x):
    import torch

    with torch.inference_mode():
        return spec.build()(torch.from_numpy(x)).numpy()


def _cli(*args, timeout=420, env=None, **kw):
    e = dict(os.environ, PYTHONPATH=str(REPO), PYTHONUNBUFFERED="1", **(env or {}))
    return subprocess.run([sys.executable, "-m", "edgebench.tune", *args], cwd=REPO, env=e,
                          capture_output=True, text=True, timeout=timeout, **kw)


def _records(db_dir: Path) -> list:
    p = db_dir / "database_tuning_record.json"
    if not p.is_file():
        return []
    return [json.loads(ln) for ln in p.read_text(encoding="utf-8").splitlines() if ln.strip()]


def _db_dir(tuning_dir: Path) -> Path:
    found = list(tuning_dir.glob(f"llvm-*/{MODEL}-{SIZE_ARG}"))
    assert len(found) == 1, f"expected one database under {tuning_dir}, found {found}"
    return found[0]


def old_database(path: Path) -> Path:
    """A tuning database as one made before the lowering choices were recorded: files with a
    record, a ``tuning.json`` holding only its layout (only their presence is read)."""
    from converters.tvm import database

    path.mkdir(parents=True)
    (path / database.DB_WORKLOAD).write_text("", encoding="utf-8")
    (path / database.DB_RECORDS).write_text("[0, [[], [0.001]]]\n", encoding="utf-8")
    (path / database.DB_META).write_text(json.dumps({"layout": "NHWC"}), encoding="utf-8")
    assert database.database_exists(path)
    return path
