"""JAX/Flax variant: each covered family re-implemented in Flax (NHWC), weights ported from
the PyTorch model, forward pass compiled with ``jax.jit``.

Layout of this package (one job per module):
  families.py     which model names are covered (decided before building anything)
  resnet.py, efficientnet.py (also mobilenetv2), squeezenet.py, vgg.py, swin.py
                  the Flax model of each family and the walk that ports its torch weights
  layers.py       Flax building blocks shared by the families
  weights.py      torch layer -> Flax params (BatchNorm folding, layouts)
  store.py        the artifact on disk (cached by content hash)
  predictor.py    jit, per-shape AOT compile, the timed call
  xla_env.py      XLA memory settings (set before JAX starts) and their record

Importing this package imports neither torch nor jax: the registry lists every variant.
"""
from __future__ import annotations

import importlib.metadata
import time
from pathlib import Path

from converters import register
from converters.base import Artifact, Availability, Converter, ModelSpec, Predictor, SkipVariant

from . import families, xla_env


def _count(params: dict) -> int:
    return sum(_count(v) if isinstance(v, dict) else v.size for v in params.values())


def suite_device(platform: str) -> str:
    """A jax device platform in the suite's words: jax calls an NVIDIA GPU "gpu" (older
    releases) or "cuda"; the suite says "cuda"."""
    return "cuda" if platform in ("gpu", "cuda") else platform


@register
class JaxFlaxConverter(Converter):
    name = "jax"
    preload = ("converters.jax_flax._preload",)
    precision = "fp32"
    description = ("Flax re-implementation (NHWC) with weights ported from PyTorch, "
                   "BatchNorm folded, jax.jit; families: " + ", ".join(families.FAMILIES))

    def available(self, options: dict | None = None) -> Availability:
        xla_env.prepare()
        try:
            import flax  # noqa: F401
            import jax
        except ImportError as e:
            return Availability.no(f"jax/flax not installed ({e}); pip install edgebench[jax]")
        try:
            device = jax.devices()[0]
        except RuntimeError as e:
            return Availability.no(f"jax has no usable backend: {e}", **self.versions())
        return Availability.yes(**self.versions(), platform=device.platform,
                                device=getattr(device, "device_kind", str(device)))

    def compute_device(self, options: dict) -> str:
        import jax

        return suite_device(jax.devices()[0].platform)

    def versions(self) -> dict:
        out = {}
        for dist in ("jax", "jaxlib", "flax"):
            try:
                out[dist] = importlib.metadata.version(dist)
            except importlib.metadata.PackageNotFoundError:
                out[dist] = None
        return out

    def check_model(self, model: str, input_size: tuple, options: dict) -> Availability:
        from edgebench.models import source_of

        try:
            families.family_of(model, source_of(model))
        except SkipVariant as e:
            return Availability.no(str(e))
        return Availability.yes()

    def convert(self, spec: ModelSpec, cache: Path) -> Artifact:
        family = families.family_of(spec.name, spec.source)   # skip before building anything
        xla_env.prepare()
        import jax

        # XLA executables persist across cells and runs: a cell pays a compile only for a
        # shape no earlier cell compiled (jit_compile_s then shows a cache read).
        xla_cache = xla_env.use_compilation_cache(Path(cache) / "jax-xla")

        from . import store
        from .predictor import compile_forward, make_forward, shape_key

        path = store.path_for(spec, cache)
        ported, rebuilt = store.cached(path)
        cached, convert_s = ported is not None, 0.0
        if not cached:
            ported, convert_s = self._port(spec, family)
            t0 = time.perf_counter()
            store.save(path, ported)
            ported.meta["save_s"] = round(time.perf_counter() - t0, 3)
            if rebuilt:
                ported.meta["cache_rebuilt"] = rebuilt

        # Compile batch 1 now: the compile time is part of converting for a JIT runtime,
        # and load() reuses the executable so the cold start measures a run, not a compile.
        input_shape = (1, *spec.input_size)
        executable, compile_s = compile_forward(jax.jit(make_forward(ported.module)),
                                                ported.params, input_shape)
        ported.executables[input_shape] = executable
        meta = {**ported.meta, **xla_env.describe(), "xla_compilation_cache": xla_cache,
                "jit_compile_s": {shape_key(input_shape): round(compile_s, 4)}}
        # convert_s = weight port (0 when cached) + this process's batch-1 XLA compile, as
        # pytorch-compile counts its compile; both parts stay in meta (port_s, jit_compile_s).
        return Artifact(variant=self.name, path=str(path), obj=ported,
                        convert_s=convert_s + compile_s, cached=cached, meta=meta)

    def _port(self, spec: ModelSpec, family: str):
        from . import store
        from .weights import UnsupportedLayer

        model = spec.build()
        t0 = time.perf_counter()
        try:
            module, params = families.porter(family)(model)
        except UnsupportedLayer as e:
            raise SkipVariant(f"'{spec.name}' ({family} family) uses a layer the jax variant "
                              f"does not implement: {e}; supported families: "
                              f"{families.supported()}") from e
        convert_s = time.perf_counter() - t0
        meta = {"family": family, "port_s": round(convert_s, 3), "n_params": _count(params),
                "layout": "NHWC", "batchnorm": "folded into conv weights"}
        return store.PortedModel(module, params, meta), convert_s

    def load(self, artifact: Artifact, spec: ModelSpec) -> Predictor:
        xla_env.prepare()
        from . import store
        from .predictor import JaxPredictor

        ported = artifact.obj if isinstance(artifact.obj, store.PortedModel) \
            else store.load(artifact.path)
        # Hand the host copy of the weights over instead of keeping a second one alive.
        artifact.obj = None
        predictor = JaxPredictor(ported.module, ported.params, ported.executables)
        input_shape = (1, *spec.input_size)
        if input_shape in ported.executables:
            predictor.meta["compile_s"].update(artifact.meta.get("jit_compile_s", {}))
            predictor.meta["batch1_compiled_in"] = "convert"
        else:
            predictor.compile(input_shape)
            predictor.meta["batch1_compiled_in"] = "load"
        predictor.meta.update(family=ported.meta.get("family"), **xla_env.describe())
        return predictor
