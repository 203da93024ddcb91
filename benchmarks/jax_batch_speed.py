"""Milliseconds per image of the jax variant's jitted forward at batch 1, 2 and 8, under the
XLA flags in force (XLA_FLAGS; this script calls no xla_env.prepare(), so the environment's
flags are all that is in force). One line per model: its name and the three figures.

Seeded random weights; zeros as input (speed does not depend on the values here); one
compile call, then the mean of 3 calls per batch size.

    env -u XLA_FLAGS .venv/bin/python benchmarks/jax_batch_speed.py vgg16        # jaxlib's default
    XLA_FLAGS=--xla_cpu_experimental_ynn_fusion_type= .venv/bin/python benchmarks/jax_batch_speed.py vgg16
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model", help="a study model with a Flax port (e.g. vgg16, resnet152)")
    name = ap.parse_args().model

    import jax
    import jax.numpy as jnp

    from converters.jax_flax import families
    from converters.jax_flax.predictor import MATMUL_PRECISION, make_forward
    from edgebench.models import make_spec, source_of

    spec = make_spec(name, "random-seed-0", {})
    module, params = families.porter(families.family_of(name, source_of(name)))(spec.build())
    params = jax.device_put(params)
    forward = jax.jit(make_forward(module))
    row = []
    with jax.default_matmul_precision(MATMUL_PRECISION):
        for b in (1, 2, 8):
            x = jnp.zeros((b, 3, 224, 224))
            forward(params, x).block_until_ready()      # compile
            t = time.perf_counter()
            for _ in range(3):
                forward(params, x).block_until_ready()
            row.append(f"{(time.perf_counter() - t) / 3 / b * 1e3:.1f}")
    print(f"{name:30s} " + " ".join(f"{v:>8s}" for v in row), flush=True)


if __name__ == "__main__":
    main()
