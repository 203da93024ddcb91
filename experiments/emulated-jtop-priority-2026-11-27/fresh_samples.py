"""Counts how often jtop's service hands its client a fresh sample (runs inside the emulated
Orin: jetson/emulated/run.sh python fresh_samples.py SECONDS). A sample is fresh when jtop's
uptime field moved (the service reads /proc/uptime in every jtop_decode); prints one JSON
line: samples seen, gaps between them, and the power it served."""
import json
import sys
import time

from jtop import jtop

seconds = float(sys.argv[1])
j, failures = None, []
for _ in range(5):          # the first sample must come within 1.5 s, or jtop gives up
    try:
        j = jtop(interval=0.5)
        j.start()
        break
    except Exception as e:  # noqa: BLE001
        failures.append(str(e))
        j = None
if j is None:
    print(json.dumps({"window_s": seconds, "connect_failures": failures, "fresh_samples": None}))
    sys.exit(0)
try:
    t0 = time.monotonic()
    seen, last_up, powers = [], None, set()
    while time.monotonic() - t0 < seconds:
        up = j.uptime
        if up != last_up:
            seen.append(time.monotonic() - t0)
            last_up = up
            powers.add(j.power["tot"]["power"])
        time.sleep(0.05)
finally:
    j.close()
gaps = [b - a for a, b in zip(seen, seen[1:])]
print(json.dumps({"window_s": seconds, "fresh_samples": len(seen),
                  "max_gap_s": round(max(gaps), 2) if gaps else None,
                  "median_gap_s": round(sorted(gaps)[len(gaps) // 2], 2) if gaps else None,
                  "distinct_power_mw": len(powers), "connect_failures": failures}))
