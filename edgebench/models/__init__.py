"""Models, by the name given on ``--models``, in three kinds:

  zoo      a timm or torchvision architecture by name (``resnet152``), ImageNet's head or
           one of ``--num-classes N`` (``zoo.py``);
  factory  the user's own code, ``package.module:function`` returning an ``nn.Module``
           (``factory.py``);
  onnx     an ONNX file, ``path/to/model.onnx`` (``onnx_file.py``).

Each becomes a ``converters.base.ModelSpec`` (``make_spec``) that every variant reads. What
the run learns about a model before its cells (``describe``: kind, architecture, class count,
outputs, content hashes, where its preprocessing came from) goes into run.json and every
record as ``model_info``; caches key on its ``fingerprint``: the checkpoint's, the factory
source's or the ONNX file's sha256, so a changed file is never served a stale artifact.

Weights policy (``--weights``), per kind: see ``zoo`` (auto, pretrained, random, PATH),
``factory`` (auto: what the function gives; random; PATH) and ``onnx_file`` (its own).
"""
from __future__ import annotations

import functools
from pathlib import Path

from .args import IMAGENET_DEFAULTS, MODEL_ARGS, ModelArgs, from_cli  # noqa: F401
from .errors import ModelError
from .zoo import (BN_IMAGES, BN_RECALIBRATED, DEFAULT_SEED, IMAGENET_CLASSES,  # noqa: F401
                  SEED_MODELS, TORCHVISION_MODELS, _hub_reachable, _pretrained_cached,
                  build_model, check_pretrained, known_names, own_head, random_weights,
                  recalibrate_batchnorm)
from . import factory, onnx_file, zoo

__all__ = ["BN_IMAGES", "BN_RECALIBRATED", "DEFAULT_SEED", "IMAGENET_CLASSES", "IMAGENET_DEFAULTS",
           "KINDS", "MODEL_ARGS", "SEED_MODELS", "TORCHVISION_MODELS", "ModelArgs", "ModelError",
           "build_model", "canonical_onnx", "check_checkpoint", "check_name", "check_pretrained",
           "classes_of", "data_config", "describe", "factory", "from_cli", "kind_of",
           "known_names", "make_spec", "onnx_file", "own_head", "preprocess_source",
           "random_weights", "recalibrate_batchnorm", "resolve_weights", "slug", "source_of",
           "spec_for_command",
           "zoo", "_hub_reachable", "_pretrained_cached"]

KINDS = ("zoo", "factory", "onnx")


def kind_of(name: str) -> str:
    if onnx_file.is_onnx(name):
        return "onnx"
    if factory.is_factory(name):
        return "factory"
    return "zoo"


def source_of(name: str) -> str:
    """Where the model comes from: "timm", "torchvision", "factory" or "onnx"."""
    kind = kind_of(name)
    return zoo.source_of(name) if kind == "zoo" else kind


def slug(name: str) -> str:
    """``name`` as one safe file-name component (a zoo name is its own slug)."""
    import hashlib
    import re

    if kind_of(name) == "zoo":
        return name
    base = Path(name).stem if kind_of(name) == "onnx" else name.replace(":", "-")
    base = re.sub(r"[^A-Za-z0-9_.-]+", "_", base)[:60] or "model"
    return f"{base}-{hashlib.sha256(name.encode()).hexdigest()[:8]}"


def check_name(name: str) -> None:
    """Raise ModelError when ``name`` cannot be a model: an unknown zoo name (with close
    matches), an ONNX path that is not a file. The file is parsed, and a factory imported,
    once, by ``describe`` (the CLI's ``check_models``) or ``ship.pack`` (a fleet config)."""
    kind = kind_of(name)
    if kind == "zoo":
        zoo.check_name(name)
    elif kind == "onnx":
        onnx_file.check_path(name)


# ----------------------------------------------------------------------------- preprocessing

@functools.lru_cache(maxsize=64)
def _onnx_facts(path: str, stamp: tuple, input_size: tuple | None) -> dict:
    return onnx_file.inspect(path, input_size)


def onnx_facts(name: str, margs: ModelArgs) -> dict:
    p = Path(margs.source(name)).expanduser()
    st = p.stat() if p.is_file() else None
    return _onnx_facts(str(p), (st.st_size, st.st_mtime_ns) if st else (), margs.input_size)


