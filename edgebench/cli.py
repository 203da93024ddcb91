"""The main command (``python -m edgebench.full``): convert every model into every variant,
check parity, measure, and write results.jsonl, run.json, summary.csv, report.md and plots/.

This module holds the command line and the progress display (the checks of its input are in
``cli_checks``); ``runner.Session`` runs the cells and holds the status rules, the same for a
fleet agent.

Exit codes: 0 every cell ok/partial/skipped; 1 some cell failed or timed out (the run still
completes and reports); 2 usage or input error found before anything ran; 74 the disk refused
a write; 130 interrupted."""
from __future__ import annotations

import argparse
import contextlib
import dataclasses
import datetime as dt
import json
import sys
import time
import uuid
from pathlib import Path

T_START = time.perf_counter()     # the budget's total: from interpreter start, nearly

from . import plan as planmod
from .cli_checks import validate, variant_options  # noqa: F401 - re-exported: parity, fleet and tests call them here
from .errors import (EXIT_INTERRUPTED, EXIT_USAGE, ArgumentParser,
                     run_command)
from .metrics import PARITY_DEFAULTS
from .models import SEED_MODELS
from .models.args import add_options as add_model_options
from .plan import ALL_TASKS, LAYERS_TASK, TASKS
from .profiles import PROFILES
from .util import REPO_ROOT, atomic_write_json


def _profiles_help(key) -> str:
    """A profile setting for each profile, as --help shows it: "quick 600, paper 14400"."""
    return ", ".join(f"{name} {key(prof)}" for name, prof in PROFILES.items())


