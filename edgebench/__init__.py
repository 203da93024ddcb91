"""edgebench: benchmark deep-learning inference runtimes for vision models on edge devices."""
import os as _os

# The environment as the user started edgebench, before any library imported here could
# add to it (importing torch._inductor sets TORCHINDUCTOR_CACHE_DIR, for one): what the
# machine's operator set wins over what a variant asks for, nothing else does.
USER_ENV = frozenset(_os.environ)
