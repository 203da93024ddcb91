"""What can be wrong with ``python -m edgebench.tune``'s input, checked before any tuning
or compiling starts and before anything is written: each mistake is a UsageError naming the
option and the value (exit 2)."""
from __future__ import annotations

from pathlib import Path

from edgebench.errors import UsageError, check_out_dir

from . import export, runner, targets, transfer
from .cpu import winograd
from .errors import ExportError, TargetError


def _parse_size(s: str) -> tuple:
    try:
        parts = tuple(int(x) for x in s.lower().split("x"))
    except ValueError:
        raise UsageError(f"--input-size must look like 3x224x224 (got '{s}')") from None
    if len(parts) != 3 or min(parts) < 1:
        raise UsageError(f"--input-size must look like 3x224x224 (got '{s}')")
    return parts


def validate(args) -> dict:
    """Check the arguments; raise UsageError (exit 2) with the reason."""
    if args.trials < 0:
        raise UsageError(f"--trials {args.trials}: must be >= 0")
    if args.batch_size < 1:
        raise UsageError(f"--batch-size {args.batch_size}: must be >= 1")
    if args.seed < 0:
        raise UsageError(f"--seed {args.seed}: must be >= 0")
    input_size = _parse_size(args.input_size) if args.input_size else None
    _check_paths(args)
    if bool(args.rpc_tracker) != bool(args.rpc_key):
        raise UsageError("--rpc-tracker and --rpc-key go together")
    if args.rpc_tracker:
        try:
            runner.parse_tracker(args.rpc_tracker)
        except ValueError as e:
            raise UsageError(str(e)) from None
    if winograd.is_winograd(getattr(args, "conv2d", None) or "direct") and args.layout == "NCHW":
        raise UsageError(f"--conv2d {args.conv2d} needs the NHWC layout (TVM schedules its "
                         "transforms in NHWC): drop --layout NCHW")
    if getattr(args, "spatial_mean", None) == "matmul" and args.layout == "NCHW":
        raise UsageError("--spatial-mean matmul applies to NHWC means (in NCHW the mean's "
                         "pixels are innermost already): drop --layout NCHW")
    if args.trials == 0 and not args.export and args.measure is None:
        raise UsageError("nothing to do: --trials 0 without --export or --measure")
    for name in ("trials_per_iter", "max_trials_per_task", "population"):
        v = getattr(args, name)
        if v is not None and v < 1:
            raise UsageError(f"--{name.replace('_', '-')} {v}: must be >= 1")
    batch_sizes = [args.batch_size]
    if args.batch_sizes:
        try:
            batch_sizes = sorted({int(b) for b in args.batch_sizes.split(",") if b.strip()})
        except ValueError:
            raise UsageError(f"--batch-sizes must be a comma list of integers "
                             f"(got '{args.batch_sizes}')") from None
        if not batch_sizes or min(batch_sizes) < 1:
            raise UsageError("--batch-sizes must be positive integers")
        if not args.export:
            raise UsageError("--batch-sizes only applies to --export")
    try:
        target, tname = targets.resolve_target(args.target)
    except TargetError as e:
        raise UsageError(f"--target: {e}") from None
    if args.export:
        out = Path(args.export)
        if out.exists() and not out.is_dir():
            raise UsageError(f"--export {out}: exists and is not a directory")
        check_out_dir("--export", out)
        if out.is_dir() and any(out.iterdir()) and not (out / "manifest.json").is_file():
            raise UsageError(f"--export {out}: directory is not empty and holds no "
                             "edgebench artifact (refusing to overwrite)")
        try:
            export.cross_compiler_for(target)
        except ExportError as e:
            raise UsageError(f"--export: {e}") from None
    if args.measure is not None and _cross(target):
        raise UsageError("--measure runs edgebench.full here, and this target's code cannot "
                         "run here: run the printed command on the device instead")
    gpu = targets.is_gpu(target)
    if args.trials > 0 and not args.rpc_tracker and (gpu or _cross(target)):
        if not (gpu and targets.device_for(target).exist and not _cross(target)):
            raise UsageError(f"--target {args.target} cannot run here, so its candidates "
                             "cannot be measured locally: add --rpc-tracker HOST:PORT "
                             "--rpc-key KEY (a device running tvm.exec.rpc_server), or use "
                             "--trials 0 to export untuned")
    if args.transfer_from:
        here = Path(args.tuning_dir) / targets.target_slug(target) / "-"
        try:
            transfer.transfer_databases(here, args.transfer_from, auto=False)
        except ValueError as e:
            raise UsageError(str(e)) from None
    _check_model(args)
    return {"target": target, "target_name": tname, "batch_sizes": batch_sizes,
            "input_size": input_size}


def _check_model(args) -> None:
    """The model as edgebench.full checks it (its own checks: one message per mistake)."""
    import argparse

    from edgebench.cli_checks import check_models

    ns = argparse.Namespace(models=[args.model], weights=args.weights, seed=args.seed,
                            num_classes=args.num_classes, model_path=args.model_path,
                            input_size=args.input_size, mean=None, std=None,
                            interpolation=None, crop_pct=None)
    try:
        check_models(ns)
    except UsageError as e:
        msg = str(e).replace("--models", "--model")
        raise UsageError(msg) from None


def _check_paths(args) -> None:
    """The folders and files this command writes: each can be created (nothing is yet)."""
    check_out_dir("--tuning-dir", args.tuning_dir)
    check_out_dir("--cache-dir", args.cache_dir)
    if args.measure:
        check_out_dir("--measure", args.measure)
    if args.summary:
        s = Path(args.summary)
        if s.is_dir():
            raise UsageError(f"--summary {args.summary}: is a folder; give a file path")
        check_out_dir("--summary", s.parent)


def _cross(target) -> bool:
    """Whether the target's code cannot run on this machine."""
    return not targets.native(targets.host_arch(target))
