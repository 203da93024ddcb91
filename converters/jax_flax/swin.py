"""Swin Transformer v1 (timm ``swin_*``), NHWC tokens.

Follows timm's forward step for step: patch embed (conv + LayerNorm), stages of
(patch merging, blocks), final LayerNorm, average pool, Linear. Each block takes its window
and shift from the torch block, which timm has already shrunk where the feature map is
smaller than a window. Shifted windows get timm's -100 attention mask, built here from the
padded map size; the relative position bias is gathered from its table once, at port time.
GELU is the exact erf form and LayerNorm eps is the torch module's.
"""
from __future__ import annotations

import dataclasses

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

from . import weights
from .layers import (DenseSpec, LayerNormSpec, activate, classifier, global_pool,
                     run_sequence)

FAMILY = "swin"


@dataclasses.dataclass(frozen=True)
class SwinBlockSpec:
    name: str
    num_heads: int
    head_dim: int
    scale: float
    window: tuple
    shift: tuple
    norm1: LayerNormSpec
    qkv: DenseSpec
    proj: DenseSpec
    norm2: LayerNormSpec
    fc1: DenseSpec
    act: str
    fc2: DenseSpec


@dataclasses.dataclass(frozen=True)
class PatchMergingSpec:
    name: str
    norm: LayerNormSpec
    reduction: DenseSpec

    def __call__(self, x):
        return PatchMerging(self, name=self.name)(x)


