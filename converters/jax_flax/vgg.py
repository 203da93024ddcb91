"""VGG 11..19, with and without BatchNorm (timm ``vgg*``), NHWC.

timm's VGG head is not torchvision's flatten + Linear: ``pre_logits`` is a ConvMlp (``fc1``
a 7x7 conv -- the old fc6 --, ``fc2`` a 1x1 conv -- fc7), which first grows a feature map
smaller than 7x7 by adaptive average pooling, then global pooling and a Linear. No NCHW
flatten happens anywhere, so there is no flatten order to reproduce.
"""
from __future__ import annotations

import dataclasses

import flax.linen as nn

from . import weights
from .layers import (ConvSpec, DenseSpec, adaptive_avg_pool, classifier, global_pool,
                     run_sequence)

FAMILY = "vgg"


@dataclasses.dataclass(frozen=True)
class ConvMlpSpec:
    min_size: int         # ConvMlp.input_kernel_size: maps smaller than this are grown to it
    fc1: ConvSpec
    fc2: ConvSpec


class VGG(nn.Module):
    features: tuple
    pre_logits: ConvMlpSpec
    pool: str
    fc: DenseSpec | None

    @nn.compact
    def __call__(self, x):
        x = run_sequence(self.features, x)
        k = self.pre_logits.min_size
        h, w = x.shape[1:3]
        if h < k or w < k:
            x = adaptive_avg_pool(x, (max(k, h), max(k, w)))
        x = self.pre_logits.fc2(self.pre_logits.fc1(x))
        return classifier(global_pool(x, self.pool), self.fc)


# ----------------------------------------------------------------------------- porting

def port(model) -> tuple[VGG, dict]:
    from timm.models.vgg import VGG as TimmVGG

    if not isinstance(model, TimmVGG):
        raise weights.unsupported("model", model, "expected timm VGG")
    params: dict = {}
    features = weights.sequence(weights.children("features", model.features), params)
    mlp = model.pre_logits
    if type(mlp).__name__ != "ConvMlp":
        raise weights.unsupported("pre_logits", mlp, "expected timm ConvMlp")
    fc1, params["pre_logits_fc1"] = weights.conv(
        mlp.fc1, "pre_logits.fc1", act=weights.activation(mlp.act1, "pre_logits.act1"))
    fc2, params["pre_logits_fc2"] = weights.conv(
        mlp.fc2, "pre_logits.fc2", act=weights.activation(mlp.act2, "pre_logits.act2"))
    head = model.head
    fc = None
    if not weights.is_noop(head.fc):
        fc, params["head_fc"] = weights.dense(head.fc, "head.fc")
    module = VGG(features=features,
                 pre_logits=ConvMlpSpec(int(mlp.input_kernel_size), fc1, fc2),
                 pool=weights.global_pool(head.global_pool, "head.global_pool"), fc=fc)
    return module, params
