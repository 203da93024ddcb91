"""Model names and the weights policy, with real timm models."""
from __future__ import annotations

import pytest
import torch

from edgebench import models
from edgebench.models import ModelError

from testlib import TINY


def test_seed_models_are_known_and_have_their_own_preprocessing():
    for name in models.SEED_MODELS:
        models.check_name(name)
    assert models.data_config("swin_tiny_patch4_window7_224")["crop_pct"] == 0.9
    assert models.data_config("squeezenet1_1")["interpolation"] == "bilinear"
    assert models.source_of("squeezenet1_1") == "torchvision"


def test_unknown_name_suggests():
    with pytest.raises(ModelError, match="did you mean.*mobilenetv2_100"):
        models.check_name("mobilenetv2_10")


def test_random_weights_are_seeded_and_reproducible():
    w, note = models.resolve_weights(TINY, "random", seed=3)
    assert w == "random-seed-3+bn-recalibrated" and "random" in note    # TINY has BatchNorm
    a = models.build_model(TINY, w).state_dict()
    b = models.build_model(TINY, w).state_dict()
    c = models.build_model(TINY, "random-seed-4+bn-recalibrated").state_dict()
    k = next(k for k in a if a[k].dtype.is_floating_point and a[k].numel() > 10)
    assert torch.equal(a[k], b[k]) and not torch.equal(a[k], c[k])
    assert all(torch.equal(a[k], b[k]) for k in a)          # the statistics too
    assert models.resolve_weights("vgg16", "random", seed=3)[0] == "random-seed-3"   # no BN


def test_random_batchnorm_statistics_are_estimated_from_images_so_predictions_spread():
    """timm leaves running mean 0 / variance 1, which matches no activation: mobilenetv2
    then predicted one class for all 16 sample images. Re-estimated on the bundled
    calibration images (never an evaluated one), its logits differ between images."""
    from pathlib import Path

    from edgebench.data import PreparedData, prepare, resolve_source

    import tempfile
    name = "mobilenetv2_100"
    cfg = models.data_config(name)
    with tempfile.TemporaryDirectory() as td:
        folder = prepare(resolve_source(None), cfg, Path(td))
        x = torch.from_numpy(PreparedData(folder, cfg["mean"], cfg["std"]).batch(0, 16))
    plain = models.build_model(name, "random-seed-0")
    recal = models.build_model(name, "random-seed-0+bn-recalibrated")
    bn = next(m for m in recal.modules() if isinstance(m, torch.nn.BatchNorm2d))
    assert not torch.all(bn.running_mean == 0) and not recal.training and not bn.training
    assert bn.momentum == 0.1                               # restored after the estimate
    with torch.no_grad():
        before, after = plain(x), recal(x)
    assert before.argmax(1).unique().numel() == 1          # the collapse this fixes
    assert after.argmax(1).unique().numel() > 1


def test_checkpoint_path(tmp_path):
    src = models.build_model(TINY, "random-seed-7")
    ckpt = tmp_path / "ckpt.pth"
    torch.save({"state_dict": {f"module.{k}": v for k, v in src.state_dict().items()}}, ckpt)
    w, _ = models.resolve_weights(TINY, str(ckpt))
    assert w == str(ckpt.resolve())
    loaded = models.build_model(TINY, w)
    for k, v in src.state_dict().items():
        assert torch.equal(v, loaded.state_dict()[k])
    with pytest.raises(ModelError, match="does not exist"):
        models.resolve_weights(TINY, str(tmp_path / "missing.pth"))


def test_pretrained_unavailable_fails_clearly_and_auto_falls_back(monkeypatch):
    if models._pretrained_cached(TINY):
        pytest.skip(f"pretrained {TINY} weights are cached on this machine")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")       # makes the hub unreachable for certain
    with pytest.raises(ModelError, match="no pretrained weights"):
        models.resolve_weights(TINY, "pretrained")
    w, note = models.resolve_weights(TINY, "auto")
    assert w == "random-seed-0+bn-recalibrated" and "unavailable" in note
