"""python -m edgebench.full: convert every model into every variant, check parity, measure,
and write results.jsonl, run.json, summary.csv, report.md and plots/.

Exit codes: 0 every cell ok/partial/skipped; 1 some cell failed or timed out (the run still
completes and reports); 2 usage or input error found before anything ran."""
from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import sys
import uuid
from pathlib import Path

from . import plan as planmod
from .models import SEED_MODELS
from .plan import ALL_TASKS, TASKS
from .profiles import PROFILES

REPO_ROOT = Path(__file__).resolve().parents[1]
EXIT_OK, EXIT_CELLS_FAILED, EXIT_USAGE = 0, 1, 2


class UsageError(Exception):
    pass


def build_parser(prog: str = "python -m edgebench.full", description: str | None = None,
                 default_tasks=TASKS) -> argparse.ArgumentParser:
    import converters

    p = argparse.ArgumentParser(
        prog=prog, formatter_class=argparse.RawDescriptionHelpFormatter,
        description=description or (
            "Benchmark vision models across inference runtimes: each model is converted into "
            "every variant, checked for parity against PyTorch FP32, and measured the same way "
            "(Top-1/Top-5, latency distribution, max-batch throughput, memory, power).\n\n"
            "Without --data the bundled 16-image sample is used (not an accuracy benchmark). "
            "Without pretrained weights (no cache, no network) seeded random weights are used, "
            "and every output says so."),
        epilog="exit codes: 0 all cells ok/partial/skipped, 1 a cell failed or timed out, "
               "2 usage or input error")
    p.add_argument("--models", nargs="+", default=SEED_MODELS, metavar="NAME",
                   help="timm model names (torchvision for squeezenet1_0/1_1). "
                        f"Default: the study's six: {' '.join(SEED_MODELS)}")
    p.add_argument("--variants", nargs="+", default=None, metavar="VARIANT",
                   help="runtime variants to run. Default: all registered "
                        f"({' '.join(converters.names())}); those that cannot run here are "
                        "recorded as skipped with the reason")
    p.add_argument("--tasks", nargs="+", default=list(default_tasks), choices=ALL_TASKS,
                   metavar="TASK", help=f"tasks per model and variant, from {', '.join(ALL_TASKS)}. "
                                        f"Default: {' '.join(default_tasks)}")
    p.add_argument("--data", default=None, metavar="PATH",
                   help="ImageNet val folder (class folders <wnid>/*.JPEG, or flat "
                        "ILSVRC2012_val_*.JPEG with labels), an ImageNetV2 folder (0..999), or "
                        "'imagenetv2' to download it. Default: the bundled sample in datasets/sample")
    p.add_argument("--labels", default=None, metavar="FILE",
                   help="labels for a flat ImageNet val folder: one wnid per line in file order")
    p.add_argument("--max-images", type=int, default=None, metavar="N",
                   help="use at most N images (evenly spread). Default: the profile's "
                        "(quick: 256, paper: all)")
    p.add_argument("--weights", default="auto", metavar="auto|pretrained|random|PATH",
                   help="auto (default): pretrained when cached or reachable, else seeded random; "
                        "pretrained: fail if unavailable; random: seeded random; PATH: a checkpoint")
    p.add_argument("--seed", type=int, default=0, help="seed for random weights (default 0)")
    p.add_argument("--profile", choices=sorted(PROFILES), default="quick",
                   help="quick (default): short windows, batch cap 16, fits a 2-core machine; "
                        "paper: full dataset, long windows, batch up to 512")
    p.add_argument("--out", default=None, metavar="DIR",
                   help="run directory. Default: results/run-<UTC timestamp>")
    p.add_argument("--resume", action="store_true",
                   help="continue the run in --out: cells already 'ok' are not run again")
    p.add_argument("--cell-timeout", type=float, default=None, metavar="SECONDS",
                   help="kill a cell after this many seconds and record it as 'timeout'. "
                        "Default: the profile's (quick 900, paper 14400)")
    p.add_argument("--cache-dir", default=str(REPO_ROOT / "results" / "cache"), metavar="DIR",
                   help="converted artifacts, preprocessed images and reference logits "
                        "(default: results/cache)")
    p.add_argument("--python", action="append", default=[], metavar="VARIANT=INTERPRETER",
                   help="run VARIANT's workers with another Python (e.g. a separate JAX venv); "
                        "repeatable")
    p.add_argument("--torch-device", default="auto",
                   help="device for the PyTorch variants: auto (default: cuda when torch sees a "
                        "GPU, else cpu), cpu or cuda. The parity reference is always CPU FP32")
    g = p.add_argument_group("parity thresholds")
    g.add_argument("--parity-atol", type=float, default=1e-3,
                   help="FP32 variants: largest allowed |logit difference| (default 1e-3)")
    g.add_argument("--parity-min-top1", type=float, default=1.0,
                   help="FP32 variants: least top-1 agreement (default 1.0)")
    g.add_argument("--parity-reduced-min-top1", type=float, default=0.95,
                   help="FP16/INT8 variants: least top-1 agreement (default 0.95)")
    g.add_argument("--parity-reduced-min-top5", type=float, default=0.80,
                   help="FP16/INT8 variants: least top-5 set agreement (default 0.80)")
    seen = set()
    for name in converters.names():
        conv = converters.get(name)
        opts = [o for o in conv.cli_options if o[0] not in seen]
        if opts:
            vg = p.add_argument_group(f"{name} options")
            for flag, kwargs in opts:
                seen.add(flag)
                vg.add_argument(flag, **kwargs)
    return p


