"""Winograd F(4x4, 3x3) and F(2x2, 3x3) for TVM's 3x3 stride-1 NHWC convs
(converters/tvm/winograd.py): the transform matrices, which convs the rewrite takes and with
which tile, real builds against PyTorch, and a real tuning session whose database then
selects the Winograd build."""
from __future__ import annotations

import json

import numpy as np
import pytest

tvm = pytest.importorskip("tvm", reason="apache-tvm not installed (pip install 'edgebench[tvm]')")

from tvmlib import SIZE, TOL, _records, _spec, _torch_logits  # noqa: E402 - after the skip


def _net():
    """Five convs, two of them Winograd's (16 -> 32 padded, 32 -> 32 unpadded): the 3-channel
    input conv (too few channels), the stride-2 conv and the 1x1 conv stay direct."""
    import torch

    torch.manual_seed(0)
    n = torch.nn
    return n.Sequential(
        n.Conv2d(3, 16, 3, padding=1), n.ReLU(),
        n.Conv2d(16, 32, 3, padding=1), n.BatchNorm2d(32), n.ReLU(),
        n.Conv2d(32, 32, 3, padding=0), n.ReLU(),
        n.Conv2d(32, 32, 3, stride=2, padding=1), n.ReLU(),
        n.Conv2d(32, 16, 1),
        n.AdaptiveAvgPool2d(1), n.Flatten()).eval()


def _lowered(conv2d: str, shape=(1, 3, 13, 11)):
    from converters.tvm import importer, passes, targets

    target = tvm.target.Target(targets.host_target_dict())
    mod, _, _ = importer.import_model(_net(), shape)
    return passes.lower_for_tuning(mod, target, "NHWC", conv2d), target


def _kernels(mod) -> list[str]:
    return sorted(gv.name_hint for gv, f in mod.functions_items()
                  if isinstance(f, tvm.tirx.PrimFunc))


def test_transform_matrices_compute_a_3_tap_correlation():
    """Y = A^T [(G g) * (B^T d)] is the 3-tap correlation of 6 inputs at 4 outputs, in the
    orientation the TE compute indexes them (B[r, eps], A[r, v], G[eps, k])."""
    from converters.tvm.cpu import winograd

    a, b, g = winograd.transform_matrices(4)
    assert a.shape == (6, 4) and b.shape == (6, 6) and g.shape == (6, 3)
    rng = np.random.default_rng(0)
    for _ in range(5):
        d, k = rng.standard_normal(6), rng.standard_normal(3)
        y = a.T @ ((g @ k) * (b.T @ d))
        np.testing.assert_allclose(y, [d[v:v + 3] @ k for v in range(4)], rtol=1e-9, atol=1e-9)


def test_transform_weight_matches_its_2d_definition():
    from converters.tvm.cpu import winograd

    _, _, g = winograd.transform_matrices(4)
    w = np.random.default_rng(1).standard_normal((5, 3, 3, 7)).astype(np.float32)   # OHWI
    u = winograd.transform_weight(w)
    assert u.shape == (6, 6, 5, 7) and u.dtype == np.float32
    for co, ci in ((0, 0), (4, 6), (2, 3)):
        np.testing.assert_allclose(u[:, :, co, ci], g @ w[co, :, :, ci].astype(np.float64) @ g.T,
                                   rtol=1e-5, atol=1e-6)


@pytest.mark.slow   # 5.3 s on 2 cores per lowering
def test_rewrite_takes_only_3x3_stride_1_convs_with_enough_channels():
    wino, _ = _lowered("winograd")
    taken = [k for k in _kernels(wino) if "winograd" in k]
    assert len(taken) == 2, _kernels(wino)
    # The bias, batch norm and ReLU after a Winograd conv fuse into its kernel.
    assert any("relu" in k for k in taken), taken
    # The input conv (3 channels), the stride-2 conv and the 1x1 conv stay direct.
    kept = [k for k in _kernels(wino) if k.startswith("fused_conv2d") and "winograd" not in k]
    assert len(kept) == 3, _kernels(wino)


