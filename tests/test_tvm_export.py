"""TVM export: an artifact loaded here (sha256-checked, runtime only, exported batch sizes
only), the CUDA runtime check, and cross-compilation for the Jetson AGX Orin (skipped, with
the reason, without the cross compiler or NVRTC 12).
"""
from __future__ import annotations

import json
import locale
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

tvm = pytest.importorskip("tvm", reason="apache-tvm not installed (pip install 'edgebench[tvm]')")

from tvmlib import (MODEL, REPO, SIZE, SIZE_ARG, TOL, _cli, _spec,  # noqa: E402 - after the skip
                    _torch_logits)

# Every test here builds or tunes a real model (15-90 s each on 2 cores).
pytestmark = [pytest.mark.timeout(600), pytest.mark.slow]


# ----------------------------------------------------------------------------- export


@pytest.fixture(scope="module")
def host_artifact(tmp_path_factory):
    """An untuned host export of the tiny model with batch sizes 1 and 2 (made once)."""
    root = tmp_path_factory.mktemp("host-art")
    out = root / "art"
    r = _cli("--model", MODEL, "--input-size", SIZE_ARG, "--weights", "random",
             "--trials", "0", "--export", str(out),
             "--batch-sizes", "1,2", "--tuning-dir", str(root / "t"), "--no-progress")
    assert r.returncode == 0, r.stderr[-3000:]
    return out


def test_host_export_loads_and_detects_tampering(host_artifact, tmp_path):
    import converters

    out = tmp_path / "art"
    shutil.copytree(host_artifact, out)     # this test corrupts its copy
    m = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    assert m["tvm"] == tvm.__version__ and m["tuning"]["status"] == "untuned"
    assert set(m["libraries"]) == {"1", "2"} and m["device"] == "cpu"
    conv = converters.get("tvm")
    spec = _spec({"tvm_artifact": str(out)})
    assert conv.available(spec.options).ok
    art = conv.convert(spec, tmp_path / "cache")
    assert art.meta["compiled_batch_sizes"] == [1, 2]
    pred = conv.load(art, spec)
    assert pred.batch_sizes == [1, 2]
    x = np.random.RandomState(4).standard_normal((2, *SIZE)).astype(np.float32)
    assert np.abs(pred(x) - _torch_logits(spec, x)).max() <= TOL
    with pytest.raises(ValueError, match="batch 4 was not exported"):
        pred(np.zeros((4, *SIZE), np.float32))
    lib = out / m["libraries"]["1"]
    data = bytearray(lib.read_bytes())
    data[-100] ^= 0xFF
    # A new file, not a rewrite in place: this process has the library mapped (dlopen), and
    # changing the mapped pages under it crashes the interpreter at exit (SIGSEGV, rc 139).
    lib.unlink()
    lib.write_bytes(bytes(data))
    with pytest.raises(ValueError, match="sha256 mismatch"):
        conv.convert(spec, tmp_path / "cache")


def test_a_folder_of_artifacts_loads_the_models_own(host_artifact, tmp_path):
    """--tvm-artifact names a folder of exports (one per model): each model loads its own;
    at another input size there is none, and the variant is skipped saying what it holds."""
    import dataclasses

    import converters
    from converters.base import SkipVariant

    folder = tmp_path / "exports"
    shutil.copytree(host_artifact, folder / "tiny")
    conv = converters.get("tvm")
    spec = _spec({"tvm_artifact": str(folder)})
    assert conv.available(spec.options).ok
    art = conv.convert(spec, tmp_path / "cache")
    assert art.meta["artifact_dir"] == str(folder / "tiny")
    assert art.meta["defaults"] == "x86-measured" and art.meta["layout"] == "NHWC"
    x = np.random.RandomState(5).standard_normal((1, *SIZE)).astype(np.float32)
    assert np.abs(conv.load(art, spec)(x) - _torch_logits(spec, x)).max() <= TOL
    bigger = dataclasses.replace(spec, input_size=(3, 96, 96))
    with pytest.raises(SkipVariant, match=f"no TVM artifact for {MODEL} at 3x96x96 in "):
        conv.convert(bigger, tmp_path / "cache")