def data_config(name: str, margs: ModelArgs | None = None) -> dict:
    """The model's preprocessing (timm's names): input_size, interpolation, mean, std,
    crop_pct, crop_mode. A zoo model's own, with what the user gave over it; a factory's
    or an ONNX file's: what the user gave, ImageNet's defaults for the rest (an ONNX file's
    static input size first)."""
    margs = margs or ModelArgs()
    kind = kind_of(name)
    if kind == "zoo":
        cfg = zoo.data_config(name)
    else:
        cfg = dict(IMAGENET_DEFAULTS)
        if kind == "onnx":
            cfg["input_size"] = tuple(onnx_facts(name, margs)["input_size"])
    cfg.update(margs.given_preprocess())
    return cfg


def preprocess_source(name: str, margs: ModelArgs | None = None) -> str:
    margs = margs or ModelArgs()
    given = margs.given_preprocess()
    from .args import PREPROCESS_FLAGS

    flags = ", ".join(PREPROCESS_FLAGS[k] for k in given)
    kind = kind_of(name)
    if kind == "zoo":
        base = f"{zoo.source_of(name)}'s config for {name}"
    elif kind == "onnx" and onnx_facts(name, margs)["size_given"] and "input_size" not in given:
        base = "the ONNX file's input size, ImageNet's defaults"
    else:
        base = "ImageNet's defaults (3x224x224, bicubic, crop 0.875, ImageNet mean/std)"
    return f"given ({flags}); for the rest {base}" if given else base


# ----------------------------------------------------------------------------- weights

def resolve_weights(name: str, policy: str, seed: int = DEFAULT_SEED,
                    margs: ModelArgs | None = None) -> tuple[str, str]:
    """(weights, note): what ``name`` runs with under ``policy`` (see each kind's module)."""
    margs = margs or ModelArgs()
    kind = kind_of(name)
    if kind == "onnx":
        return onnx_file.WEIGHTS, "the ONNX file's own weights"
    if kind == "factory":
        return factory.resolve_weights(policy, seed)
    return zoo.resolve_weights(name, policy, seed, margs.num_classes)


def check_checkpoint(path: str, names: list[str], num_classes: int | None = None) -> None:
    """``--weights PATH`` against the zoo models of ``names`` (a factory's is loaded into its
    module in ``check_model``; an ONNX file takes none)."""
    zoo_names = [n for n in names if kind_of(n) == "zoo"]
    if zoo_names or not names:
        zoo.check_checkpoint(path, zoo_names, num_classes)


def _sha256(path: str) -> str:
    from edgebench.util import sha256_file

    # Hashed where it lies, nothing written beside the user's file (no sidecar, unlike a cache).
    return sha256_file(path)


# ----------------------------------------------------------------------------- the model's facts

def _onnx_reference() -> dict:
    """What judges an ONNX file's parity: the variant the registry names for it."""
    import converters

    name = converters.onnx_reference()
    return {"reference": f"{name} (FP32, CPU)", "reference_variant": name}


def _outputs_of(value) -> list[dict]:
    """Names and shapes of a torch model's output(s): a tensor, or a tuple/list/dict of them."""
    import torch

    if isinstance(value, torch.Tensor):
        return [{"name": "output", "shape": list(value.shape)}]
    if isinstance(value, dict):
        return [o for k, v in value.items() for o in _named(_outputs_of(v), str(k))]
    if isinstance(value, (tuple, list)):
        return [o for i, v in enumerate(value) for o in _named(_outputs_of(v), f"output{i}")]
    raise ModelError(f"the model returned a {type(value).__name__}; edgebench needs tensors "
                     "(a tensor, or a tuple, list or dict of tensors)")


def _named(outs: list[dict], name: str) -> list[dict]:
    return [{**o, "name": name if o["name"] == "output" else f"{name}.{o['name']}"} for o in outs]


def classes_of(outputs: list[dict]) -> int | None:
    """The class count of a classifier's output (one [batch, classes] tensor), else None."""
    if len(outputs) == 1 and len(outputs[0]["shape"]) == 2 and isinstance(outputs[0]["shape"][1], int):
        return int(outputs[0]["shape"][1])
    return None


