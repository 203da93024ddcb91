"""Exported artifacts: a directory a device loads with the TVM runtime alone.

    DIR/manifest.json      target, TVM version, tuning, sha256 of every file, how to load
    DIR/model-b1.so        one library per exported batch size (weights inside)

Cross-compiling for ``jetson-agx-orin`` from x86: ``aarch64-linux-gnu-g++`` links the host
code; GPU kernels are compiled here with NVRTC (cuda_export.py), so the device needs no compiler.
"""
from __future__ import annotations

import datetime as dt
import json
import os
import platform
import re
import shutil
import struct
from pathlib import Path

from edgebench.util import atomic_write_json, sha256_file

from . import build, cuda_export, database, targets
from . import lowering as lowering_
from .errors import ExportError

MANIFEST = "manifest.json"
FORMAT = "edgebench-tvm-artifact/1"
CROSS_CXX = {"aarch64": "aarch64-linux-gnu-g++"}


def target_arch(target) -> tuple[str, str]:
    """(host cpu architecture, gpu arch or '') of a target."""
    gpu = str(target.attrs.get("arch", "")) if targets.is_gpu(target) else ""
    return targets.host_arch(target), gpu


def cross_compiler_for(target) -> str | None:
    """None when the target's host is this machine's architecture, else the cross g++."""
    arch = targets.host_arch(target)
    if targets.native(arch):
        return None
    cxx = CROSS_CXX.get(arch)
    if cxx is None:
        raise ExportError(f"no cross compiler known for host architecture {arch}")
    if shutil.which(cxx) is None:
        raise ExportError(f"cross compiler {cxx} not found: apt-get install -y "
                          f"g++-{arch}-linux-gnu (Debian/Ubuntu)")
    return cxx


def export_executable(ex, path: Path, target, cuda_format: str = "cubin") -> dict:
    """Write one compiled Relax executable as a shared library for ``target``'s device."""
    from tvm.support import cc as _cc

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    cxx = cross_compiler_for(target)
    arch, gpu = target_arch(target)
    info: dict = {"host_arch": arch}
    kwargs = {}
    if cxx:
        kwargs["fcompile"] = _cc.cross_compiler(cxx)
        info["cross_compiler"] = cxx
    if target.kind.name == "cuda":
        if cuda_format not in ("cubin", "ptx"):
            raise ExportError(f"cuda format must be cubin or ptx (got {cuda_format})")
        kwargs["fpack_imports"] = cuda_export.make_fpack_imports(gpu, cuda_format, info)
        info["cuda"] = {"format": cuda_format, "arch": gpu,
                        "compiler": f"NVRTC {cuda_export.nvrtc_version()}"}
    tmp = path.with_name(path.name + ".part")
    ex.export_library(str(tmp), **kwargs)
    os.replace(tmp, path)
    if target.kind.name == "cuda" and not info.get("compiled") and not info.get("already"):
        raise ExportError("the library has no CUDA module to compile (unexpected)")
    return info


def export_artifact(out, spec, model, target, target_name: str, batch_sizes, *, db_dir,
                    lowering: dict, importer: str = "auto", cuda_format: str = "cubin",
                    cache=None) -> dict:
    """Build ``model`` for each batch size with the database in ``db_dir`` (when there is
    one) and the lowering choices ``lowering`` (``lowering.lowering_for``'s), write the
    libraries and the manifest to ``out``, and check what was written."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    for old in out.glob("model-b*.so"):
        old.unlink()
    use_db = db_dir if database.database_exists(db_dir) else None
    libs, tuning_by_batch, infos = {}, {}, {}
    used = None
    for b in batch_sizes:
        res = build.build_library(model, spec.input_size, b, target, db_dir=use_db,
                                  importer=importer, spec=spec, cache=cache, **lowering)
        name = f"model-b{b}.so"
        infos[b] = export_executable(res["executable"], out / name, target, cuda_format)
        libs[str(b)] = name
        tuning_by_batch[str(b)] = database.tuning_meta(use_db, res["tuning"])
        used = res["importer"]
    first = str(batch_sizes[0])
    arch, gpu = target_arch(target)
    manifest = {
        "model": spec.name, "weights": spec.weights, "input_size": list(spec.input_size),
        "input": {"name": "input", "dtype": "float32", "layout": "NCHW"},
        "output": {"dtype": "float32", "shape": ["batch", spec.num_classes]},
        "target": targets.target_dict(target), "target_name": target_name,
        "device": "cuda" if target.kind.name == "cuda" else "cpu", "host_arch": arch,
        "libraries": libs, "tuning": tuning_by_batch[first], "tuning_by_batch": tuning_by_batch,
        "importer": used, **{k: lowering[k] for k in lowering_.CHOICE_NAMES},
        "defaults": targets.defaults_for(target), "entry": "main",
        "build": {str(b): i for b, i in infos.items()},
        "load": ("import tvm; from tvm import relax; lib = tvm.runtime.load_module('model-b1.so');"
                 f" vm = relax.VirtualMachine(lib, tvm.{'cuda' if gpu else 'cpu'}(0)); "
                 "logits = vm['main'](tvm.runtime.tensor(x, device=...)).numpy()"),
        **targets.tvm_versions()}
    path = write_manifest(out, manifest)
    checks = {}
    for name in libs.values():
        checks[name] = {"elf": elf_machine(out / name)}
        if gpu:
            checks[name]["gpu_code"] = gpu_code_in(out / name)
    return {"dir": str(out), "manifest": str(path), "libraries": libs, "checks": checks,
            "tuning": manifest["tuning"]}


# ----------------------------------------------------------------------------- inspection

def elf_machine(path) -> str:
    """``aarch64`` / ``x86_64`` / ... from a .so's ELF header."""
    with open(path, "rb") as f:
        head = f.read(20)
    if head[:4] != b"\x7fELF":
        return "not-elf"
    machine = struct.unpack_from("<H", head, 18)[0]
    return {62: "x86_64", 183: "aarch64", 40: "arm", 243: "riscv"}.get(machine, str(machine))


