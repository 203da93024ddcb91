"""The fleet config: which devices take part, and what each one runs.

A TOML (or JSON) file. Top-level keys are defaults for every device; ``[devices.<id>]``
tables name the devices and may override any of them. Paths (``data``, ``labels``,
``cache_dir``, ``weights`` when a checkpoint, ``pythons``) are paths *on that device*: the
driver never opens them, the device's agent does. See docs/fleet.md and
examples/fleet.example.toml.

Checked here, on the driver, before anything runs (exit code 2 on a mistake): device ids,
unknown keys, types, model names, variant names, tasks, profile and profile_settings keys,
variant option names, parity keys.
"""
from __future__ import annotations

import copy
import dataclasses
import json
import re
from pathlib import Path

from ..models.args import MODEL_ARGS
from ..util import load_toml

DEVICE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")

# key -> (accepted types, what it means); the same keys are accepted at the top level
# (defaults for every device) and in a [devices.<id>] table.
SETTINGS: dict[str, tuple[tuple[type, ...], str]] = {
    "models": ((list,), "timm model names (torchvision for squeezenet1_0/1_1), factories "
                        "package.module:function or ONNX files, as --models takes them; a "
                        "factory's module or an ONNX file on the driver is shipped to the "
                        "devices by content hash"),
    "num_classes": ((int,), "a timm/torchvision head of N classes (as --num-classes)"),
    "model_path": ((str,), "where factories are imported from, on the driver (as --model-path)"),
    "input_size": ((str,), "CxHxW (as --input-size)"),
    "mean": ((list,), "per-channel normalisation mean (as --mean)"),
    "std": ((list,), "per-channel normalisation std (as --std)"),
    "interpolation": ((str,), "resize interpolation (as --interpolation)"),
    "crop_pct": ((int, float), "centre-crop fraction (as --crop-pct)"),
    "variants": ((list,), "runtime variants; default: every registered variant but the opt-in ones"),
    "tasks": ((list,), "tasks per model and variant; default: parity accuracy latency throughput"),
    "weights": ((str,), "auto | pretrained | random | PATH (a checkpoint on the device)"),
    "seed": ((int,), "seed for random weights (default 0)"),
    "profile": ((str,), "quick (default), paper or smoke"),
    "profile_settings": ((dict,), "overrides deep-merged into the profile, e.g. "
                                  "latency = {min_s = 0.5}"),
    "max_images": ((int,), "use at most N images of 'data' (default: the profile's)"),
    "cell_timeout": ((int, float), "kill a cell after this many seconds (default: the profile's)"),
    "cell_memory_limit": ((int,), "cap each cell's address space at this many MiB (RLIMIT_AS)"),
    "data": ((str,), "image folder on the device (default: the bundled 16-image sample)"),
    "labels": ((str,), "labels file for a flat ImageNet val folder, on the device"),
    "cache_dir": ((str,), "artifacts, preprocessed data and the device's working files, on "
                          "the device (default: <edgebench checkout>/results/cache there)"),
    "options": ((dict,), "variant options by their CLI dest names (torch_device = 'cuda', ...)"),
    "parity": ((dict,), "parity thresholds: atol, min_top1, reduced_min_top1, reduced_min_top5"),
    "env": ((dict,), "environment variables for the device's cell workers"),
    "pythons": ((dict,), "VARIANT = interpreter on the device (like --python VARIANT=PATH)"),
}
DEVICE_ONLY: dict[str, tuple[tuple[type, ...], str]] = {
    "resource": ((str,), "the Ray custom resource that marks this device's node "
                         "(default 'device:<id>')"),
    "description": ((str,), "free text, copied into run.json"),
}
MERGED = ("profile_settings", "options", "parity", "env", "pythons")   # dicts: deep-merged
NUMBER_LISTS = {"mean", "std"}
MODEL_KEYS = ("num_classes", "model_path", "input_size", "mean", "std", "interpolation",
              "crop_pct")
PARITY_KEYS = {"atol": "fp32_atol", "min_top1": "fp32_min_top1",
               "reduced_min_top1": "reduced_min_top1", "reduced_min_top5": "reduced_min_top5"}


class ConfigError(ValueError):
    """A mistake in the fleet config (exit code 2)."""


