"""Models that are files on the driver, shipped to fleet agents by content hash.

A fleet config may name an ONNX file or a factory (``package.module:function``) that exists
on the driver's machine only. The driver reads the file (the ONNX file; the factory's module
source) once (``pack``); the config keeps only its name, kind, sha256 and relative path
(JSON, in run.json), and the bytes travel to each agent beside it. The agent writes them
under ``<cache>/shipped/<sha256>/`` and checks the hash (``unpack``); the run then reads the
model from there (``ModelArgs.files``), under the name the config gave it. A factory ships
its one module file (with empty ``__init__.py`` files for its packages): a factory that
imports other files of its own must be installed on the device instead.
"""
from __future__ import annotations

import hashlib
import importlib.util
import sys
from pathlib import Path

from .errors import ModelError


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _factory_file(name: str, model_path: str | None) -> tuple[Path, str]:
    module = name.split(":")[0]
    if model_path and model_path not in sys.path:
        sys.path.insert(0, model_path)
    try:
        found = importlib.util.find_spec(module)
    except (ImportError, ValueError) as e:
        found, why = None, f"{type(e).__name__}: {e}"
    else:
        why = "not found"
    if found is None or not found.origin or not found.origin.endswith(".py"):
        raise ModelError(f"{name}: cannot find the module {module} to ship ({why}; "
                         f"model_path {model_path or 'the working directory'})")
    rel = module.replace(".", "/") + ("/__init__.py" if found.origin.endswith("__init__.py")
                                      else ".py")
    return Path(found.origin), rel


def pack(models: list[str], model_path: str | None) -> tuple[dict, dict]:
    """(model_files, blobs): per shipped model {kind, sha256, relpath}, and sha256 -> bytes."""
    from . import kind_of, onnx_file

    files, blobs = {}, {}
    for name in models:
        kind = kind_of(name)
        if kind == "onnx":
            onnx_file._load(name)                  # readable, or ModelError
            path, rel = Path(name).expanduser(), Path(name).name
        elif kind == "factory":
            path, rel = _factory_file(name, model_path)
        else:
            continue
        data = path.read_bytes()
        sha = _sha(data)
        files[name] = {"kind": kind, "sha256": sha, "relpath": rel, "bytes": len(data)}
        blobs[sha] = data
    return files, blobs


def unpack(model_files: dict, blobs: dict, root: Path) -> dict:
    """Write each shipped model under ``root/<sha256>/`` (once; checked by hash) and return
    name -> local path: an ONNX file's path, a factory's folder to import from."""
    out = {}
    for name, f in (model_files or {}).items():
        base = Path(root) / f["sha256"]
        path = base / f["relpath"]
        if not (path.is_file() and _sha(path.read_bytes()) == f["sha256"]):
            data = blobs.get(f["sha256"])
            if data is None or _sha(data) != f["sha256"]:
                raise ModelError(f"{name}: its file did not arrive intact (sha256 {f['sha256'][:12]})")
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(path.suffix + ".part")
            tmp.write_bytes(data)
            tmp.replace(path)
            if f["kind"] == "factory":      # the module's packages, as empty packages
                for parent in Path(f["relpath"]).parents:
                    if str(parent) != ".":
                        init = base / parent / "__init__.py"
                        if not init.exists():
                            init.write_text("", encoding="utf-8")
        out[name] = str(path) if f["kind"] == "onnx" else str(base)
    return out
