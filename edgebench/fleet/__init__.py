"""edgebench on a fleet of devices, through Ray (optional: ``pip install 'edgebench[fleet]'``).

    python -m edgebench.fleet --config fleet.toml --address HEAD:6379

Modules: ``config`` (the fleet config), ``agent`` (the Ray actor that runs on each device),
``driver`` (scheduling and streaming records into one run directory), ``report`` (devices
side by side), ``cli``. Nothing here imports Ray at import time, and nothing outside this
package imports this package: single-machine runs never load Ray. See docs/fleet.md.
"""