@dataclasses.dataclass
class Device:
    id: str
    resource: str
    settings: dict            # everything the device's agent needs, resolved (JSON-able)
    cells: list               # [CellId] in plan order


@dataclasses.dataclass
class FleetConfig:
    raw: dict                 # the file as read (kept in run.json)
    source: str               # where it came from
    devices: dict[str, Device]
    # The model files shipped to the agents (edgebench.models.ship): sha256 -> bytes. Not
    # in run.json: each device's settings name them by hash (settings["model_files"]).
    blobs: dict = dataclasses.field(default_factory=dict)


def _models_of(s: dict, models: list, where: str, blobs: dict):
    """The device's model options (as the CLI's) and the model files it is shipped, checked
    here on the driver; their bytes go into ``blobs`` (sha256 -> bytes)."""
    import argparse

    from ..models import ModelError
    from ..models.args import from_cli
    from ..models.ship import pack

    ns = argparse.Namespace(**{k: s.get(k) for k in MODEL_KEYS})
    if ns.model_path is not None:
        ns.model_path = str(Path(ns.model_path).expanduser())
    try:
        margs = from_cli(ns)
        files, data = pack(models, margs.model_path)
    except (ValueError, ModelError) as e:     # ModelError is a ValueError
        raise ConfigError(f"{where}: {str(e).replace('--', '')}") from None
    blobs.update(data)
    # On the device, a shipped factory is imported from its copy, not the driver's folder.
    return dataclasses.replace(margs, model_path=None), files


def load(path: str | Path) -> dict:
    p = Path(path).expanduser()
    if not p.is_file():
        raise ConfigError(f"--config: '{path}' is not a file")
    text = p.read_text(encoding="utf-8")
    try:
        if p.suffix.lower() == ".json":
            return json.loads(text)
        return load_toml(text)
    except (ValueError, json.JSONDecodeError) as e:   # TOMLDecodeError is a ValueError
        raise ConfigError(f"--config {path}: cannot parse: {e}") from None


def _merge(base: dict, over: dict) -> dict:
    out = copy.deepcopy(base)
    for k, v in over.items():
        if isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = _merge(out[k], v)
        else:
            out[k] = copy.deepcopy(v)
    return out


def _check_keys(table: dict, where: str, allowed: dict) -> None:
    for k, v in table.items():
        if k not in allowed:
            raise ConfigError(f"{where}: unknown key '{k}'; known keys: {', '.join(sorted(allowed))}")
        types = allowed[k][0]
        if isinstance(v, bool) or not isinstance(v, types):
            names = " or ".join("table" if t is dict else "list" if t is list else t.__name__
                                for t in types)
            raise ConfigError(f"{where}: '{k}' must be a {names}, got {type(v).__name__}")
        if k in NUMBER_LISTS:
            if not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in v):
                raise ConfigError(f"{where}: '{k}' must be a list of numbers")
        elif isinstance(v, list) and not all(isinstance(x, str) for x in v):
            raise ConfigError(f"{where}: '{k}' must be a list of strings")


def _check_profile_settings(over: dict, prof: dict, where: str, path: str = "") -> None:
    for k, v in over.items():
        if k not in prof:
            raise ConfigError(f"{where}: profile_settings '{path}{k}' is not a profile setting; "
                              f"known: {', '.join(sorted(prof))}")
        if isinstance(v, dict):
            if not isinstance(prof[k], dict):
                raise ConfigError(f"{where}: profile_settings '{path}{k}' is not a table")
            _check_profile_settings(v, prof[k], where, f"{path}{k}.")


def _defaults() -> tuple[dict, dict]:
    """The single-machine CLI's defaults: variant options and parity thresholds."""
    from ..cli import build_parser, parity_thresholds, variant_options

    ns = build_parser().parse_args([])
    # Values such as "auto" stay as they are: each device's variants settle them there.
    return variant_options(ns), parity_thresholds(ns)


