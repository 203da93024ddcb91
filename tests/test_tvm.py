"""TVM variant: real builds of a tiny timm model (test_resnet at 3x64x64), real tuning, real
RPC on loopback, real cross-compilation. No mocks. About 3-4 minutes on 2 busy cores.

Skips say why (TVM not installed; cross compiler or NVRTC 12 missing for the Orin export).
"""
from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

tvm = pytest.importorskip("tvm", reason="apache-tvm not installed (pip install 'edgebench[tvm]')")

REPO = Path(__file__).resolve().parents[1]
MODEL = "test_resnet"          # timm's tiny test network: 0.47 M parameters, 23 TVM tasks
SIZE = (3, 64, 64)
SIZE_ARG = "3x64x64"
TOL = 1e-3                     # FP32 parity budget (DESIGN.md)

pytestmark = pytest.mark.timeout(600)
USER_TVM_THREADS = os.environ.get("TVM_NUM_THREADS")   # before any test sets it


def _spec(options=None):
    from edgebench.models import make_spec

    spec = make_spec(MODEL, "random-seed-0", options or {})
    spec.input_size = SIZE
    return spec


def _torch_logits(spec, x):
    import torch

    with torch.inference_mode():
        return spec.build()(torch.from_numpy(x)).numpy()


def _cli(*args, timeout=420, env=None, **kw):
    e = dict(os.environ, PYTHONPATH=str(REPO), PYTHONUNBUFFERED="1", **(env or {}))
    return subprocess.run([sys.executable, "-m", "edgebench.tune", *args], cwd=REPO, env=e,
                          capture_output=True, text=True, timeout=timeout, **kw)


def _records(db_dir: Path) -> list:
    p = db_dir / "database_tuning_record.json"
    if not p.is_file():
        return []
    return [json.loads(ln) for ln in p.read_text().splitlines() if ln.strip()]


def _db_dir(tuning_dir: Path) -> Path:
    found = list(tuning_dir.glob(f"llvm-*/{MODEL}-{SIZE_ARG}"))
    assert len(found) == 1, f"expected one database under {tuning_dir}, found {found}"
    return found[0]


