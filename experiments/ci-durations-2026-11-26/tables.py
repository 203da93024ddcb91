"""From a pytest log with --durations=0: durations.txt (every phase of 0.005 s or more,
slowest first) and by-file.txt (the suite's summary line and seconds per test file).

    python experiments/ci-durations-2026-11-26/tables.py LOG OUT_DIR
"""
import collections
import re
import sys
from pathlib import Path


def main(log_path: str, out_dir: str) -> int:
    log = Path(log_path).read_text(encoding="utf-8", errors="replace")
    if "slowest durations" not in log:
        print(f"{log_path}: no durations table (did pytest run with --durations=0?)")
        return 1
    rows = []
    for line in log.split("slowest durations", 1)[1].splitlines():
        m = re.match(r"([\d.]+)s (call|setup|teardown)\s+(\S+)", line)
        if m:
            rows.append((float(m.group(1)), m.group(2), m.group(3)))
    out = Path(out_dir)
    (out / "durations.txt").write_text(
        "".join(f"{t:8.2f}s {ph:8s} {tid}\n" for t, ph, tid in rows), encoding="utf-8")
    per_file = collections.Counter()
    for t, _, tid in rows:
        per_file[tid.split("::")[0]] += t
    summary = [s for s in log.splitlines() if re.match(r"=+ .*\d+ passed", s)]
    text = (f"{summary[-1] if summary else '(no summary line)'}\n"
            f"(sum of every phase listed: {sum(r[0] for r in rows):.0f} s over {len(rows)} "
            f"phases)\n\n" + "".join(f"{t:8.1f} s  {f}\n" for f, t in per_file.most_common()))
    (out / "by-file.txt").write_text(text, encoding="utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:3]))
