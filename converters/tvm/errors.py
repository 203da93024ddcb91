"""The package's exceptions; the tuning command maps them to exit codes (cli.py)."""
from __future__ import annotations


class TvmError(RuntimeError):
    """A model TVM could not import, tune or build; the message carries the compiler's."""


class TargetError(ValueError):
    """A bad ``--target``/``tvm_target`` value (a usage error: exit code 2)."""


class RpcError(RuntimeError):
    """The RPC tracker or the device behind a key did not answer (exit code 2)."""


class ExportError(RuntimeError):
    """An artifact could not be exported (cross compiler, NVRTC, library layout)."""