@pytest.fixture(scope="module")
def tuned_dir(tmp_path_factory):
    """A tuning database made by the CLI: started, stopped with SIGINT once records exist,
    then resumed to its budget. Shared by the tests that need a tuned database."""
    root = tmp_path_factory.mktemp("tuning")
    args = ["--model", MODEL, "--input-size", SIZE_ARG, "--weights", "random",
            "--tuning-dir", str(root), "--trials", "12", "--trials-per-iter", "4",
            "--population", "64", "--no-progress"]
    e = dict(os.environ, PYTHONPATH=str(REPO), PYTHONUNBUFFERED="1")
    proc = subprocess.Popen([sys.executable, "-m", "edgebench.tune", *args], cwd=REPO, env=e,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 300
    recs_at_kill = 0
    try:
        while time.time() < deadline and proc.poll() is None:
            dbs = list(root.glob(f"llvm-*/{MODEL}-{SIZE_ARG}"))
            if dbs and len(_records(dbs[0])) >= 4:
                recs_at_kill = len(_records(dbs[0]))
                proc.send_signal(signal.SIGINT)
                break
            time.sleep(0.5)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    return {"root": root, "args": args, "rc_first": proc.returncode, "err_first": err,
            "out_first": out, "recs_at_kill": recs_at_kill}


# ----------------------------------------------------------------------------- untuned


def test_untuned_build_parity_and_batches(tmp_path):
    import converters

    conv = converters.get("tvm")
    opts = {"tuning_dir": str(tmp_path / "no-tuning")}
    av = conv.available(opts)
    assert av.ok, av.reason
    spec = _spec(opts)
    art = conv.convert(spec, tmp_path / "cache")
    meta = art.meta
    assert meta["tuning"]["status"] == "untuned" and meta["tuning"]["trials"] == 0
    assert meta["tuning"]["tuning_s"] is None and meta["tuning"]["database"]
    assert meta["importer"] == "torch.export"
    assert meta["target"]["kind"] == "llvm" and meta["target"]["mcpu"]
    assert meta["target"]["mcpu"] not in ("generic", "")
    assert meta["target"]["num-cores"] >= 1
    assert "fast_exp" in meta["fast_math"]       # the record says the activations are approximated
    assert not art.cached and art.convert_s > 0 and Path(art.path).is_file()

    pred = conv.load(art, spec)
    rng = np.random.RandomState(0)
    for b in (1, 3):       # batch 3 is compiled on its first call
        x = rng.standard_normal((b, *SIZE)).astype(np.float32)
        y = pred(x)
        assert y.shape == (b, 1000) and y.dtype == np.float32
        assert np.abs(y - _torch_logits(spec, x)).max() <= TOL
    # The kernels ran with the target's cores (not TVM's x86 default of half the vCPUs).
    assert pred.meta["cpu_threads"]["threads"] == int(os.environ["TVM_NUM_THREADS"])
    # convert set it, so load (same process) must not call it the user's setting
    assert pred.meta["cpu_threads"]["source"] == (
        "TVM_NUM_THREADS (set by the user)" if USER_TVM_THREADS else "target num-cores")
    pred.close()

    again = conv.convert(spec, tmp_path / "cache")       # cached library
    assert again.cached and again.path == art.path and again.convert_s == 0


_THREADS_PROBE = """
import json, sys
import tvm
from converters.tvm import core
target, _ = core.resolve_target(sys.argv[1])
got = core.configure_threads(target)
got["running"] = int(tvm.get_global_func("runtime.NumThreads")())
print(json.dumps(got))
"""


@pytest.mark.parametrize("user_env, source", [
    (None, "target num-cores"),
    ("1", "TVM_NUM_THREADS (set by the user)"),
])
def test_thread_pool_follows_the_target(user_env, source):
    """TVM's default pool on x86 is hardware_concurrency/2 (1 thread on a 2-vCPU machine);
    the variant and the tuner run the kernels with the target's num-cores instead (here all
    the CPUs, which TVM would halve)."""
    cpus = os.cpu_count() or 1
    expect = int(user_env) if user_env else cpus
    env = {k: v for k, v in os.environ.items() if k not in ("TVM_NUM_THREADS", "OMP_NUM_THREADS")}
    env["PYTHONPATH"] = str(REPO)
    if user_env:
        env["TVM_NUM_THREADS"] = user_env
    r = subprocess.run([sys.executable, "-c", _THREADS_PROBE,
                        json.dumps({"kind": "llvm", "num-cores": cpus})], cwd=REPO, env=env,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    got = json.loads(r.stdout.strip().splitlines()[-1])
    assert got["threads"] == got["running"] == expect, got
    assert got["source"] == source and "note" not in got


def test_fast_math_activations():
    """exp/erf-based activations are rewritten to TVM's vectorisable polynomials on LLVM
    targets (converters/tvm/fast_math.py) and stay within float32 rounding of PyTorch."""
    import torch
    from tvm import relax

    from converters.tvm import core, fast_math

    class Acts(torch.nn.Module):
        def forward(self, x):
            F = torch.nn.functional
            return torch.cat([torch.sigmoid(x), F.silu(x), F.gelu(x), torch.softmax(x, -1),
                              torch.tanh(x), torch.exp(x.clamp(max=80))], 1)

    n = 4096
    x = np.linspace(-30, 30, n, dtype=np.float32).reshape(1, n)
    model = Acts().eval()
    with torch.inference_mode():
        ref = model(torch.from_numpy(x)).numpy()
    target, _ = core.resolve_target("host")
    assert fast_math.applies_to(target)
    assert not fast_math.applies_to(core.resolve_target("jetson-agx-orin")[0])
    res = core.build_library(model, (n,), 1, target)
    names = " ".join(t["name"] for t in res["tuning"]["per_task"])
    assert "fast_sigmoid" in names and "fast_gelu" in names and "fast_softmax" in names
    assert "tir_sigmoid" not in names and "tir_exp" not in names, names
    out = relax.VirtualMachine(res["executable"], tvm.cpu())["main"](tvm.runtime.tensor(x))
    out = (out if hasattr(out, "numpy") else out[0]).numpy()
    for i, name in enumerate(["sigmoid", "silu", "gelu", "softmax", "tanh", "exp"]):
        got, want = out[0, i * n:(i + 1) * n], ref[0, i * n:(i + 1) * n]
        if name == "gelu":   # erf's polynomial: absolute error (relative blows up near 0)
            assert np.abs(got - want).max() <= 1e-5, name
        else:
            rel = np.abs(got - want) / np.maximum(np.abs(want), 1e-30)
            assert rel.max() <= 1e-6, (name, rel.max())


def test_nhwc_keeps_relu6_fused_with_its_conv():
    """Computed in NHWC, conv + BN + ReLU6 is one kernel, with no transposes between layers
    (ConvertLayout has no rule for clip: it used to wrap each ReLU6 in two transposes), and
    the result still matches PyTorch."""
    import torch
    from tvm import relax

    from converters.tvm import core

    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Conv2d(16, 32, 1, bias=False), torch.nn.BatchNorm2d(32), torch.nn.ReLU6(),
        torch.nn.Conv2d(32, 32, 3, padding=1, groups=32, bias=False), torch.nn.BatchNorm2d(32),
        torch.nn.ReLU6(), torch.nn.Conv2d(32, 16, 1, bias=False)).eval()
    x = np.random.RandomState(4).standard_normal((1, 16, 12, 12)).astype(np.float32) * 4
    with torch.inference_mode():
        ref = model(torch.from_numpy(x)).numpy()
    target, _ = core.resolve_target("host")
    res = core.build_library(model, (16, 12, 12), 1, target, layout="NHWC")
    names = [t["name"] for t in res["tuning"]["per_task"]]
    convs = [n for n in names if "conv2d" in n]
    assert len(convs) == 3 and all("transpose" not in n for n in convs), names
    assert sum("maximum_minimum" in n for n in convs) == 2, names
    assert len(names) == 5, names      # the three convs + the input's and output's transposes
    out = relax.VirtualMachine(res["executable"], tvm.cpu())["main"](tvm.runtime.tensor(x))
    out = (out if hasattr(out, "numpy") else out[0]).numpy()
    assert np.abs(out - ref).max() <= TOL


def test_channels_last_kernels_tile_at_the_vector_width(tmp_path):
    """In NHWC a conv's output channels are what it vectorises over: the design space fixes
    that axis's innermost tile at the widest vector that divides it (16 floats for 48
    channels on AVX-512, 8 for 24, AVX2's 8 for 48) and leaves every other task, and NCHW,
    to MetaSchedule's default space."""
    import torch
    from tvm.s_tir import meta_schedule as ms

    from converters.tvm import core, design_space

    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Conv2d(8, 48, 1), torch.nn.ReLU(),
        torch.nn.Conv2d(48, 48, 3, padding=1, groups=48), torch.nn.ReLU(),
        torch.nn.Conv2d(48, 24, 1), torch.nn.ReLU(),
        torch.nn.Conv2d(24, 6, 1)).eval()
    avx512 = tvm.target.Target({"kind": "llvm", "mcpu": "skylake-avx512", "num-cores": 2})
    avx2 = tvm.target.Target({"kind": "llvm", "mcpu": "haswell", "num-cores": 2})
    mod, _, _ = core.import_model(model, (1, 8, 10, 10))

    def conv_tasks(target, layout):
        tasks = core.extract_tasks(core.lower_for_tuning(mod, target, layout), target)
        convs = {t.task_name.split("_")[1]: t.dispatched[0] for t in tasks
                 if "conv2d" in t.task_name}
        assert len(convs) == 4, [t.task_name for t in tasks]
        return convs

    convs = conv_tasks(avx512, "NHWC")
    # conv2d: 8->48, conv2d1: depthwise 48, conv2d2: 48->24, conv2d3: 24->6
    got = {k: design_space.vector_bits(f, avx512) for k, f in convs.items()}
    assert got == {"conv2d": 512, "conv2d1": 512, "conv2d2": 256, "conv2d3": None}, got
    got = {k: design_space.vector_bits(f, avx2) for k, f in conv_tasks(avx2, "NHWC").items()}
    assert got == {"conv2d": 256, "conv2d1": 256, "conv2d2": 256, "conv2d3": None}, got
    assert all(design_space.space_for(f, avx512, "NCHW") == "post-order-apply"
               for f in conv_tasks(avx512, "NCHW").values())
    assert design_space.space_for(convs["conv2d3"], avx512, "NHWC") == "post-order-apply"
    # What a tuning session gets (and records in tuning.json), and the switch that turns it off.
    from converters.tvm import tuning

    tasks = core.extract_tasks(core.lower_for_tuning(mod, avx512, "NHWC"), avx512)
    n = len(tasks)
    for choice, want in (("auto", {"wide-vector": 3, "default": n - 3}),
                         ("default", {"default": n})):
        cfg = tuning.TuneConfig(design_space=choice)
        ctxs, weights, spaces = tuning._tune_contexts(tasks, tmp_path, avx512, "NHWC", cfg)
        assert len(ctxs) == len(weights) == n and spaces == want, spaces
    with pytest.raises(ValueError, match="design_space must be one of"):
        tuning._tune_contexts(tasks, tmp_path, avx512, "NHWC",
                              tuning.TuneConfig(design_space="wide"))

    def fixed_splits(func):
        """The constant factors of the Split instructions in the design space's sketches."""
        space = design_space.space_for(func, avx512, "NHWC")
        ctx = ms.TuneContext(mod=func, target=avx512, space_generator=space, task_name="t")
        found = set()
        for sch in ctx.generate_design_space():
            for inst in sch.trace.insts:
                if inst.kind.name == "Split":
                    found |= {int(f) for f in inst.inputs[1:] if isinstance(f, tvm.tirx.IntImm)}
        return found

    assert 16 in fixed_splits(convs["conv2d"])      # 48 channels: one 16-float vector
    assert 8 in fixed_splits(convs["conv2d2"])      # 24 channels: 8 floats
    assert not fixed_splits(convs["conv2d3"])       # default space: sampled tiles only


