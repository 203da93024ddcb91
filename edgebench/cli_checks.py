"""What can be wrong with the main command's input (``python -m edgebench.full``, and
``edgebench.parity`` on the same parser), all checked before any cell runs and before anything
is written: each mistake is a UsageError naming the option and the value (exit 2)."""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from .errors import UsageError, check_out_dir
from .profiles import PROFILES


# The settings a run's records were measured with: --resume refuses others (run.json has
# them under "config"), so one run directory never mixes two kinds of measurement. Models,
# variants, tasks, the cell timeout and the cache may change between sessions.
RESUME_SAME = ("profile", "data", "labels", "max_images", "weights", "seed", "num_classes",
               "model_path", "input_size", "mean", "std", "interpolation", "crop_pct", "parity_atol",
               "parity_min_top1", "parity_reduced_min_top1", "parity_reduced_min_top5",
               "parity_int8_min_top1", "parity_int8_min_cosine", "mlperf_offline_batch",
               "mlperf_offline_qps",
               "mlperf_min_duration", "mlperf_min_queries")


def _check_numbers(args) -> None:
    def bad(flag, value, rule):
        raise UsageError(f"{flag} {value:g}: {rule}" if isinstance(value, float)
                         else f"{flag} {value}: {rule}")

    if args.max_images is not None and args.max_images < 1:
        bad("--max-images", args.max_images, "use at least 1 image (or leave it out)")
    if args.cell_timeout is not None and not args.cell_timeout > 0:
        bad("--cell-timeout", args.cell_timeout, "must be a positive number of seconds")
    if args.seed < 0:
        bad("--seed", args.seed, "must be >= 0")
    if getattr(args, "cell_memory_limit", None) is not None and args.cell_memory_limit < 64:
        raise UsageError(f"--cell-memory-limit {args.cell_memory_limit}: give at least 64 MiB "
                         "(an interpreter with numpy needs more)")
    if getattr(args, "layers_top", None) is not None and args.layers_top < 1:
        bad("--layers-top", args.layers_top, "the report lists at least 1 layer per variant")
    if not args.parity_atol >= 0:
        bad("--parity-atol", args.parity_atol, "must be >= 0")
    for flag in ("--parity-min-top1", "--parity-reduced-min-top1", "--parity-reduced-min-top5",
                 "--parity-int8-min-top1", "--parity-int8-min-cosine"):
        v = getattr(args, flag[2:].replace("-", "_"))
        if not 0 <= v <= 1:
            bad(flag, v, "an agreement is a fraction in [0, 1]")


def resolve_tasks(args) -> None:
    """--tasks not given: the command's default tasks, and with --profile paper the layers
    task too (a paper run answers where the time goes)."""
    if getattr(args, "tasks", None) is None:
        args.tasks = list(args.default_tasks)
        if args.layers_with_paper and args.profile == "paper":
            args.tasks.append("layers")


def _check_repeats(args) -> None:
    for flag, values in (("--models", args.models), ("--variants", args.variants or []),
                         ("--tasks", args.tasks)):
        twice = sorted({v for v in values if values.count(v) > 1})
        if twice:
            raise UsageError(f"{flag}: {', '.join(twice)} given twice")


