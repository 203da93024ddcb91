"""The Ray cluster a fleet run uses: joining or starting it, and what its nodes offer."""
from __future__ import annotations

import logging
import os

from ..errors import UsageError
from ..util import first_line

LOCAL_OBJECT_STORE = 100 * 1024 * 1024


def resources_present() -> set[str]:
    import ray

    out: set[str] = set()
    for n in ray.nodes():
        if n.get("Alive"):
            out.update(k for k, v in (n.get("Resources") or {}).items() if v > 0)
    return out


def nodes_summary() -> list[dict]:
    import ray

    skip = ("memory", "object_store_memory")
    return [{"node_id": n["NodeID"], "hostname": n.get("NodeManagerHostname"),
             "ip": n.get("NodeManagerAddress"), "alive": n.get("Alive"),
             "resources": {k: v for k, v in (n.get("Resources") or {}).items()
                           if k not in skip and not k.startswith("node:")}}
            for n in ray.nodes()]


def _loopback_only() -> None:
    """Keep a one-node cluster on 127.0.0.1. Ray turns a loopback node address into the
    host's reachable IP (services.resolve_ip_for_localhost) unless clusters are disabled, which
    it does only on macOS/Windows, through this switch: the env var for the processes it starts
    (GCS, raylet, workers), the constant for this one, where ray may already be imported."""
    os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
    from ray._private import ray_constants

    ray_constants.ENABLE_RAY_CLUSTER = False


def connect(address: str | None, local_resources: dict[str, float]) -> dict:
    """Join the cluster at ``address``, or start a one-node cluster on 127.0.0.1 whose node
    carries ``local_resources``. Returns what run.json says about it."""
    import ray

    if address:
        try:
            ray.init(address=address, logging_level=logging.WARNING)
        except (ConnectionError, ValueError, RuntimeError) as e:
            raise UsageError(f"--address {address}: cannot join the Ray cluster: "
                             f"{first_line(e)}") from None
    else:
        # "local": a new cluster even when RAY_ADDRESS is set or `ray start` left one running
        # here (ray.init() without an address would join that one instead).
        _loopback_only()
        ray.init(address="local", num_cpus=os.cpu_count() or 1, resources=local_resources,
                 include_dashboard=False,
                 _node_ip_address="127.0.0.1", object_store_memory=LOCAL_OBJECT_STORE,
                 logging_level=logging.WARNING)
    return {"version": ray.__version__, "address": address or "local",
            "local_resources": local_resources if not address else None}
