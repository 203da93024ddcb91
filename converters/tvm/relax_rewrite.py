"""Helpers for the pipeline's call-by-call Relax rewrites (fast_math, clip_as_min_max,
concat_split, pad_channels, input_transpose, winograd)."""
from __future__ import annotations

from typing import Callable


def rewrite_calls(mod, rule: Callable, lookup: bool = False):
    """``mod`` with every call in its Relax functions passed to ``rule(builder, call)``,
    which returns the replacement expression or None to keep the call (children first).
    ``lookup=True``: the rule is called as ``rule(builder, call, value_of)``, where
    ``value_of(var)`` is the (rewritten) value bound to ``var``, or None, so that a rule can
    look at the producers of a call's arguments."""
    from tvm import relax
    from tvm.relax import PyExprMutator, expr_functor

    @expr_functor.mutator
    class _Mutator(PyExprMutator):
        def visit_call_(self, call):
            call = super().visit_call_(call)
            new = (rule(self.builder_, call, self._value_of) if lookup
                   else rule(self.builder_, call))
            return call if new is None else new

        def _value_of(self, var):
            if not isinstance(var, relax.Var):
                return None
            return self.lookup_binding(var)

    m = _Mutator(mod)
    for gv, func in mod.functions_items():
        if isinstance(func, relax.Function):
            m.builder_.update_func(gv, m.visit_expr(func))
    return m.builder_.get()


# the kernel layout that goes with each data layout the rewrites take
_KERNEL_LAYOUT = {"NCHW": "OIHW", "NHWC": "OHWI"}


def dense_conv2d(call, layout: str, out_layout: bool = True) -> bool:
    """Whether ``call`` is a Relax conv2d of one group (not grouped or depthwise) on
    ``layout`` data (NCHW or NHWC) with its kernel in the matching layout (OIHW, OHWI) and,
    unless ``out_layout`` is False, its output in ``layout`` too: the convs whose weight the
    layout rewrites may slice, pad or reorder."""
    if getattr(call.op, "name", None) != "relax.nn.conv2d":
        return False
    a = call.attrs
    return (a["data_layout"] == layout and a["kernel_layout"] == _KERNEL_LAYOUT[layout]
            and (not out_layout or str(a["out_layout"]) == layout)
            and int(a["groups"]) == 1)


def tidy(mod):
    """``mod`` without the bindings a rewrite left unused, its aliases folded (what each
    rewrite that replaces calls runs after it)."""
    import tvm
    from tvm import relax

    return tvm.transform.Sequential([relax.transform.DeadCodeElimination(),
                                     relax.transform.CanonicalizeBindings()])(mod)
