"""python -m edgebench.fleet: run a benchmark plan on a fleet of devices through Ray.

Exit codes: 0 every cell ok/partial/skipped; 1 a cell failed or timed out (a lost device's
cells count as failed); 2 usage or config error, or Ray is not installed; 130 interrupted."""
from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import sys
import time
import uuid
from pathlib import Path

from ..errors import ArgumentParser, UsageError, check_out_dir, make_out_dir, run_command

INSTALL_HINT = "pip install 'edgebench[fleet]'"
NAME = "edgebench fleet"      # the command in its messages ("edgebench fleet: error: ...")


def build_parser() -> argparse.ArgumentParser:
    p = ArgumentParser(
        prog="python -m edgebench.fleet", error_name=NAME,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=(
            "Run edgebench on a fleet of devices at once. Each device is a Ray node carrying a "
            "custom resource (started with: ray start --address HEAD:6379 "
            "--resources='{\"device:orin-agx\": 1}'). The fleet config names the devices and the "
            "models, variants and tasks each runs. On every device an agent (a Ray actor holding "
            "the device's whole resource, so cells never overlap there) resolves weights, "
            "preprocesses the data, converts/compiles and measures - all on the device - one "
            "cell at a time, in a worker process per cell exactly as `python -m edgebench.full` "
            "does. Records stream back as each cell ends into one run directory: results.jsonl "
            "(tagged with device_id, plus a 'fleet' field naming the Ray node), run.json (the "
            "config and each device's machine info, collected on the device), summary.csv, "
            "report.md (devices side by side) and devices/<id>/ (each device's own report).\n\n"
            "A device whose node dies mid-run is marked lost: its finished cells are kept, the "
            "running and remaining ones are recorded as failed (\"device <id> lost: ...\"). A "
            "device no node carries within --device-wait is recorded as skipped (\"device "
            "absent: ...\"). --resume runs again exactly the cells that are not ok.\n\n"
            f"Needs Ray: {INSTALL_HINT}. See docs/fleet.md and examples/fleet.example.toml."),
        epilog="exit codes: 0 all cells ok/partial/skipped, 1 a cell failed, timed out or its "
               "device was lost, 2 usage/config error or Ray missing, 130 interrupted")
    p.add_argument("--config", metavar="FILE",
                   help="fleet config, TOML or JSON: top-level defaults (models, variants, tasks, "
                        "weights, profile, data, cache_dir, options, ...) and one "
                        "[devices.<id>] table per device. Required, except with --resume, which "
                        "reuses the config saved in the run's run.json")
    p.add_argument("--address", metavar="ADDR", default=None,
                   help="Ray cluster to join: HOST:PORT of the head's GCS, 'auto' (the cluster "
                        "started on this machine by `ray start`), or ray://HOST:10001. Default: "
                        "start a one-node Ray cluster on 127.0.0.1 for this machine, carrying "
                        "the resources of --local-device")
    p.add_argument("--local-device", action="append", default=[], metavar="ID",
                   help="without --address: the config device(s) this machine is (repeatable). "
                        "Default: the config's device when it names exactly one; required when "
                        "it names several (the others are then reported absent)")
    p.add_argument("--out", metavar="DIR", default=None,
                   help="run directory. Default: results/fleet-<UTC timestamp>")
    p.add_argument("--resume", action="store_true",
                   help="continue the run in --out: only cells whose latest record is not 'ok' "
                        "(failed, timeout, partial, skipped, lost, absent) run again; devices "
                        "with nothing left are not contacted")
    p.add_argument("--device-wait", type=float, default=30.0, metavar="SECONDS",
                   help="how long to wait for a device's Ray node to appear before recording "
                        "its cells as skipped ('device absent'); a device that is present but "
                        "whose agent does not start within this + 120 s counts as absent too "
                        "(default 30)")
    return p


def _load_config(args) -> tuple:
    from .. import store
    from .config import ConfigError, validate

    prior = {}
    out = Path(args.out) if args.out else None
    if out:
        check_out_dir("--out", out)
    if args.resume:
        if not out or not (out / "run.json").is_file():
            raise UsageError("--resume needs --out pointing at a fleet run directory (with run.json)")
        try:
            prior = json.loads((out / "run.json").read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError) as e:
            raise UsageError(f"--resume --out {out}: run.json is unreadable "
                             f"({type(e).__name__}: {e})") from None
        if not isinstance(prior, dict) or prior.get("kind") != "fleet":
            raise UsageError(f"--out {out}: run.json is not a fleet run's "
                             "(resume single-machine runs with python -m edgebench.full)")
        if (out / "results.jsonl").exists():
            try:
                store.read_checked(out / "results.jsonl")
            except store.RecordsError as e:
                raise UsageError(f"--resume: {e}") from None
    elif out and (out / "results.jsonl").exists():
        raise UsageError(f"--out {out} already holds results: add --resume to continue it, or "
                         "choose another folder")
    if args.config:
        raw, source = load_config_file(args.config)
        where = f"--config {args.config}"
    elif prior:
        raw, source = prior.get("config"), f"{out / 'run.json'} (saved config)"
        where = f"--resume --out {out}: run.json's saved config"
    else:
        raise UsageError("--config FILE is required (or --resume --out DIR)")
    try:
        fcfg = validate(raw, source)
    except ConfigError as e:
        raise UsageError(f"{where}: {e}") from None
    return fcfg, prior