def _variant_options(args: argparse.Namespace) -> dict:
    import converters

    # The profile is passed on so a variant can scale its own costs (e.g. TVM without tuning).
    # torch_device stays as given ("auto" too): runner.resolve_torch_device decides it on the
    # machine that runs the cells.
    opts = {"torch_device": args.torch_device, "profile": args.profile}
    for name in converters.names():
        for flag, kwargs in converters.get(name).cli_options:
            dest = kwargs.get("dest") or flag.lstrip("-").replace("-", "_")
            opts[dest] = getattr(args, dest, None)
    return opts


def validate(args) -> dict:
    """Everything that can be wrong with the input, checked before any cell runs."""
    import converters

    from .data import DataError, resolve_source
    from .models import ModelError, check_name

    for m in args.models:
        try:
            check_name(m)
        except ModelError as e:
            raise UsageError(str(e)) from None
    variants = args.variants or converters.names()
    for v in variants:
        try:
            converters.get(v)
        except KeyError as e:
            raise UsageError(e.args[0]) from None
    pythons = {}
    for item in args.python:
        v, sep, path = item.partition("=")
        if not sep or v not in variants and v not in converters.names():
            raise UsageError(f"--python expects VARIANT=INTERPRETER, got '{item}'")
        if not os.access(path, os.X_OK):
            raise UsageError(f"--python {v}: '{path}' is not an executable interpreter")
        pythons[v] = path
    if args.out and Path(args.out).exists() and not args.resume and \
            (Path(args.out) / "results.jsonl").exists():
        raise UsageError(f"--out {args.out} already holds results: add --resume to continue it, "
                         "or choose another folder")
    try:
        images = resolve_source(args.data, args.labels)
    except DataError as e:
        raise UsageError(str(e)) from None
    if not len(images):
        raise UsageError(f"--data {args.data}: no image files found")
    weights_policy = args.weights
    if weights_policy not in ("auto", "pretrained", "random") and not Path(weights_policy).is_file():
        raise UsageError(f"--weights: '{weights_policy}' is not auto, pretrained, random or an "
                         "existing checkpoint file")
    return {"variants": variants, "images": images, "pythons": pythons}


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        checked = validate(args)
        return run(args, checked)
    except UsageError as e:
        print(f"edgebench: error: {e}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("edgebench: interrupted; finished cells are in results.jsonl (use --resume)",
              file=sys.stderr)
        return 130


