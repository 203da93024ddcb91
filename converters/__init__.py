"""Runtime variants, one module (or package) per family, registered by name.

Adding a variant means adding one module here that defines a ``Converter`` subclass and
decorates it with ``@register`` (docs/adding-a-variant.md). A variant kept outside this
package is loaded by naming its module in ``EDGEBENCH_VARIANT_MODULES`` (comma-separated,
importable from the repository root), e.g. ``examples.torch_export_variant``. Modules import their backend lazily (inside methods), so
listing the registry never imports torch, onnxruntime, tvm or jax.
"""
from __future__ import annotations

import difflib
import importlib
import os
import pkgutil

from .base import (Artifact, Availability, Converter, ModelSpec, OutOfMemory, Predictor,
                   SkipVariant)

_REGISTRY: dict[str, type[Converter]] = {}
_BROKEN: dict[str, str] = {}
_discovered = False
EXTRA_ENV = "EDGEBENCH_VARIANT_MODULES"   # more variant modules, outside this package


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
    for name in filter(None, (m.strip() for m in os.environ.get(EXTRA_ENV, "").split(","))):
        try:
            importlib.import_module(name)
        except Exception as e:  # noqa: BLE001
            _BROKEN[name] = f"{EXTRA_ENV}: {name} failed to import: {type(e).__name__}: {e}"


def broken() -> dict[str, str]:
    """Converter modules that failed to import, with the error (reported in run.json)."""
    _discover()
    return dict(_BROKEN)


def names() -> list[str]:
    _discover()
    return list(_REGISTRY)


def default_names() -> list[str]:
    """The variants a run without --variants covers: all but the opt-in ones."""
    _discover()
    return [n for n, cls in _REGISTRY.items() if cls.in_default_run]


def onnx_file_variants() -> list[str]:
    """The variants that run a model handed over as an ONNX file (``starts_from_onnx``)."""
    _discover()
    return [n for n, cls in _REGISTRY.items() if cls.starts_from_onnx]


def onnx_reference() -> str:
    """The variant whose ``reference_predictor`` judges an ONNX file's parity."""
    _discover()
    found = [n for n, cls in _REGISTRY.items() if cls.onnx_reference]
    if not found:
        raise KeyError("no registered variant is the reference of ONNX-file models")
    return found[0]


def get(name: str) -> Converter:
    _discover()
    if name not in _REGISTRY:
        close = difflib.get_close_matches(name, _REGISTRY, n=3)
        hint = f" (did you mean {', '.join(close)}?)" if close else ""
        raise KeyError(f"unknown variant '{name}'{hint}; known: {', '.join(_REGISTRY)}")
    return _REGISTRY[name]()


def command(name: str):
    """The function behind command ``name`` (argv -> exit code), from the registered
    converter that declares it in ``Converter.commands``."""
    _discover()
    for cls in _REGISTRY.values():
        if name in cls.commands:
            module, _, func = cls.commands[name].partition(":")
            return getattr(importlib.import_module(module), func)
    offered = sorted({c for cls in _REGISTRY.values() for c in cls.commands})
    why = "".join(f"; {m}" for m in _BROKEN.values())
    raise KeyError(f"no converter provides the command '{name}' (commands: "
                   f"{', '.join(offered) or 'none'}){why}")


__all__ = ["Artifact", "Availability", "Converter", "ModelSpec", "OutOfMemory", "Predictor",
           "SkipVariant", "register", "names", "get", "command"]