def describe(name: str, weights: str, margs: ModelArgs | None = None, run: bool = True) -> dict:
    """What the run knows of the model before its cells (``model_info`` in run.json and in
    every record), or ModelError naming what is wrong. ``run``: call the model once on a
    batch of zeros (a factory's module, an ONNX file on ORT's CPU provider) to learn its
    outputs and to refuse an input size it rejects, in its own words."""
    margs = margs or ModelArgs()
    kind = kind_of(name)
    cfg = data_config(name, margs)
    size = tuple(cfg["input_size"])
    info: dict = {"kind": source_of(name), "architecture": name, "input_size": list(size),
                  "preprocess_source": preprocess_source(name, margs),
                  "reference": "pytorch (FP32, CPU)"}
    if kind == "zoo":
        n = margs.num_classes or IMAGENET_CLASSES
        info.update(num_classes=n, outputs=[{"name": "logits", "shape": ["batch", n]}])
        if Path(weights).is_file():
            info["weights_sha256"] = _sha256(weights)
        info["fingerprint"] = info.get("weights_sha256", "")
        return info
    if kind == "onnx":
        facts = onnx_facts(name, margs)
        path = str(Path(margs.source(name)).expanduser())
        sha = _sha256(path)
        outputs = onnx_file.try_run(path, facts) if run else facts["outputs"]
        info.update(architecture=str(Path(path).resolve()), onnx_sha256=sha,
                    fingerprint=sha, static_batch=facts["static_batch"],
                    input_name=facts["input_name"], opset=facts["opset"],
                    **_onnx_reference())
        info["outputs"] = [{"name": o["name"], "shape": ["batch", *o["shape"][1:]]} for o in outputs]
        info["num_classes"] = classes_of(outputs)
        return info
    fp = factory.fingerprint(name, margs.import_path(name))
    info.update(factory_sha256=fp, model_path=margs.import_path(name))
    if Path(weights).is_file():
        info["weights_sha256"] = _sha256(weights)
    info["fingerprint"] = fp + info.get("weights_sha256", "")
    if run:
        import torch

        model = factory.build(name, margs.import_path(name), weights)
        try:
            with torch.no_grad():
                out = model(torch.zeros(1, *size))
        except Exception as e:  # noqa: BLE001 - the model's own message is the answer
            raise ModelError(f"--models {name}: the model rejects input 1x{'x'.join(map(str, size))}"
                             f" ({type(e).__name__}: {(str(e).strip().splitlines() or [''])[0][:300]})"
                             "; give its size with --input-size CxHxW") from None
        outputs = _outputs_of(out)
        info["outputs"] = [{"name": o["name"], "shape": ["batch", *o["shape"][1:]]} for o in outputs]
        info["num_classes"] = classes_of(outputs)
    return info


# ----------------------------------------------------------------------------- the spec

def make_spec(name: str, weights: str, options: dict | None = None, info: dict | None = None):
    """The ``ModelSpec`` every variant reads. ``info``: ``describe``'s facts, as prepared
    for the run (the workers get them from the cell); computed here when not given."""
    from converters.base import ModelSpec

    options = dict(options or {})
    margs = ModelArgs.from_options(options)
    kind = kind_of(name)
    if info is None:
        info = describe(name, weights, margs, run=False)
    cfg = data_config(name, margs)
    spec = dict(name=name, weights=weights, input_size=tuple(cfg["input_size"]),
                num_classes=info.get("num_classes"), source=source_of(name), options=options,
                kind=kind, fingerprint=info.get("fingerprint", ""), slug=slug(name),
                outputs=[o["name"] for o in info.get("outputs", [])])
    if kind == "zoo":
        return ModelSpec(build=lambda: build_model(name, weights, margs.num_classes), **spec)
    if kind == "factory":
        return ModelSpec(build=lambda: factory.build(name, margs.import_path(name), weights),
                         **spec)

    def no_source():
        raise ModelError(f"{name} is an ONNX file: there is no PyTorch model to build")

    return ModelSpec(build=no_source, onnx_path=info.get("onnx_canonical") or "",
                     static_batch=info.get("static_batch"), **spec)


def spec_for_command(name: str, weights_policy: str, seed: int, margs: ModelArgs, cache: Path):
    """(spec, weights note) for a command that builds one model itself (edgebench.tune, the
    benchmarks): weights resolved, facts described, an ONNX file's canonical form in ``cache``."""
    weights, note = resolve_weights(name, weights_policy, seed, margs)
    info = describe(name, weights, margs, run=False)
    if info["kind"] == "onnx":        # the form every variant reads, in the cache
        info["onnx_canonical"] = canonical_onnx(name, info, margs, Path(cache))
    return make_spec(name, weights, {MODEL_ARGS: margs.to_json()}, info=info), note


def canonical_onnx(name: str, info: dict, margs: ModelArgs, cache: Path) -> str:
    """Write (once) the canonical form of an ONNX model into ``cache``; returns its path."""
    facts = dict(onnx_facts(name, margs), sha256=info.get("onnx_sha256"))
    return onnx_file.canonical(str(Path(margs.source(name)).expanduser()), facts, cache)

