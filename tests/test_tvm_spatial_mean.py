"""NHWC means over height and width as a GEMV (passes.spatial_mean_as_matmul): what the
lowering becomes, parity of real builds against PyTorch, and which databases get which form."""
from __future__ import annotations


import numpy as np
import pytest

tvm = pytest.importorskip("tvm", reason="apache-tvm not installed (pip install 'edgebench[tvm]')")

from tvmlib import old_database  # noqa: E402 - after the skip


def _squeeze_excite_net():
    """A conv, a squeeze-excitation block (mean keepdim) and a global pool (mean) + head:
    the two kinds of spatial mean EfficientNet-B0 has (at 28x28: SPATIAL_MEAN_MIN_PIXELS)."""
    import torch

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = torch.nn.Conv2d(8, 16, 3, padding=1)
            self.fc1, self.fc2 = torch.nn.Conv2d(16, 4, 1), torch.nn.Conv2d(4, 16, 1)
            self.head = torch.nn.Linear(16, 5)

        def forward(self, x):
            x = torch.relu(self.conv(x))
            se = torch.sigmoid(self.fc2(torch.relu(self.fc1(x.mean((2, 3), keepdim=True)))))
            return self.head((x * se).mean((2, 3)))

    torch.manual_seed(0)
    return Net().eval()


def test_nhwc_spatial_means_become_one_gemv_task_and_keep_parity():
    import torch

    from converters.tvm import build, targets

    net = _squeeze_excite_net()
    target, _ = targets.resolve_target("host")
    x = np.random.RandomState(0).standard_normal((1, 8, 28, 28)).astype(np.float32)
    ref = net(torch.from_numpy(x)).detach().numpy()
    names = {}
    for form in ("reduce", "matmul"):
        res = build.build_library(net, (8, 28, 28), 1, target, layout="NHWC", spatial_mean=form)
        names[form] = [t.task_name for t in res["tasks"]]
        got = tvm.relax.VirtualMachine(res["executable"], tvm.cpu())["main"](
            tvm.runtime.tensor(x)).numpy()
        assert np.abs(got - ref).max() <= 1e-5, form
    # The reduction form has a mean task per shape; the GEMV form none, and one GEMV task for
    # both means (same 28x28x16 input: one workload, weight 2).
    assert [n for n in names["reduce"] if n.startswith("mean")]
    assert not [n for n in names["matmul"] if n.startswith("mean")]
    assert [n for n in names["matmul"] if n.startswith("spatial_mean")] == ["spatial_mean1"]


def test_the_gemv_form_only_takes_static_float32_means_over_height_and_width():
    from tvm import relax

    from converters.tvm.cpu import spatial_mean

    def module(shape, axis, dtype="float32"):
        bb = relax.BlockBuilder()
        x = relax.Var("x", relax.TensorType(shape, dtype))
        with bb.function("main", [x]):
            with bb.dataflow():
                out = bb.emit_output(bb.emit(relax.op.mean(x, axis=axis, keepdims=True)))
            bb.emit_func_output(out)
        return bb.get()

    def ops(mod):
        return [str(b.value.op.name) for b in mod["main"].body.blocks[0].bindings
                if hasattr(b.value, "op") and hasattr(b.value.op, "name")]

    rewritten = spatial_mean.rewrite(module((1, 28, 28, 32), [1, 2]))
    assert "relax.mean" not in ops(rewritten) and "relax.call_tir" in ops(rewritten)
    assert "relax.mean" not in ops(spatial_mean.rewrite(module((1, 28, 28, 32),
                                                                        [-3, -2])))
    # 14x14 (196 pixels): below the threshold, where the reduction measured faster.
    assert ops(spatial_mean.rewrite(module((1, 14, 14, 32), [1, 2]))) == ["relax.mean"]
    assert "relax.mean" not in ops(spatial_mean.rewrite(module((1, 14, 14, 32), [1, 2]),
                                                                 min_pixels=0))
    for shape, axis, dtype in [((1, 28, 28, 32), [3], "float32"),     # a norm's mean
                               ((1, 32, 28, 28), [2, 3], "float32"),  # NCHW: already innermost
                               ((1, 28, 28, 32), [1, 2], "float16")]:
        assert ops(spatial_mean.rewrite(module(shape, axis, dtype))) == ["relax.mean"]


def test_a_database_keeps_the_form_it_was_tuned_with(tmp_path):
    from converters.tvm import database, lowering, passes, targets

    target, _ = targets.resolve_target("host")
    new = tmp_path / "new"
    assert lowering.lowering_for(target, new)["spatial_mean"] == "matmul"      # a new database
    assert lowering.lowering_for(target, new, layout="NCHW")["spatial_mean"] == "reduce"
    old = old_database(tmp_path / "old")      # a database from before the choice
    assert lowering.lowering_for(target, old)["spatial_mean"] == "reduce"
    assert lowering.lowering_for(target, old, spatial_mean="matmul")["spatial_mean"] == "matmul"
    database.record_session(old, {"target": {}},
                            choices={"layout": "NHWC", "spatial_mean": "matmul"})
    assert lowering.lowering_for(target, old)["spatial_mean"] == "matmul"
    with pytest.raises(Exception, match="tvm_spatial_mean must be one of reduce, matmul"):
        passes.lower_for_tuning(None, target, "NHWC", spatial_mean="gemv")


def test_the_tuner_refuses_a_gemv_mean_in_nchw(capsys):
    from converters.tvm import cli

    assert cli.main(["--model", "test_resnet", "--layout", "NCHW", "--spatial-mean", "matmul",
                     "--trials", "4"]) == 2
    assert "--spatial-mean matmul applies to NHWC means" in capsys.readouterr().err


@pytest.mark.slow
def test_only_tasks_that_match_nothing_says_which_tasks_there_are(tmp_path, capsys):
    """--only-tasks (tune a subset: the GEMV tasks a database tuned before the choice lacks)
    names the model's tasks when no name matches (imports and lowers test_resnet: ~15 s)."""
    from converters.tvm import cli

    rc = cli.main(["--model", "test_resnet", "--input-size", "3x64x64", "--weights", "random",
                   "--tuning-dir", str(tmp_path), "--trials", "4", "--only-tasks", "winograd",
                   "--no-progress"])
    err = capsys.readouterr().err
    assert rc == 1, err
    assert "no task's name contains any of winograd" in err and "mean1" in err
