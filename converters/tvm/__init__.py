"""Apache TVM variant: torch.export -> Relax -> (MetaSchedule-tuned) TIR -> native library.

Options: ``tuning_dir``, ``tvm_target`` (targets.py), ``tvm_artifact`` (an export, loaded
instead of compiling), ``tvm_importer``, ``tvm_<choice>`` (lowering.py). Static shapes: batch 1
is compiled by ``convert``, others on first call (an artifact holds only its exported sizes).

Layout of this package (one job per module). The core:
  __init__.py      the converter (options, cache keys, loading an export)
  errors.py        the package's exceptions (the tuning command maps them to exit codes)
  targets.py       targets (host, Jetson, tags, JSON): names, devices, threads, defaults
  importer.py      torch module or ONNX file -> Relax (torch.export, ONNX as fallback)
  lowering.py      the registry of lowering choices: values, options, cache key, tuning.json
  passes.py        the lowering shared by tuning and compiling, and the tuning tasks
  relax_rewrite.py ``Rewrite`` (a lowering choice's descriptor) and Relax rewrite helpers
  build.py         apply a tuning database, compile, write a host library
  database.py      tuning databases: paths, fingerprint, what they hold, tuning.json
  intrinsics.py    tensor intrinsics registered before the first tuning context
  tuning.py        one tuning session: tasks, contexts, cost model, budget, resume, interrupts
  scheduler.py     the tuning loop: pick a task, build, measure and commit one batch
  runner.py        where candidates are built and measured: locally or over TVM RPC
  _msbuild.py      the builder's worker functions
  transfer.py      what the cost model learns first, and records reused from other databases
  export.py        exported artifacts: libraries, manifest, sha256 checks, cross-compiling
  cuda_export.py   CUDA kernels compiled with NVRTC into an exported library
  predictor.py     the loaded variant: the Relax VM, one library per batch size
  layers.py        the per-kernel profile of the layers task (the VM's instrument hook)
  cli.py           the ``tune`` command (``python -m edgebench.tune``, via ``commands``)
  cli_help.py      that command's ``--help`` text beyond the options
  cli_checks.py    what can be wrong with the tune command's input (exit 2 before any work)
  cli_measure.py   that command's last step: the edgebench.full command measuring the result
  progress.py      that command's progress display
  cpu/             the x86 CPU research: its rewrites, design spaces and recipes (cpu/__init__)

Importing this package imports neither tvm nor torch: the registry lists every variant.
"""
from __future__ import annotations

import json
import threading
import time
from pathlib import Path

from edgebench.cache_integrity import reuse
from edgebench.util import atomic_write_json

from .. import register
from ..base import Artifact, Availability, Converter, ModelSpec, Predictor, SkipVariant
from . import build, database, lowering, passes, targets
from .errors import TargetError
from .predictor import TvmPredictor

DEFAULT_TUNING_DIR = "results/tuning"


def _opts(spec_or_options) -> dict:
    if isinstance(spec_or_options, ModelSpec):
        return dict(spec_or_options.options or {})
    return dict(spec_or_options or {})