def _tiles(mod) -> list[int]:
    """m of each Winograd kernel's F(m x m, 3 x 3), read from the shape of its transformed
    weight U (alpha, alpha, CO, CI), alpha = m + 2."""
    import re

    found = []
    for gv, f in mod.functions_items():
        if isinstance(f, tvm.tirx.PrimFunc) and "winograd" in gv.name_hint:
            head = next(line for line in f.script().splitlines() if "def main(" in line)
            alphas = re.findall(r"T\.Buffer\(\(T\.int64\((\d+)\), T\.int64\(\1\), T\.int64\(\d+\), "
                                r"T\.int64\(\d+\)\)", head)
            alphas = [int(a) for a in alphas if int(a) > 1]     # not a (1, 1, 1, C) bias
            assert len(alphas) == 1, head           # one (alpha, alpha, CO, CI) operand: U
            found.append(alphas[0] - 2)
    return sorted(found)


def test_fit_tiles_each_conv_by_the_output_it_covers():
    from converters.tvm.cpu import winograd

    assert winograd.tile_for(56, 56, fit=True) == 4 and winograd.tile_for(28, 28, True) == 4
    assert winograd.tile_for(14, 14, fit=True) == 2           # ResNet's 14x14: F(2x2) ...
    assert winograd.tile_for(28, 14, fit=True) == 2           # ... F(4x4) would pad 31 %
    assert winograd.tile_for(55, 55, fit=True) == 4           # SqueezeNet's: 56x56, 3.7 %
    assert winograd.tile_for(27, 27, fit=True) == 4           # 28x28, 7.5 %
    assert winograd.tile_for(13, 13, fit=True) is None         # 16x16 or 14x14: too much
    assert winograd.tile_for(7, 7, fit=True) is None           # ResNet's 7x7: 8x8, 31 %
    assert winograd.tile_for(7, 7, fit=False) == winograd.TILE == 4
    # The threshold decides the convs taken, so a compiled library's cache key carries it.
    assert winograd.cache_tag("direct") is None and winograd.cache_tag("winograd") == "winograd"
    assert winograd.cache_tag("winograd-fit") == f"winograd-fit-{winograd.FIT_WASTE}"
    # In a lowering: 10x10 (padded conv) takes F(2x2), 8x8 (unpadded) F(4x4) ...
    wino, _ = _lowered("winograd-fit", shape=(1, 3, 10, 10))
    assert _tiles(wino) == [2, 4], _kernels(wino)
    # ... and ``winograd`` F(4x4) for both; at 13x11 and 11x9 ``winograd-fit`` takes none
    # (F(2x2) would pad them 17 % and 21 %).
    assert _tiles(_lowered("winograd", shape=(1, 3, 10, 10))[0]) == [4, 4]
    wino, _ = _lowered("winograd-fit")
    assert _tiles(wino) == [] and sum(k.startswith("fused_conv2d") for k in _kernels(wino)) == 5


def test_winograd_needs_nhwc():
    from converters.tvm import importer, passes, targets
    from converters.tvm.errors import TvmError

    target = tvm.target.Target(targets.host_target_dict())
    mod, _, _ = importer.import_model(_net(), (1, 3, 8, 8))
    for conv2d in ("winograd", "winograd-fit"):
        with pytest.raises(TvmError, match="NHWC"):
            passes.lower_for_tuning(mod, target, "NCHW", conv2d)
    with pytest.raises(TvmError, match="tvm_conv2d must be one of"):
        passes.lower_for_tuning(mod, target, "NHWC", "fft")


