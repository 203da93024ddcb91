"""The operator type of a profiled layer, the same eight types for every runtime, so that one
model's variants can be set side by side where their layers cannot be matched one to one
(TVM, torch.compile and XLA fuse; TensorRT fuses and reformats).

A layer's name or operator differs by runtime: an ONNX op type (``Conv``, ``QLinearConv``), a
TVM kernel (``fused_conv2d_add_relu``), an ATen operator (``aten::mkldnn_convolution``), an
XLA HLO instruction (``convolution.3``, ``ynn_fusion``), a TensorRT layer (its type from the
engine inspector, or its name). The rules look for the operator's words in that text; the
first rule that matches wins, so a fused kernel counts as its heaviest operator (a
convolution fused with its add and ReLU is a convolution)."""
from __future__ import annotations

import re

TYPES = ("conv", "depthwise", "matmul/gemm", "pool", "norm", "elementwise",
         "data movement", "other")

# (type, words), first match wins; words are matched in the lower-cased name and operator.
_RULES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("depthwise", ("depthwise", "dwconv")),
    ("conv", ("conv", "winograd")),
    ("matmul/gemm", ("matmul", "gemm", "dense", "dot", "linear", "addmm", "bmm", "mm",
                     "fullyconnected", "fully_connected", "einsum")),
    ("pool", ("pool", "reduce", "mean", "adaptive_avg")),
    ("norm", ("norm", "softmax", "variance")),
    # an activation or arithmetic named outright, before the data-movement words that a
    # fused kernel's name also carries (XLA's broadcast_multiply_fusion multiplies)
    ("elementwise", ("relu", "clip", "clamp", "hardtanh", "sigmoid", "silu", "swish", "gelu", "hardswish",
                     "tanh", "erf", "multiply", "subtract", "divide", "maximum", "minimum",
                     "pointwise", "elementwise", "activation", "qlinear")),
    ("data movement", ("transpose", "reshape", "layout", "reformat", "shuffle", "copy",
                       "concat", "cat", "slice", "split", "gather", "take", "pad", "flatten",
                       "squeeze", "expand", "permute", "view", "contiguous", "roll", "shape",
                       "quantize", "dequantize", "reorder", "clone", "broadcast", "identity",
                       "cast", "convert", "bitcast", "tuple")),
    ("elementwise", ("add", "mul", "sub", "div", "exp", "sqrt", "pow", "max", "min", "neg",
                     "abs", "where", "scale", "sum", "unary", "fusion")),
)

# An ATen/ONNX word inside a longer one must not decide: "mm" in "comm", "linear" in
# "DequantizeLinear", "cat" in "location".
_SHORT = {"mm", "cat", "dot", "add", "mul", "sub", "div", "exp", "pow", "max", "min", "abs",
          "neg", "pad", "bmm", "cast", "take", "view", "copy", "mean", "shape", "linear",
          "sum", "where", "tuple"}


def _has(word: str, text: str) -> bool:
    if word not in _SHORT:
        return word in text
    return re.search(rf"(^|[^a-z]){word}([^a-z]|$)", text) is not None


def op_type(name: str, op: str = "", depthwise: bool = False) -> str:
    """One of ``TYPES`` for a layer called ``name`` whose operator is ``op``: the operator
    alone where there is one (an ONNX node's name is its module path: ``/layer1/conv1/Relu``
    is a ReLU), else the name (a TVM kernel, an XLA instruction). ``depthwise``: the runtime
    said this convolution has one input channel per group."""
    text = (op or name).lower().replace("::", " ").replace("/", " ")
    for kind, words in _RULES:
        if any(_has(w, text) for w in words):
            if kind == "conv" and depthwise:
                return "depthwise"
            return kind
    return "other"
