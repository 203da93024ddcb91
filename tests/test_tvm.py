"""TVM variant: real builds of a tiny timm model (test_resnet at 3x64x64) and the tuning
command's usage. No mocks. Tuning, RPC and export: test_tvm_tuning.py, test_tvm_export.py
(all three about 3-4 minutes on 2 busy cores; helpers in tvmlib.py).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

tvm = pytest.importorskip("tvm", reason="apache-tvm not installed (pip install 'edgebench[tvm]')")

from tvmlib import MODEL, REPO, SIZE, TOL, _cli, _spec, _torch_logits  # noqa: E402 - after the skip

pytestmark = pytest.mark.timeout(600)

USER_TVM_THREADS = os.environ.get("TVM_NUM_THREADS")   # before any test sets it


# ----------------------------------------------------------------------------- untuned


@pytest.mark.slow
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
    # A 64-byte aligned batch (the suite's, edgebench.util.aligned_empty) is read where it
    # is, as ORT reads a numpy input; any other is copied into the predictor's own buffer.
    from converters.tvm.predictor import DLPACK_CPU, reads_in_place, vm_input
    from edgebench.util import aligned_empty

    aligned = aligned_empty((1, *SIZE), np.float32)
    aligned[...] = rng.standard_normal((1, *SIZE))
    unaligned = aligned_empty((aligned.size + 1,), np.float32)[1:].reshape(aligned.shape)
    unaligned[...] = aligned
    own = pred._get(1)[2]
    read = tvm.runtime.from_dlpack
    assert np.shares_memory(np.from_dlpack(vm_input(aligned, own, read)), aligned)
    assert vm_input(unaligned, own, read) is own and np.array_equal(own.numpy(), unaligned)
    # a GPU VM (DLPack kDLCUDA = 2) needs the batch copied to the device, aligned or not
    assert reads_in_place(aligned, DLPACK_CPU) and not reads_in_place(aligned, 2)
    assert not reads_in_place(aligned_empty(aligned.shape, np.float64), DLPACK_CPU)
    assert np.array_equal(pred(aligned), pred(unaligned))
    # The kernels ran with the target's cores (not TVM's x86 default of half the vCPUs).
    assert pred.meta["cpu_threads"]["threads"] == int(os.environ["TVM_NUM_THREADS"])
    # convert set it, so load (same process) must not call it the user's setting
    assert pred.meta["cpu_threads"]["source"] == (
        "TVM_NUM_THREADS (set by the user)" if USER_TVM_THREADS else "target num-cores")
    pred.close()

    again = conv.convert(spec, tmp_path / "cache")       # cached library
    assert again.cached and again.path == art.path and again.convert_s == 0


_THREADS_PROBE = """
import glob, json, os, sys
import numpy as np
import tvm
from converters.tvm import targets
target, _ = targets.resolve_target(sys.argv[1])
got = targets.configure_threads(target)
got["running"] = int(tvm.get_global_func("runtime.NumThreads")())
# a parallel kernel, so the pool's workers exist; then which threads are pinned
n = 1 << 16
A = tvm.te.placeholder((n,), name="A")
B = tvm.te.compute((n,), lambda i: A[i] * 2.0, name="B")
s = tvm.s_tir.Schedule(tvm.te.create_prim_func([A, B]))
s.parallel(s.get_loops(s.get_sblock("B"))[0])
f = tvm.compile(s.mod, target=target)
a = tvm.runtime.tensor(np.ones(n, "float32"))
b = tvm.runtime.tensor(np.zeros(n, "float32"))
for _ in range(3):
    f(a, b)
every = ",".join(map(str, sorted(os.sched_getaffinity(0))))
def allowed(task):
    line = next(l for l in open(task + "/status") if l.startswith("Cpus_allowed_list"))
    return line.split()[1]
got["tasks"] = len(glob.glob("/proc/self/task/*"))
got["pinned"] = sum(1 for t in glob.glob("/proc/self/task/*") if allowed(t) not in
                    (every, every.replace(",", "-")))
