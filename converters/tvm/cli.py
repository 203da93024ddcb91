"""The ``tune`` command (``python -m edgebench.tune``): tune a model with TVM MetaSchedule
and/or export a compiled TVM artifact for a device, then say how to measure the result.

    python -m edgebench.tune --model mobilenetv2_100 --trials 512
    python -m edgebench.tune --model mobilenetv2_100 --target jetson-agx-orin --trials 0 --export out/orin
    python -m edgebench.tune --model resnet152 --target jetson-agx-orin --trials 2000 \\
        --rpc-tracker 10.0.0.5:9190 --rpc-key orin          # measure candidates on the board

The result is measured by ``edgebench.full`` beside ONNX Runtime: the command prints that
command, ``--measure`` runs it. Exit codes: 0 done, 1 TVM or the measurement failed, 2 bad
arguments, 130 interrupted (the same command resumes).
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from edgebench.errors import ArgumentParser, UsageError
from edgebench.models.args import add_options as add_model_options
from edgebench.util import atomic_write_text

from . import database, export, lowering, runner, scheduler, targets, tuning
from .cpu import design_space, recipes
from .cli_checks import validate
from .cli_help import EPILOG
from .cli_measure import CACHE_DIR, measure, measure_command  # noqa: F401 - public here
from .errors import ExportError, RpcError, TvmError
from .progress import Progress


NAME = "edgebench tune"     # the command in its error messages ("edgebench tune: error: ...")


class _HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Option summaries on one line each where they fit: 100 columns, help from column 34."""

    def __init__(self, prog):
        super().__init__(prog, width=100, max_help_position=34)


def build_parser() -> argparse.ArgumentParser:
    """Option summaries only (one or two lines each); what each choice does and what it
    measured is in docs/tvm.md and experiments/FINDINGS.md."""
    p = ArgumentParser(
        prog="python -m edgebench.tune", error_name=NAME,
        usage="python -m edgebench.tune --model MODEL [--target TARGET] [--trials N] "
              "[--export DIR] [options]",
        description="Tune a vision model with TVM MetaSchedule (resumable; measured here or on a\n"
                    "board over RPC) and/or export a compiled TVM artifact for a device.",
        epilog=EPILOG, formatter_class=_HelpFormatter)
    p.add_argument("--model", required=True,
                   help="a timm/torchvision name, package.module:function or path/to/model.onnx "
                        "(as python -m edgebench.full --models takes it)")
    add_model_options(p, preprocess=False)     # --num-classes, --model-path
    p.add_argument("--target", default=None,
                   help="host | jetson-agx-orin | jetson-agx-orin-cpu | a TVM tag | a JSON "
                        "target (default: as the tvm variant's, see below)")
    p.add_argument("--trials", type=int, default=512, metavar="N",
                   help="total budget in measured candidates, records already in the database "
                        "included (0: no tuning; default 512)")
    p.add_argument("--tuning-dir", default="results/tuning", metavar="DIR",
                   help="root of the tuning databases (default results/tuning)")
    p.add_argument("--export", metavar="DIR", help="write a loadable artifact to DIR")
    p.add_argument("--batch-size", type=int, default=1, metavar="B", help="batch size to tune (default 1)")
    p.add_argument("--batch-sizes", default=None, metavar="B,B",
                   help="comma list of batch sizes to export (default: --batch-size)")
    p.add_argument("--rpc-tracker", metavar="HOST:PORT",
                   help="measure candidates on a device through this TVM RPC tracker")
    p.add_argument("--rpc-key", metavar="KEY", help="the device's key at the tracker")
    p.add_argument("--weights", default="auto", metavar="W",
                   help="auto | pretrained | random | PATH (as for edgebench.full)")
    p.add_argument("--seed", type=int, default=0, metavar="N", help="seed for random weights and the tuner")
    p.add_argument("--input-size", metavar="CxHxW", help="the model's input size, e.g. 3x96x96")
    p.add_argument("--measure", nargs="?", const="", default=None, metavar="DIR",
                   help="afterwards, run the printed edgebench.full command (TVM against ONNX "
                        "Runtime) with its run in DIR (default results/run-<timestamp>)")
    p.add_argument("--summary", metavar="PATH", help="also write the summary as JSON here")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("-v", "--verbose", action="store_true", help="MetaSchedule's own log too")

    g = p.add_argument_group("lowering (default: the database's; else see 'defaults' below)")
    lowering.add_options(g)
    g.add_argument("--importer", choices=["auto", "torch.export", "onnx"], default="auto",
                   help="model importer (default auto: torch.export, ONNX if that fails)")
    g.add_argument("--cuda-format", choices=["cubin", "ptx"], default="cubin",
                   help="GPU kernels in exported artifacts (default cubin)")
    g.add_argument("--cache-dir", default=CACHE_DIR, metavar="DIR",
                   help="cache for the ONNX fallback importer (default results/cache)")

    g = p.add_argument_group("search (default: the model's recipe, else MetaSchedule's)")
    g.add_argument("--recipe", choices=recipes.CHOICES, default="auto",
                   help="auto: a new x86-64 database takes its model's recipe for unset "
                        "options (below); none: the plain defaults")
    g.add_argument("--design-space", choices=design_space.CHOICES, default=None,
                   help="auto: vector-width tiling (x86-64, NHWC); multi-vector: and two-vector "
                        "tiles; default: MetaSchedule's")
    g.add_argument("--allocation", choices=scheduler.ALLOCATIONS, default=None,
                   help="trials per task: uniform (default), or measured (caps by each "
                        "task's measured time)")
    g.add_argument("--runner-caches", choices=runner.RUNNER_CACHES, default=None,
                   help="candidates measured warm (default), or cold (weights flushed "
                        "before each call)")
    g.add_argument("--trials-per-iter", type=int, default=None, metavar="N",
                   help="candidates per task per round (default: budget/tasks, 4..64)")
    g.add_argument("--max-trials-per-task", type=int, default=None, metavar="N",
                   help="cap per task (default 4x an even share)")
    g.add_argument("--population", type=int, default=256, metavar="N",
                   help="evolutionary-search population (default 256)")
    g.add_argument("--only-tasks", nargs="+", metavar="SUBSTRING", default=None,
                   help="tune only the tasks whose name contains one of these")
    g.add_argument("--no-reuse", dest="reuse", action="store_false",
                   help="do not start from other models' records of the same kernels")
    g.add_argument("--transfer", action="store_true", default=None,
                   help="pre-train the cost model on sibling databases (default: with "
                        "multi-vector only)")
    g.add_argument("--no-transfer", dest="transfer", action="store_false",
                   help="no pre-training on sibling databases")
    g.add_argument("--transfer-from", nargs="+", metavar="DIR", default=None,
                   help="also pre-train the cost model on these databases")
    return p


