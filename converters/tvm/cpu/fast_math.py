"""Vectorisable exp/erf for TVM's CPU builds.

TVM lowers ``exp``/``erf`` to libm's scalar ``expf``/``erff``, so loops over them (every conv
fused with SiLU) do not vectorise. TVM's polynomial forms (``topi.fast_exp``, ``fast_erf``,
``fast_tanh``, ``fast_softmax``) are not applied to activations that hide exp/erf in their
legalisation (sigmoid, SiLU, GELU), so this pass rewrites all of them, float32 only, before
``LegalizeOps`` (experiments/FINDINGS.md#fast-experf; tests/test_tvm.py checks the error).
"""
from __future__ import annotations

import math

DESCRIPTION = ("exp, sigmoid, SiLU, GELU (erf), tanh and softmax use TVM's polynomial "
               "fast_exp/fast_erf/fast_tanh (vectorisable); float32, LLVM targets")


def _fast_sigmoid(x):
    from tvm import te, topi

    one = te.const(1.0, x.dtype)
    return topi.divide(one, topi.add(one, topi.fast_exp(topi.negative(x))))


def rewrite(mod):
    """The module with float32 exp/erf-based activations replaced by their fast forms."""
    from tvm import tirx, topi

    from ..relax_rewrite import rewrite_calls

    def f32(call) -> bool:
        ty = getattr(call.args[0], "ty", None)      # a TensorType for tensors
        return str(getattr(ty, "dtype", "")) == "float32"

    def gelu(x):
        c = tirx.const
        return x * (c(0.5, x.dtype) + topi.fast_erf(x * c(math.sqrt(0.5), x.dtype))
                    * c(0.5, x.dtype))

    rules = {
        "relax.sigmoid": lambda bb, c: bb.call_te(_fast_sigmoid, c.args[0],
                                                  primfunc_name_hint="fast_sigmoid"),
        "relax.nn.silu": lambda bb, c: bb.call_te(
            lambda x: topi.multiply(x, _fast_sigmoid(x)), c.args[0],
            primfunc_name_hint="fast_silu"),
        "relax.nn.gelu": lambda bb, c: bb.call_te(gelu, c.args[0], primfunc_name_hint="fast_gelu"),
        "relax.nn.softmax": lambda bb, c: bb.call_te(topi.nn.fast_softmax, c.args[0],
                                                     c.attrs.axis),
        "relax.exp": lambda bb, c: bb.call_te(topi.fast_exp, c.args[0]),
        "relax.erf": lambda bb, c: bb.call_te(topi.fast_erf, c.args[0]),
        "relax.tanh": lambda bb, c: bb.call_te(topi.fast_tanh, c.args[0]),
    }

    def rule(bb, call):
        fn = rules.get(getattr(call.op, "name", None))
        return fn(bb, call) if fn is not None and f32(call) else None

    return rewrite_calls(mod, rule)


def applies_to(target) -> bool:
    """x86-64 CPU builds only: CUDA's expf is already fast, other CPUs were not measured."""
    from ..targets import x86_measured

    return x86_measured(target)
