"""The JAX/Flax variant against PyTorch FP32, family by family, through the real converter.

Models use seeded random weights. BatchNorm/LayerNorm statistics are randomised too: timm
initialises them to the identity (and zero-inits the last BN of each ResNet block, which
would hide the whole residual branch); without this, BN folding and most convs would go
untested. Each comparison also bounds the error relative to the logit scale: random-weight
logits are small (Swin-T's ~1), and e.g. tanh-GELU in place of exact GELU stays under the
1e-3 absolute bar on Swin-T (1.5e-4) but fails the relative one.
"""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")
timm = pytest.importorskip("timm")
pytest.importorskip("jax")
pytest.importorskip("flax")

from converters import get  # noqa: E402
from converters.base import ModelSpec, SkipVariant  # noqa: E402

ABS_TOL = 1e-3          # the suite's FP32 parity bar
REL_TOL = 1e-4          # of the largest reference logit: catches errors hidden by small logits


def randomize_norm_stats(model, seed: int = 1):
    """Non-trivial BatchNorm/LayerNorm parameters, mild enough to keep the net well
    conditioned (a random net with large gains amplifies FP32 rounding chaotically)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                n = m.num_features
                m.weight.copy_(0.5 + 0.5 * torch.rand(n, generator=g))
                m.bias.copy_(0.1 * torch.randn(n, generator=g))
                m.running_mean.copy_(0.1 * torch.randn(n, generator=g))
                m.running_var.copy_(0.75 + 0.75 * torch.rand(n, generator=g))
            elif isinstance(m, torch.nn.LayerNorm):
                n = m.weight.numel()
                m.weight.copy_(0.5 + torch.rand(n, generator=g))
                m.bias.copy_(0.1 * torch.randn(n, generator=g))
    return model


def build_torch(name: str, **kwargs):
    torch.manual_seed(0)
    if name.startswith("squeezenet"):
        import torchvision
        model = getattr(torchvision.models, name)(weights=None)
    else:
        model = timm.create_model(name, pretrained=False, **kwargs)
    return randomize_norm_stats(model.eval())


def make_spec(name: str, size: int, **kwargs) -> ModelSpec:
    source = "torchvision" if name.startswith("squeezenet") else "timm"
    return ModelSpec(name=name, weights="random-seed-0", input_size=(3, size, size),
                     num_classes=1000, build=lambda: build_torch(name, **kwargs), source=source)


def inputs(spec: ModelSpec, batch: int = 2) -> np.ndarray:
    return np.random.default_rng(0).standard_normal((batch, *spec.input_size)).astype(np.float32)


def torch_logits(spec: ModelSpec, x: np.ndarray) -> np.ndarray:
    with torch.inference_mode():
        return spec.build()(torch.from_numpy(x)).numpy()


def assert_parity(out: np.ndarray, ref: np.ndarray) -> None:
    assert out.shape == ref.shape and out.dtype == np.float32
    scale = float(np.abs(ref).max())
    assert scale > 1e-2 and float(ref.std()) > 1e-3, f"degenerate reference logits ({scale})"
    diff = float(np.abs(out - ref).max())
    assert diff <= ABS_TOL, f"max_abs_diff {diff:.3e}"
    assert diff <= REL_TOL * scale, f"max_abs_diff {diff:.3e} vs logit scale {scale:.3e}"
    np.testing.assert_array_equal(out.argmax(1), ref.argmax(1))


@pytest.fixture(scope="module")
def jax_variant():
    return get("jax")


def convert_and_run(converter, spec, tmp_path, x):
    artifact = converter.convert(spec, tmp_path)
    predictor = converter.load(artifact, spec)
    return artifact, predictor, predictor(x)


# Small members of every family; sizes chosen to exercise each family's awkward cases.
CASES = [
    ("resnet18", 64, {}),                       # basic blocks, 1x1-conv shortcuts
    ("resnet26d", 64, {}),                      # bottlenecks, deep stem, avg-pool shortcut
    ("mobilenetv2_050", 64, {}),                # width 0.5, ReLU6, depthwise
    ("efficientnet_b0", 64, {}),                # MBConv + SE, SiLU, 5x5 depthwise, symmetric pad
    ("tf_efficientnet_b0", 65, {}),             # TF 'SAME' padding, asymmetric at odd sizes
    ("squeezenet1_0", 69, {}),                  # ceil-mode max pools (see test below)
    ("squeezenet1_1", 66, {}),
    ("vgg11", 224, {}),                         # ConvMlp fc6 as a 7x7 conv on a 7x7 map
    ("vgg11_bn", 64, {}),                       # 2x2 map grown to 7x7 by adaptive pooling
    ("swin_tiny_patch4_window7_224", 224, {}),
    # 160: maps of 40/20/10 pad up to the window, the last stage (5x5) shrinks the window
    ("swin_tiny_patch4_window7_224", 160, {"img_size": 160}),
]


# Cases that take over ~10 s each on 2 cores (XLA compile): marked slow, skipped by -m "not slow".
SLOW_CASES = {"vgg11-224", "vgg11_bn-64", "swin_tiny_patch4_window7_224-224",
              "swin_tiny_patch4_window7_224-160",
              # about 7 s each on the 2-core AVX2 VM (2026-11-26)
              "efficientnet_b0-64", "tf_efficientnet_b0-65"}
assert SLOW_CASES <= {f"{n}-{s}" for n, s, _ in CASES}, "SLOW_CASES names a case that does not exist"


@pytest.mark.parametrize("name,size,kwargs", [
    pytest.param(n, s, k, id=f"{n}-{s}", marks=[pytest.mark.slow] if f"{n}-{s}" in SLOW_CASES else [])
    for n, s, k in CASES])
def test_matches_pytorch(jax_variant, tmp_path, name, size, kwargs):
    spec = make_spec(name, size, **kwargs)
    x = inputs(spec)
    artifact, _, out = convert_and_run(jax_variant, spec, tmp_path, x)
    assert_parity(out, torch_logits(spec, x))
    assert artifact.meta["family"] in name


def test_squeezenet_sizes_really_use_ceil_mode():
    # The parity cases above only cover ceil_mode if floor mode would give other shapes.
    for name, size in (("squeezenet1_0", 69), ("squeezenet1_1", 66)):
        shapes = {}
        for ceil_mode in (True, False):
            model = build_torch(name)
            x = torch.zeros(1, 3, size, size)
            shapes[ceil_mode] = []
            with torch.inference_mode():
                for layer in model.features:
                    if isinstance(layer, torch.nn.MaxPool2d):
                        layer.ceil_mode = ceil_mode
                    x = layer(x)
                    shapes[ceil_mode].append(tuple(x.shape))
        assert shapes[True] != shapes[False], (name, size)


# ----------------------------------------------------------------------------- layers

@pytest.mark.parametrize("kind,kernel,stride,padding,ceil,include_pad,size", [
    ("max", 3, 2, 0, True, True, 14),
    ("max", 3, 2, 1, False, True, 15),
    ("max", 2, 2, 0, True, True, 7),
    ("avg", 2, 2, 0, True, False, 7),      # timm's avg_down shortcut on an odd map
    ("avg", 3, 2, 1, True, True, 8),
    ("avg", 3, 2, 1, False, False, 9),
])
def test_pools_match_torch(kind, kernel, stride, padding, ceil, include_pad, size):
    from converters.jax_flax import weights

    if kind == "max":
        layer = torch.nn.MaxPool2d(kernel, stride, padding, ceil_mode=ceil)
    else:
        layer = torch.nn.AvgPool2d(kernel, stride, padding, ceil_mode=ceil,
                                   count_include_pad=include_pad)
    x = np.random.default_rng(0).standard_normal((2, 3, size, size)).astype(np.float32)
    ref = layer(torch.from_numpy(x)).numpy().transpose(0, 2, 3, 1)
    out = np.asarray(weights.pool(layer, "pool")(x.transpose(0, 2, 3, 1)))
    assert out.shape == ref.shape
    np.testing.assert_allclose(out, ref, atol=1e-6)


@pytest.mark.parametrize("in_size,out_size", [(2, 7), (9, 7), (7, 7), (5, 3)])
def test_adaptive_avg_pool_matches_torch(in_size, out_size):
    from converters.jax_flax.layers import adaptive_avg_pool

    x = np.random.default_rng(0).standard_normal((2, 4, in_size, in_size)).astype(np.float32)
    ref = torch.nn.functional.adaptive_avg_pool2d(torch.from_numpy(x), out_size).numpy()
    out = np.asarray(adaptive_avg_pool(x.transpose(0, 2, 3, 1), (out_size, out_size)))
    np.testing.assert_allclose(out, ref.transpose(0, 2, 3, 1), atol=1e-6)


@pytest.mark.parametrize("kernel,stride,dilation,same,depthwise", [
    (3, 1, 1, False, True), (3, 2, 1, False, True), (5, 2, 1, False, True),
    (3, 1, 2, False, True), (3, 2, 1, True, True), (5, 2, 1, True, True),
    (1, 1, 1, False, False), (1, 2, 1, False, False), (1, 2, 1, True, False),
])
def test_fast_conv_paths_match_torch(kernel, stride, dilation, same, depthwise):
    """Depthwise and 1x1 convs bypass lax.conv (slow on XLA:CPU): check those forms."""
    import flax.linen as nn
    from timm.layers import Conv2dSame

    from converters.jax_flax import weights

    torch.manual_seed(0)
    channels, out_channels = 6, (6 if depthwise else 10)
    groups = channels if depthwise else 1
    if same:
        conv = Conv2dSame(channels, out_channels, kernel, stride, groups=groups)
    else:
        conv = torch.nn.Conv2d(channels, out_channels, kernel, stride,
                               padding=dilation * (kernel - 1) // 2, dilation=dilation,
                               groups=groups)
    spec, params = weights.conv(conv, "conv")

    class Wrap(nn.Module):
        @nn.compact
        def __call__(self, x):
            return spec(x)

    x = np.random.default_rng(0).standard_normal((2, channels, 11, 11)).astype(np.float32)
    with torch.inference_mode():
        ref = conv(torch.from_numpy(x)).numpy().transpose(0, 2, 3, 1)
    out = np.asarray(Wrap().apply({"params": {"conv": params}}, x.transpose(0, 2, 3, 1)))
    assert out.shape == ref.shape
    np.testing.assert_allclose(out, ref, atol=1e-5)


def test_batchnorm_is_folded_exactly():
    from converters.jax_flax import weights

    torch.manual_seed(0)
    seq = randomize_norm_stats(torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, bias=True),
                                                   torch.nn.BatchNorm2d(8)).eval())
    spec, params = weights.conv(seq[0], "0", bn=seq[1])
    x = np.random.default_rng(0).standard_normal((1, 3, 5, 5)).astype(np.float32)
    with torch.inference_mode():
        ref = seq(torch.from_numpy(x)).numpy().transpose(0, 2, 3, 1)
    kernel, bias = params["kernel"], params["bias"]
    patches = np.stack([x[0, :, i:i + 3, j:j + 3].transpose(1, 2, 0)
                        for i in range(3) for j in range(3)])           # (9, 3, 3, C)
    out = np.einsum("phwc,hwco->po", patches, kernel) + bias
    np.testing.assert_allclose(out.reshape(3, 3, 8), ref[0], atol=1e-5)


# ----------------------------------------------------------------------------- protocol

def test_available_here(jax_variant):
    availability = jax_variant.available()
    assert availability.ok, availability.reason
    assert availability.versions["jax"] and availability.versions["flax"]
    assert availability.versions["platform"] == "cpu"
    # Where it computes follows jax's device (the report's "variants computed on").
    assert jax_variant.compute_device({}) == "cpu"
    from converters.jax_flax import suite_device

    assert [suite_device(p) for p in ("gpu", "cuda", "cpu", "tpu")] == ["cuda", "cuda", "cpu",
                                                                       "tpu"]


def test_uncovered_family_is_skipped_before_building(jax_variant, tmp_path):
    def never_built():
        raise AssertionError("the model should not be built to decide a skip")

    spec = ModelSpec(name="convnext_atto", weights="random-seed-0", input_size=(3, 64, 64),
                     num_classes=1000, build=never_built)
    with pytest.raises(SkipVariant) as info:
        jax_variant.convert(spec, tmp_path)
    for family in ("resnet", "mobilenetv2", "efficientnet", "squeezenet", "vgg", "swin"):
        assert family in str(info.value)


def test_unsupported_layer_in_covered_family_is_skipped(jax_variant, tmp_path):
    # seresnet18 is built by timm's resnet module but adds squeeze-excite to every block.
    with pytest.raises(SkipVariant, match=r"layer1\.0\.se.*supported families"):
        jax_variant.convert(make_spec("seresnet18", 64), tmp_path)


def test_artifact_is_cached_and_loads_from_disk(jax_variant, tmp_path):
    spec = make_spec("resnet18", 64)
    x = inputs(spec, batch=3)
    first = jax_variant.convert(spec, tmp_path)
    meta = first.meta
    assert not first.cached and first.convert_s > 0 and first.sha256()
    assert meta["family"] == "resnet" and meta["jax_platform"] == "cpu"
    assert meta["xla_memory"]["XLA_PYTHON_CLIENT_PREALLOCATE"] is not None
    assert set(meta["xla_memory"]) == {"XLA_PYTHON_CLIENT_PREALLOCATE",
                                       "XLA_PYTHON_CLIENT_ALLOCATOR",
                                       "XLA_PYTHON_CLIENT_MEM_FRACTION"}
    assert meta["jit_compile_s"]["1x3x64x64"] > 0
    in_process = jax_variant.load(first, spec)
    assert in_process.meta["batch1_compiled_in"] == "convert"

    second = jax_variant.convert(spec, tmp_path)
    # Cached: no port, only this process's batch-1 compile counts as converting.
    assert second.cached and second.path == first.path
    assert second.convert_s == pytest.approx(second.meta["jit_compile_s"]["1x3x64x64"], abs=1e-3)
    assert first.convert_s >= first.meta["port_s"] + first.meta["jit_compile_s"]["1x3x64x64"] - 1e-3
    assert second.sha256() == first.sha256()
    second.obj = None                                    # force the on-disk path
    from_disk = jax_variant.load(second, spec)
    assert from_disk.meta["batch1_compiled_in"] == "load"
    np.testing.assert_array_equal(from_disk(x), in_process(x))
    assert "3x3x64x64" in from_disk.meta["compile_s"]    # a new batch shape compiled once
    assert_parity(from_disk(x), torch_logits(spec, x))


def test_cached_artifact_loads_without_torch(jax_variant, tmp_path):
    # torch would add hundreds of MB to the variant's measured memory.
    artifact = jax_variant.convert(make_spec("resnet18", 64), tmp_path)
    code = f"""