def gpu_code_in(path) -> dict:
    """Find compiled GPU code embedded in a library: cubin ELF images (EM_CUDA=190, SM in
    e_flags) and PTX text (``.target sm_XY``)."""
    data = Path(path).read_bytes()
    found = {"cubin": [], "ptx": [], "cuda_source": False}
    i = data.find(b"\x7fELF", 1)
    while i != -1:
        if i + 52 <= len(data) and struct.unpack_from("<H", data, i + 18)[0] == 190:
            flags = struct.unpack_from("<I", data, i + 48)[0]
            found["cubin"].append(f"sm_{flags & 0xff}")
        i = data.find(b"\x7fELF", i + 1)
    j = data.find(b".target sm_")
    while j != -1:
        end = j + len(b".target ")
        k = end
        while k < len(data) and (chr(data[k]).isalnum() or data[k] == ord("_")):
            k += 1
        found["ptx"].append(data[end:k].decode())
        j = data.find(b".target sm_", k)
    found["cuda_source"] = b'extern "C" __global__' in data
    return found


# ----------------------------------------------------------------------------- manifest

def write_manifest(out_dir: Path, manifest: dict) -> Path:
    files = {}
    for name in sorted(os.listdir(out_dir)):
        p = Path(out_dir) / name
        if name == MANIFEST or not p.is_file():
            continue
        files[name] = {"sha256": sha256_file(p), "bytes": p.stat().st_size}
    manifest = {"format": FORMAT, **manifest, "files": files,
                "created_at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")}
    path = Path(out_dir) / MANIFEST
    atomic_write_json(path, manifest)
    return path


def read_manifest(art_dir) -> dict:
    p = Path(art_dir) / MANIFEST
    if not p.is_file():
        raise FileNotFoundError(f"{p} does not exist (expected an artifact written by "
                                "python -m edgebench.tune --export)")
    m = json.loads(p.read_text(encoding="utf-8"))
    if m.get("format") != FORMAT:
        raise ValueError(f"{p}: unknown artifact format {m.get('format')!r}")
    return m


def artifacts_in(path) -> list[tuple[Path, dict]]:
    """The exported artifacts ``--tvm-artifact`` names, as (folder, manifest): ``path`` itself
    when it holds a manifest, else every folder just below it that does (a folder of exports,
    one per model). Raises FileNotFoundError / ValueError where there is none."""
    path = Path(path)
    if (path / MANIFEST).is_file():
        return [(path, read_manifest(path))]
    if not path.is_dir():
        raise FileNotFoundError(f"{path} does not exist (expected an artifact written by "
                                "python -m edgebench.tune --export, or a folder of them)")
    found = [(d, read_manifest(d)) for d in sorted(path.iterdir())
             if d.is_dir() and (d / MANIFEST).is_file()]
    if not found:
        raise FileNotFoundError(f"{path} holds no {MANIFEST}, nor any folder with one (expected "
                                "an artifact written by python -m edgebench.tune --export, or "
                                "a folder of them)")
    return found