def validate(raw: dict, source: str = "") -> FleetConfig:
    import converters

    from ..models import ModelError, check_name
    from ..plan import ALL_TASKS, TASKS, build
    from ..profiles import PROFILES

    if not isinstance(raw, dict):
        raise ConfigError("the fleet config must be a table")
    devices = raw.get("devices")
    if not isinstance(devices, dict) or not devices:
        raise ConfigError("the fleet config names no devices: add a [devices.<id>] table per device")
    top = {k: v for k, v in raw.items() if k != "devices"}
    _check_keys(top, "fleet config", SETTINGS)
    option_defaults, parity_defaults = _defaults()
    known_variants = converters.names()
    checked_models: set[str] = set()
    out: dict[str, Device] = {}
    blobs: dict = {}
    for dev_id, table in devices.items():
        where = f"[devices.{dev_id}]"
        if not DEVICE_ID.match(str(dev_id)):
            raise ConfigError(f"{where}: a device id is letters, digits, '_', '-' or '.' "
                              "(it becomes a Ray resource name and a folder name)")
        if not isinstance(table, dict):
            raise ConfigError(f"{where}: must be a table")
        _check_keys(table, where, {**SETTINGS, **DEVICE_ONLY})
        s = _merge(top, {k: v for k, v in table.items() if k in SETTINGS})
        models = s.get("models") or []
        if not models:
            raise ConfigError(f"{where}: no models (set 'models' at the top level or for the device)")
        for m in models:
            if m not in checked_models:
                try:
                    check_name(m)
                except ModelError as e:
                    raise ConfigError(f"{where}: {e}") from None
                checked_models.add(m)
        variants = s.get("variants") or converters.default_names()
        for v in variants:
            if v not in known_variants:
                raise ConfigError(f"{where}: unknown variant '{v}'; known: {', '.join(known_variants)}")
        tasks = s.get("tasks") or list(TASKS)
        for t in tasks:
            if t not in ALL_TASKS:
                raise ConfigError(f"{where}: unknown task '{t}'; known: {', '.join(ALL_TASKS)}")
        profile = s.get("profile", "quick")
        if profile not in PROFILES:
            raise ConfigError(f"{where}: unknown profile '{profile}'; known: {', '.join(sorted(PROFILES))}")
        prof = copy.deepcopy(PROFILES[profile])
        over = s.get("profile_settings") or {}
        _check_profile_settings(over, prof, where)
        prof = _merge(prof, over)
        if s.get("max_images"):
            prof["max_images"] = s["max_images"]
        margs, model_files = _models_of(s, models, where, blobs)
        options = dict(option_defaults)
        options[MODEL_ARGS] = margs.to_json()
        if "profile" in options:   # variants may scale their own costs by the profile
            options["profile"] = profile
        for k, v in (s.get("options") or {}).items():
            if k == "profile":
                raise ConfigError(f"{where}: set 'profile', not options.profile")
            if k not in option_defaults:
                raise ConfigError(f"{where}: unknown variant option '{k}'; known: "
                                  f"{', '.join(sorted(option_defaults))}")
            options[k] = v
        parity = dict(parity_defaults)
        for k, v in (s.get("parity") or {}).items():
            if k not in PARITY_KEYS:
                raise ConfigError(f"{where}: unknown parity key '{k}'; known: {', '.join(PARITY_KEYS)}")
            parity[PARITY_KEYS[k]] = float(v)
        pythons = {str(k): str(v) for k, v in (s.get("pythons") or {}).items()}
        for v in pythons:
            if v not in known_variants:
                raise ConfigError(f"{where}: pythons: unknown variant '{v}'")
        settings = {
            "device_id": dev_id, "models": list(models), "variants": list(variants),
            "tasks": list(tasks), "weights": s.get("weights", "auto"), "seed": s.get("seed", 0),
            "profile": profile, "prof": prof, "cell_timeout": s.get("cell_timeout"),
            "cell_memory_limit": s.get("cell_memory_limit"),
            "data": s.get("data"), "labels": s.get("labels"), "cache_dir": s.get("cache_dir"),
            "options": options, "parity_thresholds": parity,
            "env": {str(k): str(v) for k, v in (s.get("env") or {}).items()},
            "pythons": pythons, "description": table.get("description", ""),
            "model_files": model_files,
        }
        resource = table.get("resource") or f"device:{dev_id}"
        out[dev_id] = Device(dev_id, resource, settings, build(models, variants, tasks))
    resources = [d.resource for d in out.values()]
    dup = {r for r in resources if resources.count(r) > 1}
    if dup:
        raise ConfigError(f"two devices share the Ray resource {', '.join(sorted(dup))}")
    return FleetConfig(raw=raw, source=source, devices=out, blobs=blobs)
