"""timm's ``EfficientNet`` class, NHWC: ``efficientnet_b*`` and ``mobilenetv2_*`` alike.

timm builds both families with the same class and the same blocks (MobileNetV2 is MBConv
without squeeze-excite, with ReLU6), so one Flax model serves both. Every block is read off
the torch module: expansion, kernel, stride, SE width, activation, skip, and the padding
(timm's ``efficientnet_b*`` use symmetric torch padding; ``tf_*`` use TF 'SAME').
"""
from __future__ import annotations

import dataclasses

import flax.linen as nn
import jax.numpy as jnp

from . import weights
from .layers import ConvSpec, DenseSpec, classifier, global_pool, run_sequence

FAMILY = "efficientnet"


@dataclasses.dataclass(frozen=True)
class SqueezeExciteSpec:
    reduce: ConvSpec      # 1x1 conv + its activation
    expand: ConvSpec      # 1x1 conv + the gate (sigmoid)


@dataclasses.dataclass(frozen=True)
class MBBlockSpec:
    """Every timm MBConv-style block: convs, optional SE, convs, optional residual add."""

    name: str
    before_se: tuple      # ConvSpecs (expansion 1x1, depthwise)
    se: SqueezeExciteSpec | None
    after_se: tuple       # ConvSpecs (projection 1x1)
    has_skip: bool


class SqueezeExcite(nn.Module):
    spec: SqueezeExciteSpec

    @nn.compact
    def __call__(self, x):
        s = jnp.mean(x, axis=(1, 2), keepdims=True)
        return x * self.spec.expand(self.spec.reduce(s))


class MBBlock(nn.Module):
    spec: MBBlockSpec

    @nn.compact
    def __call__(self, x):
        y = run_sequence(self.spec.before_se, x)
        if self.spec.se is not None:
            y = SqueezeExcite(self.spec.se, name="se")(y)
        y = run_sequence(self.spec.after_se, y)
        return y + x if self.spec.has_skip else y


class EfficientNet(nn.Module):
    stem: tuple
    blocks: tuple         # MBBlockSpecs, in order
    head: tuple           # conv_head + bn2
    pool: str
    fc: DenseSpec | None

    @nn.compact
    def __call__(self, x):
        x = run_sequence(self.stem, x)
        for block in self.blocks:
            x = MBBlock(block, name=block.name)(x)
        x = run_sequence(self.head, x)
        return classifier(global_pool(x, self.pool), self.fc)


# ----------------------------------------------------------------------------- porting

# (conv, norm) attribute pairs of each timm block type, before and after the SE.
_BLOCK_LAYOUTS = {
    "DepthwiseSeparableConv": ((("conv_dw", "bn1"),), (("conv_pw", "bn2"),)),
    "InvertedResidual": ((("conv_pw", "bn1"), ("conv_dw", "bn2")), (("conv_pwl", "bn3"),)),
    "EdgeResidual": ((("conv_exp", "bn1"),), (("conv_pwl", "bn2"),)),
    "ConvBnAct": ((("conv", "bn1"),), ()),
}


def port(model) -> tuple[EfficientNet, dict]:
    from timm.models.efficientnet import EfficientNet as TimmEfficientNet

    if not isinstance(model, TimmEfficientNet):
        raise weights.unsupported("model", model, "expected timm EfficientNet")
    params: dict = {}
    stem = weights.sequence([("conv_stem", model.conv_stem), ("bn1", model.bn1)], params)
    blocks = []
    for i, stage in enumerate(model.blocks):
        for j, block in enumerate(stage):
            blocks.append(_port_block(block, f"blocks.{i}.{j}", params))
    head = weights.sequence([("conv_head", model.conv_head), ("bn2", model.bn2)], params)
    fc = None
    if not weights.is_noop(model.classifier):
        fc, params["classifier"] = weights.dense(model.classifier, "classifier")
    module = EfficientNet(stem=stem, blocks=tuple(blocks), head=head,
                          pool=weights.global_pool(model.global_pool, "global_pool"), fc=fc)
    return module, params


def _port_block(block, path: str, params: dict) -> MBBlockSpec:
    layout = _BLOCK_LAYOUTS.get(type(block).__name__)
    if layout is None:
        raise weights.unsupported(path, block, f"expected one of {', '.join(_BLOCK_LAYOUTS)}")
    if getattr(block, "conv_s2d", None) is not None:
        raise weights.unsupported(f"{path}.conv_s2d", block.conv_s2d, "space-to-depth")
    if not weights.is_noop(getattr(block, "aa", None)):
        raise weights.unsupported(f"{path}.aa", block.aa, "anti-aliasing")
    block_params: dict = {}

    def convs(pairs):
        specs = []
        for conv_name, bn_name in pairs:
            spec, block_params[conv_name] = weights.conv_bn(
                getattr(block, conv_name), getattr(block, bn_name), f"{path}.{conv_name}",
                name=conv_name)
            specs.append(spec)
        return tuple(specs)

    before, after = layout
    spec = MBBlockSpec(name=weights.flax_name(path), before_se=convs(before),
                       se=_port_se(getattr(block, "se", None), f"{path}.se", block_params),
                       after_se=convs(after), has_skip=bool(block.has_skip))
    params[spec.name] = block_params
    return spec


def _port_se(se, path: str, block_params: dict) -> SqueezeExciteSpec | None:
    if weights.is_noop(se):
        return None
    if type(se).__name__ != "SqueezeExcite":
        raise weights.unsupported(path, se, "expected timm's efficientnet SqueezeExcite")
    se_params: dict = {}
    reduce, se_params["conv_reduce"] = weights.conv(
        se.conv_reduce, f"{path}.conv_reduce", act=weights.activation(se.act1, f"{path}.act1"),
        name="conv_reduce")
    expand, se_params["conv_expand"] = weights.conv(
        se.conv_expand, f"{path}.conv_expand", act=weights.activation(se.gate, f"{path}.gate"),
        name="conv_expand")
    block_params["se"] = se_params
    return SqueezeExciteSpec(reduce=reduce, expand=expand)