def test_layout_follows_the_option_then_the_database_then_the_target(tmp_path):
    from converters.tvm import core

    host, _ = core.resolve_target("host")
    orin, _ = core.resolve_target("jetson-agx-orin")
    assert core.layout_for(host) == "NHWC" and core.layout_for(orin) == "NCHW"
    assert core.layout_for(host, tmp_path / "none", "nchw") == "NCHW"
    db = tmp_path / "db"
    db.mkdir()
    (db / core.DB_WORKLOAD).write_text('["0", {}]\n')
    (db / core.DB_RECORDS).write_text('[0, []]\n')
    assert core.layout_for(host, db) == "NCHW"      # tuned before layouts were recorded
    (db / core.DB_META).write_text('{"layout": "NHWC"}')
    assert core.layout_for(orin, db) == "NHWC"      # the database's workloads decide
    assert core.layout_for(host, db, "NCHW") == "NCHW"


def test_onnx_importer_path(tmp_path):
    import converters

    conv = converters.get("tvm")
    spec = _spec({"tuning_dir": str(tmp_path / "t"), "tvm_importer": "onnx"})
    art = conv.convert(spec, tmp_path / "cache")
    assert art.meta["importer"] == "onnx"
    x = np.random.RandomState(1).standard_normal((1, *SIZE)).astype(np.float32)
    assert np.abs(conv.load(art, spec)(x) - _torch_logits(spec, x)).max() <= TOL


