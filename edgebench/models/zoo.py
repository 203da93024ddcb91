"""timm and torchvision models by name: timm first, torchvision for the few timm lacks.
An architecture may take its own head (``num_classes``: a fine-tuned checkpoint's class count).

Weights policy (``--weights``):
  auto        pretrained when cached or reachable, else seeded random weights (said in every output)
  pretrained  pretrained or a clear error
  random      seeded random weights ("random-seed-N"; "random-seed-N+bn-recalibrated" for a
              model with batch norm, see below)
  PATH        a local checkpoint (state_dict, or a dict holding one under "state_dict"/"model")
The choice is resolved once in the main process; workers get the resolved value.

Seeded random weights with batch norm: timm initialises every BatchNorm's running statistics
to mean 0, variance 1, which matches no activation. Through a deep network the logits then
collapse: mobilenetv2 predicted one class for every image, and efficientnet_b0's logits were
1e-4 in size. Such a model hides errors (top-1 agreement is trivially 1.0). So the running
statistics are re-estimated on the bundled calibration images (``datasets/calibration/``,
never an evaluated image), in train mode with a cumulative average, then the model goes back
to eval (``recalibrate_batchnorm``); the weights field says so: "random-seed-N+bn-recalibrated".
Pretrained weights and checkpoints are never touched.
"""
from __future__ import annotations

import difflib
import os
import socket
from pathlib import Path


SEED_MODELS = [
    "resnet152",
    "mobilenetv2_100",
    "squeezenet1_1",
    "efficientnet_b0",
    "vgg16",
    "swin_tiny_patch4_window7_224",
]
# timm lacks SqueezeNet; these come from torchvision.
TORCHVISION_MODELS = {"squeezenet1_0", "squeezenet1_1"}
DEFAULT_SEED = 0


from .errors import ModelError  # noqa: F401 - re-exported


def known_names() -> list[str]:
    import timm

    return sorted(set(timm.list_models()) | TORCHVISION_MODELS)


def check_name(name: str) -> None:
    """Raise ModelError with close matches when ``name`` is not a model we can build."""
    if name in TORCHVISION_MODELS:
        return
    import timm

    if timm.is_model(name):
        return
    close = difflib.get_close_matches(name, known_names(), n=4, cutoff=0.6)
    hint = f"; did you mean: {', '.join(close)}?" if close else ""
    raise ModelError(f"unknown model '{name}'{hint}")


def source_of(name: str) -> str:
    return "torchvision" if name in TORCHVISION_MODELS else "timm"


def data_config(name: str) -> dict:
    """The model's own preprocessing (timm's names): input_size, interpolation, mean, std,
    crop_pct, crop_mode. Needs no weights and does not build the model."""
    import timm
    from timm.data import resolve_data_config

    if source_of(name) == "torchvision":
        # torchvision's ImageNet recipe for SqueezeNet: resize 256, crop 224, bilinear.
        return {"input_size": (3, 224, 224), "interpolation": "bilinear",
                "mean": (0.485, 0.456, 0.406), "std": (0.229, 0.224, 0.225),
                "crop_pct": 0.875, "crop_mode": "center"}
    cfg = timm.get_pretrained_cfg(name)
    args = cfg.to_dict() if cfg is not None else {}
    return dict(resolve_data_config(args, use_test_size=True))


# ----------------------------------------------------------------------------- weights

def _hub_reachable(timeout: float = 3.0) -> bool:
    if os.environ.get("HF_HUB_OFFLINE") in ("1", "true", "True"):
        return False
    try:
        socket.create_connection(("huggingface.co", 443), timeout=timeout).close()
        return True
    except OSError:
        return False


IMAGENET_CLASSES = 1000


def _torchvision_build(name: str, pretrained: bool, num_classes: int | None = None):
    import torchvision

    weights = "DEFAULT" if pretrained else None
    extra = {"num_classes": num_classes} if num_classes else {}
    return getattr(torchvision.models, name)(weights=weights, **extra)


def _timm_build(name: str, pretrained: bool, num_classes: int | None = None):
    import timm

    extra = {"num_classes": num_classes} if num_classes else {}
    return timm.create_model(name, pretrained=pretrained, **extra)