def test_measurements_use_only_the_exported_batch_sizes(host_artifact, wnid_folder, tmp_path):
    """Parity runs at accuracy_batch 8 and the throughput search doubles up to 16, but the
    artifact holds batch 1 and 2: the passes run at 2 and the search stops there (before,
    the parity cell of every exported artifact failed with 'batch 8 was not exported')."""
    import converters
    from edgebench import measure
    from edgebench.data import PreparedData, prepare, resolve_source
    from edgebench.models import data_config
    from edgebench.profiles import PROFILES
    from edgebench.telemetry.monitor import Monitor

    conv = converters.get("tvm")
    spec = _spec({"tvm_artifact": str(host_artifact)})
    pred = conv.load(conv.convert(spec, tmp_path / "cache"), spec)
    cfg = {**data_config(MODEL), "input_size": SIZE}
    data = PreparedData(prepare(resolve_source(str(wnid_folder)), cfg, tmp_path / "data"),
                        cfg["mean"], cfg["std"])
    assert measure.fit_batch(pred, 8) == 2 and measure.fit_batch(pred, 1) == 1
    logits, _, _ = measure.run_all(pred, data, 8)
    assert logits.shape == (len(data), 1000)
    assert np.abs(logits - _torch_logits(spec, data.batch(0, len(data)))).max() <= TOL
    prof = {**PROFILES["quick"], "throughput": {**PROFILES["quick"]["throughput"],
                                                "min_s": 0.05, "min_iters": 2, "min_gain": 0.0}}
    mon = Monitor(interval_s=0.05, power=None).start()
    try:
        status, fields, _ = measure.throughput(pred, data, prof, mon)
    finally:
        mon.stop()
    assert status == "ok" and [r["batch_size"] for r in fields["by_batch"]] == [1, 2]
    assert "largest batch size the variant was built for (2)" in fields["stop_reason"]


def test_exported_artifact_runs_with_the_runtime_alone(host_artifact, tmp_path):
    """The device side of the workflow: only libtvm_runtime loaded (TVM_USE_RUNTIME_LIB=1,
    as with a runtime-only build on the Orin). Importing tvm.relax needs the compiler, so
    the predictor must not (it did, and failed there)."""
    spec = _spec()
    x = np.random.RandomState(5).standard_normal((1, *SIZE)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "want.npy", _torch_logits(spec, x))
    code = f"""
import sys, json, numpy as np
sys.path.insert(0, {str(Path(__file__).parent)!r})
import tvm, converters
from tvmlib import _spec
spec = _spec({{"tvm_artifact": {str(host_artifact)!r}}})
conv = converters.get("tvm")
assert conv.available(spec.options).ok, conv.available(spec.options).reason
pred = conv.load(conv.convert(spec, {str(tmp_path / "cache")!r}), spec)
got = pred(np.load({str(tmp_path / "x.npy")!r}))
print(json.dumps({{"runtime_only": bool(tvm.base._RUNTIME_ONLY),
                  "libs": sorted(tvm.base._LOADED_LIBS),
                  "relax_imported": "tvm.relax" in sys.modules,
                  "max_diff": float(np.abs(got - np.load({str(tmp_path / "want.npy")!r})).max())}}))
"""
    e = dict(os.environ, PYTHONPATH=str(REPO), TVM_USE_RUNTIME_LIB="1")
    r = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=e, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    res = json.loads(r.stdout.strip().splitlines()[-1])
    assert res["runtime_only"] and "tvm_compiler" not in res["libs"], res
    assert not res["relax_imported"], res
    assert res["max_diff"] <= TOL, res


