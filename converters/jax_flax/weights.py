"""Torch modules -> (layer record, Flax params): the weight-porting half of every family.

Conventions: convs become HWIO kernels with BatchNorm folded in (inference only: running
statistics are constants, so the normalisation is an exact per-channel scale and shift);
linears become (in, out) kernels. Folding is done in float64 and stored as float32.
Anything we do not implement raises ``UnsupportedLayer`` naming the module path, so a model
of a covered family but with an unusual layer is skipped, never silently mis-computed.

torch is imported inside the functions: the family modules import this one, and loading a
cached artifact (which imports them to unpickle the Flax model) must not pull in torch --
it would add hundreds of MB to the variant's measured memory.
"""
from __future__ import annotations

import numpy as np

from converters.base import SkipVariant

from .layers import (ActSpec, AdaptiveAvgPoolSpec, ConvSpec, DenseSpec, LayerNormSpec,
                     PoolSpec)


class UnsupportedLayer(SkipVariant):
    """A module the JAX re-implementation does not cover (the converter adds context)."""


def unsupported(path: str, module, why: str = "") -> UnsupportedLayer:
    detail = f" ({why})" if why else ""
    return UnsupportedLayer(f"'{path}' is {type(module).__name__}{detail}")


def flax_name(path: str) -> str:
    return path.replace(".", "_")


def _f64(t) -> np.ndarray:
    return t.detach().cpu().double().numpy()


def _f32_of(t) -> np.ndarray:
    return t.detach().cpu().float().numpy()


def _f32(a: np.ndarray) -> np.ndarray:
    # Always a fresh array: a view would alias the torch model's tensors.
    return np.array(a, dtype=np.float32, order="C", copy=True)


# ----------------------------------------------------------------------------- no-ops, acts

def is_noop(module) -> bool:
    """Layers that do nothing in eval mode."""
    from torch import nn

    if module is None or isinstance(module, (nn.Identity, nn.Dropout, nn.Dropout2d)):
        return True
    return type(module).__name__ in ("DropPath", "DropBlock2d")


def _timm_activations() -> dict:
    from timm.layers import activations as a
    return {a.Swish: "silu", a.Sigmoid: "sigmoid", a.Tanh: "tanh", a.GELU: "gelu",
            a.GELUTanh: "gelu_tanh", a.HardSigmoid: "hard_sigmoid", a.HardSwish: "hard_swish"}


def _torch_activations() -> dict:
    from torch import nn

    return {nn.ReLU: "relu", nn.ReLU6: "relu6", nn.SiLU: "silu", nn.Sigmoid: "sigmoid",
            nn.Tanh: "tanh", nn.Hardsigmoid: "hard_sigmoid", nn.Hardswish: "hard_swish"}


def activation_name(module) -> str | None:
    """The activation ``module`` computes ("identity" for no-ops), or None if it is not one."""
    from torch import nn

    if module is None or isinstance(module, nn.Identity):
        return "identity"
    if isinstance(module, nn.GELU):
        return "gelu_tanh" if module.approximate == "tanh" else "gelu"
    return _torch_activations().get(type(module)) or _timm_activations().get(type(module))


def activation(module, path: str) -> str:
    name = activation_name(module)
    if name is None:
        raise unsupported(path, module, "activation")
    return name


# ----------------------------------------------------------------------------- convs, BN

