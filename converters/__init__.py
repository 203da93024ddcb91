"""Runtime variants, one module (or package) per family, registered by name.

Adding a variant means adding one module here that defines a ``Converter`` subclass and
decorates it with ``@register``. Modules import their backend lazily (inside methods), so
listing the registry never imports torch, onnxruntime, tvm or jax.
"""
from __future__ import annotations

import difflib
import importlib
import pkgutil

from .base import (Artifact, Availability, Converter, ModelSpec, OutOfMemory, Predictor,
                   SkipVariant)

_REGISTRY: dict[str, type[Converter]] = {}
_BROKEN: dict[str, str] = {}
_discovered = False


def register(cls: type[Converter]) -> type[Converter]:
    if not cls.name:
        raise ValueError(f"{cls.__name__} has no name")
    _REGISTRY[cls.name] = cls
    return cls


def _discover() -> None:
    global _discovered
    if _discovered:
        return
    _discovered = True
    for mod in pkgutil.iter_modules(__path__):
        if mod.name != "base" and not mod.name.startswith("_"):
            try:
                importlib.import_module(f"{__name__}.{mod.name}")
            except Exception as e:  # noqa: BLE001 - one broken module must not hide the rest
                _BROKEN[mod.name] = f"converters.{mod.name} failed to import: {type(e).__name__}: {e}"


def broken() -> dict[str, str]:
    """Converter modules that failed to import, with the error (reported in run.json)."""
    _discover()
    return dict(_BROKEN)


def names() -> list[str]:
    _discover()
    return list(_REGISTRY)


def get(name: str) -> Converter:
    _discover()
    if name not in _REGISTRY:
        close = difflib.get_close_matches(name, _REGISTRY, n=3)
        hint = f" (did you mean {', '.join(close)}?)" if close else ""
        raise KeyError(f"unknown variant '{name}'{hint}; known: {', '.join(_REGISTRY)}")
    return _REGISTRY[name]()


__all__ = ["Artifact", "Availability", "Converter", "ModelSpec", "OutOfMemory", "Predictor",
           "SkipVariant", "register", "names", "get"]
