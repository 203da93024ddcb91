"""Flax building blocks shared by the families: NHWC, BatchNorm already folded into convs.

Each block is a small frozen record (hashable, so it can sit in a Flax module's fields)
filled in by ``weights.py`` from the torch module; nothing here hard-codes a width, a kernel
or a padding. Calling a record inside a Flax ``@nn.compact`` method creates its Flax layer
under the record's ``name``, which is also the key of its weights in the params tree.
"""
from __future__ import annotations

import dataclasses
import functools
import math
from typing import Union

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

# ((top, bottom), (left, right)) as torch pads, or "SAME" for timm's TF-style Conv2dSame
# (lax's SAME rule is TF's: the odd pixel goes to the bottom/right, sized from the input).
Padding = Union[str, tuple]

ACTIVATIONS = {
    "identity": lambda x: x,
    "relu": jax.nn.relu,
    "relu6": jax.nn.relu6,
    "silu": jax.nn.silu,
    "sigmoid": jax.nn.sigmoid,
    "tanh": jnp.tanh,
    # torch's nn.GELU() is the exact erf form; the tanh form differs by ~1e-3.
    "gelu": functools.partial(jax.nn.gelu, approximate=False),
    "gelu_tanh": functools.partial(jax.nn.gelu, approximate=True),
    "hard_sigmoid": jax.nn.hard_sigmoid,  # relu6(x + 3) / 6, as torch
    "hard_swish": jax.nn.hard_swish,
}


def activate(x, act: str):
    return ACTIVATIONS[act](x)


@dataclasses.dataclass(frozen=True)
class ConvSpec:
    """A 2-D convolution (BatchNorm folded into kernel and bias) and the activation after it."""

    name: str
    features: int
    kernel_size: tuple
    strides: tuple
    padding: Padding
    dilation: tuple
    groups: int
    act: str = "identity"

    def __call__(self, x):
        if self.groups > 1 and self.groups == x.shape[-1] == self.features:
            y = DepthwiseConv(self, name=self.name)(x)
        elif self.is_pointwise():
            y = PointwiseConv(self, name=self.name)(x)
        else:
            y = nn.Conv(self.features, self.kernel_size, self.strides, self.padding,
                        kernel_dilation=self.dilation, feature_group_count=self.groups,
                        use_bias=True, name=self.name)(x)
        return activate(y, self.act)

    def is_pointwise(self) -> bool:
        # Any 1x1, ungrouped, unpadded conv ('SAME' pads nothing at 1x1).
        return (self.kernel_size == (1, 1) and self.groups == 1
                and self.padding in (((0, 0), (0, 0)), "SAME"))


class PointwiseConv(nn.Module):
    """A 1x1 conv as a strided slice and a matmul: XLA:CPU runs it ~1.5x faster than
    lax.conv (measured 0.53 ms vs 0.34 ms for 14x14x256->1024). Same params as nn.Conv."""

    spec: ConvSpec

    @nn.compact
    def __call__(self, x):
        s = self.spec
        kernel = self.param("kernel", nn.initializers.zeros, (1, 1, x.shape[-1], s.features))
        bias = self.param("bias", nn.initializers.zeros, (s.features,))
        sh, sw = s.strides
        x = x[:, ::sh, ::sw, :]             # the pixels a strided 1x1 kernel visits
        return jnp.einsum("bhwc,co->bhwo", x, kernel[0, 0]) + bias


class DepthwiseConv(nn.Module):
    """A depthwise conv as a sum of kh*kw shifted, scaled copies of the input.

    XLA:CPU runs ``feature_group_count == channels`` convolutions 20-40x slower than this
    (measured: 12.9 ms vs 0.3 ms for 3x3 on 56x56x144); the elementwise form fuses into one
    loop. Same params (kernel ``(kh, kw, 1, C)``, bias) as ``nn.Conv``, so weights port alike.
    """

    spec: ConvSpec

    @nn.compact
    def __call__(self, x):
        s = self.spec
        (kh, kw), (sh, sw), (dh, dw) = s.kernel_size, s.strides, s.dilation
        kernel = self.param("kernel", nn.initializers.zeros, (kh, kw, 1, s.features))
        bias = self.param("bias", nn.initializers.zeros, (s.features,))
        h, w = x.shape[1:3]
        pads = s.padding
        if pads == "SAME":
            pads = [_same_padding(n, k, st, d) for n, k, st, d in
                    zip((h, w), s.kernel_size, s.strides, s.dilation)]
        (pt, pb), (pl, pr) = pads
        out_h = (h + pt + pb - dh * (kh - 1) - 1) // sh + 1
        out_w = (w + pl + pr - dw * (kw - 1) - 1) // sw + 1
        xp = jnp.pad(x, ((0, 0), (pt, pb), (pl, pr), (0, 0)))
        y = bias
        for i in range(kh):
            for j in range(kw):
                window = xp[:, i * dh:i * dh + sh * (out_h - 1) + 1:sh,
                            j * dw:j * dw + sw * (out_w - 1) + 1:sw, :]
                y = y + window * kernel[i, j, 0]
        return y


def _same_padding(n: int, k: int, s: int, d: int) -> tuple:
    """TF 'SAME' (timm Conv2dSame): total padding to cover ceil(n/s) outputs, extra at the end."""
    total = max((math.ceil(n / s) - 1) * s + d * (k - 1) + 1 - n, 0)
    return total // 2, total - total // 2


