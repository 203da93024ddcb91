"""The converted model on disk: one pickle holding the Flax module, its params and meta.

The cache key covers the model spec, this package's source and the jax/flax versions, so
editing a porter or upgrading Flax never reuses a stale conversion. Unpickling runs code the
file names, so the file is treated as an executed artifact: ``save`` records its sha256 and
``load`` refuses a file whose bytes no longer match it (``edgebench.cache_integrity``).
"""
from __future__ import annotations

import dataclasses
import hashlib
import importlib.metadata
import os
import pickle
from pathlib import Path

from edgebench.cache_integrity import require, reuse, seal

FORMAT_VERSION = 1


@dataclasses.dataclass
class PortedModel:
    module: object                 # the Flax module (structure only)
    params: dict                   # nested dict of float32 numpy arrays
    meta: dict                     # family, port time, parameter count ...
    executables: dict = dataclasses.field(default_factory=dict)  # shape -> compiled (in-process)


def _code_digest() -> str:
    h = hashlib.sha256()
    for src in sorted(Path(__file__).parent.glob("*.py")):
        h.update(src.name.encode())
        h.update(src.read_bytes())
    for dist in ("jax", "jaxlib", "flax"):
        h.update(importlib.metadata.version(dist).encode())
    return h.hexdigest()[:12]


def path_for(spec, cache: Path) -> Path:
    key = spec.key("jax-flax", FORMAT_VERSION, _code_digest())
    return Path(cache) / "jax" / f"{spec.slug}-{key}.pkl"


def save(path: Path, ported: PortedModel) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    blob = {"format": FORMAT_VERSION, "module": ported.module, "params": ported.params,
            "meta": ported.meta}
    tmp = path.with_suffix(f".tmp{os.getpid()}")
    with open(tmp, "wb") as f:
        pickle.dump(blob, f, protocol=pickle.HIGHEST_PROTOCOL)
    os.replace(tmp, path)   # atomic: a crashed run never leaves a half-written artifact
    seal(path)


def cached(path):
    """``(PortedModel, "")`` from a valid cached artifact (fully hashed: the pickle is
    executed), else ``(None, why it was moved aside or "")``: port and save."""
    return reuse(path, executed=True, read=lambda: load(path, checked=True))


def load(path, checked: bool = False) -> PortedModel:
    """Unpickle the artifact; unless the caller has just ``check``ed it, its sha256 is
    verified first (``CacheCorrupted`` when it does not match)."""
    if not checked:
        require(path)
    with open(path, "rb") as f:
        blob = pickle.load(f)
    if blob.get("format") != FORMAT_VERSION:
        raise ValueError(f"{path}: artifact format {blob.get('format')}, "
                         f"expected {FORMAT_VERSION}")
    return PortedModel(blob["module"], blob["params"], blob["meta"])