def _load_model(args, input_size):
    import os

    from edgebench.models import ModelArgs, spec_for_command

    margs = ModelArgs(num_classes=args.num_classes,
                      model_path=os.path.abspath(args.model_path or os.getcwd()),
                      input_size=tuple(input_size) if input_size else None)
    return spec_for_command(args.model, args.weights, args.seed, margs, Path(args.cache_dir))


def run(args, parsed) -> dict:
    target = parsed["target"]
    spec, weights_note = _load_model(args, parsed["input_size"])
    db_dir = database.db_dir_for(args.tuning_dir, target, spec.name, spec.input_size)
    recipe = recipes.apply(args, spec.name, target, db_dir)
    choices = lowering.lowering_for(target, db_dir, {n: getattr(args, n)
                                                     for n in lowering.CHOICE_NAMES})
    summary: dict = {"model": spec.name, "weights": spec.weights, "weights_note": weights_note,
                     "input_size": list(spec.input_size), "target": targets.target_dict(target),
                     "target_name": parsed["target_name"], "database": str(db_dir),
                     **choices, "defaults": targets.defaults_for(target), "recipe": recipe,
                     **targets.tvm_versions()}
    model = None if spec.from_onnx else spec.build()    # an ONNX file is imported as it is
    if args.rpc_tracker:
        summary["rpc"] = runner.check_rpc(args.rpc_tracker, args.rpc_key)
    if args.trials > 0:
        cfg = tuning.TuneConfig(
            trials=args.trials, trials_per_iter=args.trials_per_iter,
            max_trials_per_task=args.max_trials_per_task, population=args.population,
            rpc_tracker=args.rpc_tracker, rpc_key=args.rpc_key, seed=args.seed,
            **choices, verbose=args.verbose,
            transfer=args.transfer,
            transfer_from=args.transfer_from, design_space=args.design_space,
            reuse=args.reuse, allocation=args.allocation, op_names=args.only_tasks,
            runner_caches=args.runner_caches, recipe=recipe)
        prog = Progress(enabled=not args.no_progress and sys.stderr.isatty())
        try:
            res = tuning.tune(model, spec.input_size, args.batch_size, target, db_dir, cfg,
                              importer=args.importer, spec=spec, cache=Path(args.cache_dir),
                              on_start=prog.start, on_update=prog.update)
        finally:
            prog.stop()
        summary["tuning"] = {k: v for k, v in res.items() if k != "per_task"}
        summary["tuning_per_task"] = res["per_task"]
        if res["interrupted"]:
            summary["interrupted"] = True
            return summary
    if args.export:
        summary["export"] = export.export_artifact(
            args.export, spec, model, target, parsed["target_name"], parsed["batch_sizes"],
            db_dir=db_dir, lowering=choices, importer=args.importer,
            cuda_format=args.cuda_format, cache=Path(args.cache_dir))
    summary["measure"] = measure(args, parsed, spec, db_dir)
    return summary


def main(argv=None) -> int:
    from edgebench.models import ModelError

    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        parsed = validate(args)
    except UsageError as e:
        print(f"{NAME}: error: {e}", file=sys.stderr)
        return 2
    try:
        summary = run(args, parsed)
    except KeyboardInterrupt:
        print("interrupted; the trials measured so far are in the database (run the same "
              "command to resume)", file=sys.stderr)
        return 130
    except (RpcError, ModelError) as e:    # the tracker, or the weights (e.g. pretrained offline)
        print(f"{NAME}: error: {e}", file=sys.stderr)
        return 2
    except (TvmError, ExportError) as e:
        print(f"{NAME}: failed: {e}", file=sys.stderr)
        return 1
    text = json.dumps(summary, indent=1, default=str)
    if args.summary:
        Path(args.summary).parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(args.summary, text + "\n")
    brief = {k: v for k, v in summary.items() if k != "tuning_per_task"}
    print(json.dumps(brief, indent=1, default=str))
    if summary.get("interrupted"):
        print("interrupted; the trials measured so far are in the database (run the same "
              "command to resume)", file=sys.stderr)
        return 130
    rc = summary["measure"].get("returncode", 0)
    if rc:
        print(f"{NAME}: the measurement run exited with {rc} (its records: "
              f"{summary['measure']['results']})", file=sys.stderr)
        return 130 if rc == 130 else 1
    return 0