def _build_raw(name: str, pretrained: bool, num_classes: int | None = None):
    """``num_classes``: a head of that many classes (None: the architecture's own, 1000)."""
    if source_of(name) == "torchvision":
        return _torchvision_build(name, pretrained, num_classes)
    return _timm_build(name, pretrained, num_classes)


def own_head(num_classes: int | None) -> bool:
    """Whether ``num_classes`` asks for a head other than ImageNet's: no pretrained head then."""
    return bool(num_classes) and num_classes != IMAGENET_CLASSES


def _pretrained_cached(name: str) -> bool:
    """True when pretrained weights are already on disk, so loading needs no network.
    (huggingface_hub reads HF_HUB_OFFLINE at import, so the cache is looked up directly.)"""
    import torch.hub

    hub_ckpts = Path(torch.hub.get_dir()) / "checkpoints"
    if source_of(name) == "torchvision":
        import torchvision

        w = torchvision.models.get_model_weights(name).DEFAULT
        return (hub_ckpts / os.path.basename(w.url)).is_file()
    import timm

    cfg = timm.get_pretrained_cfg(name)
    if cfg is None:
        return False
    if cfg.hf_hub_id:
        from huggingface_hub import try_to_load_from_cache

        for fname in (cfg.hf_hub_filename, "model.safetensors", "pytorch_model.bin"):
            if fname and isinstance(try_to_load_from_cache(cfg.hf_hub_id, fname), str):
                return True
    if cfg.file and Path(cfg.file).is_file():
        return True
    return bool(cfg.url) and (hub_ckpts / os.path.basename(cfg.url)).is_file()


def resolve_weights(name: str, policy: str, seed: int = DEFAULT_SEED,
                    num_classes: int | None = None) -> tuple[str, str]:
    """Decide which weights ``name`` uses. Returns (weights, note) where weights is
    "pretrained", "random-seed-N" or an absolute checkpoint path, and note says why.
    ``num_classes`` other than 1000: no pretrained head exists, so auto means random."""
    if policy == "random":
        w = random_weights(name, seed)
        return w, "random weights requested" + _bn_note(w)
    if policy not in ("auto", "pretrained"):
        path = Path(policy).expanduser()
        if not path.is_file():
            raise ModelError(f"--weights: checkpoint '{policy}' does not exist (expected auto, "
                             "pretrained, random or a path to a checkpoint file)")
        return str(path.resolve()), "local checkpoint"
    if own_head(num_classes):
        if policy == "pretrained":
            raise ModelError(f"--weights pretrained: no pretrained weights for '{name}' with a "
                             f"{num_classes}-class head; give --weights PATH (your checkpoint)")
        w = random_weights(name, seed)
        return w, (f"no pretrained weights for a {num_classes}-class head (give --weights PATH, "
                   "your checkpoint); seeded random weights" + _bn_note(w))
    if _pretrained_cached(name):
        return "pretrained", "pretrained weights found in the local cache"
    if _hub_reachable():
        try:
            _build_raw(name, pretrained=True)  # downloads into the cache once, here
            return "pretrained", "pretrained weights downloaded"
        except Exception as e:  # noqa: BLE001 - any download failure means "not available"
            why = f"download failed: {type(e).__name__}: {str(e).splitlines()[0][:200]}"
    else:
        why = "not cached and the weights hub is unreachable"
    if policy == "pretrained":
        raise ModelError(f"--weights pretrained: no pretrained weights for '{name}' ({why})")
    w = random_weights(name, seed)
    return w, f"pretrained weights unavailable ({why}); seeded random weights" + _bn_note(w)


def check_pretrained(name: str) -> None:
    """``--weights pretrained``, checked before anything runs: the weights are cached or the
    hub is reachable (a download can still fail later; that is said then). ModelError if not."""
    if not _pretrained_cached(name) and not _hub_reachable():
        raise ModelError(f"--weights pretrained: no pretrained weights for '{name}' (not cached "
                         "and the weights hub is unreachable); use --weights auto or random")