import sys, numpy as np
from converters.base import Artifact, ModelSpec
from converters.jax_flax import JaxFlaxConverter
spec = ModelSpec("resnet18", "random-seed-0", (3, 64, 64), 1000, build=None)
predictor = JaxFlaxConverter().load(Artifact(variant="jax", path={artifact.path!r}), spec)
assert predictor(np.zeros((1, 3, 64, 64), np.float32)).shape == (1, 1000)
assert "torch" not in sys.modules and "timm" not in sys.modules
"""
    subprocess.run([sys.executable, "-c", code], check=True)


def test_registry_import_stays_light():
    # The registry imports every converter module just to list them.
    code = ("import sys, converters.jax_flax as j; j.JaxFlaxConverter().versions(); "
            "assert 'jax' not in sys.modules and 'torch' not in sys.modules, "
            "[m for m in ('jax', 'torch') if m in sys.modules]")
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.parametrize("user_flags, expected", [
    (None, "--xla_cpu_experimental_ynn_fusion_type="),
    ("--xla_cpu_enable_fast_math=false",
     "--xla_cpu_enable_fast_math=false --xla_cpu_experimental_ynn_fusion_type="),
    # The user's own choice of the library fusions is kept as it is.
    ("--xla_cpu_experimental_ynn_fusion_type=dot", "--xla_cpu_experimental_ynn_fusion_type=dot"),
])
def test_ynn_library_fusions_off_unless_the_user_set_them(user_flags, expected):
    """In a fresh interpreter, as in a worker: prepare() before jax starts, then the flags the
    XLA backend really started with are what describe() records."""
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    if user_flags is not None:
        env["XLA_FLAGS"] = user_flags
    code = ("from converters.jax_flax import xla_env; xla_env.prepare(); import jax; "
            "jax.jit(lambda x: x + 1)(1.0).block_until_ready(); "
            "print(xla_env.describe()['xla_flags'])")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                          cwd=str(__import__("testlib").REPO), timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip().splitlines()[-1] == expected