def test_cuda_artifact_says_why_it_cannot_run_here():
    """Without a GPU (or without the CUDA sidecar's libraries) the reason is the loader's
    own, not a bare 'no GPU'. On a GPU machine with TVM's CUDA runtime it is ''."""
    from converters.tvm import export

    import ctypes.util

    why = export.runnable_here({"device": "cuda", "host_arch": os.uname().machine})
    if ctypes.util.find_library("cuda") is None:       # no NVIDIA driver on this machine
        assert "libtvm_runtime_cuda" in why and "libcuda.so" in why, why
    elif why:
        assert "does not load" in why or why == "artifact needs a CUDA GPU and there is none here"
    else:
        assert tvm.cuda(0).exist


def _orin_skip_reason() -> str | None:
    if shutil.which("aarch64-linux-gnu-g++") is None:
        return ("cross compiler aarch64-linux-gnu-g++ missing: "
                "apt-get install -y g++-aarch64-linux-gnu")
    try:
        from converters.tvm import cuda_export

        cuda_export.nvrtc_version()
    except Exception as e:  # noqa: BLE001
        return f"NVRTC 12 missing ({e}): pip install nvidia-cuda-nvrtc-cu12==12.2.140"
    return None


@pytest.mark.skipif(_orin_skip_reason() is not None, reason=str(_orin_skip_reason()))
def test_cross_compile_for_jetson_agx_orin(tmp_path):
    from converters.tvm import export
    from edgebench.util import sha256_file

    out = tmp_path / "orin"
    r = _cli("--model", MODEL, "--input-size", SIZE_ARG, "--weights", "random",
             "--target", "jetson-agx-orin", "--trials", "0", "--export", str(out),
             "--tuning-dir", str(tmp_path / "t"), "--no-progress")
    assert r.returncode == 0, r.stderr[-3000:]
    m = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    assert m["target"]["kind"] == "cuda" and m["target"]["arch"] == "sm_87"
    assert m["target"]["host"]["mtriple"].startswith("aarch64")
    assert m["device"] == "cuda" and m["host_arch"] == "aarch64"
    assert m["tvm"] == tvm.__version__ and m["tuning"]["status"] == "untuned"
    lib = out / m["libraries"]["1"]
    assert m["files"][lib.name]["sha256"] == sha256_file(lib)
    assert export.elf_machine(lib) == "aarch64"
    head = lib.read_bytes()[:20]
    assert head[:4] == b"\x7fELF" and int.from_bytes(head[18:20], "little") == 183
    code = export.gpu_code_in(lib)
    assert code["cubin"] == ["sm_87"], code
    assert not code["cuda_source"], "CUDA source left in the library: the device would need a compiler"
    assert m["build"]["1"]["cuda"] == {"format": "cubin", "arch": "sm_87", "compiler": "NVRTC 12.2"}
    # The converter refuses to run it here, and says why.
    import converters

    av = converters.get("tvm").available({"tvm_artifact": str(out)})
    assert not av.ok and "aarch64" in av.reason


@pytest.mark.skipif(_orin_skip_reason() is not None, reason=str(_orin_skip_reason()))
def test_nvrtc_ptx_for_sm87():
    from converters.tvm import cuda_export

    src = ('extern "C" __global__ void add1(float* __restrict__ a) '
           "{ a[threadIdx.x] += 1.0f; }\n")
    codeset = locale.nl_langinfo(locale.CODESET)    # this thread's locale, as open() sees it
    ptx = cuda_export.nvrtc_compile(src, "sm_87", "ptx")
    assert b".target sm_87" in ptx and b".entry add1" in ptx and ptx.startswith(b"//")
    cubin = cuda_export.nvrtc_compile(src, "sm_87", "cubin")
    assert cubin[:4] == b"\x7fELF" and int.from_bytes(cubin[18:20], "little") == 190
    assert int.from_bytes(cubin[48:52], "little") & 0xFF == 87
    # NVRTC switches the calling thread to the C locale; nvrtc_compile puts it back (the
    # emulated lane's report.md read as ASCII after this test, in CI on 2026-11-25)
    assert locale.nl_langinfo(locale.CODESET) == codeset