def test_squeezenet_builds(tmp_path):
    """The study's TVM failed on SqueezeNet; this one must import and match torch."""
    import converters
    from edgebench.models import make_spec

    conv = converters.get("tvm")
    spec = make_spec("squeezenet1_1", "random-seed-0", {"tuning_dir": str(tmp_path / "t")})
    spec.input_size = (3, 96, 96)
    art = conv.convert(spec, tmp_path / "cache")
    x = np.random.RandomState(2).standard_normal((1, 3, 96, 96)).astype(np.float32)
    assert np.abs(conv.load(art, spec)(x) - _torch_logits(spec, x)).max() <= TOL


def test_unbuildable_model_reports_compiler_message(tmp_path):
    import torch

    import converters
    from converters.base import ModelSpec

    class Fft(torch.nn.Module):     # FFT: neither TVM importer supports it
        def forward(self, x):
            return torch.fft.rfft2(x).abs().flatten(1)[:, :1000]

    spec = ModelSpec(name="fft-net", weights="random-seed-0", input_size=(3, 32, 32),
                     num_classes=1000, build=lambda: Fft().eval(),
                     options={"tuning_dir": str(tmp_path / "t")})
    with pytest.raises(Exception) as ei:
        converters.get("tvm").convert(spec, tmp_path / "cache")
    msg = str(ei.value)
    assert "TVM import failed" in msg and "torch.export importer" in msg
    assert "onnx importer" in msg and len(msg) > 60