def build_parser(prog: str = "python -m edgebench.full", description: str | None = None,
                 default_tasks=TASKS, name: str = "edgebench") -> argparse.ArgumentParser:
    """``name``: the command's name in its error messages ("edgebench: error: ...")."""
    import converters

    p = ArgumentParser(
        prog=prog, error_name=name, formatter_class=argparse.RawDescriptionHelpFormatter,
        description=description or (
            "Benchmark vision models across inference runtimes: each model is converted into "
            "every variant, checked for parity against PyTorch FP32, and measured the same way "
            "(Top-1/Top-5, latency distribution, max-batch throughput, memory, power).\n\n"
            "Without --data the bundled 16-image sample is used (not an accuracy benchmark). "
            "Without pretrained weights (no cache, no network) seeded random weights are used, "
            "and every output says so."),
        epilog="exit codes: 0 all cells ok/partial/skipped, 1 a cell failed or timed out, "
               "2 usage or input error")
    p.add_argument("--models", nargs="+", default=SEED_MODELS, metavar="MODEL",
                   help="the models, mixed freely: timm names (torchvision for "
                        "squeezenet1_0/1_1), your own code as package.module:function (returns "
                        "an nn.Module), or an ONNX file path/to/model.onnx (see 'your own "
                        f"model' below). Default: the study's six: {' '.join(SEED_MODELS)}")
    p.add_argument("--variants", nargs="+", default=None, metavar="VARIANT",
                   help="runtime variants to run. Default: all registered but the opt-in "
                        f"ones ({' '.join(converters.default_names())}); those that cannot run "
                        "here are recorded as skipped with the reason. Opt-in: "
                        f"{' '.join(sorted(set(converters.names()) - set(converters.default_names())))}")
    paper = (f"; with --profile paper also {LAYERS_TASK}" if tuple(default_tasks) == TASKS
             else "")
    p.add_argument("--tasks", nargs="+", default=None, choices=ALL_TASKS,
                   metavar="TASK", help=f"tasks per model and variant, from {', '.join(ALL_TASKS)}. "
                                        f"Default: {' '.join(default_tasks)}{paper}. "
                                        f"{LAYERS_TASK}: a per-layer profile of each variant by its "
                                        "own runtime's profiler, side by side in the report")
    p.add_argument("--layers-top", type=int, default=None, metavar="N",
                   help="how many of each variant's slowest layers the report lists "
                        "(the layers task; default 10)")
    p.set_defaults(default_tasks=list(default_tasks), layers_with_paper=bool(paper))
    p.add_argument("--data", default=None, metavar="PATH",
                   help="ImageNet val folder (class folders <wnid>/*.JPEG, or flat "
                        "ILSVRC2012_val_*.JPEG with labels), an ImageNetV2 folder (0..999), or "
                        "'imagenetv2' to download it. Default: the bundled sample in datasets/sample")
    p.add_argument("--labels", default=None, metavar="FILE",
                   help="labels for a flat ImageNet val folder: one wnid per line in file "
                        "order; or, beside class folders of your own, the class order: one "
                        "folder name per line (line 1 is class 0). Default for class folders: "
                        "their sorted names")
    p.add_argument("--max-images", type=int, default=None, metavar="N",
                   help="use at most N images (evenly spread). Default: the profile's ("
                        + _profiles_help(lambda p: p["max_images"] or "all") + ")")
    p.add_argument("--weights", default="auto", metavar="auto|pretrained|random|PATH",
                   help="auto (default): pretrained when cached or reachable, else seeded random "
                        "(a factory: the weights its function gives); pretrained: fail if "
                        "unavailable; random: seeded random; PATH: a checkpoint (a state_dict, "
                        "or one under state_dict/model/ema) of the model, with --num-classes "
                        "for a head of your own. An ONNX file keeps its own")
    p.add_argument("--seed", type=int, default=0, help="seed for random weights (default 0)")
    p.add_argument("--profile", choices=sorted(PROFILES), default="quick",
                   help="quick (default): short windows, fits a 2-core machine; paper: full "
                        "dataset, long windows; smoke: does every cell run? (about a second "
                        "per window; its figures are not for comparison). Batch cap: "
                        + _profiles_help(lambda p: p["throughput"]["max_batch"])
                        + "; latency calls at least: "
                        + _profiles_help(lambda p: p["latency"]["min_count"]))
    p.add_argument("--out", default=None, metavar="DIR",
                   help="run directory. Default: results/run-<UTC timestamp>")
    p.add_argument("--resume", action="store_true",
                   help="continue the run in --out: cells already 'ok' are not run again")
    p.add_argument("--cell-timeout", type=float, default=None, metavar="SECONDS",
                   help="kill a cell after this many seconds and record it as 'timeout'. "
                        "Default: the profile's (" + _profiles_help(lambda p: p["cell_timeout"]) + ")")
    p.add_argument("--cell-memory-limit", type=int, default=None, metavar="MB",
                   help="cap each cell's address space at MB MiB (RLIMIT_AS, as `ulimit -v`): "
                        "an allocation past it fails inside the cell, so the throughput search "
                        "steps down and other cells are safe. Default: no cap")
    p.add_argument("--cache-dir", default=str(REPO_ROOT / "results" / "cache"), metavar="DIR",
                   help="converted artifacts, preprocessed images and reference logits "
                        "(default: results/cache)")
    p.add_argument("--isolation", choices=("fork", "spawn"), default="fork",
                   help="how each cell gets its own process: fork (default) from a server that "
                        "imported torch/timm once (saves ~3 s a cell), or spawn a new interpreter")
    p.add_argument("--power-modes", default=None, metavar="MODES",
                   help="Jetson: run the planned cells once per nvpmodel power mode, e.g. "
                        "MAXN,30W,15W or the IDs `nvpmodel -p --verbose` lists (0,2,1). Between "
                        "modes: nvpmodel -m, jetson_clocks again if the clocks were locked, and a "
                        "wait for the clocks to settle; the records carry the mode and clocks. The "
                        "board is put back in the mode it was found in afterwards, also after a "
                        "failure or Ctrl-C. Needs root. Default: the current mode only")
    p.add_argument("--python", action="append", default=[], metavar="VARIANT=INTERPRETER",
                   help="run VARIANT's workers with another Python (e.g. a separate JAX venv); "
                        "repeatable")
    g = p.add_argument_group("parity thresholds")
    g.add_argument("--parity-atol", type=float, default=PARITY_DEFAULTS["fp32_atol"],
                   help=f"FP32 variants: largest allowed |logit difference| (default {PARITY_DEFAULTS['fp32_atol']:g})")
    g.add_argument("--parity-min-top1", type=float, default=PARITY_DEFAULTS["fp32_min_top1"],
                   help=f"FP32 variants: least top-1 agreement (default {PARITY_DEFAULTS['fp32_min_top1']:g})")
    g.add_argument("--parity-reduced-min-top1", type=float, default=PARITY_DEFAULTS["reduced_min_top1"],
                   help=f"FP16/INT8 variants: least top-1 agreement (default {PARITY_DEFAULTS['reduced_min_top1']:g})")
    g.add_argument("--parity-reduced-min-top5", type=float, default=PARITY_DEFAULTS["reduced_min_top5"],
                   help=f"FP16/INT8 variants: least top-5 set agreement (default {PARITY_DEFAULTS['reduced_min_top5']:g})")
    g.add_argument("--parity-int8-min-top1", type=float, default=PARITY_DEFAULTS["int8_min_top1"],
                   help="INT8 variants: least top-1 agreement (default "
                        f"{PARITY_DEFAULTS['int8_min_top1']:g}); what INT8 costs in accuracy is "
                        "judged apart, by MLPerf's 99%% rule, where the labels are real")
    g.add_argument("--parity-int8-min-cosine", type=float, default=PARITY_DEFAULTS["int8_min_cosine"],
                   help="INT8 variants: least mean cosine similarity of the logits (default "
                        f"{PARITY_DEFAULTS['int8_min_cosine']:g})")
    own = p.add_argument_group(
        "your own model (a fine-tuned head, a factory, an ONNX file: docs in the README)")
    add_model_options(own)
    m = p.add_argument_group("MLPerf scenarios (--tasks singlestream multistream offline)")
    m.add_argument("--mlperf-offline-batch", type=int, default=None, metavar="N",
                   help="Offline: run LoadGen's query in batches of N. Default: the variant's "
                        "best throughput batch in this run (else the accuracy batch)")
    m.add_argument("--mlperf-offline-qps", type=float, default=None, metavar="QPS",
                   help="Offline: the expected samples/s (a user.conf's offline_expected_qps: "
                        "LoadGen issues QPS x minimum duration x 1.1 samples, so too low a value "
                        "ends the test before its minimum duration). Default: the variant's "
                        "throughput cell in this run")
    m.add_argument("--mlperf-min-duration", type=float, default=None, metavar="SECONDS",
                   help="override each scenario's minimum duration (paper: MLPerf's 600 s; "
                        "quick 10 s; smoke 1 s); the record then says it is not MLPerf-valid")
    m.add_argument("--mlperf-min-queries", type=int, default=None, metavar="N",
                   help="override each scenario's minimum query count; a short profile's "
                        "time cap (quick 60 s, smoke 10 s) then grows to twice N x the "
                        "expected latency where that is longer")
    m.add_argument("--mlperf-accuracy", action="store_true",
                   help="also run LoadGen's AccuracyOnly mode in every scenario cell (default: "
                        "in the Offline cell, where the labels are real)")
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