@register
class TvmConverter(Converter):
    name = "tvm"
    starts_from_onnx = True
    precision = "fp32"
    description = "Apache TVM (Relax + MetaSchedule), static shapes, per-target tuning database"
    commands = {"tune": "converters.tvm.cli:main"}
    # Importing TVM loads its libraries and LLVM (about 2 s a cell here) and starts no thread:
    # its CPU pool starts at the first call and reads TVM_NUM_THREADS then.
    preload = ("tvm", "tvm.relax")
    cli_options = (
        ("--tuning-dir", {"default": None, "metavar": "DIR",
                          "help": "TVM tuning databases (default results/tuning); the database for "
                                  "a model and target is applied when it exists "
                                  "(python -m edgebench.tune writes them)"}),
        ("--tvm-target", {"default": None, "metavar": "TARGET",
                          "help": "host (this machine's CPU; the default, except on a Jetson "
                                  "with CUDA: jetson-agx-orin, its GPU), jetson-agx-orin-cpu "
                                  "(its Arm cores), a TVM tag or a JSON target"}),
        ("--tvm-artifact", {"default": None, "metavar": "DIR",
                            "help": "load an artifact exported by python -m edgebench.tune "
                                    "--export (sha256 checked) instead of compiling here; or a "
                                    "folder of them, one per model"}),
        ("--tvm-untuned", {"action": "store_true",
                           "help": "measure TVM without a tuning database even in the quick "
                                   "profile (untuned TVM is 10-100x slower than tuned)"}),
    )

    def __init__(self):
        self._models: dict = {}
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ availability
    def available(self, options=None) -> Availability:
        opts = _opts(options)
        try:
            import tvm
        except Exception as e:  # noqa: BLE001
            return Availability.no(f"apache-tvm is not importable ({type(e).__name__}: {e}); "
                                   "pip install 'edgebench[tvm]'")
        versions = targets.tvm_versions()
        art = opts.get("tvm_artifact")
        if art:
            from . import export

            try:   # one artifact, or a folder of them (each model's is checked at convert)
                manifest = export.artifacts_in(art)[0][1]
            except Exception as e:  # noqa: BLE001
                return Availability.no(f"tvm_artifact: {e}", **versions)
            why = export.runnable_here(manifest)
            return Availability.no(why, **versions) if why else Availability.yes(**versions)
        try:
            target, tname = targets.resolve_target(opts.get("tvm_target"))
        except TargetError as e:
            return Availability.no(str(e), **versions)
        if target.kind.name == "llvm" and not tvm.runtime.enabled("llvm"):
            return Availability.no("this TVM build has no LLVM backend", **versions)
        if targets.is_gpu(target):
            why = _gpu_missing(target, tname)
            if why:
                return Availability.no(why, **versions)
        why = _cross_reason(target)
        if why:
            return Availability.no(why, **versions)
        return Availability.yes(**versions)

    def compute_device(self, options: dict) -> str:
        opts = _opts(options)
        if opts.get("tvm_artifact"):
            from . import export

            try:
                return export.artifacts_in(opts["tvm_artifact"])[0][1].get("device", "cpu")
            except Exception:  # noqa: BLE001 - available() says why it cannot be read
                return "cpu"
        try:
            target, _ = targets.resolve_target(opts.get("tvm_target"))
        except TargetError:
            return "cpu"
        return target.kind.name if targets.is_gpu(target) else "cpu"

    def versions(self) -> dict:
        try:
            return targets.tvm_versions()
        except Exception:  # noqa: BLE001
            return {}

    # ------------------------------------------------------------------ convert
    def convert(self, spec: ModelSpec, cache: Path) -> Artifact:
        opts = _opts(spec)
        if opts.get("tvm_artifact"):
            return self._from_export(spec, opts["tvm_artifact"])
        ctx = self._context(spec)
        targets.configure_threads(ctx["target"])  # before any kernel runs (constant folding)
        why = _untuned_reason(spec.name, opts, ctx)
        if why:
            raise SkipVariant(why)
        t = time.perf_counter()
        path, meta, cached = self._compiled(spec, Path(cache), 1, ctx)
        convert_s = 0.0 if cached else time.perf_counter() - t
        meta = dict(meta)
        meta["batch_mode"] = ("static shapes: batch 1 compiled at convert, other batch sizes "
                              "compiled on first use and cached")
        meta["compiled_batch_sizes"] = [1]
        return Artifact(self.name, path=str(path), convert_s=convert_s, cached=cached,
                        meta=meta, obj={"cache": str(cache), "ctx": ctx})

    def check_options(self, options: dict) -> None:
        art = _opts(options).get("tvm_artifact")
        if art:
            from . import export

            try:
                export.artifacts_in(art)
            except (OSError, ValueError) as e:   # JSONDecodeError is a ValueError
                raise ValueError(f"--tvm-artifact {art}: {e}") from None

    def check_model(self, model: str, input_size: tuple, options: dict) -> Availability:
        opts = _opts(options)
        if opts.get("tvm_artifact"):
            from . import export

            try:
                found = export.artifact_for(opts["tvm_artifact"], model, input_size)
            except (OSError, ValueError) as e:
                return Availability.no(f"tvm_artifact: {e}")
            return Availability.yes() if found else Availability.no(
                _no_artifact_reason(opts["tvm_artifact"], model, input_size))
        try:
            ctx = self._context_for(model, tuple(input_size), opts)
        except SkipVariant as e:
            return Availability.no(str(e))
        why = _untuned_reason(model, opts, ctx)
        return Availability.no(why) if why else Availability.yes()

    def _context(self, spec: ModelSpec) -> dict:
        return self._context_for(spec.name, spec.input_size, _opts(spec))

    def _context_for(self, model: str, input_size: tuple, opts: dict) -> dict:
        target, tname = targets.resolve_target(opts.get("tvm_target"))
        why = _cross_reason(target)
        if why:
            raise SkipVariant(why)
        tuning_dir = opts.get("tuning_dir") or DEFAULT_TUNING_DIR
        db_dir = database.db_dir_for(tuning_dir, target, model, input_size)
        return {"target": target, "target_name": tname, "db_dir": db_dir,
                "defaults": targets.defaults_for(target),
                "importer": opts.get("tvm_importer") or "auto",
                **lowering.lowering_for(target, db_dir, {n: opts.get(f"tvm_{n}")
                                                         for n in lowering.CHOICE_NAMES})}

    def _cache_paths(self, spec, cache: Path, batch: int, ctx: dict):
        key = spec.key("tvm", targets.target_json(ctx["target"]),
                       database.database_fingerprint(ctx["db_dir"]), targets.tvm_versions(),
                       passes.PIPELINE_VERSION, ctx["importer"],
                       *lowering.cache_tags({k: ctx[k] for k in lowering.CHOICE_NAMES}),
                       f"b{batch}")
        folder = Path(cache) / "tvm"
        stem = f"{spec.slug}-{key}-b{batch}"
        return folder / f"{stem}.so", folder / f"{stem}.json"

    def _compiled(self, spec: ModelSpec, cache: Path, batch: int, ctx: dict):
        """(library path, meta, cached?) for one batch size; compiles on a cache miss."""
        so, js = self._cache_paths(spec, cache, batch, ctx)
        # dlopen'ed: fully re-hashed on every reuse, in the process that loads it.
        hit, rebuilt = reuse(so, executed=True, also=[js],
                             read=lambda: json.loads(js.read_text(encoding="utf-8")))
        if hit is not None:
            return so, hit, True
        model = self._model(spec)
        db_dir = ctx["db_dir"] if database.database_exists(ctx["db_dir"]) else None
        res = build.build_library(model, spec.input_size, batch, ctx["target"], db_dir=db_dir,
                                 importer=ctx["importer"], spec=spec, cache=cache, out_path=so,
                                 **{k: ctx[k] for k in lowering.CHOICE_NAMES})
        from .cpu import fast_math

        meta = {"tuning": database.tuning_meta(ctx["db_dir"] if db_dir else None, res["tuning"]),
                "target": targets.target_dict(ctx["target"]), "target_name": ctx["target_name"],
                "fast_math": fast_math.DESCRIPTION if fast_math.applies_to(ctx["target"])
                else None,
                "importer": res["importer"], **{k: ctx[k] for k in lowering.CHOICE_NAMES},
                # which defaults filled what neither the user nor the database chose
                "defaults": ctx["defaults"],
                "batch_size": batch, "timings": res["timings"], **targets.tvm_versions()}
        if not db_dir:
            meta["tuning"]["database"] = str(ctx["db_dir"])
            meta["tuning"]["note"] = "no tuning database for this model and target"
        if res["importer_note"]:
            meta["importer_fallback_reason"] = res["importer_note"]
        atomic_write_json(js, meta)
        if rebuilt:    # this process's record only, not the cached meta
            meta = {**meta, "cache_rebuilt": rebuilt}
        return so, meta, False

    def _model(self, spec: ModelSpec):
        if spec.from_onnx:          # imported from its ONNX file (importer.import_model)
            return None
        key = (spec.name, spec.weights, tuple(spec.input_size), spec.fingerprint)
        with self._lock:
            if key not in self._models:
                self._models[key] = spec.build()
            return self._models[key]

    def _from_export(self, spec: ModelSpec, art_dir) -> Artifact:
        from . import export

        found = export.artifact_for(art_dir, spec.name, spec.input_size)
        if found is None:
            raise SkipVariant(_no_artifact_reason(art_dir, spec.name, spec.input_size))
        art_dir, manifest = found
        export.verify_manifest(art_dir, manifest)  # sha256 of every file, or raise
        why = export.runnable_here(manifest)
        if why:
            raise SkipVariant(why)
        if manifest.get("model") and manifest["model"] != spec.name:
            raise ValueError(f"tvm_artifact {art_dir} holds {manifest['model']}, not {spec.name}")
        if manifest.get("input_size") and tuple(manifest["input_size"]) != tuple(spec.input_size):
            raise ValueError(f"tvm_artifact {art_dir} was compiled for input "
                             f"{manifest['input_size']}, the model needs {list(spec.input_size)}")
        libs = export.libraries(art_dir, manifest)
        first = libs[min(libs)]
        meta = {k: manifest.get(k) for k in ("tuning", "target", "target_name", "importer",
                                             *lowering.CHOICE_NAMES, "defaults", "tvm",
                                             "tvm_ffi")}
        meta["artifact_dir"] = str(art_dir)
        meta["compiled_batch_sizes"] = sorted(libs)
        # The passes, the throughput search and MultiStream keep to these where the artifact
        # also holds untuned sizes (exported with --batch-sizes beyond the tuned one).
        meta["tuned_batch_sizes"] = export.tuned_batch_sizes(manifest)
        meta["batch_mode"] = "exported artifact: only the batch sizes it holds"
        return Artifact(self.name, path=str(first), cached=True, meta=meta,
                        obj={"libs": libs, "manifest": manifest})

    # ------------------------------------------------------------------ load
    def load(self, artifact: Artifact, spec: ModelSpec) -> Predictor:
        import tvm

        obj = artifact.obj or {}
        if "libs" in obj:  # exported artifact: the runtime alone, no compiler calls
            dev = tvm.cuda(0) if obj["manifest"].get("device") == "cuda" else tvm.cpu(0)
            # No target object here: CPU kernels get all physical cores (or TVM_NUM_THREADS).
            threads = targets.configure_threads(None)
            return TvmPredictor(self, spec, dev, dict(obj["libs"]), None, None,
                                {**artifact.meta, "cpu_threads": threads})
        ctx = obj.get("ctx") or self._context(spec)
        cache = Path(obj.get("cache") or ".")
        threads = targets.configure_threads(ctx["target"])
        return TvmPredictor(self, spec, targets.device_for(ctx["target"]), {1: artifact.path},
                            ctx, cache, {**artifact.meta, "cpu_threads": threads})


