"""SqueezeNet 1.0 / 1.1 (torchvision ``squeezenet1_0/1_1``), NHWC.

The two versions differ only in the torch Sequential (stem conv, where the pools sit), which
is walked as is; the pools use ceil_mode, reproduced by ``PoolSpec``.
"""
from __future__ import annotations

import dataclasses

import flax.linen as nn
import jax.numpy as jnp

from . import weights
from .layers import ConvSpec, run_sequence

FAMILY = "squeezenet"


@dataclasses.dataclass(frozen=True)
class FireSpec:
    name: str
    squeeze: ConvSpec
    expand1x1: ConvSpec
    expand3x3: ConvSpec

    def __call__(self, x):
        return Fire(self, name=self.name)(x)


class Fire(nn.Module):
    spec: FireSpec

    @nn.compact
    def __call__(self, x):
        s = self.spec.squeeze(x)
        # torch concatenates on channels (dim 1 in NCHW): the last axis here.
        return jnp.concatenate([self.spec.expand1x1(s), self.spec.expand3x3(s)], axis=-1)


class SqueezeNet(nn.Module):
    features: tuple
    classifier: tuple     # dropout (no-op), final 1x1 conv + ReLU, adaptive avg pool to 1x1

    @nn.compact
    def __call__(self, x):
        x = run_sequence(self.features, x)
        x = run_sequence(self.classifier, x)
        return x.reshape(x.shape[0], -1)   # (B, 1, 1, classes): flatten order is moot


# ----------------------------------------------------------------------------- porting

def port(model) -> tuple[SqueezeNet, dict]:
    from torchvision.models.squeezenet import Fire as TorchFire
    from torchvision.models.squeezenet import SqueezeNet as TorchSqueezeNet

    if not isinstance(model, TorchSqueezeNet):
        raise weights.unsupported("model", model, "expected torchvision SqueezeNet")
    params: dict = {}
    features = weights.sequence(weights.children("features", model.features), params,
                                custom={TorchFire: _port_fire})
    head = weights.sequence(weights.children("classifier", model.classifier), params)
    if not head or getattr(head[-1], "output_size", None) != (1, 1):
        raise weights.unsupported("classifier", model.classifier,
                                  "expected to end in AdaptiveAvgPool2d(1)")
    return SqueezeNet(features=features, classifier=head), params


def _port_fire(path: str, fire, params: dict) -> FireSpec:
    fire_params: dict = {}
    convs = {}
    for part in ("squeeze", "expand1x1", "expand3x3"):
        act = weights.activation(getattr(fire, f"{part}_activation"), f"{path}.{part}_activation")
        convs[part], fire_params[part] = weights.conv(getattr(fire, part), f"{path}.{part}",
                                                      act=act, name=part)
    name = weights.flax_name(path)
    params[name] = fire_params
    return FireSpec(name=name, **convs)