def parity_thresholds(args: argparse.Namespace) -> dict:
    """The --parity-* flags under metrics.PARITY_DEFAULTS' names."""
    return {"fp32_atol": args.parity_atol, "fp32_min_top1": args.parity_min_top1,
            "reduced_min_top1": args.parity_reduced_min_top1,
            "reduced_min_top5": args.parity_reduced_min_top5,
            "int8_min_top1": args.parity_int8_min_top1,
            "int8_min_cosine": args.parity_int8_min_cosine}


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return run_command("edgebench", lambda: run(args, validate(args)))


def run(args, checked: dict, title: str = "edgebench") -> int:
    from . import run_dir, runner, store, sysinfo
    from .cell import RunSettings

    prof = json.loads(json.dumps(PROFILES[args.profile]))
    if args.max_images:
        prof["max_images"] = args.max_images
    out = run_dir.make(args)
    run_json = out / "run.json"
    prior = (json.loads(run_json.read_text(encoding="utf-8"))
             if (args.resume and run_json.is_file()) else {})
    run_id = prior.get("run_id") or uuid.uuid4().hex[:12]
    images = checked["evaluated"]      # decided once in validate (calibration avoids them)
    settings = RunSettings(
        run_id=run_id, profile=args.profile, prof=prof, cache_dir=str(Path(args.cache_dir)),
        options=variant_options(args), device=sysinfo.device(),
        parity_thresholds=parity_thresholds(args), memory_limit_mb=args.cell_memory_limit,
        run_dir=str(out))
    lock = run_dir.lock(out)
    torn = store.repair(out / "results.jsonl") if args.resume else None
    prior_records = store.read(out / "results.jsonl") if args.resume else []
    if torn:
        print(f"edgebench: warning: {torn}", file=sys.stderr)
    session = runner.Session(settings, out / "logs", args.cell_timeout or prof["cell_timeout"],
                             pythons=checked["pythons"], records=prior_records,
                             isolation=args.isolation)
    try:
        return _run_cells(args, checked, session, images, prior, out, title)
    finally:
        session.close()
        lock.close()