print(json.dumps(got))
"""


@pytest.mark.slow  # 6.1 s each on the 2-core AVX2 VM (2026-11-26): a TVM process per case
@pytest.mark.parametrize("user_env, source, user_bind", [
    (None, "target num-cores", None),
    ("1", "TVM_NUM_THREADS (set by the user)", None),
    (None, "target num-cores", "1"),
])
def test_thread_pool_follows_the_target(user_env, source, user_bind):
    """TVM's default pool on x86 is hardware_concurrency/2 (1 thread on a 2-vCPU machine);
    the variant and the tuner run the kernels with the target's num-cores instead (here all
    the CPUs, which TVM would halve). Its workers are left unpinned unless the user asks
    (TVM pins them by default)."""
    cpus = os.cpu_count() or 1
    expect = int(user_env) if user_env else cpus
    env = {k: v for k, v in os.environ.items()
           if k not in ("TVM_NUM_THREADS", "OMP_NUM_THREADS", "TVM_BIND_THREADS")}
    env["PYTHONPATH"] = str(REPO)
    if user_env:
        env["TVM_NUM_THREADS"] = user_env
    if user_bind:
        env["TVM_BIND_THREADS"] = user_bind
    r = subprocess.run([sys.executable, "-c", _THREADS_PROBE,
                        json.dumps({"kind": "llvm", "num-cores": cpus})], cwd=REPO, env=env,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    got = json.loads(r.stdout.strip().splitlines()[-1])
    assert got["threads"] == got["running"] == expect, got
    assert got["source"] == source and "note" not in got
    assert got["bind"] == bool(user_bind) and got["bind_source"] == (
        "TVM_BIND_THREADS (set by the user)" if user_bind
        else "edgebench default (unpinned, as ONNX Runtime's threads)")
    if expect > 1 and cpus > 1:       # a pinned worker exists only where there is one
        assert got["tasks"] > 1 and (got["pinned"] > 0) == bool(user_bind), got


def test_the_variant_computes_where_its_target_runs():
    # The report's "variants computed on" reads this; a CUDA target is resolved, not run.
    import converters

    conv = converters.get("tvm")
    assert conv.compute_device({}) == "cpu"
    assert conv.compute_device({"tvm_target": "jetson-agx-orin"}) == "cuda"
    assert conv.compute_device({"tvm_target": "nvidia/nvidia-h100"}) == "cuda"
    assert conv.compute_device({"tvm_target": "no-such-target"}) == "cpu"   # available() says why


def test_a_gpu_targets_candidates_are_said_to_run_on_its_gpu():
    # The H100 session's tuner said "16 thread(s) per candidate" for a CUDA target: the CPU's
    # count, which says nothing about a GPU measurement. Resolved only: no GPU needed.
    from converters.tvm import targets, tuning

    cfg = tuning.TuneConfig()
    h100, _ = targets.resolve_target("nvidia/nvidia-h100")
    assert tuning.measured_where(cfg, h100) == (
        "local, on the CUDA GPU", {"threads": None, "source": "the local CUDA GPU"})
    remote = tuning.TuneConfig(rpc_tracker="127.0.0.1:9190", rpc_key="orin")
    runner, threads = tuning.measured_where(remote, h100)
    assert runner == "rpc 127.0.0.1:9190 key=orin" and threads["threads"] is None


def test_fast_math_activations():
    """exp/erf-based activations are rewritten to TVM's vectorisable polynomials on LLVM
    targets (converters/tvm/fast_math.py) and stay within float32 rounding of PyTorch."""
    import torch
    from tvm import relax

    from converters.tvm import build, targets
    from converters.tvm.cpu import fast_math

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
    target, _ = targets.resolve_target("host")
    assert fast_math.applies_to(target)
    assert not fast_math.applies_to(targets.resolve_target("jetson-agx-orin")[0])
    res = build.build_library(model, (n,), 1, target)
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

    from converters.tvm import build, targets

    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Conv2d(16, 32, 1, bias=False), torch.nn.BatchNorm2d(32), torch.nn.ReLU6(),
        torch.nn.Conv2d(32, 32, 3, padding=1, groups=32, bias=False), torch.nn.BatchNorm2d(32),
        torch.nn.ReLU6(), torch.nn.Conv2d(32, 16, 1, bias=False)).eval()
    x = np.random.RandomState(4).standard_normal((1, 16, 12, 12)).astype(np.float32) * 4
    with torch.inference_mode():
        ref = model(torch.from_numpy(x)).numpy()
    target, _ = targets.resolve_target("host")
    res = build.build_library(model, (16, 12, 12), 1, target, layout="NHWC")
    names = [t["name"] for t in res["tuning"]["per_task"]]
    convs = [n for n in names if "conv2d" in n]
    assert len(convs) == 3 and all("transpose" not in n for n in convs), names
    assert sum("maximum_minimum" in n for n in convs) == 2, names
    assert len(names) == 5, names      # the three convs + the input's and output's transposes
    out = relax.VirtualMachine(res["executable"], tvm.cpu())["main"](tvm.runtime.tensor(x))
    out = (out if hasattr(out, "numpy") else out[0]).numpy()
    assert np.abs(out - ref).max() <= TOL


def test_profiler_maps_every_kernel_call_to_its_tuning_task():
    """benchmarks/tvm_profile.py: the VM instrument sees each kernel call, and every kernel
    maps to the task (workload) the database files it under; two identical convs share one
    task, so that task's weight is the calls of its kernels."""
    import importlib.util

    import torch

    from converters.tvm import build, database, targets

    spec_ = importlib.util.spec_from_file_location("tvm_profile",
                                                   REPO / "benchmarks" / "tvm_profile.py")
    prof = importlib.util.module_from_spec(spec_)
    spec_.loader.exec_module(prof)
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Conv2d(8, 8, 3, padding=1), torch.nn.ReLU(),
        torch.nn.Conv2d(8, 8, 3, padding=1), torch.nn.ReLU(),     # same workload as the first
        torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(8, 4)).eval()
    target, _ = targets.resolve_target("host")
    res = build.build_library(model, (8, 10, 10), 1, target, layout="NHWC")
    vm = tvm.relax.VirtualMachine(res["executable"], tvm.cpu())
    x = np.random.RandomState(0).standard_normal((1, 8, 10, 10)).astype(np.float32)
    kern = prof.tvm_kernel_times(vm, vm["main"], tvm.runtime.tensor(x), 3)
    mapping = database.kernel_workloads(res["lowered"], res["tasks"])
    assert set(kern) <= set(mapping), (sorted(kern), sorted(mapping))
    calls: dict = {}
    for name, k in kern.items():
        assert k["us"] > 0 and k["calls"] >= 1
        calls[mapping[name].task_name] = calls.get(mapping[name].task_name, 0) + k["calls"]
    assert calls == {t.task_name: int(t.weight) for t in res["tasks"]}
    assert max(calls.values()) == 2        # the two convs: one task
    assert [prof.family_of_kernel(n) for n in ("fused_conv2d_add_relu", "matmul1",
                                               "transpose2", "mean")] == \
        ["conv", "matmul", "data movement", "pool"]
    assert [prof.family_of_node(o) for o in ("FusedConv", "Gemm", "ReorderOutput", "Add")] == \
        ["conv", "matmul", "data movement", "elementwise/other"]