def _untuned_reason(model: str, opts: dict, ctx: dict) -> str:
    """Why TVM is left out untuned ('' if not): untuned TVM is slow and says little, so the
    quick and smoke profiles measure it only where a tuning database exists."""
    profile = opts.get("profile")
    if (profile not in ("quick", "smoke") or opts.get("tvm_untuned")
            or (Path(ctx["db_dir"]) / "database_tuning_record.json").is_file()):
        return ""
    return (f"no TVM tuning database for {model} on {ctx['target_name']} "
            f"({ctx['db_dir']}); untuned TVM is left out of the {profile} profile. Tune first: "
            f"python -m edgebench.tune --model {model} --trials 512, or pass --tvm-untuned")


def _no_artifact_reason(art_dir, model: str, input_size) -> str:
    from . import export

    return (f"no TVM artifact for {model} at {'x'.join(map(str, input_size))} in {art_dir} "
            f"(it holds {export.holdings(art_dir)}); export one with python -m edgebench.tune "
            f"--model {model} --target ... --export {Path(art_dir) / model}")


def _gpu_missing(target, tname: str) -> str:
    """'' when ``target``'s GPU is usable here, else why not and what to do instead."""
    if targets.device_for(target).exist:
        return ""
    from edgebench.telemetry.sysfs import is_jetson

    if target.kind.name == "cuda" and is_jetson():
        from . import export

        why = export.cuda_runtime_here()    # opens TVM's CUDA sidecar, or says why not
        if not why:
            return ""
        return (f"target {tname}: {why}. On a Jetson, jetson/setup-jetpack6.sh builds TVM's "
                "CUDA runtime for JetPack's CUDA; or load an exported artifact "
                f"(--tvm-artifact), or measure the Arm cores: --tvm-target "
                f"{targets.JETSON_CPU_NAME}")
    return (f"target {tname} needs a {target.kind.name.upper()} GPU and there is none here; "
            f"cross-compile instead: python -m edgebench.tune --model M --target {tname} "
            "--trials 0 --export DIR")


def _cross_reason(target) -> str:
    """Why a target cannot be compiled-and-run here (a different host architecture)."""
    import platform

    arch = targets.host_arch(target)
    if targets.native(arch):
        return ""
    return (f"target host is {arch}, this machine is {platform.machine()}: cross-compile with "
            "python -m edgebench.tune --target ... --export DIR and load it on the device")
