"""Where do a forked child's buffers land? Imports what the fork server imports, then forks
20 children; each shifts its layout (``edgebench.forkserver._own_layout``, or the older
single small heap block with ``--old``) and allocates 64 KiB, 1 MiB and 16 MiB with numpy
and 1 MiB with torch. Prints how many distinct addresses each got.

    .venv/bin/python benchmarks/fork_layout_probe.py [--old | --none]
"""
from __future__ import annotations

import argparse
import json
import mmap
import os
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from edgebench import forkserver


def _old_layout() -> None:      # the first form: one mmap pad and one small heap block
    rng = random.SystemRandom()
    forkserver._LAYOUT_PADS.append(mmap.mmap(-1, rng.randrange(1, 1024) * mmap.PAGESIZE))
    forkserver._LAYOUT_PADS.append(bytearray(rng.randrange(16, 1 << 16)))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    arm = ap.add_mutually_exclusive_group()
    arm.add_argument("--old", action="store_true", help="the first shift: one mmap pad and one "
                     "small heap block")
    arm.add_argument("--none", action="store_true", help="no shift at all")
    args = ap.parse_args()
    import numpy as np
    import torch

    import converters

    forkserver._import_all(forkserver.COMMON)
    converters.get("pytorch")
    shift = None if args.none else _old_layout if args.old else forkserver._own_layout
    r, w = os.pipe()
    for _ in range(20):
        pid = os.fork()
        if pid == 0:
            if shift:
                shift()
            addrs = [int(np.empty(n, np.uint8).ctypes.data) for n in (1 << 16, 1 << 20, 16 << 20)]
            addrs.append(torch.empty(1 << 20, dtype=torch.uint8).data_ptr())
            os.write(w, (json.dumps(addrs) + "\n").encode())
            os._exit(0)
        os.waitpid(pid, 0)
    os.close(w)
    rows = [json.loads(line) for line in os.fdopen(r).read().splitlines()]
    for k, name in enumerate(["numpy 64 KiB", "numpy 1 MiB", "numpy 16 MiB", "torch 1 MiB"]):
        print(f"{name:13s} {len({row[k] for row in rows}):2d} distinct addresses in {len(rows)} children")


if __name__ == "__main__":
    main()