# ----------------------------------------------------------------------------- tuning


def test_tune_interrupt_resume_and_tuned_rebuild(tuned_dir, tmp_path):
    import converters

    root, args = tuned_dir["root"], tuned_dir["args"]
    # 1. SIGINT after the first records: exit 130, the records are kept.
    assert tuned_dir["recs_at_kill"] >= 4, tuned_dir["err_first"][-2000:]
    assert tuned_dir["rc_first"] == 130, tuned_dir["err_first"][-2000:]
    db = _db_dir(root)
    kept = len(_records(db))
    assert kept >= tuned_dir["recs_at_kill"]
    meta = json.loads((db / "tuning.json").read_text())
    assert meta["sessions"][-1]["interrupted"] is True
    assert meta["sessions"][-1]["trials_after"] == kept
    assert meta["sessions"][-1]["measure_threads"] >= 1

    # 2. Resume: the same command counts the records toward --trials and runs the rest.
    # A second model's database for the same target (here a copy) pre-trains the cost model.
    sibling = db.parent / "sibling_model-3x64x64"
    shutil.copytree(db, sibling, ignore=shutil.ignore_patterns("logs"))
    r = _cli(*args, "--transfer", "--summary", str(tmp_path / "s.json"))
    assert r.returncode == 0, r.stderr[-3000:]
    s = json.loads((tmp_path / "s.json").read_text())["tuning"]
    assert s["transfer_from"] == [str(sibling)]
    assert "pre-trained on 1 other database(s) (sibling_model-3x64x64)" in r.stderr
    transfer = json.loads((db / "tuning.json").read_text())["sessions"][-1]["cost_model_transfer"]
    measured = [r for r in _records(sibling) if r[1][1] and max(r[1][1]) < 1e9]
    assert transfer["records"] == len(measured) > 0 and transfer["workloads"] >= 1, transfer
    assert s["trials_before"] == kept
    assert s["trials_run"] == 12 - kept or (s["trials_run"] > 0 and s["trials_after"] >= 12)
    assert s["trials_after"] == len(_records(db)) >= 12
    assert s["errors"] < s["trials_run"], s["first_error"]
    assert len(json.loads((db / "tuning.json").read_text())["sessions"]) == 2
    # 3. Budget already met: nothing runs, exit 0.
    r = _cli(*args, "--summary", str(tmp_path / "s2.json"))
    assert r.returncode == 0, r.stderr[-3000:]
    assert json.loads((tmp_path / "s2.json").read_text())["tuning"]["trials_run"] == 0

    # 4. The converter applies the database and says so.
    conv = converters.get("tvm")
    spec = _spec({"tuning_dir": str(root)})
    art = conv.convert(spec, tmp_path / "cache")
    t = art.meta["tuning"]
    assert t["status"] == "tuned", t
    assert t["trials"] == len(_records(db))
    assert t["tuning_s"] and t["tuning_s"] > 0
    # Tuned in the CPU default, NHWC: 22 kernels + the input's transpose to NHWC.
    assert art.meta["layout"] == "NHWC" and meta["layout"] == "NHWC"
    assert 0 < t["tasks_tuned"] <= t["tasks_total"] == 23
    assert Path(t["database"]) == db
    assert t["design_space"] == "wide-vector"       # the convs tile channels at the vector
    x = np.random.RandomState(3).standard_normal((1, *SIZE)).astype(np.float32)
    assert np.abs(conv.load(art, spec)(x) - _torch_logits(spec, x)).max() <= TOL
    # An untuned build of the same model is a different cache entry.
    art0 = conv.convert(_spec({"tuning_dir": str(tmp_path / "none")}), tmp_path / "cache")
    assert art0.path != art.path and art0.meta["tuning"]["status"] == "untuned"