def _check_resume(args) -> None:
    """--resume: --out is a run of this command, readable, made with these settings."""
    import converters

    from . import store

    if not args.out:
        raise UsageError("--resume needs --out DIR, the run directory to continue")
    out = Path(args.out)
    run_json, results = out / "run.json", out / "results.jsonl"
    if not out.is_dir():
        return                  # nothing there yet: the run starts (scripts rerun with --resume)
    if not run_json.exists():
        if results.exists():
            raise UsageError(f"--resume --out {out}: results.jsonl but no run.json (not a run "
                             "directory of edgebench.full)")
        return
    try:
        meta = json.loads(run_json.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as e:
        raise UsageError(f"--resume --out {out}: run.json is unreadable "
                         f"({type(e).__name__}: {e})") from None
    if not isinstance(meta, dict):
        raise UsageError(f"--resume --out {out}: run.json is not a JSON object")
    if meta.get("kind") == "fleet":
        raise UsageError(f"--resume --out {out}: a fleet run; continue it with python -m "
                         "edgebench.fleet --resume --out DIR")
    if results.exists():
        try:
            store.read_checked(results)
        except store.RecordsError as e:
            raise UsageError(f"--resume: {e}") from None
    config = meta.get("config") if isinstance(meta.get("config"), dict) else {}
    flags = {k: "--" + k.replace("_", "-") for k in RESUME_SAME}
    for name in converters.names():
        for flag, kwargs in converters.get(name).cli_options:
            flags.setdefault(kwargs.get("dest") or flag.lstrip("-").replace("-", "_"), flag)
    for key, flag in flags.items():
        if key not in config or not hasattr(args, key):
            continue            # a run.json from before the setting existed
        was, now = config[key], getattr(args, key)
        if was != now:
            raise UsageError(f"--resume --out {out}: {flag} {now} differs from the run's "
                             f"{flag} {was} (run.json): its records were measured with "
                             f"{was}; give the same, or choose another --out")


def validate(args) -> dict:
    """Everything that can be wrong with the input, checked before any cell runs and before
    anything is written: a mistake is a UsageError naming the option and the value."""
    import converters

    from .data import DataError, resolve_source
    from .data.sources import check_readable
    from .process import note_imports_only

    note_imports_only()          # nothing run yet: the fork server may be forked from here
    resolve_tasks(args)
    _check_numbers(args)
    _check_repeats(args)
    # First of the slow checks: it needs no model or data, and a refused mode then costs a
    # second, not the import of timm (a minute under QEMU, jetson/emulated/).
    power_modes = _power_modes(args)
    from .mlperf.settings import check_options as check_mlperf

    try:
        check_mlperf(variant_options(args))
    except ValueError as e:
        raise UsageError(str(e)) from None
    if args.out:
        check_out_dir("--out", args.out)
    check_out_dir("--cache-dir", args.cache_dir)
    if args.resume:
        _check_resume(args)
    elif args.out and (Path(args.out) / "results.jsonl").exists():
        raise UsageError(f"--out {args.out} already holds results: add --resume to continue it, "
                         "or choose another folder")
    variants = args.variants or converters.default_names()
    for v in variants:
        try:
            conv = converters.get(v)
        except KeyError as e:
            raise UsageError(f"--variants: {e.args[0]}") from None
        try:               # option values that cannot be right anywhere (Converter doc)
            conv.check_options(variant_options(args))
        except ValueError as e:
            raise UsageError(f"--variants {v}: {e}") from None
    pythons = {}
    for item in args.python:
        v, sep, path = item.partition("=")
        if not sep or not v or not path:
            raise UsageError(f"--python expects VARIANT=INTERPRETER, got '{item}'")
        if v not in converters.names():
            raise UsageError(f"--python {item}: unknown variant '{v}'; known: "
                             f"{', '.join(converters.names())}")
        if not Path(path).is_file() or not os.access(path, os.X_OK):
            raise UsageError(f"--python {v}: '{path}' is not an executable interpreter")
        pythons[v] = path
    try:
        images = resolve_source(args.data, args.labels)
        if not len(images):
            raise UsageError(f"--data {args.data}: no image files found")
        if args.labels and images.layout not in ("flat-with-labels", "class-folders-with-labels"):
            raise UsageError(f"--labels {args.labels}: for a flat folder of ILSVRC2012_val_* "
                             "images (one wnid per line) or class folders of your own (one "
                             f"class name per line); --data {args.data or 'the sample'} "
                             f"is laid out as {images.layout}")
        check_readable(images)
    except DataError as e:
        raise UsageError(str(e)) from None
    prof = PROFILES[args.profile]
    # What the run evaluates: --max-images (else the profile's) of --data, or the whole sample.
    evaluated = images.limit((args.max_images or prof["max_images"]) if args.data else None)
    calibration = _calibration(args, variants, images, evaluated)
    # The models last of the input: a name not torchvision's imports timm (5 s here, a
    # minute under QEMU), which a mistake in --variants, --python or --data need not wait for.
    facts = check_models(args, images if args.data else None)
    return {"variants": variants, "images": images, "evaluated": evaluated, "pythons": pythons,
            "calibration": calibration, "power_modes": power_modes, "model_facts": facts}


def check_models(args, images=None) -> dict:
    """Every model of ``--models`` can be built and run as given: zoo names known, ONNX files
    readable with one float image input, factories importable and returning a module, a
    checkpoint that fits (its head's class count named), an input size the model takes (its
    own message), and given data (``images``) of the model's class count. Returns
    ``edgebench.models.describe``'s facts of the factory and ONNX models (they ran once)."""
    from .data import DataError
    from .models import (ModelError, check_checkpoint, check_name, check_pretrained, describe,
                         kind_of, own_head, resolve_weights)
    from .models.args import from_cli

    try:
        margs = from_cli(args)
    except ValueError as e:
        raise UsageError(str(e)) from None
    onnx = [m for m in args.models if kind_of(m) == "onnx"]
    if margs.num_classes is not None and onnx:
        raise UsageError(f"--num-classes {margs.num_classes}: {onnx[0]} is an ONNX file, whose "
                         "head is fixed in the file; --num-classes is for timm/torchvision "
                         "architectures (run the ONNX file without it)")

    if margs.num_classes is not None and not any(kind_of(m) == "zoo" for m in args.models):
        raise UsageError(f"--num-classes {margs.num_classes}: for timm/torchvision "
                         f"architectures, and {args.models[0]} builds its own head (leave "
                         "--num-classes out)")

    def usage(e: Exception) -> UsageError:
        msg = str(e)
        return UsageError(msg if msg.startswith("--") else f"--models: {msg}")

    for m in args.models:
        try:
            check_name(m)
        except ModelError as e:
            raise usage(e) from None
    zoo = [m for m in args.models if kind_of(m) == "zoo"]
    weights_policy = args.weights
    try:
        if weights_policy == "pretrained":
            for m in zoo:
                if own_head(margs.num_classes):
                    resolve_weights(m, weights_policy, args.seed, margs)   # says why not
                check_pretrained(m)
        elif weights_policy not in ("auto", "random"):
            check_checkpoint(weights_policy, zoo, margs.num_classes)
    except ModelError as e:
        raise usage(e) from None
    facts = {}
    for m in args.models:
        try:
            if kind_of(m) != "zoo":
                weights, _ = resolve_weights(m, weights_policy, args.seed, margs)
                facts[m] = describe(m, weights, margs, run=True)
            n = facts[m]["num_classes"] if m in facts else (margs.num_classes or 1000)
            if images is not None:
                images.for_model(n, m)
        except ModelError as e:
            raise usage(e) from None
        except DataError as e:
            raise UsageError(str(e)) from None
    return facts


def _power_modes(args) -> dict | None:
    """--power-modes: the board's nvpmodel, the modes asked for and the one it is in now, or a
    UsageError (no nvpmodel, not root, an unknown mode, a switch that needs a reboot) before
    anything runs."""
    spec = getattr(args, "power_modes", None)
    if spec is None:
        return None
    from .powermodes import Nvpmodel, PowerModeError, find_jetson_clocks, find_nvpmodel
    from .powermodes import reboot_needed, resolve

    exe = find_nvpmodel()
    if exe is None:
        import platform

        raise UsageError(f"--power-modes needs NVIDIA's nvpmodel (a Jetson with JetPack); this "
                         f"machine ({platform.machine()}) has none on PATH or in /usr/sbin")
    if os.geteuid() != 0:
        raise UsageError("--power-modes switches modes with nvpmodel, which needs root: run "
                         "edgebench with sudo (e.g. sudo -E env PATH=$PATH python -m edgebench.full ...)")
    nvp = Nvpmodel(exe)
    try:
        wanted = resolve(spec, nvp.modes())
        now = nvp.current()
    except ValueError as e:
        raise UsageError(str(e)) from None
    except (PowerModeError, OSError, subprocess.SubprocessError) as e:
        raise UsageError(f"--power-modes: {e}") from None
    for mode in wanted:
        why = reboot_needed(now, mode)
        if why:
            raise UsageError(f"--power-modes: {why}")
    return {"nvpmodel": nvp, "modes": wanted, "found": now, "jetson_clocks": find_jetson_clocks()}


def _calibration(args, variants: list[str], images, evaluated):
    """The INT8 calibration images when a planned variant needs them (None otherwise),
    disjoint from the images this run evaluates (edgebench.data.calibration)."""
    import converters

    from .data import DataError
    from .data.calibration import choose

    count = getattr(args, "int8_calib_images", None)
    if count is not None and count < 1:
        raise UsageError(f"--int8-calib-images {count}: calibrate on at least 1 image")
    if not any(converters.get(v).needs_calibration for v in variants):
        return None
    try:
        return choose(evaluated, images, bool(args.data), getattr(args, "int8_calib_data", None),
                      count, PROFILES[args.profile]["int8_calib_images"])
    except DataError as e:
        raise UsageError(str(e)) from None


MLPERF_OPTIONS = ("mlperf_offline_batch", "mlperf_offline_qps", "mlperf_min_duration",
                  "mlperf_min_queries", "mlperf_accuracy")


def variant_options(args) -> dict:
    """Every variant's own options by argparse dest name. Values such as "auto" stay as
    given: each variant settles them on the machine that runs its cells (the probe)."""
    import converters

    from .models import MODEL_ARGS
    from .models.args import from_cli

    # The profile is passed on so a variant can scale its own costs (e.g. TVM without tuning).
    opts = {"profile": args.profile}
    try:
        # The model options every worker builds the models with (validate checks them first).
        opts[MODEL_ARGS] = from_cli(args).to_json()
    except ValueError:
        opts[MODEL_ARGS] = {}
    for key in MLPERF_OPTIONS:          # the scenario cells' settings (edgebench.mlperf)
        opts[key] = getattr(args, key, None)
    for name in converters.names():
        for flag, kwargs in converters.get(name).cli_options:
            dest = kwargs.get("dest") or flag.lstrip("-").replace("-", "_")
            opts[dest] = getattr(args, dest, None)
    return opts
