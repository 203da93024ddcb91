"""``python -m edgebench.telemetry``: tegrastats parsing and power/device checks.

  parse-tegrastats [FILE]   one JSON object per tegrastats line (stdin when no FILE)
  detect                    which power source this machine has, or why none
  state                     device_state() as JSON (what run.json records)
"""
from __future__ import annotations

import argparse
import json
import sys
import time

from ..errors import ArgumentParser, UsageError, run_command

NAME = "edgebench telemetry"    # the command in its messages ("edgebench telemetry: error: ...")

PARSE_HELP = """\
Read tegrastats output (a file, or stdin when FILE is omitted or '-') and print one JSON
object per parsed line:

  ram_used_mb, ram_total_mb   RAM X/YMB
  swap_used_mb, swap_total_mb, swap_cached_mb
  cpu_load_pct, cpu_freq_mhz  per core; null for a core that is 'off'
  emc_load_pct, emc_freq_mhz  memory controller
  gpu_load_pct                GR3D_FREQ load; null on Thor, whose tegrastats prints none
  gpu_freq_mhz                list (one per GPC on Orin/Thor)
  temps_c                     {zone: C}; zones reading -256C (offline) go to temps_offline
  rails_mw                    {rail: mW}, the INSTANTANEOUS value (first number of each
                              rail); tegrastats' running average/max are never used
  total_mw, input_rail, total_kind
                              the input rail's value where the board has one (VIN, VDD_IN,
                              POM_5V_IN), else the sum of the rails (AGX Orin/Xavier/Thor:
                              not board input power)
  time                        the line's timestamp when tegrastats printed one (JetPack 5+)

Formats understood: JetPack 3/4 (TX2, Xavier), 5 and 6 (Orin), 7.x (Orin, Thor).
Lines that cannot be parsed are reported on stderr with their line number and skipped;
the exit code is 0 when at least one line parsed, 1 when none did.

Example:  sudo tegrastats --interval 100 | python -m edgebench.telemetry parse-tegrastats
"""


def _parse_tegrastats(args: argparse.Namespace) -> int:
    from .tegrastats import TegrastatsParseError, parse_line

    if args.file in (None, "-"):
        stream, name = sys.stdin, "<stdin>"
    else:
        try:
            stream, name = open(args.file, encoding="utf-8", errors="replace"), args.file
        except OSError as e:
            raise UsageError(f"parse-tegrastats {args.file}: cannot open it "
                             f"({e.strerror or e})") from None
    parsed = bad = 0
    with stream:
        for n, line in enumerate(stream, 1):
            if not line.strip():
                continue
            try:
                rec = parse_line(line)
            except TegrastatsParseError as e:
                bad += 1
                print(f"warning: {name}:{n}: not a tegrastats line ({e}): {line.strip()[:80]}",
                      file=sys.stderr)
                continue
            parsed += 1
            sys.stdout.write(json.dumps(rec) + "\n")
    if parsed == 0:
        print(f"{NAME}: parse-tegrastats: no tegrastats line parsed from {name}"
              + (f" ({bad} unparseable)" if bad else " (empty input)"), file=sys.stderr)
        return 1
    return 0


def _detect(args: argparse.Namespace) -> int:
    from .sources import detect

    if args.samples < 1:
        raise UsageError(f"detect --samples {args.samples}: must be >= 1")
    if not args.interval >= 0:
        raise UsageError(f"detect --interval {args.interval:g}: must be >= 0 seconds")
    src, reason = detect()
    out: dict = {"source": src.name if src else None, "reason": reason or None}
    if src is not None:
        out["caveat"] = getattr(src, "caveat", "")
        readings = []
        for _ in range(args.samples):
            readings.append(src.read_mw())
            time.sleep(args.interval)
        out["readings_mw"] = readings
        src.close()
    print(json.dumps(out, indent=2))
    return 0


def _state(args: argparse.Namespace) -> int:
    from .device_state import clock_warnings, device_state, sample_state

    st = device_state()
    sample = sample_state()
    print(json.dumps({"device_state": st, "sample_state": sample,
                      "warnings": clock_warnings(st, [sample])}, indent=2, default=str))
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = ArgumentParser(prog="python -m edgebench.telemetry", error_name=NAME,
                                 description="edgebench telemetry tools",
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True, metavar="COMMAND")
    p = sub.add_parser("parse-tegrastats", help="tegrastats lines -> JSON lines",
                       description=PARSE_HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("file", nargs="?", metavar="FILE", help="tegrastats output; stdin when omitted or '-'")
    p.set_defaults(fn=_parse_tegrastats)
    d = sub.add_parser("detect", help="find this machine's power source and read it a few times")
    d.add_argument("--samples", type=int, default=3)
    d.add_argument("--interval", type=float, default=0.2)
    d.set_defaults(fn=_detect)
    s = sub.add_parser("state", help="print device_state() and clock warnings as JSON")
    s.set_defaults(fn=_state)
    args = ap.parse_args(argv)
    return run_command(NAME, lambda: args.fn(args))


if __name__ == "__main__":
    sys.exit(main())