def _state_dict(obj) -> dict:
    """The state dict a loaded checkpoint holds: itself, or the dict under "state_dict",
    "model", "state_dict_ema", "model_ema" or "ema" (as timm's training script saves them);
    a DataParallel "module." prefix dropped."""
    if isinstance(obj, dict):
        for k in ("state_dict", "model", "state_dict_ema", "model_ema", "ema"):
            if k in obj and isinstance(obj[k], dict):
                obj = obj[k]
                break
    if not isinstance(obj, dict):
        raise ModelError(f"holds a {type(obj).__name__}, not a state dict")
    return {str(k).removeprefix("module."): v for k, v in obj.items()}


def _load_checkpoint(model, path: str) -> None:
    import torch

    sd = _state_dict(torch.load(path, map_location="cpu", weights_only=True))
    model.load_state_dict(sd)


def _load_failure(e: Exception) -> str:
    """Why torch.load(weights_only=True) refused a file, in one line."""
    import re

    text = str(e)
    if "Weights only load failed" in text:
        m = re.search(r"Unsupported global: GLOBAL (\S+)", text)
        what = f" (it pickles {m.group(1)})" if m else ""
        return ("holds Python objects besides tensors, which torch.load(weights_only=True) "
                f"refuses to unpickle{what}; save model.state_dict() instead")
    why = re.sub(r"\x1b\[[0-9;]*m", "", (text.strip().splitlines() or [""])[0])[:200]
    return ("not a PyTorch checkpoint torch.load(weights_only=True) can read: truncated, "
            f"corrupt or another kind of file ({type(e).__name__}: {why})")


def check_checkpoint(path: str, names: list[str], num_classes: int | None = None) -> None:
    """Check, before anything runs, that ``path`` is a checkpoint every model in ``names``
    can load: torch.load(weights_only=True) reads it (the way the workers will), it holds
    a state dict of tensors, and its names and shapes are the model's (the model is built
    on the meta device: no memory, no weights), with a ``num_classes`` head where given.
    Raise ModelError naming the file and why; a head of another class count names both."""
    import zipfile

    import torch

    p = Path(path).expanduser()
    where = f"--weights {path}"
    if not p.exists():
        raise ModelError(f"{where}: no such checkpoint file (expected auto, pretrained, random "
                         "or a path to a checkpoint file)")
    if p.is_dir():
        raise ModelError(f"{where}: is a folder, not a checkpoint file")
    try:
        # A zip checkpoint (torch.save's format) maps its tensors instead of reading them.
        mmap = zipfile.is_zipfile(p)
        obj = torch.load(p, map_location="cpu", weights_only=True, mmap=mmap)
    except Exception as e:  # noqa: BLE001 - whatever torch says, it is not a checkpoint
        raise ModelError(f"{where}: {_load_failure(e)}") from None
    try:
        sd = _state_dict(obj)
    except ModelError as e:
        raise ModelError(f"{where}: {e}") from None
    bad = [k for k, v in sd.items() if not isinstance(v, torch.Tensor)]
    if bad:
        raise ModelError(f"{where}: not a state dict of tensors ({bad[0]!r} is a "
                         f"{type(sd[bad[0]]).__name__})")
    for name in names:
        with torch.device("meta"):
            want = {k: tuple(v.shape) for k, v in _build_raw(name, False, num_classes)
                    .state_dict().items()}
        missing = [k for k in want if k not in sd]
        extra = [k for k in sd if k not in want]
        shape = [f"{k} {tuple(sd[k].shape)} vs {want[k]}" for k in want
                 if k in sd and tuple(sd[k].shape) != want[k]]
        if missing or extra or shape:
            def few(xs):
                return ", ".join(xs[:3]) + (f" (+{len(xs) - 3} more)" if len(xs) > 3 else "")
            parts = ([f"{len(missing)} missing keys: {few(missing)}"] if missing else []) + \
                    ([f"{len(extra)} unexpected keys: {few(extra)}"] if extra else []) + \
                    ([f"{len(shape)} shapes differ (checkpoint vs model): {few(shape)}"]
                     if shape else [])
            head = _head_classes(sd, want)
            if head is not None:
                have = num_classes or IMAGENET_CLASSES
                parts.insert(0, f"its head has {head} classes, the model {have} (give "
                                f"--num-classes {head} for a checkpoint of that head)")
            raise ModelError(f"{where}: not a checkpoint of {name}: " + "; ".join(parts))


