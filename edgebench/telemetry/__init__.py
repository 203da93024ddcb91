"""Telemetry: memory, power, temperatures and clocks sampled in a background thread.

Kept apart from the system under test (MLPerf LoadGen style): the worker opens a ``Monitor``
before loading the model, marks the timed window with ``monitor.window()``, and reads a
``summary`` when the task ends. Power comes from the first ``PowerSource`` that exists on
the machine (see ``sources.py``); where none exists the figure is null with a reason.
"""
from .monitor import Monitor, WindowSummary  # noqa: F401
from .power import PowerSource, detect_power_source  # noqa: F401
