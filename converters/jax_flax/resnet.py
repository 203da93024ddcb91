"""ResNet (timm ``resnet*``), NHWC: basic (2 convs) and bottleneck (3 convs) residual blocks.

Depths, widths, strides, stems (plain or deep) and shortcuts (1x1 conv, or avg-pool + conv)
are read off the torch module, so resnet18..152 and the ``d`` variants come out of one walk.
"""
from __future__ import annotations

import dataclasses

import flax.linen as nn

from . import weights
from .layers import DenseSpec, activate, classifier, global_pool, run_sequence

FAMILY = "resnet"


@dataclasses.dataclass(frozen=True)
class BlockSpec:
    name: str
    convs: tuple          # ConvSpecs of the residual branch; the last has no activation
    shortcut: tuple       # layer records applied to the input; () is the identity
    out_act: str          # applied after the addition


class ResidualBlock(nn.Module):
    spec: BlockSpec

    @nn.compact
    def __call__(self, x):
        branch = run_sequence(self.spec.convs, x)
        shortcut = run_sequence(self.spec.shortcut, x)
        return activate(branch + shortcut, self.spec.out_act)


class ResNet(nn.Module):
    stem: tuple
    blocks: tuple         # BlockSpecs, in order
    pool: str
    fc: DenseSpec | None

    @nn.compact
    def __call__(self, x):
        x = run_sequence(self.stem, x)
        for block in self.blocks:
            x = ResidualBlock(block, name=block.name)(x)
        return classifier(global_pool(x, self.pool), self.fc)


# ----------------------------------------------------------------------------- porting

# Attribute names of each timm block type: (conv, norm, activation) of the branch, in
# order, then the activation after the addition.
_BLOCK_LAYOUTS = {
    "BasicBlock": ((("conv1", "bn1", "act1"), ("conv2", "bn2", None)), "act2"),
    "Bottleneck": ((("conv1", "bn1", "act1"), ("conv2", "bn2", "act2"),
                    ("conv3", "bn3", None)), "act3"),
}


def port(model) -> tuple[ResNet, dict]:
    from timm.models.resnet import ResNet as TimmResNet

    if not isinstance(model, TimmResNet):
        raise weights.unsupported("model", model, "expected timm ResNet")
    params: dict = {}
    stem_items = weights.children("conv1", model.conv1) + [
        ("bn1", model.bn1), ("act1", model.act1)] + weights.children("maxpool", model.maxpool)
    stem = weights.sequence(stem_items, params)
    blocks = []
    for stage in ("layer1", "layer2", "layer3", "layer4"):
        for i, block in enumerate(getattr(model, stage)):
            blocks.append(_port_block(block, f"{stage}.{i}", params))
    fc = None
    if not weights.is_noop(model.fc):
        fc, params["fc"] = weights.dense(model.fc, "fc")
    module = ResNet(stem=stem, blocks=tuple(blocks),
                    pool=weights.global_pool(model.global_pool, "global_pool"), fc=fc)
    return module, params


def _port_block(block, path: str, params: dict) -> BlockSpec:
    layout = _BLOCK_LAYOUTS.get(type(block).__name__)
    if layout is None:
        raise weights.unsupported(path, block, "expected BasicBlock or Bottleneck")
    for extra in ("se", "aa"):  # attention / anti-aliasing variants are not implemented
        if not weights.is_noop(getattr(block, extra, None)):
            raise weights.unsupported(f"{path}.{extra}", getattr(block, extra))
    branch_layout, out_act = layout
    block_params: dict = {}
    convs = []
    for conv_name, bn_name, act_name in branch_layout:
        act_module = getattr(block, act_name) if act_name else None
        spec, block_params[conv_name] = weights.conv_bn(
            getattr(block, conv_name), getattr(block, bn_name), f"{path}.{conv_name}",
            act_module, name=conv_name)
        convs.append(spec)
    shortcut = ()
    if block.downsample is not None:
        # Named "downsample" (conv) inside the block's own params.
        shortcut_params: dict = {}
        shortcut = weights.sequence(weights.children("downsample", block.downsample),
                                    shortcut_params)
        block_params.update(shortcut_params)
    name = weights.flax_name(path)
    params[name] = block_params
    return BlockSpec(name=name, convs=tuple(convs), shortcut=shortcut,
                     out_act=weights.activation(getattr(block, out_act), f"{path}.{out_act}"))
