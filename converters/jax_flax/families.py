"""Which models the JAX variant covers, decided from the name before any model is built.

A timm name belongs to the timm module that defines its entry point (``timm.models.resnet``
-> resnet); that module's porter then walks the built model and skips anything unusual
(e.g. SE or GroupNorm ResNets), naming the layer. Imports nothing heavy at module level.
"""
from __future__ import annotations

import importlib

from converters.base import SkipVariant

# family -> (porting module in this package, what it covers, for messages)
FAMILIES = {
    "resnet": ("resnet", "timm resnet* (basic/bottleneck blocks)"),
    "mobilenetv2": ("efficientnet", "timm mobilenetv2_*"),
    "efficientnet": ("efficientnet", "timm efficientnet_b* / tf_efficientnet_b*"),
    "squeezenet": ("squeezenet", "torchvision squeezenet1_0/1_1"),
    "vgg": ("vgg", "timm vgg* (with and without BN)"),
    "swin": ("swin", "timm swin_* (v1)"),
}

# timm module -> family; timm's efficientnet module also builds mobilenetv2_*.
_TIMM_MODULES = {"resnet": "resnet", "efficientnet": "efficientnet", "vgg": "vgg",
                 "swin_transformer": "swin"}


def supported() -> str:
    return "; ".join(f"{fam} ({what})" for fam, (_, what) in FAMILIES.items())


def family_of(name: str, source: str) -> str:
    """The family of model ``name``, or SkipVariant naming the families we support."""
    family = None
    if source == "torchvision":
        family = "squeezenet" if name.startswith("squeezenet") else None
    else:
        from timm.models import is_model_in_modules

        for module, fam in _TIMM_MODULES.items():
            if is_model_in_modules(name, [module]):
                family = fam
                break
        if family == "efficientnet" and name.startswith("mobilenetv2"):
            family = "mobilenetv2"
    if family is None:
        raise SkipVariant(f"the jax variant has no Flax implementation of '{name}'; "
                          f"supported families: {supported()}")
    return family


def porter(family: str):
    """The ``port(torch_model) -> (flax_module, params)`` function of ``family``."""
    return importlib.import_module(f"{__package__}.{FAMILIES[family][0]}").port
