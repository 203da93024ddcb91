"""Helpers for the pipeline's Relax rewrites (cpu/'s, and passes.py's own), and ``Rewrite``,
the descriptor each optional lowering rewrite registers with (lowering.py)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional


@dataclass(frozen=True)
class Rewrite:
    """One lowering choice. Everything that names it is made from this: the tune command's
    option ``--<name>``, the variant's ``tvm_<name>``, the ``TuneConfig`` field, the
    ``tuning.json`` key, the compiled-library cache key and the ``--help`` text."""

    name: str                  # "conv2d" -> --conv2d, tvm_conv2d, tuning.json "conv2d"
    choices: tuple
    plain: str                 # TVM's own form: the default where it was not measured
    measured: str              # the default on x86-64 CPU targets (targets.x86_measured)
    before: str                # what a database made before the choice was recorded used
    help: str                  # one line for --help
    says: str = ""             # the measured default in a few words, for --help
    stage: str = "layout"      # "graph": before the layout conversion; "layout": after it
    nhwc_only: bool = True     # in NCHW it keeps the plain form
    needs_nhwc: bool = False   # a non-plain value in NCHW is an error, not ignored
    apply: Optional[Callable] = None        # (mod, target, value) -> mod, value != plain
    cache_tag: Optional[Callable] = None    # value -> the cache key's part (non-plain values)

    def tag(self, value: str) -> str:
        return self.cache_tag(value) if self.cache_tag else f"{self.name}-{value}"


def const_np(c):
    """numpy value of a Relax constant (``GenericConst.value`` in TVM 0.27, ``.data`` before)."""
    v = getattr(c, "value", None)
    if v is None:
        v = c.data
    return v.numpy()


def rewrite_calls(mod, rule: Callable, lookup: bool = False):
    """``mod`` with every call in its Relax functions passed to ``rule(builder, call)``
    (children first), which returns a replacement or None. ``lookup=True``: ``rule(builder,
    call, value_of)``, ``value_of(var)`` the (rewritten) value bound to ``var`` or None."""
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
    """Whether ``call`` is a one-group Relax conv2d on ``layout`` data with the matching
    kernel layout (and, with ``out_layout``, output in ``layout``): the convs the rewrites
    may slice, pad or reorder."""
    if getattr(call.op, "name", None) != "relax.nn.conv2d":
        return False
    a = call.attrs
    return (a["data_layout"] == layout and a["kernel_layout"] == _KERNEL_LAYOUT[layout]
            and (not out_layout or str(a["out_layout"]) == layout)
            and int(a["groups"]) == 1)


def tidy(mod):
    """``mod`` without the bindings a rewrite left unused, its aliases folded."""
    import tvm
    from tvm import relax

    return tvm.transform.Sequential([relax.transform.DeadCodeElimination(),
                                     relax.transform.CanonicalizeBindings()])(mod)
