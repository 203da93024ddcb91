"""Run inside the emulated Orin with jtop's service up (tests/emulated_jobs.py, item32):
a jtop client whose process is stopped for longer than the service waits for it.

Two clients in turn, each stopped (SIGSTOP, its whole process: every thread) for STOP_S and
then watched for WATCH_S: jetson-stats' own client, which the service drops and which reads
at most two new samples after it, at once (the last one published and one the service's timer
finished while closing; the behaviour the fix is for), and edgebench's JtopSource, which asks
the service to sample again. Prints one JSON line."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

STOP_S = 6.0       # the service drops a client silent for 3 s
WATCH_S = 15.0     # generous: the service and this client share a loaded machine under QEMU
LATE_S = 5.0       # after this long awake, a dropped client has read the last it will get


def stop_self(seconds: float) -> None:
    """Stops this process (all its threads, jtop's reader too) and has a child wake it."""
    subprocess.Popen(["sh", "-c", f"sleep {seconds}; kill -CONT {os.getpid()}"])
    os.kill(os.getpid(), signal.SIGSTOP)


def fresh_after_stop(new_sample) -> dict:
    """New samples counted for 2 s, then the stop, then for WATCH_S: "after" counts them all,
    "late" those from LATE_S on. A dropped client reads only what the service published
    before its timer thread closed, at once on waking, so its late count is 0."""
    def count(seconds: float) -> list:
        seen, t0 = [], time.monotonic()
        while time.monotonic() - t0 < seconds:
            if new_sample():
                seen.append(time.monotonic() - t0)
            time.sleep(0.05)
        return seen
    before = count(2.0)
    stop_self(STOP_S)
    after = count(WATCH_S)
    return {"before": len(before), "after": len(after),
            "late": sum(t >= LATE_S for t in after)}


class NewUptime:
    """jetson-stats' own client: a new sample is a new uptime (the service reads /proc/uptime
    in every sample)."""
    def __init__(self, client):
        self.client, self.last = client, client.uptime

    def __call__(self) -> bool:
        now = self.client.uptime
        new, self.last = now != self.last, now
        return new


def main() -> int:
    from jtop import jtop

    from edgebench.telemetry.jtop_source import JtopSource

    out = {}
    j = jtop(interval=0.5)
    j.start()
    try:
        out["jtop_client"] = fresh_after_stop(NewUptime(j))
    finally:
        j.close()

    src = JtopSource()
    try:
        # read_mw returns a sample only when the service has taken a new one
        out["jtop_source"] = fresh_after_stop(lambda: bool(src.read_mw()))
        out["jtop_source"]["events"] = src.events
    finally:
        src.close()
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
