"""The tuning command's console output while it tunes: a rich progress bar (trials,
elapsed, the best latency estimate so far), or a plain line every 30 s without a terminal."""
from __future__ import annotations

import sys
import time
from pathlib import Path


class Progress:
    """A rich progress bar: trials, elapsed, the best latency estimate so far."""

    def __init__(self, enabled: bool):
        self.enabled = enabled
        self.bar = None
        self.last_line = 0.0

    def start(self, info: dict):
        from rich.console import Console

        c = Console(stderr=True)
        c.print(f"[bold]tuning[/] {info['model_tasks']} tasks, budget {info['budget']} trials "
                f"({info['trials_before']} already in the database, {info['remaining']} to run; "
                f"{info['trials_per_iter']} per task per round), runner: {info['runner']}"
                + (f" ({info['runner_caches']} caches)" if info.get("runner_caches") else "")
                + (f", {info['measure_threads']} thread(s) per candidate"
                   if info.get("measure_threads") else ""))
        c.print(f"database: {info['database']}")
        reused = info.get("reused_records") or {}
        if reused.get("records"):
            names = ", ".join(f"{Path(d['database']).name}: {d['tasks']}"
                              for d in reused["databases"] if d.get("records"))
            c.print(f"reused: {reused['records']} records of {reused['tasks']} task(s) other "
                    f"models' databases already tuned ({names})")
        if reused.get("skipped"):
            names = ", ".join(f"{Path(d['database']).name} ({d['layout']}/{d['design_space']}, "
                              f"{d['tasks']} of this model's tasks)" for d in reused["skipped"])
            c.print(f"reuse: {len(reused['skipped'])} database(s) left out, tuned in another "
                    f"layout or design space: {names}")
        if reused.get("not_replayable"):
            c.print(f"reuse: {reused['not_replayable']} record(s) of other models' databases "
                    "left out: they do not apply to this model's kernels")
        if info.get("transfer_from") and info["remaining"] > 0:
            names = ", ".join(Path(p).name for p in info["transfer_from"])
            c.print(f"cost model: pre-trained on {len(info['transfer_from'])} other "
                    f"database(s) ({names})")
        if info.get("transfer_skipped") and info["remaining"] > 0:
            kinds = sorted({f"{x['layout']}/{x['design_space']}"
                            for x in info["transfer_skipped"]})
            c.print(f"cost model: not trained on {len(info['transfer_skipped'])} database(s) "
                    f"tuned another way ({', '.join(kinds)}; this session: "
                    f"{info['layout']}/{info['session_design_space']})")
        if not self.enabled or info["remaining"] <= 0:
            return
        from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn,
                                   TimeElapsedColumn, TimeRemainingColumn)

        self.bar = Progress(TextColumn("[bold]trials"), BarColumn(), MofNCompleteColumn(),
                            TimeElapsedColumn(), TextColumn("eta"), TimeRemainingColumn(),
                            TextColumn("{task.fields[best]}"), console=c, transient=False)
        self.task = self.bar.add_task("tune", total=info["remaining"], best="best: -")
        self.bar.start()

    def update(self, done, est_ms, n_tuned, n_total, state):
        err = f", {state['errors']} failed" if state.get("errors") else ""
        if self.bar is None:  # no terminal: a plain line every 30 s
            if time.monotonic() - self.last_line > 30:
                self.last_line = time.monotonic()
                print(f"[tune] {done} trials, best est. {est_ms:.3f} ms over {n_tuned}/{n_total}"
                      f" tuned tasks{err}", file=sys.stderr, flush=True)
            return
        self.bar.update(self.task, completed=done,
                        best=f"best est. {est_ms:.3f} ms over {n_tuned}/{n_total} tuned tasks{err}")

    def stop(self):
        if self.bar is not None:
            self.bar.stop()
            self.bar = None