def _conv_padding(conv):
    from timm.layers import Conv2dSame

    if isinstance(conv, Conv2dSame):
        return "SAME"
    if conv.padding == "valid":
        return ((0, 0), (0, 0))
    if conv.padding == "same":  # torch's own 'same' (stride 1): extra pixel at the end
        totals = [d * (k - 1) for k, d in zip(conv.kernel_size, conv.dilation)]
        return tuple((t // 2, t - t // 2) for t in totals)
    return tuple((p, p) for p in conv.padding)


def _check_conv(conv, path: str) -> None:
    from timm.layers import Conv2dSame
    from torch import nn

    if type(conv) not in (nn.Conv2d, Conv2dSame):
        raise unsupported(path, conv, "only plain and TF-'same' Conv2d are implemented")
    if conv.padding_mode != "zeros":
        raise unsupported(path, conv, f"padding_mode={conv.padding_mode}")


def conv(module, path: str, bn=None,
         act: str = "identity", name: str | None = None) -> tuple[ConvSpec, dict]:
    """Port ``module`` (+ the BatchNorm right after it) to a ConvSpec and its params."""
    _check_conv(module, path)
    # Only folding needs float64; a plain copy stays float32 (VGG's fc6 is 100M weights).
    as_array = _f64 if bn is not None else _f32_of
    kernel = as_array(module.weight)                   # (O, I/groups, kh, kw)
    bias = (as_array(module.bias) if module.bias is not None
            else np.zeros(module.out_channels, np.float32))
    if bn is not None:
        scale, shift = batch_norm_affine(bn, path)
        kernel = kernel * scale[:, None, None, None]
        bias = bias * scale + shift
    spec = ConvSpec(name=name or flax_name(path), features=module.out_channels,
                    kernel_size=tuple(module.kernel_size), strides=tuple(module.stride),
                    padding=_conv_padding(module), dilation=tuple(module.dilation),
                    groups=module.groups, act=act)
    return spec, {"kernel": _f32(kernel.transpose(2, 3, 1, 0)), "bias": _f32(bias)}


def batch_norm_affine(bn, path: str) -> tuple[np.ndarray, np.ndarray]:
    """Eval-mode BatchNorm as y = x * scale + shift (per channel)."""
    from torch import nn

    if not isinstance(bn, nn.BatchNorm2d) or bn.running_mean is None:
        raise unsupported(path, bn, "only BatchNorm2d with running statistics folds into a conv")
    scale = 1.0 / np.sqrt(_f64(bn.running_var) + bn.eps)
    if bn.weight is not None:
        scale = scale * _f64(bn.weight)
    shift = -_f64(bn.running_mean) * scale
    if bn.bias is not None:
        shift = shift + _f64(bn.bias)
    return scale, shift


def norm_act(bn, path: str) -> str:
    """The activation timm's BatchNormAct2d applies after normalising ("identity" if none)."""
    return activation(getattr(bn, "act", None), f"{path}.act")


def conv_bn(module, bn, path: str, act_module=None, name: str | None = None):
    """conv -> BatchNorm(Act) [-> act]: the common timm triple, as one ConvSpec."""
    act = norm_act(bn, path)
    if act_module is not None and not is_noop(act_module):
        if act != "identity":
            raise unsupported(path, act_module, "two activations in a row")
        act = activation(act_module, path)
    return conv(module, path, bn=bn, act=act, name=name)


# ----------------------------------------------------------------------------- dense, LN, pools

def dense(module, path: str, name: str | None = None) -> tuple[DenseSpec, dict]:
    from torch import nn

    if type(module) is not nn.Linear:
        raise unsupported(path, module, "expected nn.Linear")
    params = {"kernel": _f32(_f32_of(module.weight).T)}
    if module.bias is not None:
        params["bias"] = _f32(_f32_of(module.bias))
    spec = DenseSpec(name=name or flax_name(path), features=module.out_features,
                     use_bias=module.bias is not None)
    return spec, params


def layer_norm(module, path: str, name: str | None = None) -> tuple[LayerNormSpec, dict]:
    from torch import nn

    if not isinstance(module, nn.LayerNorm) or len(module.normalized_shape) != 1 \
            or module.weight is None or module.bias is None:
        raise unsupported(path, module, "expected LayerNorm over the last dim with affine")
    spec = LayerNormSpec(name=name or flax_name(path), epsilon=float(module.eps))
    return spec, {"scale": _f32(_f32_of(module.weight)), "bias": _f32(_f32_of(module.bias))}


def _pair(v) -> tuple:
    return tuple(v) if isinstance(v, (tuple, list)) else (v, v)


def pool(module, path: str) -> PoolSpec:
    from torch import nn

    if isinstance(module, nn.MaxPool2d):
        if module.return_indices:
            raise unsupported(path, module, "return_indices")
        return PoolSpec("max", _pair(module.kernel_size), _pair(module.stride),
                        _pair(module.padding), _pair(module.dilation), module.ceil_mode)
    if isinstance(module, nn.AvgPool2d):
        if module.divisor_override:
            raise unsupported(path, module, "divisor_override")
        return PoolSpec("avg", _pair(module.kernel_size), _pair(module.stride),
                        _pair(module.padding), (1, 1), module.ceil_mode,
                        module.count_include_pad)
    raise unsupported(path, module, "expected MaxPool2d or AvgPool2d")


def global_pool(module, path: str) -> str:
    """timm SelectAdaptivePool2d (or torch AdaptiveAvgPool2d(1)) -> 'avg' | 'max' | ..."""
    from torch import nn

    if isinstance(module, nn.AdaptiveAvgPool2d) and _pair(module.output_size) == (1, 1):
        return "avg"
    kind = getattr(module, "pool_type", None)
    if isinstance(kind, str):
        kind = kind.lower().removeprefix("fast") or ("avg" if kind else "")
        if kind in ("avg", "max", "avgmax", "catavgmax"):
            return kind
    raise unsupported(path, module, "global pool must reduce to 1x1 (avg/max/avgmax/catavgmax)")


# ----------------------------------------------------------------------------- sequences

def sequence(items, params: dict, custom: dict | None = None) -> tuple:
    """Port a flat list of ``(path, module)`` run one after another (an nn.Sequential, or a
    stem spread over named attributes) to a tuple of layer records, filling ``params``.

    BatchNorm and activations are fused into the conv before them. ``custom`` maps a module
    type to ``port(path, module, params) -> record`` for family-specific blocks (Fire, ...).
    """
    from torch import nn

    custom = custom or {}
    ops: list = []
    pending: dict | None = None   # the conv still collecting its BN and activation

    def flush():
        nonlocal pending
        if pending is not None:
            spec, p = conv(pending["module"], pending["path"], bn=pending["bn"],
                           act=pending["act"])
            params[spec.name] = p
            ops.append(spec)
            pending = None

    for path, module in items:
        act = activation_name(module)
        if isinstance(module, nn.Conv2d):
            flush()
            pending = {"path": path, "module": module, "bn": None, "act": "identity"}
        elif isinstance(module, nn.BatchNorm2d):
            if pending is None or pending["bn"] is not None or pending["act"] != "identity":
                raise unsupported(path, module, "BatchNorm not directly after a conv")
            pending["bn"] = module
            pending["act"] = norm_act(module, path)
        elif is_noop(module):
            continue
        elif act is not None:
            if pending is not None and pending["act"] == "identity":
                pending["act"] = act
            else:
                flush()
                ops.append(ActSpec(act))
        elif isinstance(module, (nn.MaxPool2d, nn.AvgPool2d)):
            flush()
            ops.append(pool(module, path))
        elif isinstance(module, nn.AdaptiveAvgPool2d):
            flush()
            ops.append(AdaptiveAvgPoolSpec(_pair(module.output_size)))
        elif type(module) in custom:
            flush()
            ops.append(custom[type(module)](path, module, params))
        else:
            raise unsupported(path, module)
    flush()
    return tuple(ops)


def children(prefix: str, module) -> list:
    """``(path, child)`` of a Sequential, or ``[(prefix, module)]`` for a single layer."""
    from torch import nn

    if isinstance(module, nn.Sequential):
        return [(f"{prefix}.{n}", m) for n, m in module.named_children()]
    return [(prefix, module)]
