"""Telemetry: memory, power, temperatures and clocks sampled in a background thread.

Kept apart from the system under test (MLPerf LoadGen style): the worker opens a ``Monitor``
before loading the model, marks each timed window with ``monitor.window()`` (the measure
code names the one behind the record's figure: ``figure_window``), and reads the summary
when the task ends: power and energy over exactly that window, memory as process-tree RSS,
system-wide used memory and the device's own figure. Power comes from the first ``PowerSource`` that exists on
the machine (see ``sources.py``); where none exists the figure is null with a reason.

Modules:
  monitor.py       the background sampler (RSS, power, device state) and its window summary
  maths.py         power/energy arithmetic on samples
  power.py         the ``PowerSource`` interface
  sources.py       the concrete sources' detection order (``detect_power_source``)
  ina3221.py, jtop_source.py, tegrastats.py (+ rails.py), nvml.py, rapl.py
                   the sources (nvml.py also: GPU facts and device memory through NVML)
  sysfs.py         sysfs/procfs/etc readers and parsers (L4T, nvpmodel, cuDNN, meminfo, clocks)
  device_state.py  the machine-state records (``device_state``, ``sample_state``) and the
                   report's clock/power-mode warnings
  __main__.py      ``python -m edgebench.telemetry``: parse-tegrastats, detect, state
"""
from .monitor import Monitor, WindowSummary  # noqa: F401
from .power import PowerSource  # noqa: F401
from .sources import detect_power_source  # noqa: F401
