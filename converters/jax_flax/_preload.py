"""What the fork server imports for the jax variant: XLA's memory settings first (they must
precede the first ``import jax``), then jax and flax. Importing starts no XLA backend and no
thread, so forking afterwards is safe."""
from . import xla_env

xla_env.prepare()

import flax.linen  # noqa: E402,F401
import jax  # noqa: E402,F401