def artifact_for(path, model: str, input_size) -> tuple[Path, dict] | None:
    """The artifact among ``artifacts_in(path)`` exported for ``model`` at ``input_size``;
    a single artifact is returned as it is (the converter then says what does not match)."""
    found = artifacts_in(path)
    if (Path(path) / MANIFEST).is_file():
        return found[0]
    for d, m in found:
        if m.get("model") == model and tuple(m.get("input_size") or input_size) == \
                tuple(input_size):
            return d, m
    return None


def holdings(path) -> str:
    """What a folder of artifacts holds, for a skip reason: "resnet152 (3x224x224), ..."."""
    return ", ".join(f"{m.get('model')} ({'x'.join(map(str, m.get('input_size') or []))})"
                     for _, m in artifacts_in(path))


def verify_manifest(art_dir, manifest: dict) -> None:
    for name, f in manifest.get("files", {}).items():
        p = Path(art_dir) / name
        if not p.is_file():
            raise ValueError(f"tvm_artifact: {name} listed in the manifest is missing")
        got = sha256_file(p)
        if got != f["sha256"]:
            raise ValueError(f"tvm_artifact: sha256 mismatch for {name}: manifest "
                             f"{f['sha256'][:16]}..., file {got[:16]}... (modified or corrupt)")


def libraries(art_dir, manifest: dict) -> dict:
    return {int(b): str(Path(art_dir) / name)
            for b, name in manifest.get("libraries", {}).items()}


def tuned_batch_sizes(manifest: dict) -> list[int] | None:
    """The artifact's batch sizes built with tuned kernels (``tuning_by_batch[b]
    ["batch_sizes"]``), for ``Predictor.tuned_batch_sizes``; None where none is tuned."""
    by_batch = manifest.get("tuning_by_batch") or {}
    tuned = sorted(int(b) for b in manifest.get("libraries", {})
                   if int(b) in ((by_batch.get(str(b)) or {}).get("batch_sizes") or ()))
    return tuned or None


def runnable_here(manifest: dict) -> str:
    """'' when this machine can load the artifact, else why not."""
    arch = manifest.get("host_arch")
    if arch and not targets.native(arch):
        return f"artifact is for {arch}, this machine is {platform.machine()}"
    why = tvm_version_mismatch(manifest)
    if why:
        return why
    if manifest.get("device", "cpu") == "cuda":
        return cuda_runtime_here()
    return ""


def _release(version: str) -> str:
    """A TVM version without its local part and post-release number ("0.27.0.post1+g7b5" ->
    "0.27.0"): post releases re-package the same sources."""
    return re.sub(r"\.post\d+$", "", str(version).split("+", 1)[0].strip())


def tvm_version_mismatch(manifest: dict) -> str:
    """'' when this TVM runtime is the release that exported the artifact (manifest "tvm"),
    else why not: the VM format and runtime ABI are not stable across releases, and a
    mismatched library may crash the process. A manifest without "tvm" is not checked."""
    built = manifest.get("tvm")
    if not built:
        return ""
    import tvm

    here = getattr(tvm, "__version__", "unknown")
    if _release(built) == _release(here):
        return ""
    return (f"artifact was exported with TVM {built}, this runtime is TVM {here}: install "
            f"TVM {_release(built)} here or re-export the artifact with TVM {here} (on a Jetson, "
            "jetson/setup-jetpack6.sh installs the TVM that pyproject.toml pins)")


def cuda_runtime_here() -> str:
    """'' when TVM's runtime can run CUDA kernels here, else why not.

    TVM 0.27's CUDA device API is a sidecar, ``libtvm_runtime_cuda.so``, that only the
    compiler's autoload opens, silently: with the runtime alone CUDA looked absent. Open it
    here and keep the loader's message."""
    import tvm
    from tvm.base import _LOADED_LIBS

    if "tvm_runtime_cuda" not in _LOADED_LIBS:
        from tvm_ffi.libinfo import load_lib_ctypes

        runtime_dir = Path(_LOADED_LIBS["tvm_runtime"]._name).resolve().parent
        try:
            _LOADED_LIBS["tvm_runtime_cuda"] = load_lib_ctypes(
                package="tvm", target_name="tvm_runtime_cuda", extra_lib_paths=[runtime_dir],
                mode="RTLD_LOCAL")
        except (OSError, RuntimeError) as e:  # FileNotFoundError is an OSError
            return (f"TVM's CUDA runtime (libtvm_runtime_cuda) does not load here: "
                    f"{str(e).strip().splitlines()[-1][:300]}")
    if not tvm.cuda(0).exist:
        return "artifact needs a CUDA GPU and there is none here"
    return ""
