"""One helper for the pipeline's call-by-call Relax rewrites (fast_math, clip_as_min_max)."""
from __future__ import annotations

from typing import Callable


def rewrite_calls(mod, rule: Callable):
    """``mod`` with every call in its Relax functions passed to ``rule(builder, call)``,
    which returns the replacement expression or None to keep the call (children first)."""
    from tvm import relax
    from tvm.relax import PyExprMutator, expr_functor

    @expr_functor.mutator
    class _Mutator(PyExprMutator):
        def visit_call_(self, call):
            call = super().visit_call_(call)
            new = rule(self.builder_, call)
            return call if new is None else new

    m = _Mutator(mod)
    for gv, func in mod.functions_items():
        if isinstance(func, relax.Function):
            m.builder_.update_func(gv, m.visit_expr(func))
    return m.builder_.get()