class PatchMerging(nn.Module):
    spec: PatchMergingSpec

    @nn.compact
    def __call__(self, x):
        b, h, w, c = x.shape
        x = jnp.pad(x, ((0, 0), (0, h % 2), (0, w % 2), (0, 0)))
        h, w = x.shape[1:3]
        # timm's order: (B, H/2, W/2, w-offset, h-offset, C) flattened.
        x = x.reshape(b, h // 2, 2, w // 2, 2, c).transpose(0, 1, 3, 4, 2, 5)
        x = x.reshape(b, h // 2, w // 2, 4 * c)
        return self.spec.reduction(self.spec.norm(x))


def _window_partition(x, window):
    b, h, w, c = x.shape
    x = x.reshape(b, h // window[0], window[0], w // window[1], window[1], c)
    return x.transpose(0, 1, 3, 2, 4, 5).reshape(-1, window[0] * window[1], c)


def _window_reverse(windows, window, h, w):
    c = windows.shape[-1]
    x = windows.reshape(-1, h // window[0], w // window[1], window[0], window[1], c)
    return x.transpose(0, 1, 3, 2, 4, 5).reshape(-1, h, w, c)


def shifted_window_mask(hp: int, wp: int, window: tuple, shift: tuple) -> np.ndarray:
    """timm's SW-MSA mask for a (padded) hp x wp map: 0 within a region, -100 across."""
    img = np.zeros((1, hp, wp, 1), np.float32)
    rows, cols = ([slice(0, -ws), slice(-ws, -s), slice(-s, None)]
                  for ws, s in zip(window, shift))
    for count, (r, c) in enumerate((r, c) for r in rows for c in cols):
        img[:, r, c, :] = count
    ids = np.asarray(_window_partition(img, window))[..., 0]      # (nW, N)
    diff = ids[:, None, :] - ids[:, :, None]
    return np.where(diff != 0, -100.0, 0.0).astype(np.float32)    # (nW, N, N)


class WindowAttention(nn.Module):
    spec: SwinBlockSpec

    @nn.compact
    def __call__(self, windows, mask):
        s = self.spec
        n_win_b, n, _ = windows.shape
        bias = self.param("relative_position_bias", nn.initializers.zeros,
                          (s.num_heads, n, n))
        qkv = s.qkv(windows).reshape(n_win_b, n, 3, s.num_heads, s.head_dim)
        q, k, v = jnp.moveaxis(qkv, 2, 0)                          # each (B_, N, nH, hd)
        attn = jnp.einsum("bqhd,bkhd->bhqk", q * s.scale, k) + bias
        if mask is not None:
            n_win = mask.shape[0]
            attn = attn.reshape(-1, n_win, s.num_heads, n, n) + mask[None, :, None]
            attn = attn.reshape(-1, s.num_heads, n, n)
        attn = jax.nn.softmax(attn, axis=-1)
        out = jnp.einsum("bhqk,bkhd->bqhd", attn, v).reshape(n_win_b, n, -1)
        return s.proj(out)


class SwinBlock(nn.Module):
    spec: SwinBlockSpec

    @nn.compact
    def __call__(self, x):
        s = self.spec
        b, h, w, c = x.shape
        y = s.norm1(x)
        if any(s.shift):
            y = jnp.roll(y, (-s.shift[0], -s.shift[1]), axis=(1, 2))
        pad_h, pad_w = (-h) % s.window[0], (-w) % s.window[1]
        y = jnp.pad(y, ((0, 0), (0, pad_h), (0, pad_w), (0, 0)))
        hp, wp = h + pad_h, w + pad_w
        mask = (jnp.asarray(shifted_window_mask(hp, wp, s.window, s.shift))
                if any(s.shift) else None)
        y = WindowAttention(s, name="attn")(_window_partition(y, s.window), mask)
        y = _window_reverse(y, s.window, hp, wp)[:, :h, :w, :]
        if any(s.shift):
            y = jnp.roll(y, s.shift, axis=(1, 2))
        x = x + y
        return x + s.fc2(activate(s.fc1(s.norm2(x)), s.act))


class SwinTransformer(nn.Module):
    patch_embed: tuple    # ConvSpec, LayerNormSpec
    stages: tuple         # per stage: (PatchMergingSpec | None, SwinBlockSpecs)
    norm: LayerNormSpec
    pool: str
    fc: DenseSpec | None

    @nn.compact
    def __call__(self, x):
        x = run_sequence(self.patch_embed, x)
        for merge, blocks in self.stages:
            if merge is not None:
                x = merge(x)
            for block in blocks:
                x = SwinBlock(block, name=block.name)(x)
        x = self.norm(x)
        return classifier(global_pool(x, self.pool), self.fc)


# ----------------------------------------------------------------------------- porting

def port(model) -> tuple[SwinTransformer, dict]:
    from timm.models.swin_transformer import SwinTransformer as TimmSwin

    if not isinstance(model, TimmSwin):
        raise weights.unsupported("model", model, "expected timm SwinTransformer")
    if getattr(model, "absolute_pos_embed", None) is not None:
        raise weights.unsupported("absolute_pos_embed", model.absolute_pos_embed)
    params: dict = {}
    patch_embed = _port_patch_embed(model.patch_embed, params)
    stages = []
    for i, stage in enumerate(model.layers):
        merge = None
        if not weights.is_noop(stage.downsample):
            merge = _port_patch_merging(stage.downsample, f"layers.{i}.downsample", params)
        blocks = tuple(_port_block(block, f"layers.{i}.blocks.{j}", params)
                       for j, block in enumerate(stage.blocks))
        stages.append((merge, blocks))
    norm, params["norm"] = weights.layer_norm(model.norm, "norm")
    head = model.head
    fc = None
    if not weights.is_noop(head.fc):
        fc, params["head_fc"] = weights.dense(head.fc, "head.fc")
    module = SwinTransformer(patch_embed=patch_embed, stages=tuple(stages), norm=norm,
                             pool=weights.global_pool(head.global_pool, "head.global_pool"),
                             fc=fc)
    return module, params


def _port_patch_embed(pe, params: dict) -> tuple:
    if getattr(pe, "flatten", False) or str(getattr(pe, "output_fmt", "")) != "Format.NHWC" \
            or getattr(pe, "dynamic_img_pad", False):
        raise weights.unsupported("patch_embed", pe, "expected an NHWC, unpadded PatchEmbed")
    proj, params["patch_embed_proj"] = weights.conv(pe.proj, "patch_embed.proj")
    ops: tuple = (proj,)
    if not weights.is_noop(pe.norm):
        norm, params["patch_embed_norm"] = weights.layer_norm(pe.norm, "patch_embed.norm")
        ops += (norm,)
    return ops


def _port_patch_merging(pm, path: str, params: dict) -> PatchMergingSpec:
    if type(pm).__name__ != "PatchMerging":
        raise weights.unsupported(path, pm, "expected PatchMerging")
    merge_params: dict = {}
    norm, merge_params["norm"] = weights.layer_norm(pm.norm, f"{path}.norm", name="norm")
    reduction, merge_params["reduction"] = weights.dense(pm.reduction, f"{path}.reduction",
                                                         name="reduction")
    name = weights.flax_name(path)
    params[name] = merge_params
    return PatchMergingSpec(name=name, norm=norm, reduction=reduction)


def _port_block(block, path: str, params: dict) -> SwinBlockSpec:
    if type(block).__name__ != "SwinTransformerBlock":
        raise weights.unsupported(path, block, "expected SwinTransformerBlock")
    attn, mlp = block.attn, block.mlp
    if not weights.is_noop(getattr(mlp, "norm", None)):
        raise weights.unsupported(f"{path}.mlp.norm", mlp.norm)
    p: dict = {"attn": {}}
    norm1, p["norm1"] = weights.layer_norm(block.norm1, f"{path}.norm1", name="norm1")
    norm2, p["norm2"] = weights.layer_norm(block.norm2, f"{path}.norm2", name="norm2")
    qkv, p["attn"]["qkv"] = weights.dense(attn.qkv, f"{path}.attn.qkv", name="qkv")
    proj, p["attn"]["proj"] = weights.dense(attn.proj, f"{path}.attn.proj", name="proj")
    # (1, nH, N, N) straight from timm's own gather, so the index layout cannot drift.
    p["attn"]["relative_position_bias"] = (
        attn._get_rel_pos_bias()[0].detach().cpu().float().numpy().copy())
    fc1, p["mlp_fc1"] = weights.dense(mlp.fc1, f"{path}.mlp.fc1", name="mlp_fc1")
    fc2, p["mlp_fc2"] = weights.dense(mlp.fc2, f"{path}.mlp.fc2", name="mlp_fc2")
    name = weights.flax_name(path)
    params[name] = p
    return SwinBlockSpec(
        name=name, num_heads=attn.num_heads, head_dim=attn.qkv.out_features // 3 // attn.num_heads,
        scale=float(attn.scale), window=tuple(block.window_size), shift=tuple(block.shift_size),
        norm1=norm1, qkv=qkv, proj=proj, norm2=norm2, fc1=fc1,
        act=weights.activation(mlp.act, f"{path}.mlp.act"), fc2=fc2)
