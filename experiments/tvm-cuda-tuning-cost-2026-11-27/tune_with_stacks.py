"""``python -m edgebench.tune`` with every Python thread's stack printed to stderr on SIGUSR1
(faulthandler), for watch_exit.py to ask a tuner that does not exit what it is waiting on.
BUILDER_POOL=kept|fresh picks the builder's pool (TuneConfig.builder_pool) for the session."""
import dataclasses
import faulthandler
import os
import signal
import sys

faulthandler.register(signal.SIGUSR1, all_threads=True)

from converters.tvm import runner  # noqa: E402  (after the handler: the import takes seconds)
from edgebench.tune import main  # noqa: E402

if os.environ.get("BUILDER_POOL"):
    _make = runner.make_builder
    runner.make_builder = lambda cfg: _make(dataclasses.replace(
        cfg, builder_pool=os.environ["BUILDER_POOL"]))

sys.exit(main(sys.argv[1:]))