def test_cost_model_transfer_trains_before_the_first_search(tuned_dir, tmp_path):
    """Another database's measurements give the cost model a trained booster before any of
    this model's candidates is measured: its predictions stop being random draws."""
    from tvm.s_tir import meta_schedule as ms

    from converters.tvm import core, tuning

    db = _db_dir(tuned_dir["root"])
    target, _ = core.resolve_target("host")
    # Found as a sibling of this model's database; this model's own is never a source.
    other = tmp_path / db.parent.name / "other_model-3x64x64"
    shutil.copytree(db, other, ignore=shutil.ignore_patterns("logs"))
    mine = other.parent / f"{MODEL}-{SIZE_ARG}"
    assert tuning.transfer_databases(mine) == [other]
    assert tuning.transfer_databases(mine, auto=False) == []
    assert tuning.transfer_databases(tmp_path / "t" / db.parent.name / "m",
                                     extra=[tmp_path], auto=False) == [other]
    assert tuning.transfer_databases(other) == []
    (tmp_path / "t").mkdir()
    with pytest.raises(ValueError, match="holds no tuning database"):
        tuning.transfer_databases(mine, extra=[tmp_path / "t"])
    # Only databases tuned like this session teach its cost model.
    assert core.database_profile(other) == ("NHWC", "wide-vector")
    assert core.database_profile(tmp_path / "t") == ("NCHW", "default")   # before records
    assert tuning.split_by_profile([other], ("NHWC", "wide-vector")) == ([other], [])
    assert tuning.split_by_profile([other], ("NCHW", "default")) == (
        [], [{"database": str(other), "layout": "NHWC", "design_space": "wide-vector"}])

    recs = ms.database.JSONDatabase(work_dir=str(db)).get_all_tuning_records()
    ctx = ms.TuneContext(mod=recs[0].workload.mod, target=target, task_name="t")
    cands = [r.as_measure_candidate() for r in recs
             if core.task_hash(r.workload.mod) == core.task_hash(recs[0].workload.mod)]
    model = ms.cost_model.XGBModel(extractor=ms.feature_extractor.PerStoreFeature(),
                                   num_warmup_samples=4, adaptive_training=True)
    before = model.predict(ctx, cands), model.predict(ctx, cands)
    assert not np.allclose(*before)        # untrained: uniform random scores
    info = tuning._transfer_cost_model(model, target, [other])
    measured = [r for r in recs if r.run_secs and max(float(x) for x in r.run_secs) < 1e9]
    assert info["records"] == len(measured) > 0
    assert info["databases"][0]["records"] == len(measured)
    assert model.booster is not None
    after = model.predict(ctx, cands), model.predict(ctx, cands)
    np.testing.assert_allclose(*after)     # trained: the same candidates, the same scores


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def rpc_tracker():
    pytest.importorskip("tornado", reason="the RPC tracker needs tornado (pip install tornado)")
    port = _free_port()
    env = dict(os.environ, PYTHONPATH=str(REPO))
    # Own process groups: the tracker and server run their work in popen_worker children,
    # which must go too.
    procs = [subprocess.Popen([sys.executable, "-m", "tvm.exec.rpc_tracker", "--host",
                               "127.0.0.1", "--port", str(port), "--port-end",
                               str(port + 1), "--silent"], env=env, cwd=REPO,
                              start_new_session=True)]
    try:
        from tvm import rpc

        deadline = time.time() + 60
        while True:
            try:
                rpc.connect_tracker("127.0.0.1", port).summary()
                break
            except Exception:  # noqa: BLE001
                if time.time() > deadline:
                    raise
                time.sleep(0.5)
        sport = _free_port()
        procs.append(subprocess.Popen(
            [sys.executable, "-m", "tvm.exec.rpc_server", "--host", "127.0.0.1", "--port",
             str(sport), "--port-end", str(sport + 1), "--tracker", f"127.0.0.1:{port}",
             "--key", "eb-loopback", "--silent"], env=env, cwd=REPO, start_new_session=True))
        while True:
            keys = [i["key"] for i in rpc.connect_tracker("127.0.0.1", port)
                    .summary()["server_info"]]
            if any(k.endswith("eb-loopback") for k in keys):
                break
            if time.time() > deadline:
                raise TimeoutError(f"RPC server did not register (keys: {keys})")
            time.sleep(0.5)
        yield f"127.0.0.1:{port}"
    finally:
        for p in reversed(procs):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(p.pid, signal.SIGTERM)
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)