def test_layout_follows_the_option_then_the_database_then_the_target(tmp_path):
    from converters.tvm import database, lowering, targets

    L = lowering.lowering_for
    host, _ = targets.resolve_target("host")
    orin, _ = targets.resolve_target("jetson-agx-orin")
    assert L(host)["layout"] == "NHWC" and L(orin)["layout"] == "NCHW"
    assert L(host, tmp_path / "none", layout="nchw")["layout"] == "NCHW"
    db = tmp_path / "db"
    db.mkdir()
    (db / database.DB_WORKLOAD).write_text('["0", {}]\n', encoding="utf-8")
    (db / database.DB_RECORDS).write_text('[0, []]\n', encoding="utf-8")
    assert L(host, db)["layout"] == "NCHW"      # tuned before layouts were recorded
    (db / database.DB_META).write_text('{"layout": "NHWC"}', encoding="utf-8")
    assert L(orin, db)["layout"] == "NHWC"      # the database's workloads decide
    assert L(host, db, layout="NCHW")["layout"] == "NCHW"


def test_tuned_batch_sizes_are_those_of_the_sessions_that_left_records(tmp_path):
    # the sizes a TVM build runs (TvmPredictor.tuned_batch_sizes): passes, throughput, MultiStream
    from converters.tvm import database
    from tvmlib import old_database

    assert database.tuned_batch_sizes(tmp_path / "none") == []
    db = old_database(tmp_path / "db")
    assert database.tuned_batch_sizes(db) == [1]      # before sessions recorded their batch
    sessions = [{"batch_size": 4, "trials_after": 12}, {"batch_size": 8, "trials_after": 0},
                {"batch_size": 1, "trials_after": 20}]
    (db / database.DB_META).write_text(json.dumps({"sessions": sessions}), encoding="utf-8")
    assert database.tuned_batch_sizes(db) == [1, 4]