def run(args, checked: dict, title: str = "edgebench") -> int:
    from rich.console import Console
    from rich.progress import (BarColumn, MofNCompleteColumn, Progress, SpinnerColumn,
                               TextColumn, TimeElapsedColumn)

    from . import report, runner, store, sysinfo
    from .models import ModelError

    console = Console(stderr=True)
    prof = json.loads(json.dumps(PROFILES[args.profile]))
    if args.max_images:
        prof["max_images"] = args.max_images
    out = Path(args.out or REPO_ROOT / "results" / f"run-{dt.datetime.now(dt.timezone.utc):%Y%m%dT%H%M%SZ}")
    out.mkdir(parents=True, exist_ok=True)
    (out / "logs").mkdir(exist_ok=True)
    cache = Path(args.cache_dir)
    cache.mkdir(parents=True, exist_ok=True)
    run_json = out / "run.json"
    prior = json.loads(run_json.read_text()) if (args.resume and run_json.is_file()) else {}
    run_id = prior.get("run_id") or uuid.uuid4().hex[:12]
    images = checked["images"].limit(prof["max_images"] if args.data else None)
    ctx = runner.RunContext(
        out=out, run_id=run_id, profile=args.profile, prof=prof, cache_dir=cache,
        cell_timeout=args.cell_timeout or prof["cell_timeout"],
        options=runner.resolve_torch_device(_variant_options(args), checked["pythons"]),
        device=sysinfo.device(),
        parity_thresholds={"fp32_atol": args.parity_atol, "fp32_min_top1": args.parity_min_top1,
                           "reduced_min_top1": args.parity_reduced_min_top1,
                           "reduced_min_top5": args.parity_reduced_min_top5},
        pythons=checked["pythons"])
    cells = planmod.build(args.models, checked["variants"], args.tasks,
                          reference_device=ctx.options.get("torch_device", "cpu"))
    done = {k for k, r in store.latest(store.read(ctx.results_path)).items() if r["status"] == "ok"} \
        if args.resume else set()

    console.print(f"[bold]{title}[/] run {run_id} -> {out}  ({len(cells)} cells, profile "
                  f"{args.profile}, data: {images.name} {len(images)} images)")
    probes = runner.probe_variants(checked["variants"], ctx, out / "logs")
    for v, pr in probes.items():
        if not pr["ok"]:
            console.print(f"  [yellow]variant {v} cannot run here[/]: {pr['reason']}")

    models_info: dict[str, dict] = dict(prior.get("models", {}))
    meta = {"run_id": run_id, "created_at": prior.get("created_at") or
            dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
            "argv": sys.argv, "config": {**{k: v for k, v in vars(args).items()}, "profile_settings": prof},
            "machine": sysinfo.machine(), "device": ctx.device, "device_state": sysinfo.device_state(),
            "env": sysinfo.env_flags(), "variants": probes,
            "torch_device": ctx.options["torch_device"],   # what --torch-device auto became
            "converter_import_errors": __import__("converters").broken(),
            "data": {"source": images.name, "root": images.root, "layout": images.layout,
                     "n_images": len(images), "license": images.license},
            "models": models_info}

    def write_meta():
        tmp = run_json.with_suffix(".json.part")
        tmp.write_text(json.dumps(meta, indent=2, default=str))
        os.replace(tmp, run_json)          # a kill mid-write must not lose the run's config

    write_meta()
    columns = (SpinnerColumn(), TextColumn("{task.description}"), BarColumn(),
               MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=console, transient=False) as progress:
        overall = progress.add_task("cells", total=len(cells))
        for model in dict.fromkeys(c.model for c in cells):
            mcells = [c for c in cells if c.model == model]
            todo = [c for c in mcells if (ctx.device_id, c.model, c.variant, c.task) not in done]
            progress.advance(overall, len(mcells) - len(todo))
            if not todo:
                continue
            progress.update(overall, description=f"{model}: weights and data")
            try:
                model_ctx, models_info[model], warns = runner.prepare_model_context(
                    model, images, cache, args.weights, args.seed,
                    prior=models_info.get(model) if args.resume else None, progress=progress)
            except (ModelError, ValueError) as e:   # weights unavailable, no readable image
                console.print(f"[red]edgebench: error:[/] {e}")
                return EXIT_USAGE
            for w in warns:
                console.print(f"  [yellow]warning:[/] {w}")
            write_meta()
            for cell in todo:
                progress.update(overall, description=f"{cell.model} · {cell.variant} · {cell.task}")
                pr = probes.get(cell.variant, {"ok": True})
                if not pr["ok"]:
                    rec = runner.skipped_record(cell, model_ctx, ctx, pr["reason"])
                else:
                    rec = runner.run_cell(cell, model_ctx, ctx, out / "logs")
                store.append(ctx.results_path, rec)
                colour = {"ok": "green", "skipped": "yellow", "partial": "cyan"}.get(rec["status"], "red")
                progress.console.print(f"  [{colour}]{rec['status']:8}[/] {cell.model} · {cell.variant} · "
                                       f"{cell.task}  {report.one_line(rec)}")
                progress.advance(overall)
        progress.update(overall, description="report")
    meta["finished_at"] = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    write_meta()
    records = store.read(ctx.results_path)
    report.write_all(out, records, meta)
    planned = {(ctx.device_id, c.model, c.variant, c.task) for c in cells}
    failed = any(r["status"] in ("failed", "timeout")
                 for k, r in store.latest(records).items() if k in planned)
    args.out = str(out)
    console.print(f"[bold]done[/]: {out / 'report.md'}")
    return EXIT_CELLS_FAILED if failed else EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
