"""The one protocol every runtime variant implements.

The runner, measurement and report code never name a backend: they look a variant up in
the registry (``converters.get``) and talk to it only through these classes.

Timing boundary (declared once, the same for every variant): a ``Predictor`` call takes a
host-memory NCHW float32 ``np.ndarray`` and returns host-memory float32 logits
``(batch, classes)`` -- or, for a model of several outputs (a detector's boxes and scores),
a tuple of arrays, one per output in the model's order (``host_outputs``). Everything in between -- host->device copy, layout change, inference,
device->host copy and synchronisation -- is inside the timed region.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from pathlib import Path
from typing import Any, Callable, Optional

import numpy as np


def host_outputs(value, to_numpy=None):
    """A model's output(s) as the Predictor protocol returns them: one array for a single
    output, a tuple of arrays, in order, for several (a tuple, list or dict, nested too, is
    flattened in order; dict values in insertion order). ``to_numpy`` turns one runtime
    tensor into an ndarray (default ``np.asarray``)."""
    conv = to_numpy or np.asarray
    flat: list = []

    def walk(v):
        if isinstance(v, dict):
            for x in v.values():
                walk(x)
        elif isinstance(v, (tuple, list)):
            for x in v:
                walk(x)
        else:
            flat.append(conv(v))

    walk(value)
    return flat[0] if len(flat) == 1 else tuple(flat)


class SkipVariant(Exception):
    """Raised by a converter when the variant cannot run here (status ``skipped``)."""


class OutOfMemory(Exception):
    """Raised by a predictor when a batch does not fit (lets the throughput search step down)."""


@dataclasses.dataclass(frozen=True)
class Availability:
    ok: bool
    reason: str = ""
    versions: dict = dataclasses.field(default_factory=dict)

    @classmethod
    def yes(cls, **versions) -> "Availability":
        return cls(True, "", versions)

    @classmethod
    def no(cls, reason: str, **versions) -> "Availability":
        return cls(False, reason, versions)


@dataclasses.dataclass
class ModelSpec:
    """What a converter needs to build one model; created by ``edgebench.models``."""

    name: str                      # as given on --models: "resnet152", "pkg.mod:fn", "a/b.onnx"
    weights: str                   # "pretrained" | "random-seed-N" | checkpoint path | "factory" | "onnx-file"
    input_size: tuple              # (C, H, W)
    num_classes: int | None        # a classifier's class count; None: not one [batch, classes] output
    build: Callable[[], Any]       # returns the torch.nn.Module in eval mode, FP32, on CPU
    source: str = "timm"           # "timm" | "torchvision" | "factory" | "onnx"
    options: dict = dataclasses.field(default_factory=dict)  # variant options from the CLI
    kind: str = "zoo"              # "zoo" | "factory" | "onnx" (edgebench.models)
    # The model's content hash (checkpoint, factory source or ONNX file sha256): in every key.
    fingerprint: str = ""
    slug: str = ""                 # ``name`` as a file-name component ("" : the name itself)
    onnx_path: str = ""            # kind "onnx": the canonical ONNX file every variant reads
    static_batch: int | None = None  # kind "onnx": a batch size the file fixes
    outputs: list = dataclasses.field(default_factory=list)   # output names, in order

    def __post_init__(self):
        if not self.slug:
            self.slug = self.name

    @property
    def from_onnx(self) -> bool:
        """True when the model is an ONNX file: no PyTorch module exists to build."""
        return self.kind == "onnx"

    def key(self, *extra: Any) -> str:
        """Content hash for caches: model, weights and whatever else the caller adds."""
        blob = json.dumps([self.name, self.weights, list(self.input_size), self.num_classes,
                           self.fingerprint or _weights_fingerprint(self.weights),
                           *map(str, extra)])
        return hashlib.sha256(blob.encode()).hexdigest()[:16]


def _weights_fingerprint(weights: str) -> str:
    # A checkpoint path is identified by its content, not its name.
    p = Path(weights)
    if p.is_file():
        st = p.stat()
        return f"{st.st_size}-{int(st.st_mtime)}"
    return ""


@dataclasses.dataclass
class Artifact:
    """The converted model: a file on disk (cached) or an in-process object."""

    variant: str
    path: Optional[str] = None     # file or directory on disk, when there is one
    obj: Any = None                # in-process result (e.g. an nn.Module)
    convert_s: float = 0.0         # time spent converting in this process (0 when cached)
    cached: bool = False           # True when taken from the cache
    meta: dict = dataclasses.field(default_factory=dict)  # written into every record

    def sha256(self) -> Optional[str]:
        """sha256 of the artifact file. Its sidecar (``edgebench.cache_integrity``) remembers
        it, so large artifacts are hashed once, not once per cell."""
        if not self.path or not os.path.isfile(self.path):
            return None
        from edgebench.cache_integrity import digest

        return digest(self.path)


class Predictor:
    """A loaded, ready-to-call model. ``__call__`` is synchronous: when it returns, the logits
    are in host memory."""

    meta: dict = {}
    # The batch sizes this predictor can run, or None for any. The measurements use only
    # these (an exported TVM artifact holds just the sizes it was compiled for).
    batch_sizes: list[int] | None = None
    # The batch sizes it runs at its best, or None for every size it runs: a TVM build runs
    # any size, but only the sizes its database was tuned at have tuned kernels (another is
    # compiled untuned: seconds per image on a CPU). Passes over the images (parity,
    # accuracy), the throughput search and MultiStream's queries keep to these.
    tuned_batch_sizes: list[int] | None = None

    def __call__(self, batch: np.ndarray) -> np.ndarray:  # pragma: no cover - protocol
        raise NotImplementedError

    def close(self) -> None:
        """Free device memory etc. Optional."""


class Converter:
    """One runtime variant. Subclasses set ``name`` and implement the three methods."""

    name: str = ""
    precision: str = "fp32"        # "fp32" | "fp16" ...: decides how parity judges the variant
    description: str = ""
    # CLI flags this variant adds to `edgebench.full`, as (flag, argparse kwargs) pairs.
    # Their values reach ModelSpec.options under argparse's dest name ("--ort-providers" ->
    # options["ort_providers"]); keep flags prefixed with the variant family.
    cli_options: tuple = ()
    # Modules safe to import before fork (they start no thread and touch no device at
    # import): this variant's branch of the fork server imports them once instead of once
    # per cell (other variants' cells never map them).
    preload: tuple = ()
    # True for a JIT variant whose compiled model lives in the process, not in a file
    # (torch.compile): on the CPU, the fork server compiles it once per model and run, in a
    # branch, and forks the model's cells from that branch (edgebench.forkserver). Not on a
    # GPU: CUDA does not survive fork.
    compiles_in_process: bool = False
    # Commands this variant family provides (``python -m edgebench.<name>`` dispatches through
    # ``converters.command``): name -> "module:function", the function taking argv and
    # returning an exit code. Imported only when the command runs.
    commands: dict = {}
    # False: an opt-in variant, run only when named in --variants (the default run is every
    # variant with this True; converters.default_names()).
    in_default_run: bool = True
    # True for a post-training-quantized variant: the run prepares a calibration set for it
    # (edgebench.data.calibration), disjoint from the evaluation images, and hands it over in
    # ModelSpec.options["int8_calibration"].
    needs_calibration: bool = False
    # The variant this one is a lower-precision form of (an INT8 variant's FP32 or FP16
    # counterpart): the report sets their latency and throughput side by side.
    compares_with: str = ""
    # True for a variant that starts from the model's ONNX form (``export_onnx``): it also runs
    # a model handed over as an ONNX file. False: it needs the PyTorch module (an ONNX file's
    # cells are skipped with that reason).
    starts_from_onnx: bool = False
    # True for the one variant whose ``reference_predictor`` computes an ONNX file's reference
    # outputs (FP32 on the CPU): there is no PyTorch module to be the reference.
    onnx_reference: bool = False

    def available(self, options: dict | None = None) -> Availability:
        """Can this variant run on this machine (probe for real; never assume)?"""
        raise NotImplementedError

    def calibration_facts(self, folder: str, options: dict) -> dict:
        """A ``needs_calibration`` variant's facts about the calibration set the run prepared
        in ``folder`` (its preprocessed images), which every INT8 record carries:
        {"method", "sha256"}. The run asks the first such variant it plans."""
        raise NotImplementedError(f"{self.name} does not calibrate")

    def convert(self, spec: ModelSpec, cache: Path) -> Artifact:
        """Produce (or reuse from ``cache``) the runnable artifact; time the real work."""
        raise NotImplementedError

    def load(self, artifact: Artifact, spec: ModelSpec) -> Predictor:
        """Load the artifact into a Predictor."""
        raise NotImplementedError

    def versions(self) -> dict:
        """Versions of the libraries this variant uses, for run.json."""
        return {}

    def before_fork(self) -> None:
        """In the branch that compiled the model (``compiles_in_process``), after compiling
        and before the first cell is forked: stop what must not be forked (worker pools and
        their threads). Optional."""

    def after_fork(self) -> None:
        """In a cell forked from the branch that compiled its model (``compiles_in_process``),
        before it measures: undo what does not survive fork. Optional."""

    # -- decided once per run, in the probe process (the variant's own interpreter) --------
    def settle_options(self, options: dict) -> dict:
        """Options this variant settles on the machine that runs it (e.g. a device given as
        "auto"). Returns only the settled keys; the runner merges them into the run's options."""
        return {}

    def worker_env(self, options: dict, cache_dir: str) -> dict:
        """Environment variables this variant needs in its worker processes before any
        import (e.g. a compiler's cache folder). The machine's own settings win."""
        return {}

    def compute_device(self, options: dict) -> str:
        """Where this variant computes with these options: "cpu", "cuda", ... The reference
        variant gets a parity cell of its own when it does not compute on the CPU."""
        return "cpu"

    def check_options(self, options: dict) -> None:
        """Refuse option values that cannot be right on any machine (a path that is not what
        the option needs): raise ValueError naming the option. Runs in the main process
        before anything starts, so it must not import the backend. What depends on the
        machine (no GPU, backend not installed) is the probe's: status "skipped"."""

    def check_model(self, model: str, input_size: tuple, options: dict) -> Availability:
        """Can ``model`` run in this variant here? Cheap (no conversion): the plan records a
        cell that cannot as ``skipped`` with this reason, without starting a worker."""
        return Availability.yes()

    def diagnose(self, artifact: Artifact, spec: ModelSpec, images: np.ndarray) -> dict | None:
        """Optional, for a reduced-precision variant: where its outputs drift from FP32, layer
        by layer, on these images (NCHW float32). The parity cell puts it in the record when
        the variant fails parity or loses accuracy (or when asked)."""
        return None

    def reference_predictor(self, spec: ModelSpec) -> Predictor:
        """Only the reference variant: an FP32 CPU predictor whose logits every variant's
        parity is judged against."""
        raise NotImplementedError(f"{self.name} is not a reference variant")

    def profile_layers(self, artifact: Artifact, spec: ModelSpec, predictor: Predictor,
                       batch: np.ndarray, runs: int) -> dict:
        """The ``layers`` task: the runtime's own per-layer profile of ``batch`` over ``runs``
        calls after a warm-up: {"profiler": what measured, "layers": [{"name", "op", "ms"
        (median per inference), "calls", "where" (CPU, GPU, DLA, an EP), "precision",
        "depthwise", "qdq" (a quantize or dequantize layer between precisions)}], "notes":
        [...], "matching": "onnx node name" or "op type"}. By default
        the predictor's own ``profile_layers(batch, runs)``; SkipVariant where it has none."""
        own = getattr(predictor, "profile_layers", None)
        if own is None:
            raise SkipVariant(f"{self.name} has no per-layer profiler in edgebench")
        return own(batch, runs)
