"""The model options a user gives beside ``--models``: a head's class count, where a factory
is imported from, and the preprocessing of a model that has none of its own.

They travel to every worker inside the run's options, under ``MODEL_ARGS``, as plain JSON,
so a factory or an ONNX file is built the same way in every process.
"""
from __future__ import annotations

import dataclasses
import os

MODEL_ARGS = "model_args"          # the key in RunSettings.options

# ImageNet's preprocessing, timm's defaults: what a model with no config of its own gets.
IMAGENET_DEFAULTS = {"input_size": (3, 224, 224), "interpolation": "bicubic",
                     "mean": (0.485, 0.456, 0.406), "std": (0.229, 0.224, 0.225),
                     "crop_pct": 0.875, "crop_mode": "center"}
INTERPOLATIONS = ("bilinear", "bicubic", "nearest", "lanczos", "box", "hamming")
PREPROCESS_FLAGS = {"input_size": "--input-size", "mean": "--mean", "std": "--std",
                    "interpolation": "--interpolation", "crop_pct": "--crop-pct"}


@dataclasses.dataclass(frozen=True)
class ModelArgs:
    num_classes: int | None = None        # --num-classes: a timm/torchvision head of N classes
    model_path: str | None = None         # --model-path: where factories are imported from
    input_size: tuple | None = None       # --input-size C H W
    mean: tuple | None = None
    std: tuple | None = None
    interpolation: str | None = None
    crop_pct: float | None = None
    # Where a model named on --models lies on this machine when not at its name: a fleet
    # agent's copy of an ONNX file (the file) or of a factory's module (the folder to import
    # from), shipped by content hash (edgebench.models.ship). Name -> local path.
    files: dict | None = None

    def source(self, name: str) -> str:
        """The local path of model ``name``'s file (an ONNX file: its name, unless shipped)."""
        return (self.files or {}).get(name) or name

    def import_path(self, name: str) -> str | None:
        """The folder a factory is imported from: its shipped copy, else --model-path."""
        return (self.files or {}).get(name) or self.model_path

    def given_preprocess(self) -> dict:
        """The preprocessing settings the user gave (timm's names), and only those."""
        out = {k: getattr(self, k) for k in PREPROCESS_FLAGS if getattr(self, k) is not None}
        return {k: tuple(v) if isinstance(v, list) else v for k, v in out.items()}

    def to_json(self) -> dict:
        return {k: (list(v) if isinstance(v, tuple) else v)
                for k, v in dataclasses.asdict(self).items()}

    @classmethod
    def from_json(cls, d: dict | None) -> "ModelArgs":
        d = dict(d or {})
        for k in ("input_size", "mean", "std"):
            if d.get(k) is not None:
                d[k] = tuple(d[k])
        return cls(**{k: d.get(k) for k in (f.name for f in dataclasses.fields(cls))})

    @classmethod
    def from_options(cls, options: dict | None) -> "ModelArgs":
        return cls.from_json((options or {}).get(MODEL_ARGS))


def parse_input_size(text: str) -> tuple:
    """``3x224x224`` (or ``3,224,224``) -> (3, 224, 224); ValueError with the rule."""
    parts = text.replace(",", "x").lower().split("x")
    try:
        dims = tuple(int(p) for p in parts)
    except ValueError:
        dims = ()
    if len(dims) != 3 or min(dims) < 1:
        raise ValueError(f"--input-size {text}: give CxHxW, three positive integers "
                         "(e.g. 3x224x224)")
    return dims


def from_cli(args) -> ModelArgs:
    """The parsed command line's model options, checked (ValueError naming the flag)."""
    n = getattr(args, "num_classes", None)
    if n is not None and n < 1:
        raise ValueError(f"--num-classes {n}: a head needs at least 1 class")
    size = getattr(args, "input_size", None)
    size = parse_input_size(size) if isinstance(size, str) else size
    mean, std = getattr(args, "mean", None), getattr(args, "std", None)
    channels = size[0] if size else 3
    for flag, v in (("--mean", mean), ("--std", std)):
        if v is not None and len(v) != channels:
            raise ValueError(f"{flag} {' '.join(map(str, v))}: give one value per input "
                             f"channel ({channels})")
    if std is not None and min(std) <= 0:
        raise ValueError(f"--std {' '.join(map(str, std))}: every value must be > 0")
    crop = getattr(args, "crop_pct", None)
    if crop is not None and not 0 < crop <= 1:
        raise ValueError(f"--crop-pct {crop:g}: a fraction in (0, 1]")
    path = getattr(args, "model_path", None)
    if path is not None and not os.path.isdir(path):
        raise ValueError(f"--model-path {path}: not a folder")
    # Absolute, and the working directory when not given: workers import factories from
    # the same place whatever their own working directory.
    path = os.path.abspath(path or os.getcwd())
    return ModelArgs(num_classes=n, model_path=path, input_size=size,
                     mean=tuple(mean) if mean else None, std=tuple(std) if std else None,
                     interpolation=getattr(args, "interpolation", None), crop_pct=crop)



def add_options(group, preprocess: bool = True) -> None:
    """The model options on a parser or argument group: --num-classes and --model-path, and
    with ``preprocess`` the preprocessing ones. edgebench.full and edgebench.tune share them."""
    add = group.add_argument
    add("--num-classes", type=int, default=None, metavar="N",
        help="timm/torchvision architectures: a head of N classes (your fine-tuned "
             "checkpoint's, with --weights PATH). Default: ImageNet's 1000")
    add("--model-path", default=None, metavar="DIR",
        help="where package.module:function factories are imported from (default: the "
             "working directory)")
    if not preprocess:
        return
    add("--input-size", default=None, metavar="CxHxW",
        help="input size, e.g. 3x224x224. Default: the timm model's own; a factory's or an "
             "ONNX file's dynamic dimensions: 3x224x224")
    add("--mean", type=float, nargs="+", default=None, metavar="M",
        help="per-channel normalisation mean (0-1 scale). Default: the timm model's own, else "
             "ImageNet's 0.485 0.456 0.406")
    add("--std", type=float, nargs="+", default=None, metavar="S",
        help="per-channel normalisation std. Default: the timm model's own, else ImageNet's "
             "0.229 0.224 0.225")
    add("--interpolation", default=None, choices=INTERPOLATIONS,
        help="resize interpolation. Default: the timm model's own, else bicubic")
    add("--crop-pct", type=float, default=None, metavar="F",
        help="centre-crop fraction (resize to size/F, crop size). Default: the timm model's "
             "own, else 0.875")
