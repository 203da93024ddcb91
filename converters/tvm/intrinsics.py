"""Registering TVM's tensor intrinsics before a MetaSchedule ``TuneContext`` is made.

``TuneContext`` imports ``tvm.s_tir.tensor_intrin``, which parses every tensor intrinsic from
TVMScript; each ``@T.prim_func`` calls ``inspect.stack()``, and ``inspect.getmodule`` scans all
of ``sys.modules`` for every frame without a source file: a minute or more per process.
``register_for`` imports only the x86 and Arm intrinsics for an LLVM target, else the full
package with ``getmodule`` memoized per file name for such frames (exact for them).
"""
from __future__ import annotations

import contextlib
import importlib
import importlib.util
import inspect
import sys

PACKAGE = "tvm.s_tir.tensor_intrin"


@contextlib.contextmanager
def memoized_getmodule():
    """``inspect.getmodule`` cached by file name for objects it can place only by their file
    (frames, code objects), whose answer depends on the file name alone. Restored on exit."""
    original = inspect.getmodule
    cache: dict[str, object] = {}

    def getmodule(obj, _filename=None):
        if (_filename is None or inspect.ismodule(obj) or hasattr(obj, "__module__")
                or hasattr(obj, "__name__")):
            return original(obj, _filename)
        if _filename not in cache:
            cache[_filename] = original(obj, _filename)
        return cache[_filename]

    inspect.getmodule = getmodule
    try:
        yield
    finally:
        inspect.getmodule = original


def _import_full() -> None:
    with memoized_getmodule():
        importlib.import_module(PACKAGE)


def _import_cpu_only() -> bool:
    """The package entered without its ``__init__``, then its x86 and Arm modules imported;
    other submodules stay importable. False (nothing left behind) where that fails."""
    import tvm.s_tir

    spec = importlib.util.find_spec(PACKAGE)
    pkg = importlib.util.module_from_spec(spec)
    sys.modules[PACKAGE] = pkg
    tvm.s_tir.tensor_intrin = pkg
    try:
        with memoized_getmodule():
            for sub in ("x86", "arm_cpu"):
                importlib.import_module(f"{PACKAGE}.{sub}")
    except Exception:  # noqa: BLE001 - the caller falls back to the full registration
        for k in [k for k in sys.modules if k == PACKAGE or k.startswith(PACKAGE + ".")]:
            sys.modules.pop(k, None)
        return False
    return True


def register_for(target) -> str:
    """Register the tensor intrinsics ``target`` can use, once per process. Returns what
    was done: "already" (registered before), "cpu" (x86 and Arm only) or "full"."""
    if PACKAGE in sys.modules:
        return "already"
    if target.kind.name == "llvm" and _import_cpu_only():
        return "cpu"
    _import_full()
    return "full"
