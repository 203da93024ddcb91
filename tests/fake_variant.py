"""A null system under test for the runner tests (MLPerf LoadGen's null SUT): a registered
variant whose predictor is a few numpy operations, with behaviour set by its options.
Loaded into workers through EDGEBENCH_VARIANT_MODULES=tests.fake_variant. It stands for no
device and reports no device: it computes on the CPU, honestly, and fast."""
from __future__ import annotations

import os
import signal
import sys
import time

import numpy as np

from converters import register
from converters.base import Artifact, Availability, Converter, OutOfMemory, Predictor

LEAK: list = []          # what a leaking cell keeps alive, module-wide


class NullPredictor(Predictor):
    def __init__(self, num_classes: int, opts: dict):
        self.num_classes, self.opts = num_classes, opts
        self.rng = np.random.default_rng(0)

    def __call__(self, batch: np.ndarray) -> np.ndarray:
        if batch.shape[0] == self.opts.get("null_kill_at_batch"):    # what the OOM killer does
            os.kill(os.getpid(), signal.SIGKILL)
        if batch.shape[0] > self.opts.get("null_oom_above", 1 << 30):
            raise OutOfMemory(f"null: batch {batch.shape[0]} does not fit")
        mb = self.opts.get("null_alloc_mb", 0)
        if mb:      # a real allocation of MiB per sample (address space, not touched): what a
            # cap (RLIMIT_AS) refuses at mmap. Not even a byte a MiB is written: numpy asks for
            # huge pages on large arrays, so each such write faulted in 2 MiB of zeroes, and
            # the step-down test spent a minute of kernel time zeroing memory nobody reads.
            work = np.empty(batch.shape[0] * (int(mb) << 20), dtype=np.uint8)
            del work
        time.sleep(self.opts.get("null_sleep_ms", 0.0) / 1e3)
        # Logits that do not follow the image: parity against any real model fails.
        return self.rng.standard_normal((batch.shape[0], self.num_classes)).astype(np.float32)


@register
class NullVariant(Converter):
    name = "null"
    precision = "fp32"
    description = "null SUT for tests: random logits, no model"

    def available(self, options=None) -> Availability:
        why = (options or {}).get("null_unavailable")
        return Availability.no(why) if why else Availability.yes(numpy=np.__version__)

    def check_model(self, model, input_size, options) -> Availability:
        refused = (options or {}).get("null_refuse") or []
        return Availability.no(f"null refuses {model}") if model in refused else Availability.yes()

    def convert(self, spec, cache) -> Artifact:
        mb = spec.options.get("null_leak_mb", 0)
        if mb:                          # allocate and keep it: a leak within this process
            LEAK.append(np.ones(int(mb) * 2**20, dtype=np.uint8))
        return Artifact(self.name, obj=spec.num_classes, meta={"null": True})

    def load(self, artifact, spec) -> Predictor:
        p = NullPredictor(artifact.obj, spec.options)
        p.buffer = np.empty(1 << 20, dtype=np.uint8)     # where this process's buffers land
        p.meta = {"vmsize_mb": _vmsize_mb(),       # what this cell's process maps before measuring
                  "buffer_address": int(p.buffer.ctypes.data),
                  "preloaded_marker": "tests.fake_preloaded" in sys.modules}
        return p


@register
class PreloadingNullVariant(NullVariant):
    """The null SUT declaring a module to preload, as JAX's and inductor's variants do."""
    name = "null-preloading"
    preload = ("tests.fake_preloaded",)


def _vmsize_mb() -> float | None:
    for line in open("/proc/self/status", encoding="utf-8"):
        if line.startswith("VmSize:"):
            return int(line.split()[1]) / 1024
    return None
