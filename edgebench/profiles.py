"""Run profiles: how long each measurement runs. ``quick`` (default) bounds every cell so the
whole default run fits a 2-core machine; ``paper`` uses the full dataset and long windows;
``smoke`` asks only whether every cell runs (seconds per cell: a first look at a new board or
JetPack, and the test suite). Its windows are too short for the figures to be compared, and
the report says so (``COMPARABLE``)."""
from __future__ import annotations

PROFILES: dict[str, dict] = {
    "quick": {
        "max_images": 256,          # accuracy/parity images when --data is given
        "int8_calib_images": 128,   # INT8 calibration images (at most; edgebench.data.calibration)
        "accuracy_batch": 8,
        "pass_budget_s": 45.0,      # accuracy/parity stop after this (status partial)
        "latency": {"warmup": 3, "min_count": 20, "min_s": 2.0, "max_s": 15.0},
        "throughput": {"max_batch": 16, "warmup": 1, "min_iters": 3, "min_s": 1.0,
                       "budget_s": 40.0, "min_gain": 1.03},
        # profiled inferences per layers cell (edgebench.layers): half the latency task's
        # minimum, so that a layers cell adds at most about 10% to a run
        "layers": {"runs": 10},
        "idle_s": 1.0,
        "cell_timeout": 600,
    },
    "smoke": {
        "max_images": 16,
        "int8_calib_images": 16,
        "accuracy_batch": 8,
        "pass_budget_s": 45.0,      # parity and accuracy are the quick profile's
        "latency": {"warmup": 1, "min_count": 5, "min_s": 0.2, "max_s": 5.0},
        "throughput": {"max_batch": 4, "warmup": 1, "min_iters": 2, "min_s": 0.1,
                       "budget_s": 5.0, "min_gain": 1.03},
        "layers": {"runs": 3},
        "idle_s": 0.2,
        "cell_timeout": 600,
    },
    "paper": {
        "max_images": None,         # the whole dataset
        "int8_calib_images": 500,   # MLPerf's calibration list is 500 images
        "accuracy_batch": 32,
        "pass_budget_s": None,
        "latency": {"warmup": 20, "min_count": 1000, "min_s": 30.0, "max_s": 600.0},
        "throughput": {"max_batch": 512, "warmup": 3, "min_iters": 20, "min_s": 10.0,
                       "budget_s": 1800.0, "min_gain": 1.02},
        "layers": {"runs": 100},
        "idle_s": 5.0,
        "cell_timeout": 14400,
    },
}

# Profiles whose windows are long enough for their figures to be compared across variants,
# runs and published numbers.
COMPARABLE = ("quick", "paper")
