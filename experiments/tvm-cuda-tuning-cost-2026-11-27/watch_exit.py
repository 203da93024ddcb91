"""Run a command (edgebench.tune) and time how long it takes to exit after it wrote its
--summary file, the last thing its main() does. Optionally send it SIGINT after some seconds
(the tuner then stops after the batch being measured). If it is still alive EXIT_WAIT seconds
after the summary appeared, record why: the process tree, every Python thread's stack
(faulthandler, registered on SIGUSR1 by tune_with_stacks.py) and py-spy's native stacks where
py-spy is installed; then kill it. One JSON record of the times.

  python watch_exit.py --summary S --json OUT.json [--sigint-after 60] [--exit-wait 20] \
      -- python tune_with_stacks.py --model ... --summary S
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import time


def _run(cmd: list[str]) -> str:
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=60, check=False)
        return p.stdout + p.stderr
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"{cmd[0]}: {e}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--summary", required=True, help="the command's --summary file")
    ap.add_argument("--json", required=True, help="where the record goes")
    ap.add_argument("--sigint-after", type=float, help="seconds after start; none: no SIGINT")
    ap.add_argument("--exit-wait", type=float, default=20.0)
    ap.add_argument("--limit", type=float, default=900.0, help="kill the command after this")
    ap.add_argument("cmd", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    cmd = a.cmd[1:] if a.cmd[:1] == ["--"] else a.cmd
    if os.path.exists(a.summary):
        os.remove(a.summary)
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, start_new_session=True)     # its own group, for the kill
    rec = {"command": cmd, "sigint_after_s": a.sigint_after, "exit_wait_s": a.exit_wait}
    t_sum = None
    while proc.poll() is None:
        now = time.monotonic() - t0
        if a.sigint_after is not None and "sigint_s" not in rec and now >= a.sigint_after:
            proc.send_signal(signal.SIGINT)
            rec["sigint_s"] = round(now, 2)
        if t_sum is None and os.path.exists(a.summary):
            t_sum = now
            rec["summary_s"] = round(now, 2)
        if (t_sum is not None and now - t_sum > a.exit_wait) or now > a.limit:
            rec["hung"] = True
            rec["process_tree"] = _run(["ps", "-o", "pid,ppid,stat,etimes,wchan:32,args",
                                        "--forest", "-g", str(proc.pid)])
            proc.send_signal(signal.SIGUSR1)        # faulthandler: stacks to the tuner's stderr
            time.sleep(2)
            if shutil.which("py-spy"):
                rec["py_spy"] = _run(["py-spy", "dump", "--native", "--pid", str(proc.pid)])
            rec["threads_wchan"] = _run(["sh", "-c", f"for t in /proc/{proc.pid}/task/*; do "
                                         f"echo $t $(cat $t/comm) $(cat $t/wchan); done"])
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            break
        time.sleep(0.1)
    rec["exit_s"] = round(time.monotonic() - t0, 2)
    rec["returncode"] = proc.returncode
    rec.setdefault("hung", False)
    if t_sum is not None:
        rec["exit_after_summary_s"] = round(rec["exit_s"] - t_sum, 2)
    with open(a.json, "w", encoding="utf-8") as f:
        json.dump(rec, f, indent=1)
    print(json.dumps({k: v for k, v in rec.items() if k not in ("process_tree", "py_spy",
                                                                 "threads_wchan")}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
