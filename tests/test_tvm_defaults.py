"""What TVM does where the user chose nothing: the target (this CPU, or a Jetson's GPU), the
lowering and design-space defaults (x86-64 measured, TVM's plain ones elsewhere, recorded as
``defaults``), and an exported artifact picked from a folder of them by model."""
from __future__ import annotations

import pytest

tvm = pytest.importorskip("tvm", reason="apache-tvm not installed (pip install 'edgebench[tvm]')")

from converters.tvm import export, lowering, targets  # noqa: E402
from converters.tvm.cpu import design_space, recipes  # noqa: E402


def test_the_default_target_is_a_jetsons_gpu_and_this_cpu_elsewhere():
    assert targets.default_target_name(jetson=True, cuda_driver=True) == "jetson-agx-orin"
    assert targets.default_target_name(jetson=True, cuda_driver=False) == "host"
    assert targets.default_target_name(jetson=False, cuda_driver=True) == "host"
    # this machine is no Jetson: no --tvm-target is its CPU
    target, name = targets.resolve_target(None)
    assert name == "host" and target.kind.name == "llvm"


def test_x86_measured_defaults_apply_to_x86_targets_only():
    host, _ = targets.resolve_target("host")
    orin_cpu, _ = targets.resolve_target("jetson-agx-orin-cpu")
    orin_gpu, _ = targets.resolve_target("jetson-agx-orin")
    assert [targets.defaults_for(t) for t in (host, orin_cpu, orin_gpu)] == \
        ["x86-measured", "plain", "plain"]
    assert lowering.lowering_for(host) == {
        "layout": "NHWC", "conv2d": "direct", "spatial_mean": "matmul", "concat": "split",
        "out_channels": "pad", "input_transpose": "conv"}
    plain = {"layout": "NCHW", "conv2d": "direct", "spatial_mean": "reduce", "concat": "keep",
             "out_channels": "keep", "input_transpose": "kernel"}
    assert lowering.lowering_for(orin_cpu) == plain and lowering.lowering_for(orin_gpu) == plain
    # asked for, a rewrite still applies on the Arm cores; unasked, NHWC keeps TVM's forms
    assert lowering.lowering_for(orin_cpu, layout="NHWC", concat="split") == {
        **plain, "layout": "NHWC", "concat": "split"}
    assert design_space.session_space("auto", host, "NHWC") == "wide-vector"
    assert design_space.session_space("auto", orin_cpu, "NHWC") == "default"
    assert design_space.session_space("multi-vector", orin_cpu, "NHWC") == "multi-vector"
    from converters.tvm.cpu import fast_math

    assert fast_math.applies_to(host) and not fast_math.applies_to(orin_cpu)
    values, record = recipes.resolve("resnet152", orin_cpu, "auto", dict.fromkeys(recipes.OPTIONS),
                                     {}, exists=False)
    assert record is None and values["conv2d"] is None and values["design_space"] == "auto"
    _, record = recipes.resolve("resnet152", host, "auto", dict.fromkeys(recipes.OPTIONS), {},
                                exists=False)
    assert record and record["applied"]["conv2d"] == "winograd-fit"


def _manifest(folder, model, size=(3, 224, 224)):
    folder.mkdir()
    export.write_manifest(folder, {"model": model, "input_size": list(size), "device": "cpu",
                                   "libraries": {"1": "model-b1.so"}})


def test_an_artifact_is_picked_from_a_folder_of_them_by_model_and_size(tmp_path):
    import converters

    _manifest(tmp_path / "mnv2", "mobilenetv2_100")
    _manifest(tmp_path / "r152", "resnet152")
    _manifest(tmp_path / "r152-small", "resnet152", (3, 160, 160))
    (tmp_path / "notes").mkdir()                      # a folder without a manifest is passed by
    assert [d.name for d, _ in export.artifacts_in(tmp_path)] == ["mnv2", "r152", "r152-small"]
    assert export.artifact_for(tmp_path, "resnet152", (3, 160, 160))[0].name == "r152-small"
    assert export.artifact_for(tmp_path, "resnet152", (3, 224, 224))[0].name == "r152"
    assert export.artifact_for(tmp_path, "vgg16", (3, 224, 224)) is None
    # one artifact is itself, whatever it holds (convert says what does not match)
    assert export.artifact_for(tmp_path / "mnv2", "vgg16", (3, 224, 224))[0].name == "mnv2"
    conv = converters.get("tvm")
    opts = {"tvm_artifact": str(tmp_path)}
    conv.check_options(opts)
    assert conv.check_model("resnet152", (3, 224, 224), opts).ok
    av = conv.check_model("vgg16", (3, 224, 224), opts)
    assert not av.ok and av.reason.startswith(
        f"no TVM artifact for vgg16 at 3x224x224 in {tmp_path} (it holds mobilenetv2_100 "
        "(3x224x224), resnet152 (3x224x224), resnet152 (3x160x160)); export one with "
        "python -m edgebench.tune --model vgg16"), av.reason
    with pytest.raises(ValueError, match="holds no manifest.json, nor any folder with one"):
        conv.check_options({"tvm_artifact": str(tmp_path / "notes")})


def test_one_function_decides_whether_a_targets_code_runs_here():
    import platform

    from converters.tvm import TvmConverter, export

    here = platform.machine()
    orin_cpu, _ = targets.resolve_target("jetson-agx-orin-cpu")
    host, _ = targets.resolve_target("host")
    assert targets.host_arch(host) == here and targets.host_arch(orin_cpu) == "aarch64"
    assert targets.native(here) and targets.native("arm64") == (here in ("aarch64", "arm64"))
    foreign = "aarch64" if here == "x86_64" else "x86_64"
    assert not targets.native(foreign)
    # every caller answers alike: compiling, exporting, loading an artifact
    assert export.runnable_here({"host_arch": foreign}) == \
        f"artifact is for {foreign}, this machine is {here}"
    assert TvmConverter().available({"tvm_target": "jetson-agx-orin-cpu"}).ok == \
        targets.native("aarch64")
