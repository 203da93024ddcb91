"""A model from the user's own code: ``--models package.module:function``.

The function takes no arguments and returns a ``torch.nn.Module``; it is imported from
``--model-path`` (default: the working directory), in every process that builds the model.
Its weights are whatever the function gives it ("factory-seed-N": torch's generator is
seeded with ``--seed`` before every call, so a random initialisation is the same in every
process, the reference's and each variant's) or a checkpoint (``--weights PATH``, loaded
strictly into what the function returned). ``--weights random`` is the first: the function
initialises the module.

Caches key on the module's source file and the function's name (``fingerprint``): a changed
factory is never served an artifact built from the old one.
"""
from __future__ import annotations

import hashlib
import importlib
import re
import sys

from .errors import ModelError

FACTORY = re.compile(r"^[A-Za-z_][\w]*(\.[A-Za-z_][\w]*)*:[A-Za-z_][\w]*$")
WEIGHTS = "factory-seed-"  # the weights field: what the function loads or initialises, seeded


def is_factory(name: str) -> bool:
    return bool(FACTORY.match(name))


def _function(name: str, model_path: str | None):
    module_name, func_name = name.split(":")
    if model_path and model_path not in sys.path:
        sys.path.insert(0, model_path)
    try:
        module = importlib.import_module(module_name)
    except Exception as e:  # noqa: BLE001 - whatever the user's module raises
        where = f" (from {model_path})" if model_path else ""
        raise ModelError(f"--models {name}: cannot import {module_name}{where}: "
                         f"{type(e).__name__}: {_first(e)}") from None
    fn = getattr(module, func_name, None)
    if not callable(fn):
        raise ModelError(f"--models {name}: {module_name} has no function {func_name}")
    return module, fn


def _first(e: Exception) -> str:
    return (str(e).strip().splitlines() or [""])[0][:300]


def build(name: str, model_path: str | None, weights: str):
    """The factory's module, eval mode, FP32, CPU, with the resolved ``weights``."""
    import torch

    _, fn = _function(name, model_path)
    # Seeded before every call: a random initialisation must be the same in every process.
    seed = int(weights[len(WEIGHTS):]) if weights.startswith(WEIGHTS) else 0
    torch.manual_seed(seed)
    try:
        model = fn()
    except Exception as e:  # noqa: BLE001
        raise ModelError(f"--models {name}: the factory raised {type(e).__name__}: "
                         f"{_first(e)}") from None
    if not isinstance(model, torch.nn.Module):
        raise ModelError(f"--models {name}: the factory returned a {type(model).__name__}, "
                         "not a torch.nn.Module")
    if not weights.startswith(WEIGHTS):
        from .zoo import _load_checkpoint

        try:
            _load_checkpoint(model, weights)
        except RuntimeError as e:
            raise ModelError(f"--weights {weights}: not a checkpoint of {name}: "
                             f"{_first(e)}") from None
    return model.eval().float()


def fingerprint(name: str, model_path: str | None) -> str:
    """sha256 of the factory's source file and the function's name."""
    import inspect

    module, fn = _function(name, model_path)
    h = hashlib.sha256(name.encode())
    try:
        src = inspect.getsourcefile(module)
        if src:
            with open(src, "rb") as f:
                h.update(f.read())
    except (OSError, TypeError):
        h.update(inspect.getsource(fn).encode())
    return h.hexdigest()


def resolve_weights(policy: str, seed: int) -> tuple[str, str]:
    if policy in ("auto", "random"):
        return f"{WEIGHTS}{seed}", (f"the weights the factory function gives the model (torch "
                                    f"seeded with {seed} before each call)")
    if policy == "pretrained":
        raise ModelError("--weights pretrained: a factory model has no pretrained weights of "
                         "edgebench's to load; use auto (what the factory gives) or PATH")
    from pathlib import Path

    path = Path(policy).expanduser()
    if not path.is_file():
        raise ModelError(f"--weights: checkpoint '{policy}' does not exist")
    return str(path.resolve()), "local checkpoint, loaded into the factory's model"