def test_rpc_tuning_on_loopback(rpc_tracker, tmp_path):
    root = tmp_path / "rpc"
    r = _cli("--model", MODEL, "--input-size", SIZE_ARG, "--weights", "random",
             "--tuning-dir", str(root), "--trials", "4", "--trials-per-iter", "4",
             "--population", "64", "--rpc-tracker", rpc_tracker, "--rpc-key", "eb-loopback",
             "--no-progress", "--summary", str(tmp_path / "s.json"))
    assert r.returncode == 0, r.stderr[-3000:]
    s = json.loads((tmp_path / "s.json").read_text())
    assert s["rpc"] == {"tracker": rpc_tracker, "key": "eb-loopback"}
    assert s["tuning"]["runner"].startswith("rpc ")
    recs = _records(_db_dir(root))
    assert len(recs) == 4
    ok = [rec for rec in recs if min(float(t) for t in rec[1][1]) < 1e9]
    assert ok, f"no candidate ran over RPC: {s['tuning']['first_error']}"
    # A key nobody registered: a clear error (exit 2), nothing tuned. No timing assertion:
    # a tool that waited for the key would hit _cli's timeout and fail the test that way.
    r = _cli("--model", MODEL, "--input-size", SIZE_ARG, "--weights", "random",
             "--tuning-dir", str(tmp_path / "rpc2"), "--trials", "4", "--rpc-tracker",
             rpc_tracker, "--rpc-key", "no-such-device", "--no-progress", timeout=120)
    assert r.returncode == 2 and "no-such-device" in r.stderr and "eb-loopback" in r.stderr
    assert not (tmp_path / "rpc2").exists()                   # checked before any database


def test_runner_gives_gather_kernels_valid_indices():
    """MetaSchedule's default argument allocation fills index tensors with random values;
    a gather (``take``, Swin-T's relative-position bias) then reads out of bounds and the
    runner process dies, so every candidate failed and those tasks stayed untuned. Ours sets
    integer arguments to 0. Both runners here are real, measuring a real built kernel."""
    from tvm import te, topi
    from tvm.s_tir import meta_schedule as ms

    from converters.tvm import core, tuning

    table = te.placeholder((169, 3), "float32", name="table")
    index = te.placeholder((2401,), "int64", name="index")
    mod = tvm.IRModule({"main": te.create_prim_func(
        [table, index, topi.take(table, index, axis=0, mode="fast")])})
    target, _ = core.resolve_target("host")
    [built] = ms.builder.LocalBuilder(max_workers=1).build([ms.builder.BuilderInput(mod, target)])
    assert built.error_msg is None, built.error_msg
    args = ms.arg_info.ArgInfo.from_prim_func(mod["main"])

    def run(alloc):
        runner = ms.runner.LocalRunner(timeout_sec=60, f_alloc_argument=alloc,
                                       evaluator_config=ms.runner.EvaluatorConfig(number=1))
        return runner.run([ms.runner.RunnerInput(built.artifact_path, "cpu", args)])[0].result()

    default = run(None)
    assert default.error_msg and "exception" in default.error_msg      # the failure we fix
    ours = run(tuning.alloc_valid_indices)
    assert ours.error_msg is None and ours.run_secs and float(ours.run_secs[0]) > 0


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
    m = json.loads((out / "manifest.json").read_text())
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
from test_tvm import _spec
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
        from converters.tvm import export

        export.nvrtc_version()
    except Exception as e:  # noqa: BLE001
        return f"NVRTC 12 missing ({e}): pip install nvidia-cuda-nvrtc-cu12==12.2.140"
    return None


