"""One squeezenet1_1 forward pass timed inside the emulated Orin at a given thread count
(torch intra-op threads), printed as JSON: how a call's time under QEMU depends on the
threads it runs and on whether the host's cores are busy with other work."""
import json
import sys
import time

t0 = time.perf_counter()
import torch  # noqa: E402

from edgebench.models import build_model  # noqa: E402

threads = int(sys.argv[1])
torch.set_num_threads(threads)
imported = time.perf_counter() - t0
model = build_model("squeezenet1_1", "random-seed-0")
x = torch.randn(1, 3, 224, 224)
calls = []
with torch.inference_mode():
    model(x)                                  # first call: allocations
    for _ in range(3):
        t = time.perf_counter()
        model(x)
        calls.append(time.perf_counter() - t)
print(json.dumps({"threads": threads, "import_s": round(imported, 2),
                  "calls_s": [round(c, 3) for c in calls]}))
