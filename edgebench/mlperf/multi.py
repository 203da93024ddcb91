"""Offline on several accelerators at once, the way NVIDIA's MLPerf harness runs the AGX
Orin: one engine per DLA core plus the GPU's, fed from one queue. Each device has a thread
that takes the next batch from the queue when it is free (so a faster device takes more),
runs it on its own predictor and completes it with LoadGen. Every sample is issued exactly
once; each device's share is counted.

A predictor offers this by having ``offline_devices``: {device name: Predictor} (TensorRT's
``--trt-offline-all-accelerators``). Tested here with null predictors: the scheduling is
the same whatever computes.
"""
from __future__ import annotations

import queue
import threading

from .harness import SystemUnderTest


class MultiDeviceSUT(SystemUnderTest):
    def __init__(self, lg, devices: dict, library, batch: int):
        super().__init__(lg, None, library, batch)
        self.devices = dict(devices)
        self.shares = {name: 0 for name in self.devices}
        self._queue: queue.Queue = queue.Queue()
        self._pending = 0
        self._idle = threading.Condition()
        self._threads = [threading.Thread(target=self._serve, args=(name, p), daemon=True,
                                          name=f"offline-{name}")
                         for name, p in self.devices.items()]
        for t in self._threads:
            t.start()

    def _serve(self, name: str, predictor) -> None:
        while True:
            chunk = self._queue.get()
            if chunk is None:
                return
            self.run_chunk(chunk, predictor)
            with self._idle:
                self.shares[name] += len(chunk)
                self._pending -= 1
                self._idle.notify_all()

    def issue(self, queries) -> None:
        queries = list(queries)
        chunks = [queries[s:s + self.batch] for s in range(0, len(queries), self.batch)]
        with self._idle:
            self._pending += len(chunks)
        for c in chunks:
            self._queue.put(c)

    def wait(self) -> None:
        with self._idle:
            self._idle.wait_for(lambda: self._pending == 0)

    def close(self) -> None:
        for _ in self._threads:
            self._queue.put(None)
        for t in self._threads:
            t.join(timeout=30)

    def share_record(self) -> dict:
        total = sum(self.shares.values()) or 1
        return {name: {"samples": n, "share": round(n / total, 4)}
                for name, n in self.shares.items()}
