"""Software prefetch of the weights in tuned CPU kernels (issue 33).

- ``insert``: where a prefetch goes in a scheduled kernel, and putting it there.
- ``choice``: which kernels get one: each measured alone with and without it, its weights
  flushed from the caches as the network finds them (``edgebench.tune --prefetch``); the
  choice is kept beside the tuning database and the build applies it.
"""
from .insert import LINE, MAX_LINES, add_prefetch, plan

__all__ = ["LINE", "MAX_LINES", "add_prefetch", "plan"]
