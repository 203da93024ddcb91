"""XLA memory settings: applied before JAX starts, and reported with every result.

By default XLA grabs 75% of GPU memory at start-up, so a memory figure would measure the
preallocation, not the model. We turn preallocation off unless the user chose otherwise,
and record what was in force so a reader can tell which kind of figure they are looking at.
"""
from __future__ import annotations

import os
import sys

MEMORY_VARIABLES = ("XLA_PYTHON_CLIENT_PREALLOCATE", "XLA_PYTHON_CLIENT_ALLOCATOR",
                    "XLA_PYTHON_CLIENT_MEM_FRACTION")

# XLA:CPU (jaxlib 0.10) hands subgraphs to YNNPACK ("library fusions"). Its multi-op dot
# fusion pulled vgg16's whole conv stack into the fc2 matmul and ran 13x slower per image at
# batch >= 2 (1,650 ms instead of 125 ms; batch 1 unaffected), which is a runtime defect,
# not what JAX computes: experiments/FINDINGS.md#xlacpus-ynnpack-fusions.
# An empty list leaves every op to XLA's own emitters. A user's own setting of the flag wins.
YNN_FLAG = "--xla_cpu_experimental_ynn_fusion_type"
YNN_DEFAULT = f"{YNN_FLAG}="

_set_by_us = False
_jax_was_imported_first = False


def prepare() -> None:
    """Call before the first ``import jax`` (idempotent)."""
    global _set_by_us, _jax_was_imported_first
    flags = os.environ.get("XLA_FLAGS", "")
    if YNN_FLAG not in flags:
        os.environ["XLA_FLAGS"] = f"{flags} {YNN_DEFAULT}".strip()
    if "XLA_PYTHON_CLIENT_PREALLOCATE" not in os.environ:
        _jax_was_imported_first = "jax" in sys.modules
        os.environ["XLA_PYTHON_CLIENT_PREALLOCATE"] = "false"
        _set_by_us = True


def describe() -> dict:
    """The settings in force, the backend and who chose the preallocation policy."""
    import jax

    settings = {var: os.environ.get(var) for var in MEMORY_VARIABLES}
    if not _set_by_us:
        source = "user environment"
    elif _jax_was_imported_first:
        # XLA reads it when the backend starts; that may already have happened.
        source = "set by edgebench after jax was imported (applies only if no backend had started)"
    else:
        source = "set by edgebench before jax was imported"
    device = jax.devices()[0]
    return {"xla_memory": settings, "xla_preallocate_source": source,
            "xla_flags": os.environ.get("XLA_FLAGS", ""),
            "jax_backend": jax.default_backend(), "jax_platform": device.platform,
            "jax_device": getattr(device, "device_kind", str(device)),
            "jax_device_count": jax.device_count()}


def use_compilation_cache(folder) -> str:
    """JAX's persistent compilation cache in ``folder`` (every executable, however quick
    to compile: a cell compiles several batch shapes). Returns the folder."""
    import jax

    jax.config.update("jax_compilation_cache_dir", str(folder))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
    return str(folder)