def _run_cells(args, checked: dict, session, images, prior: dict, out: Path, title: str) -> int:
    from rich.console import Console
    from rich.progress import (BarColumn, MofNCompleteColumn, Progress, SpinnerColumn,
                               TextColumn, TimeElapsedColumn)

    from . import report, run_dir, runner, store, sysinfo
    from .cell import new_record
    from .models import ModelArgs, ModelError, data_config
    from .powermodes import Sweep, enter_mode

    console = Console(stderr=True)
    results_path, run_json = out / "results.jsonl", out / "run.json"
    done = runner.done_keys(session.records)      # a resumed run's cells already ok
    margs = ModelArgs.from_options(session.settings.options)
    probes = session.probe(checked["variants"],
                           {m: tuple(data_config(m, margs)["input_size"]) for m in args.models})
    cells = planmod.build(args.models, checked["variants"], args.tasks,
                          reference_parity=session.reference_computes_off_cpu())
    # JIT model branches warm only the batch shapes the planned tasks call.
    session.settings = dataclasses.replace(session.settings,
                                           tasks=tuple(dict.fromkeys(c.task for c in cells)))
    # the settings with the options the variants settled in their probes
    settings, run_id, prof = session.settings, session.settings.run_id, session.settings.prof

    console.print(f"[bold]{title}[/] run {run_id} -> {out}  ({len(cells)} cells, profile "
                  f"{args.profile}, data: {images.name} {len(images)} images)")
    for v, pr in probes.items():
        if not pr["ok"]:
            console.print(f"  [yellow]variant {v} cannot run here[/]: {pr['reason']}")

    models_info: dict[str, dict] = dict(prior.get("models", {}))
    new_records: list[dict] = []
    interrupted = False
    meta = {"run_id": run_id, "created_at": prior.get("created_at") or
            dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
            "argv": sys.argv, "config": {**{k: v for k, v in vars(args).items()}, "profile_settings": prof},
            "machine": sysinfo.machine(), "device": settings.device, "device_state": sysinfo.device_state(),
            "env": sysinfo.env_flags(), "variants": probes,
            "options": session.settings.options,   # as the variants settled them ("auto" decided)
            "converter_import_errors": __import__("converters").broken(),
            "data": {"source": images.name, "root": images.root, "layout": images.layout,
                     "n_images": len(images), "license": images.license},
            "models": models_info}

    def write_meta():
        atomic_write_json(run_json, meta, indent=2)   # a kill mid-write must not lose the config

    write_meta()
    columns = (SpinnerColumn(), TextColumn("{task.description}"), BarColumn(),
               MofNCompleteColumn(), TimeElapsedColumn())
    sweep_cfg = checked.get("power_modes")
    modes = sweep_cfg["modes"] if sweep_cfg else [None]
    sweep = None
    if sweep_cfg:
        meta["power_modes"] = {"requested": [m.label() for m in modes],
                               "found": sweep_cfg["found"].label()}
        write_meta()
    with Progress(*columns, console=console, transient=False) as progress:
        if sweep_cfg:          # restores the board on every way out of its block
            sweep = Sweep(sweep_cfg["nvpmodel"], sweep_cfg["jetson_clocks"], say=progress.console.print)
        overall = progress.add_task("cells", total=len(cells) * len(modes))
        # Ctrl-C anywhere in the loop (in a cell, between cells, while printing a cell's
        # line or preparing a model) stops it; the report below covers what finished. A
        # power-mode sweep puts the board back first, on every way out of its block.
        try:
            with sweep or contextlib.nullcontext():
                for mode in modes:
                    mode_name = mode.name if mode else ""
                    mode_todo = [c for c in cells if c.key(settings.device_id, mode_name) not in done]
                    if mode is not None and mode_todo:
                        progress.update(overall, description=f"power mode {mode.label()}: switching")
                        session.settings, failed = enter_mode(session.settings, sweep, mode,
                                                              progress.console.print)
                        if failed:           # that mode's cells fail with nvpmodel's message
                            for cell in mode_todo:
                                rec = new_record(cell.with_(run=session.settings,
                                                            inputs=session.inputs.get(cell.model)),
                                                 "failed", failed)
                                store.append(results_path, rec)
                                new_records.append(rec)
                                session.records.append(rec)
                            progress.console.print(f"  [red]failed  [/] {len(mode_todo)} cells of "
                                                   f"power mode {mode.label()}: {failed}")
                            progress.advance(overall, len(cells))
                            continue
                    for model in dict.fromkeys(c.model for c in cells):
                        mcells = [c for c in cells if c.model == model]
                        todo = [c for c in mode_todo if c.model == model]
                        progress.advance(overall, len(mcells) - len(todo))
                        if not todo:
                            continue
                        progress.update(overall, description=f"{model}: weights and data")
                        try:
                            models_info[model], warns = session.prepare(
                                model, images, args.weights, args.seed,
                                prior=models_info.get(model) if args.resume else None,
                                progress=progress, calibration=checked.get("calibration"),
                                facts=(checked.get("model_facts") or {}).get(model))
                        except (ModelError, ValueError) as e:   # weights unavailable, no readable image
                            progress.stop()
                            print(f"{title}: error: {e}", file=sys.stderr)   # one line, like any bad input
                            return EXIT_USAGE
                        for w in warns:
                            console.print(f"  [yellow]warning:[/] {w}")
                        write_meta()
                        at = f" @ {mode_name}" if mode_name else ""
                        for cell in todo:
                            progress.update(overall, description=f"{cell.model} · {cell.variant} · {cell.task}{at}")
                            rec = session.run(cell)    # Ctrl-C: the running cell's process group is killed
                            store.append(results_path, rec)
                            new_records.append(rec)
                            colour = {"ok": "green", "skipped": "yellow", "partial": "cyan"}.get(rec["status"], "red")
                            progress.console.print(f"  [{colour}]{rec['status']:8}[/] {cell.model} · {cell.variant} · "
                                                   f"{cell.task}{at}  {report.one_line(rec)}")
                            progress.advance(overall)
        except KeyboardInterrupt:
            interrupted = True
        finally:
            if sweep is not None:
                meta["power_modes"]["restored"] = sweep.restored
        progress.update(overall, description="report")
    records = store.read(results_path)
    t_report = time.perf_counter()
    made = report.write_all(out, records, meta)
    meta["finished_at"] = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    meta["interrupted"] = interrupted
    meta["time_budget"] = run_dir.time_budget(time.perf_counter() - T_START, new_records,
                                      session.timings, time.perf_counter() - t_report)
    write_meta()
    # report.md once more, now with the budget line (the plots and CSV stand as written)
    report.write_markdown(out / "report.md", report.summary_rows(records), records, meta, made)
    args.out = str(out)
    if interrupted:
        console.print(f"[yellow]interrupted[/]: the cell that was running was stopped; the report "
                      f"covers the {len(new_records)} cells finished before it "
                      f"({out / 'report.md'}). Continue with --resume --out {out}")
        return EXIT_INTERRUPTED
    console.print(f"[bold]done[/]: {out / 'report.md'}")
    return runner.exit_code(records, {c.key(settings.device_id, m.name if m else "")
                                      for c in cells for m in modes})


if __name__ == "__main__":
    sys.exit(main())