def test_an_artifacts_tuned_sizes_are_the_libraries_built_from_tuned_kernels():
    # an exported artifact's TvmPredictor.tuned_batch_sizes, from its manifest
    from converters.tvm import export

    def manifest(libs, tuned_at):
        return {"libraries": {str(b): f"model-b{b}.so" for b in libs},
                "tuning_by_batch": {str(b): {"status": "tuned" if tuned_at else "untuned",
                                             "batch_sizes": tuned_at} for b in libs}}

    assert export.tuned_batch_sizes(manifest([1, 2, 8], [1])) == [1]
    assert export.tuned_batch_sizes(manifest([1, 4, 8], [1, 8])) == [1, 8]
    # none of its libraries tuned (an untuned export, or only untuned sizes exported): any
    assert export.tuned_batch_sizes(manifest([1, 2], [])) is None
    assert export.tuned_batch_sizes(manifest([8], [1])) is None
    # a manifest from before the database's batch sizes were recorded says nothing
    assert export.tuned_batch_sizes({"libraries": {"1": "model-b1.so"},
                                     "tuning_by_batch": {"1": {"status": "tuned"}}}) is None


@pytest.mark.slow  # 15.5 s on the 2-core AVX2 VM (2026-11-26)
def test_onnx_importer_path(tmp_path):
    import converters

    conv = converters.get("tvm")
    spec = _spec({"tuning_dir": str(tmp_path / "t"), "tvm_importer": "onnx"})
    art = conv.convert(spec, tmp_path / "cache")
    assert art.meta["importer"] == "onnx"
    x = np.random.RandomState(1).standard_normal((1, *SIZE)).astype(np.float32)
    assert np.abs(conv.load(art, spec)(x) - _torch_logits(spec, x)).max() <= TOL


@pytest.mark.slow
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
    (["--trials", "0", "--measure", "--target", "jetson-agx-orin"], "on the device"),
    (["--num-classes", "0"], "at least 1 class"),
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
    """Option summaries, the defaults and where the rest is: short enough to read (the
    figures behind each choice are in experiments/FINDINGS.md, not here)."""
    import re

    r = _cli("--help", timeout=60)
    assert r.returncode == 0
    for word in ("--rpc-tracker", "--export", "resume", "jetson-agx-orin", "tuning.json",
                 "--measure", "edgebench.full", "x86-measured", "docs/tvm.md"):
        assert word in r.stdout, word
    assert len(r.stdout.splitlines()) <= 120, len(r.stdout.splitlines())
    assert not re.search(r"20\d\d-\d\d-\d\d|Zen ?\d|Xeon|EPYC|issue \d", r.stdout)


def test_tune_command_comes_from_the_converter():
    """``python -m edgebench.tune`` only dispatches: the TVM converter declares the command."""
    import converters
    from converters.tvm import cli

    assert converters.command("tune") is cli.main
    with pytest.raises(KeyError, match="no converter provides the command 'nope'.*tune"):
        converters.command("nope")
    assert "tvm" not in (REPO / "edgebench" / "tune.py").read_text(encoding="utf-8").lower()


def test_measure_command_is_a_valid_edgebench_full_command(tmp_path):
    """The printed command (what --measure runs) parses as edgebench.full's and names what
    this run tuned or exported; untuned TVM is asked for when there is no database."""
    from converters.tvm import cli, database
    from edgebench.cli import build_parser

    def full_args(*argv, out_dir=None):
        args = cli.build_parser().parse_args(["--model", MODEL, *argv])
        parsed = cli.validate(args)
        db = database.db_dir_for(args.tuning_dir, parsed["target"], MODEL, SIZE)
        cmd = cli.measure_command(args, parsed, MODEL, db, out_dir)
        assert cmd[:3] == ["python", "-m", "edgebench.full"]
        return build_parser().parse_args(cmd[3:])

    t = str(tmp_path / "t")
    a = full_args("--tuning-dir", t, "--weights", "random", "--seed", "3")
    assert a.models == [MODEL] and a.variants == ["tvm", "onnxruntime"]
    assert a.tasks == ["parity", "latency"] and a.weights == "random" and a.seed == 3
    assert a.tuning_dir == t and a.tvm_untuned and a.tvm_artifact is None and a.out is None
    target = '{"kind": "llvm", "num-cores": 1}'
    a = full_args("--tuning-dir", t, "--target", target, out_dir=str(tmp_path / "run"))
    assert a.tvm_target == target and a.out == str(tmp_path / "run")
    a = full_args("--trials", "0", "--export", str(tmp_path / "art"))
    assert a.tvm_artifact == str(tmp_path / "art") and not a.tvm_untuned