def _head_classes(sd: dict, want: dict) -> int | None:
    """The class count of the checkpoint's head where the only shape differences are in the
    classifier (the last parameters whose first dimension differs), else None."""
    differ = [k for k in want if k in sd and tuple(sd[k].shape) != want[k]]
    if not differ or len(differ) > 2 or any(k not in want for k in sd) or any(k not in sd for k in want):
        return None
    firsts = {int(sd[k].shape[0]) for k in differ if sd[k].dim() >= 1}
    return firsts.pop() if len(firsts) == 1 else None


BN_RECALIBRATED = "+bn-recalibrated"
BN_IMAGES = 16          # calibration images for the statistics (one batch)


def _has_batchnorm(name: str) -> bool:
    import torch

    with torch.device("meta"):           # no memory, no weights
        model = _build_raw(name, pretrained=False)
    return any(isinstance(m, torch.nn.modules.batchnorm._BatchNorm) for m in model.modules())


def random_weights(name: str, seed: int) -> str:
    """The weights field of seeded random weights for ``name``."""
    return f"random-seed-{seed}" + (BN_RECALIBRATED if _has_batchnorm(name) else "")


def _bn_note(weights: str) -> str:
    return (f"; batch-norm running statistics re-estimated on {BN_IMAGES} bundled calibration "
            "images" if weights.endswith(BN_RECALIBRATED) else "")


def recalibrate_batchnorm(model, cfg: dict, n: int = BN_IMAGES) -> int:
    """Re-estimate every BatchNorm's running mean and variance on ``n`` bundled calibration
    images with the model's own preprocessing (one batch, cumulative average: the batch's
    statistics exactly). ``cfg``: the model's preprocessing (``data_config``). Returns how
    many BatchNorm layers it set."""
    import numpy as np
    import torch
    from PIL import Image

    from ..data.calibration import bundled_calibration
    from ..data.prepare import _transform

    bns = [m for m in model.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
    if not bns:
        return 0
    tf = _transform(cfg)
    arrays = []
    for path in bundled_calibration().limit(n).paths:
        with Image.open(path) as im:
            arrays.append(np.asarray(tf(im.convert("RGB")), dtype=np.float32))
    x = torch.from_numpy(np.stack(arrays))
    mean = torch.tensor(cfg["mean"]).view(1, -1, 1, 1) * 255.0
    std = torch.tensor(cfg["std"]).view(1, -1, 1, 1) * 255.0
    x = (x - mean) / std
    model.eval()
    saved = [m.momentum for m in bns]
    for m in bns:
        m.reset_running_stats()
        m.momentum = None            # cumulative average over the batches seen
        m.train()                    # only the BatchNorms: dropout and drop-path stay off
    with torch.no_grad():
        model(x)
    for m, mom in zip(bns, saved):
        m.momentum = mom
    model.eval()
    return len(bns)


def build_model(name: str, weights: str, num_classes: int | None = None):
    """Build the eval-mode FP32 CPU torch model with the resolved ``weights`` (and a
    ``num_classes`` head where given)."""
    import torch

    if weights == "pretrained":
        # Resolved (and downloaded once) by the main process; workers run with HF_HUB_OFFLINE=1.
        model = _build_raw(name, True, num_classes)
    elif weights.startswith("random-seed-"):
        seed = weights[len("random-seed-"):].removesuffix(BN_RECALIBRATED)
        torch.manual_seed(int(seed))
        model = _build_raw(name, False, num_classes)
        if weights.endswith(BN_RECALIBRATED):
            torch.manual_seed(int(seed))
            recalibrate_batchnorm(model, data_config(name))
    else:
        model = _build_raw(name, False, num_classes)
        _load_checkpoint(model, weights)
    return model.eval().float()