@dataclasses.dataclass(frozen=True)
class DenseSpec:
    name: str
    features: int
    use_bias: bool = True

    def __call__(self, x):
        return nn.Dense(self.features, use_bias=self.use_bias, name=self.name)(x)


@dataclasses.dataclass(frozen=True)
class LayerNormSpec:
    name: str
    epsilon: float

    def __call__(self, x):
        # Two-pass variance, as torch: the fast E[x^2]-E[x]^2 form loses digits.
        return nn.LayerNorm(epsilon=self.epsilon, use_fast_variance=False, name=self.name)(x)


@dataclasses.dataclass(frozen=True)
class ActSpec:
    """An activation that could not be fused into the conv before it."""

    act: str

    def __call__(self, x):
        return activate(x, self.act)


@dataclasses.dataclass(frozen=True)
class PoolSpec:
    """torch's MaxPool2d / AvgPool2d, including ceil_mode and count_include_pad."""

    kind: str                      # "max" | "avg"
    kernel_size: tuple
    strides: tuple
    padding: tuple                 # symmetric, per spatial dim, as torch
    dilation: tuple = (1, 1)
    ceil_mode: bool = False
    count_include_pad: bool = True

    def __call__(self, x):
        h, w = x.shape[1:3]
        geo = [_pool_geometry(n, k, s, p, d, self.ceil_mode)
               for n, k, s, p, d in zip((h, w), self.kernel_size, self.strides, self.padding,
                                        self.dilation)]
        pads = [(0, 0)] + [(p, hi) for _, p, hi in geo] + [(0, 0)]
        window = (1, *self.kernel_size, 1)
        strides = (1, *self.strides, 1)
        dilation = (1, *self.dilation, 1)
        out_hw = tuple(out for out, _, _ in geo)
        if self.kind == "max":
            xp = jnp.pad(x, pads, constant_values=-jnp.inf)
            y = jax.lax.reduce_window(xp, -jnp.inf, jax.lax.max, window, strides, "VALID",
                                      window_dilation=dilation)
            return y[:, :out_hw[0], :out_hw[1]]
        xp = jnp.pad(x, pads)
        y = jax.lax.reduce_window(xp, 0.0, jax.lax.add, window, strides, "VALID",
                                  window_dilation=dilation)[:, :out_hw[0], :out_hw[1]]
        return y / self._divisor((h, w), geo, out_hw)

    def _divisor(self, hw, geo, out_hw):
        # torch divides by the window's cells inside the input, plus the symmetric padding
        # when count_include_pad -- never the ceil_mode overhang. Static, so numpy.
        per_dim = []
        for n, (_, p, hi), k, s, d, out in zip(hw, geo, self.kernel_size, self.strides,
                                                 self.dilation, out_hw):
            inside = np.zeros(n + p + hi)
            inside[p:p + n] = 1.0
            if self.count_include_pad:
                inside[:p] = 1.0
                inside[p + n:p + n + min(p, hi)] = 1.0
            per_dim.append(np.array([inside[i * s:i * s + d * (k - 1) + 1:d].sum()
                                     for i in range(out)]))
        div = np.outer(per_dim[0], per_dim[1]).astype(np.float32)
        return jnp.asarray(div)[None, :, :, None]


def _pool_geometry(n: int, k: int, s: int, p: int, d: int, ceil_mode: bool):
    """(output size, low pad, high pad) of one spatial dim, by torch's pooling rule."""
    span = d * (k - 1) + 1
    rounding = math.ceil if ceil_mode else math.floor
    out = rounding((n + 2 * p - span) / s) + 1
    if ceil_mode and (out - 1) * s >= n + p:  # the last window must start inside the input
        out -= 1
    high = max((out - 1) * s + span - n - p, 0)
    return out, p, high


@dataclasses.dataclass(frozen=True)
class AdaptiveAvgPoolSpec:
    """torch's AdaptiveAvgPool2d to a fixed output size (also used to *grow* a small map)."""

    output_size: tuple

    def __call__(self, x):
        return adaptive_avg_pool(x, self.output_size)


def adaptive_avg_pool(x, output_size):
    h, w = x.shape[1:3]
    if (h, w) == tuple(output_size):
        return x
    rows = _adaptive_pool_matrix(h, output_size[0])
    cols = _adaptive_pool_matrix(w, output_size[1])
    return jnp.einsum("oh,bhwc,pw->bopc", rows, x, cols)


def _adaptive_pool_matrix(n: int, out: int) -> np.ndarray:
    # Bin i averages [floor(i*n/out), ceil((i+1)*n/out)), torch's rule.
    m = np.zeros((out, n), np.float32)
    for i in range(out):
        lo, hi = (i * n) // out, -((-(i + 1) * n) // out)
        m[i, lo:hi] = 1.0 / (hi - lo)
    return m


def global_pool(x, kind: str):
    """timm's SelectAdaptivePool2d with output size 1, flattened: (B, H, W, C) -> (B, C)."""
    if kind == "avg":
        return jnp.mean(x, axis=(1, 2))
    if kind == "max":
        return jnp.max(x, axis=(1, 2))
    if kind == "avgmax":
        return 0.5 * (jnp.mean(x, axis=(1, 2)) + jnp.max(x, axis=(1, 2)))
    if kind == "catavgmax":
        return jnp.concatenate([jnp.mean(x, axis=(1, 2)), jnp.max(x, axis=(1, 2))], axis=-1)
    raise ValueError(f"unknown global pool '{kind}'")


def run_sequence(ops, x):
    for op in ops:
        x = op(x)
    return x


def classifier(x, fc: DenseSpec | None):
    return x if fc is None else fc(x)