@pytest.mark.parametrize("profile", ["quick", "smoke"])
def test_short_profiles_skip_untuned_tvm_with_the_tuning_command(tmp_path, profile):
    import converters
    from converters.base import SkipVariant
    from edgebench.models import make_spec

    conv = converters.get("tvm")
    spec = make_spec(MODEL, "random-seed-0", {"profile": profile, "tuning_dir": str(tmp_path)})
    with pytest.raises(SkipVariant, match=f"left out of the {profile} profile.*"
                                          "python -m edgebench.tune --model"):
        conv.convert(spec, tmp_path / "cache")
    opts = {"profile": profile, "tuning_dir": str(tmp_path)}
    assert not conv.check_model(MODEL, SIZE, opts).ok
    assert conv.check_model(MODEL, SIZE, {**opts, "tvm_untuned": True}).ok
    assert conv.check_model(MODEL, SIZE, {**opts, "profile": "paper"}).ok


# ----------------------------------------------------------------------------- intrinsics

def test_memoized_getmodule_answers_as_inspect_does(tmp_path, monkeypatch):
    """intrinsics.memoized_getmodule (the fix for a 58-105 s import of
    tvm.s_tir.tensor_intrin) caches inspect.getmodule by file name for frames: on a real
    import stack, frozen importlib frames included, it answers what CPython's scan answers,
    and inspect.getmodule is restored afterwards."""
    import importlib
    import inspect
    import json as json_module

    from converters.tvm.intrinsics import memoized_getmodule

    (tmp_path / "stack_probe_mod.py").write_text(
        "import inspect\nFRAMES = [f.frame for f in inspect.stack(0)]\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    frames = importlib.import_module("stack_probe_mod").FRAMES
    assert any(f.f_code.co_filename.startswith("<frozen") for f in frames)

    def answers():
        # (file, function) of each frame: the live ones' line numbers move on.
        return [(inspect.getmodule(f, f.f_code.co_filename), inspect.getframeinfo(f)[0:3:2])
                for f in frames] + [inspect.getmodule(json_module.dumps)]
    expected = answers()
    original = inspect.getmodule
    with memoized_getmodule():
        assert inspect.getmodule is not original
        assert answers() == expected and answers() == expected     # filled, then from the cache
    assert inspect.getmodule is original


@pytest.mark.slow  # 7 and 14 s on the 2-core AVX2 VM, beside a tuning test (2026-11-26)
@pytest.mark.parametrize("kind, done, cuda_registered", [("llvm", "cpu", False),
                                                          ("cuda", "full", True)])
def test_tensor_intrinsics_are_registered_for_the_target(kind, done, cuda_registered):
    """Before a TuneContext: an LLVM target gets the x86/Arm intrinsics only, any other all
    of them (the package's own __init__, with getmodule memoized); once per process."""
    code = f"""
import json, tvm
from tvm.s_tir import TensorIntrin
from converters.tvm import intrinsics
target = tvm.target.Target({"'llvm'" if kind == "llvm" else "{'kind': 'cuda', 'arch': 'sm_90'}"})
first = intrinsics.register_for(target)
print(json.dumps([first, intrinsics.register_for(target),
    TensorIntrin.get("dot_16x4_vnni", allow_missing=True) is not None,
    TensorIntrin.get("mma_ldmatrix_f16_a", allow_missing=True) is not None]))
"""
    p = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True,
                       timeout=300, env=dict(os.environ, PYTHONPATH=str(REPO)))
    assert p.returncode == 0, p.stderr[-2000:]
    assert json.loads(p.stdout.strip().splitlines()[-1]) == [done, "already", True, cuda_registered]