def load_config_file(path: str) -> tuple[dict, str]:
    """The fleet config file as read, and where it came from; UsageError naming the file."""
    from .config import ConfigError, load

    try:
        return load(path), str(Path(path).expanduser().resolve())
    except ConfigError as e:
        raise UsageError(str(e)) from None
    except (OSError, UnicodeDecodeError) as e:
        raise UsageError(f"--config {path}: cannot be read ({type(e).__name__}: {e})") from None


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)

    def body() -> int:
        if not args.device_wait >= 0:
            raise UsageError(f"--device-wait {args.device_wait:g}: must be >= 0 seconds")
        fcfg, prior = _load_config(args)
        if not args.address:
            if args.local_device:
                for i in args.local_device:
                    if i not in fcfg.devices:
                        raise UsageError(f"--local-device {i}: not a device of the config "
                                         f"({', '.join(fcfg.devices)})")
            elif len(fcfg.devices) == 1:
                args.local_device = list(fcfg.devices)
            else:
                raise UsageError("the config names several devices: give --address of the Ray "
                                 "cluster, or --local-device ID for the one this machine is")
            # A local cluster lives on loopback only; this also keeps Ray from looking up the
            # machine's outward address (read once, when ray is first imported).
            os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
        try:
            import ray  # noqa: F401
        except ImportError as e:
            raise UsageError(f"Ray is not installed ({e}). The fleet runner needs it: "
                             f"{INSTALL_HINT}") from None
        if not args.out:
            from ..util import REPO_ROOT

            args.out = str(REPO_ROOT / "results" /
                           f"fleet-{dt.datetime.now(dt.timezone.utc):%Y%m%dT%H%M%SZ}")
        from rich.console import Console

        return run(args, fcfg, prior, Console(stderr=True, soft_wrap=True))

    return run_command(NAME, body)


def run(args, fcfg, prior_meta: dict, console) -> int:
    """Connect, drive every device's cells, write the fleet report. Returns the exit code."""
    import ray

    from .. import runner, store
    from ..cell import now_iso
    from . import report as fleet_report
    from .cluster import connect, nodes_summary
    from .driver import Driver

    out = make_out_dir("--out", args.out)
    make_out_dir("--out", out / "logs")
    run_id = prior_meta.get("run_id") or uuid.uuid4().hex[:12]
    prior_records = store.read(out / "results.jsonl") if args.resume else []
    done = runner.done_keys(prior_records)
    session = {"started_at": now_iso(), "argv": sys.argv, "resume": bool(args.resume),
               "address": args.address or "local", "device_wait_s": args.device_wait}
    meta = {"run_id": run_id, "kind": "fleet",
            "created_at": prior_meta.get("created_at") or now_iso(),
            "config": fcfg.raw, "config_source": fcfg.source,
            "settings": {d.id: {**d.settings, "resource": d.resource} for d in fcfg.devices.values()},
            "devices": prior_meta.get("devices", {}),
            "sessions": prior_meta.get("sessions", []) + [session]}
    n_cells = sum(len(d.cells) for d in fcfg.devices.values())
    console.print(f"[bold]edgebench fleet[/] run {run_id} -> {out}  ({len(fcfg.devices)} devices, "
                  f"{n_cells} cells, {len(done)} already ok)")
    local = {} if args.address else {fcfg.devices[i].resource: 1.0 for i in args.local_device}
    t_connect = time.perf_counter()
    meta["ray"] = connect(args.address, local)
    session["connect_s"] = round(time.perf_counter() - t_connect, 3)
    driver = Driver(fcfg, out, run_id, meta, console, args.device_wait, done, prior_records)
    try:
        meta["ray"]["nodes_at_start"] = nodes_summary()
        driver.write_meta()
        t = time.perf_counter()
        driver.loop()
        session["loop_s"] = round(time.perf_counter() - t, 3)
        meta["ray"]["nodes_at_end"] = nodes_summary()
    finally:
        driver.release_all()
        session["finished_at"] = now_iso()
        session["devices"] = {d.id: d.state for d in driver.devs}
        meta["finished_at"] = session["finished_at"]
        t = time.perf_counter()
        ray.shutdown()
        session["disconnect_s"] = round(time.perf_counter() - t, 3)
        driver.write_meta()
    records = store.read(out / "results.jsonl")
    t = time.perf_counter()
    fleet_report.write_all(out, records, meta)
    session["report_s"] = round(time.perf_counter() - t, 3)
    driver.write_meta()
    console.print(f"[bold]done[/]: {out / 'report.md'}")
    return runner.exit_code(records, {c.key(d.id) for d in fcfg.devices.values() for c in d.cells})
