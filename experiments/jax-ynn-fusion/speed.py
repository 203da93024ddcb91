"""ms per image of the jax variant's jitted forward, per model and batch size, under the XLA
flags in force (run by run.sh once with JAX's default library fusions, once without).

Seeded random weights; zeros as input (speed does not depend on the values here)."""
import sys
import time

sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parents[2]))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

from converters.jax_flax import families  # noqa: E402
from converters.jax_flax.predictor import MATMUL_PRECISION, make_forward  # noqa: E402
from edgebench.models import make_spec, source_of  # noqa: E402

name = sys.argv[1]
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