@pytest.mark.skipif(_orin_skip_reason() is not None, reason=str(_orin_skip_reason()))
def test_cross_compile_for_jetson_agx_orin(tmp_path):
    from converters.tvm import export

    out = tmp_path / "orin"
    r = _cli("--model", MODEL, "--input-size", SIZE_ARG, "--weights", "random",
             "--target", "jetson-agx-orin", "--trials", "0", "--export", str(out),
             "--tuning-dir", str(tmp_path / "t"), "--no-progress")
    assert r.returncode == 0, r.stderr[-3000:]
    m = json.loads((out / "manifest.json").read_text())
    assert m["target"]["kind"] == "cuda" and m["target"]["arch"] == "sm_87"
    assert m["target"]["host"]["mtriple"].startswith("aarch64")
    assert m["device"] == "cuda" and m["host_arch"] == "aarch64"
    assert m["tvm"] == tvm.__version__ and m["tuning"]["status"] == "untuned"
    lib = out / m["libraries"]["1"]
    assert m["files"][lib.name]["sha256"] == export.sha256_file(lib)
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
    from converters.tvm import export

    src = ('extern "C" __global__ void add1(float* __restrict__ a) '
           "{ a[threadIdx.x] += 1.0f; }\n")
    ptx = export.nvrtc_compile(src, "sm_87", "ptx")
    assert b".target sm_87" in ptx and b".entry add1" in ptx and ptx.startswith(b"//")
    cubin = export.nvrtc_compile(src, "sm_87", "cubin")
    assert cubin[:4] == b"\x7fELF" and int.from_bytes(cubin[18:20], "little") == 190
    assert int.from_bytes(cubin[48:52], "little") & 0xFF == 87


# ----------------------------------------------------------------------------- usage errors


@pytest.mark.parametrize("argv, needle", [
    (["--target", "no-such-board"], "unknown target"),
    (["--target", '{"kind": '], "not valid JSON"),
    (["--target", '{"kind": "llvm", "mcpu": "nope-cpu-9000"}'], "TVM rejected"),
    (["--rpc-tracker", "127.0.0.1:9190"], "go together"),
    (["--rpc-tracker", "localhost", "--rpc-key", "k"], "HOST:PORT"),
    (["--trials", "-1"], "--trials"),
    (["--input-size", "224"], "3x224x224"),
    (["--trials", "0"], "nothing to do"),
    (["--batch-sizes", "1,2"], "only applies to --export"),
    (["--target", "jetson-agx-orin", "--trials", "8"], "--rpc-tracker"),
    (["--transfer-from", "/no/such/dir"], "no such directory"),
    (["--transfer-from", "tests"], "holds no tuning database"),
])
def test_bad_arguments_exit_2(argv, needle, capsys):
    from edgebench import tune

    rc = tune.main(["--model", MODEL, *argv])
    err = capsys.readouterr().err
    assert rc == 2, err
    assert needle in err


def test_unknown_model_exit_2(capsys):
    from edgebench import tune

    assert tune.main(["--model", "resnet_no_such_model", "--trials", "1"]) == 2
    assert "unknown model" in capsys.readouterr().err


def test_help_explains():
    r = _cli("--help", timeout=60)
    assert r.returncode == 0
    for word in ("--rpc-tracker", "--export", "resume", "jetson-agx-orin", "tuning_record"):
        assert word in r.stdout


def test_quick_profile_skips_untuned_tvm_with_the_tuning_command(tmp_path):
    import converters
    from converters.base import SkipVariant
    from edgebench.models import make_spec

    conv = converters.get("tvm")
    spec = make_spec(MODEL, "random-seed-0", {"profile": "quick", "tuning_dir": str(tmp_path)})
    with pytest.raises(SkipVariant, match="python -m edgebench.tune --model"):
        conv.convert(spec, tmp_path / "cache")