def test_conv2d_choice_comes_from_the_option_then_the_database(tmp_path):
    from converters.tvm import database, lowering

    L = lowering.lowering_for
    db = tmp_path / "db"
    db.mkdir()
    assert L(None, db)["conv2d"] == "direct"                 # nothing recorded
    database.record_session(db, {"target": {"kind": "llvm"}, "tuning_s": 1.0},
                            choices={"layout": "NHWC", "conv2d": "winograd"})
    assert L(None, db)["conv2d"] == "winograd"               # the database's workloads decide
    assert L(None, db, conv2d="direct")["conv2d"] == "direct"       # unless the user says otherwise
    assert L(None, None, conv2d="WINOGRAD", layout="NHWC")["conv2d"] == "winograd"


@pytest.mark.slow   # 24 s on 2 cores: three untuned builds
def test_winograd_build_matches_pytorch():
    import torch
    from tvm.runtime.vm import VirtualMachine

    from converters.tvm import build

    x = torch.randn(1, 3, 13, 11, generator=torch.Generator().manual_seed(2))
    with torch.inference_mode():
        ref = _net()(x).numpy()
    for conv2d in ("direct", "winograd"):
        lowered, target = _lowered(conv2d)
        vm = VirtualMachine(build.compile_module(lowered, target), tvm.cpu())
        out = vm["main"](tvm.runtime.tensor(x.numpy())).numpy()
        assert np.abs(out - ref).max() <= 1e-4, (conv2d, np.abs(out - ref).max())
    # F(2x2) and F(4x4) side by side (winograd-fit at 10x10: the tiles of the test above).
    x = torch.randn(1, 3, 10, 10, generator=torch.Generator().manual_seed(3))
    with torch.inference_mode():
        ref = _net()(x).numpy()
    lowered, target = _lowered("winograd-fit", shape=(1, 3, 10, 10))
    vm = VirtualMachine(build.compile_module(lowered, target), tvm.cpu())
    out = vm["main"](tvm.runtime.tensor(x.numpy())).numpy()
    assert np.abs(out - ref).max() <= 1e-4, np.abs(out - ref).max()


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_tuned_winograd_database_selects_the_winograd_build(tmp_path):
    """A real tuning session with conv2d winograd, its Winograd tasks only: TVM's CPU rules
    schedule the transforms (the tasks measure without errors), tuning.json records the
    choice, and the converter, given only the database, builds Winograd kernels that match
    PyTorch."""
    import converters
    from converters.tvm import database, targets, tuning

    spec = _spec()
    target = tvm.target.Target(targets.host_target_dict())
    root = tmp_path / "tuning"
    db = database.db_dir_for(root, target, spec.name, spec.input_size)
    cfg = tuning.TuneConfig(trials=12, trials_per_iter=4, population=64, conv2d="winograd",
                            op_names=["winograd"], reuse=False)
    res = tuning.tune(spec.build(), spec.input_size, 1, target, db, cfg, spec=spec)
    assert res["conv2d"] == "winograd"
    names = [t["name"] for t in res["per_task"]]
    assert names and all("winograd" in n for n in names), names
    assert res["trials_run"] >= 4 and res["errors"] < res["trials_run"], res["first_error"]
    assert any(t["best_us"] for t in res["per_task"]), res["per_task"]
    assert len(_records(db)) == res["trials_after"]
    # TVM's CPU rules for the transforms unroll their 6x6 loops; MetaSchedule's generic
    # rules never record an Unroll (the direct vgg16 database of 2026-11-25 has none).
    assert '"Unroll"' in (db / "database_tuning_record.json").read_text(encoding="utf-8")
    assert json.loads((db / "tuning.json").read_text(encoding="utf-8"))["conv2d"] == "winograd"

    conv = converters.get("tvm")
    spec = _spec({"tuning_dir": str(root)})
    art = conv.convert(spec, tmp_path / "cache")
    assert art.meta["conv2d"] == "winograd" and art.meta["tuning"]["status"] == "tuned"
    assert art.meta["tuning"]["tasks_tuned"] >= 1
    x = np.random.RandomState(3).standard_normal((1, *SIZE)).astype(np.float32)
    assert np.abs(conv.load(art, spec)(x) - _torch_logits(spec, x)).max() <= TOL
