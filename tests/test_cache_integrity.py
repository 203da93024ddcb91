"""Corrupted caches (issue 20): every cache file's sha256 is recorded when it is written; a
truncated or tampered file is caught by its hash on reuse, moved aside, rebuilt, and the
record says so. Executed artifacts (TVM libraries, TensorRT engines, the JAX pickle) are fully
re-hashed before every load, so restoring the mtime does not hide a same-size rewrite.

Real files and real conversions of the tiny timm model with random weights."""
from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

import pytest

from edgebench import cache_integrity as ci
from testlib import TINY, assert_records_valid, records, run_cli


def _run(out: Path, cache: Path, *variant_args: str, task: str = "parity") -> dict:
    proc = run_cli("edgebench.full", "--models", TINY, *variant_args, "--tasks", task,
                   "--weights", "random", "--out", str(out), "--cache-dir", str(cache))
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    (rec,) = records(out)
    assert_records_valid(out)
    assert rec["status"] == "ok", rec.get("reason")
    return rec


def _only(folder: Path, pattern: str) -> Path:
    (p,) = sorted(folder.glob(pattern))
    return p


def _tamper_keeping_size_and_mtime(path: Path) -> None:
    """Flip 64 bytes in the middle; size unchanged, mtime put back: only a full hash sees it."""
    st = path.stat()
    with open(path, "r+b") as f:
        f.seek(st.st_size // 2)
        chunk = f.read(64)
        f.seek(st.st_size // 2)
        f.write(bytes(b ^ 0xFF for b in chunk))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert path.stat().st_mtime_ns == st.st_mtime_ns and path.stat().st_size == st.st_size


def _assert_rebuilt(why: str, name: str) -> None:
    assert why and name in why, why
    assert "sha256 mismatch" in why and "truncated or modified" in why, why
    assert "moved aside" in why, why


# --------------------------------------------------------------------------- the helper
def test_seal_records_digest_and_stamp_and_verify_passes(tmp_path):
    p = tmp_path / "a.bin"
    p.write_bytes(os.urandom(10_000))
    digest = ci.seal(p)
    assert digest == hashlib.sha256(p.read_bytes()).hexdigest()
    st = p.stat()
    assert ci.sidecar(p).read_text(encoding="utf-8").split() == [digest, f"{st.st_size}:{st.st_mtime_ns}"]
    assert ci.verify(p, executed=True) is None
    assert ci.verify(p, executed=False) is None
    assert ci.check_cached(p, executed=True) == "" and p.is_file()


@pytest.mark.parametrize("executed", [True, False])
def test_truncation_is_a_sha256_mismatch(tmp_path, executed):
    p = tmp_path / "a.bin"
    p.write_bytes(os.urandom(10_000))
    want = ci.seal(p)
    os.truncate(p, 4_000)
    why = ci.verify(p, executed=executed)
    assert why.startswith(f"sha256 mismatch: recorded {want[:16]}..., file ")
    assert "(4000 bytes; truncated or modified)" in why


def test_same_size_rewrite_with_restored_mtime_is_caught_by_the_full_hash(tmp_path):
    p = tmp_path / "lib.so"
    p.write_bytes(os.urandom(10_000))
    ci.seal(p)
    _tamper_keeping_size_and_mtime(p)
    assert "sha256 mismatch" in ci.verify(p, executed=True)
    with pytest.raises(ci.CacheCorrupted, match="refusing to load"):
        ci.require(p)
    # The documented trade-off: a non-executed file with an unchanged size+mtime stamp is
    # trusted without re-hashing (large ONNX/data files are reused by every cell).
    assert ci.verify(p, executed=False) is None


def test_require_hashes_the_bytes_it_is_given(tmp_path):
    p = tmp_path / "e.engine"
    data = os.urandom(5_000)
    p.write_bytes(data)
    ci.seal(p, hashlib.sha256(data).hexdigest())
    ci.require(p, data)                                   # the bytes that will be loaded
    with pytest.raises(ci.CacheCorrupted):
        ci.require(p, data[:-1])


def test_missing_record_rebuilds_executed_and_adopts_parsed_files(tmp_path):
    lib, onnx = tmp_path / "old.so", tmp_path / "old.onnx"
    lib.write_bytes(b"x" * 100)
    onnx.write_bytes(b"y" * 100)
    assert ci.verify(lib, executed=True).startswith("no recorded sha256")
    why = ci.check_cached(lib, executed=True)
    assert why.startswith("old.so: no recorded sha256") and "moved aside to old.so.corrupt" in why
    assert not lib.exists() and (tmp_path / "old.so.corrupt").is_file()
    # Not executed: sealed on first use, then checked like any other.
    assert ci.verify(onnx, executed=False) is None
    assert ci.recorded(onnx)[0] == hashlib.sha256(b"y" * 100).hexdigest()
    os.truncate(onnx, 10)
    assert "sha256 mismatch" in ci.verify(onnx, executed=False)


def test_check_cached_moves_the_bad_file_aside_and_drops_its_record(tmp_path):
    p = tmp_path / "m.pkl"
    p.write_bytes(os.urandom(1_000))
    ci.seal(p)
    (tmp_path / "m.pkl.corrupt").write_bytes(b"older")     # replaced, not accumulated
    os.truncate(p, 10)
    why = ci.check_cached(p, executed=True)
    _assert_rebuilt(why, "m.pkl")
    assert not p.exists() and not ci.sidecar(p).exists()
    assert (tmp_path / "m.pkl.corrupt").stat().st_size == 10
    assert ci.check_cached(p, executed=True).startswith("m.pkl: unreadable")


def test_reuse_is_every_converters_cache_lookup(tmp_path):
    """The one get-or-rebuild step the converters share: a miss, a hit read through the
    caller's reader, a missing companion (its metadata), a corrupted file (moved aside) and
    metadata that does not parse each give what the caller then does."""
    p, meta = tmp_path / "m.so", tmp_path / "m.json"
    read = lambda: json.loads(meta.read_text())          # noqa: E731
    assert ci.reuse(p, executed=True, read=read, also=[meta]) == (None, "")     # nothing cached
    p.write_bytes(b"library")
    ci.seal(p)
    assert ci.reuse(p, executed=True, read=read, also=[meta]) == (None, "")     # no metadata
    meta.write_text('{"batch": 1}')
    assert ci.reuse(p, executed=True, read=read, also=[meta]) == ({"batch": 1}, "")
    meta.write_text('{"batch": ')                                              # torn
    hit, why = ci.reuse(p, executed=True, read=read, also=[meta])
    assert hit is None and why.startswith("m.so: metadata unreadable")
    meta.write_text('{"batch": 1}')
    p.write_bytes(b"librarx")                                                  # same size
    hit, why = ci.reuse(p, executed=True, read=read, also=[meta])
    assert hit is None and "sha256 mismatch" in why and (tmp_path / "m.so.corrupt").is_file()
    assert not p.exists()


def test_touched_file_with_same_bytes_passes_and_is_restamped(tmp_path):
    p = tmp_path / "a.onnx"
    p.write_bytes(os.urandom(1_000))
    digest = ci.seal(p)
    os.utime(p, ns=(1, 1_000_000_000))
    assert ci.verify(p, executed=False) is None
    assert ci.sidecar(p).read_text(encoding="utf-8").split() == [digest, "1000:1000000000"]


def test_artifact_sha256_never_overwrites_the_recorded_digest(tmp_path):
    from converters.base import Artifact

    p = tmp_path / "a.so"
    p.write_bytes(os.urandom(1_000))
    want = ci.seal(p)
    os.truncate(p, 100)
    got = Artifact("x", path=str(p)).sha256()
    assert got == hashlib.sha256(p.read_bytes()).hexdigest() != want
    assert ci.recorded(p)[0] == want                       # the next verify still sees it
    assert "sha256 mismatch" in ci.verify(p, executed=True)


def test_tensorrt_engine_is_checked_before_deserialize(tmp_path):
    # TensorRT cannot run here: the engine load path's own check (read_engine, which load()
    # uses before deserialize_cuda_engine), on a real file.
    from converters.tensorrt.build import read_engine, replace_bytes

    p = tmp_path / "m.engine"
    data = os.urandom(20_000)
    replace_bytes(p, data)
    ci.seal(p, hashlib.sha256(data).hexdigest())
    assert read_engine(p) == data
    _tamper_keeping_size_and_mtime(p)
    with pytest.raises(ci.CacheCorrupted, match="sha256 mismatch"):
        read_engine(p)
    os.truncate(p, 100)
    with pytest.raises(ci.CacheCorrupted, match=r"\(100 bytes; truncated or modified\)"):
        read_engine(p)


# --------------------------------------------------------------------------- real runs
@pytest.fixture(scope="module")
def base_cache(tmp_path_factory) -> Path:
    """A cache holding the tiny model's preprocessed data and ONNX export (one real run);
    each test works on its own copy (mtimes kept, so the sidecars' stamps still match)."""
    cache = tmp_path_factory.mktemp("integrity-cache")
    rec = _run(tmp_path_factory.mktemp("integrity-base") / "A", cache,
               "--variants", "onnxruntime")
    assert "cache_rebuilt" not in rec["variant_meta"] and "cache_rebuilt" not in rec["data"]
    onnx = _only(cache / "onnx", "*.onnx")
    assert ci.verify(onnx, executed=True) is None          # sealed at export, full hash
    return cache


def _copy(base: Path, tmp_path: Path) -> Path:
    dst = tmp_path / "cache"
    shutil.copytree(base, dst)                              # copy2: mtimes kept to the ns
    return dst


@pytest.mark.slow
def test_truncated_onnx_export_is_rebuilt(tmp_path, base_cache):
    cache = _copy(base_cache, tmp_path)
    onnx = _only(cache / "onnx", "*.onnx")
    os.truncate(onnx, onnx.stat().st_size // 3)
    rec = _run(tmp_path / "B", cache, "--variants", "onnxruntime")
    _assert_rebuilt(rec["variant_meta"]["cache_rebuilt"], onnx.name)
    assert rec["artifact_cached"] is False and rec["convert_s"] > 0
    assert ci.verify(onnx, executed=True) is None          # the new file is sealed
    assert rec["artifact_sha256"] == ci.recorded(onnx)[0]
    assert (onnx.parent / (onnx.name + ".corrupt")).is_file()
    assert "cache_rebuilt" not in rec["data"]


@pytest.mark.slow   # 17 s (rebuilds a model's data); the family keeps its faster cases
def test_truncated_data_cache_is_rebuilt(tmp_path, base_cache):
    cache = _copy(base_cache, tmp_path)
    images = _only(cache / "data", "*/images.npy")
    os.truncate(images, 1_000)
    rec = _run(tmp_path / "B", cache, "--variants", "onnxruntime")
    _assert_rebuilt(rec["data"]["cache_rebuilt"], "images.npy")
    run = json.loads((tmp_path / "B" / "run.json").read_text(encoding="utf-8"))
    assert run["models"][TINY]["data_cache_rebuilt"] == rec["data"]["cache_rebuilt"]
    assert ci.verify(images, executed=True) is None
    assert rec["artifact_cached"] is True and "cache_rebuilt" not in rec["variant_meta"]
    assert rec["data"]["n_images"] > 0


TVM_ARGS = ("--variants", "tvm", "--tvm-untuned")


@pytest.fixture(scope="module")
def tvm_base_cache(tmp_path_factory) -> Path:
    """A cache holding the tiny model's untuned TVM libraries: batch 1, compiled by convert,
    and the parity pass's batch size, compiled on its first call (one real run)."""
    pytest.importorskip("tvm")
    cache = tmp_path_factory.mktemp("integrity-tvm-cache")
    first = _run(tmp_path_factory.mktemp("integrity-tvm") / "A", cache, *TVM_ARGS)
    assert "cache_rebuilt" not in first["variant_meta"]
    lib = _only(cache / "tvm", "*-b1.so")
    assert first["artifact_sha256"] == ci.recorded(lib)[0]
    return cache


@pytest.mark.slow
def test_tampered_tvm_library_is_rebuilt(tmp_path, tvm_base_cache):
    # The executed library is fully re-hashed: a same-size rewrite with its mtime put back
    # (what a size/mtime shortcut would trust) is caught, moved aside and rebuilt.
    cache = _copy(tvm_base_cache, tmp_path)
    lib = _only(cache / "tvm", "*-b1.so")
    _tamper_keeping_size_and_mtime(lib)
    rec = _run(tmp_path / "B", cache, *TVM_ARGS, task="convert")
    _assert_rebuilt(rec["variant_meta"]["cache_rebuilt"], lib.name)
    assert rec["artifact_cached"] is False and rec["convert_s"] > 0
    assert ci.verify(lib, executed=True) is None
    assert rec["artifact_sha256"] == ci.recorded(lib)[0]
    assert (lib.parent / (lib.name + ".corrupt")).is_file()


@pytest.mark.slow
def test_tvm_library_of_another_batch_size_is_rebuilt_while_measuring(tmp_path, tvm_base_cache):
    # Batch sizes other than 1 are compiled (or taken from the cache) on first use, inside
    # the task: a corrupted one is rebuilt there and the record says so as well.
    cache = _copy(tvm_base_cache, tmp_path)
    b1 = _only(cache / "tvm", "*-b1.so")
    others = [p for p in (cache / "tvm").glob("*.so") if p != b1]
    assert others, "parity compiled no other batch size"
    os.truncate(others[0], 4096)
    rec = _run(tmp_path / "B", cache, *TVM_ARGS)
    why = rec["variant_meta"]["cache_rebuilt"]
    assert why.startswith("batch ") and f"{others[0].name}: sha256 mismatch" in why, why
    assert "(4096 bytes; truncated or modified)" in why
    assert rec["artifact_cached"] is True                  # batch 1 was fine
    assert ci.verify(others[0], executed=True) is None


@pytest.mark.slow
def test_truncated_jax_artifact_is_rebuilt(tmp_path):
    pytest.importorskip("jax")
    from converters.jax_flax import store

    cache = tmp_path / "cache"
    first = _run(tmp_path / "A", cache, "--variants", "jax")
    assert "cache_rebuilt" not in first["variant_meta"]
    pkl = _only(cache / "jax", "*.pkl")
    os.truncate(pkl, pkl.stat().st_size // 2)
    rec = _run(tmp_path / "B", cache, "--variants", "jax")
    _assert_rebuilt(rec["variant_meta"]["cache_rebuilt"], pkl.name)
    assert rec["artifact_cached"] is False
    assert ci.verify(pkl, executed=True) is None
    # Tampered in place (same size, mtime put back): the pickle is never unpickled.
    _tamper_keeping_size_and_mtime(pkl)
    with pytest.raises(ci.CacheCorrupted):
        store.load(pkl)
    ported, why = store.cached(pkl)
    assert ported is None
    _assert_rebuilt(why, pkl.name)
