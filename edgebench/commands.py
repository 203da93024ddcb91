"""``edgebench``: one command, with a subcommand per job. Each keeps its module form too
(``python -m edgebench.full`` is the same as ``edgebench run``).

    edgebench run        convert, check parity and measure (python -m edgebench.full)
    edgebench parity     parity only, printed as a table (python -m edgebench.parity)
    ...

``edgebench --models ...`` (options with no subcommand) is ``edgebench run``: the script's
meaning before it had subcommands. Each subcommand's module is imported only when it runs."""
from __future__ import annotations

import difflib
import importlib
import sys

from .errors import EXIT_USAGE

# subcommand -> (module, its function taking argv, the line --help shows)
COMMANDS = {
    "run": ("edgebench.cli", "main", "convert every model into every variant, check parity, "
                                     "measure; write results and a report (python -m edgebench.full)"),
    "parity": ("edgebench.parity", "main", "does each variant compute the same model? "
                                           "(python -m edgebench.parity)"),
    "tune": ("edgebench.tune", "main", "tune TVM offline, here or for a board over RPC, and "
                                       "export its artifact (python -m edgebench.tune)"),
    "compare": ("edgebench.compare", "main", "set runs side by side: what changed, with "
                                             "confidence intervals (python -m edgebench.compare)"),
    "report": ("edgebench.report", "main", "rewrite a run's report, summary.csv and plots from "
                                           "its records (python -m edgebench.report)"),
    "fleet": ("edgebench.fleet.cli", "main", "one run across several boards on a Ray cluster "
                                             "(python -m edgebench.fleet)"),
    "telemetry": ("edgebench.telemetry.__main__", "main", "power, memory and device state: "
                                                          "detect, sample, parse tegrastats "
                                                          "(python -m edgebench.telemetry)"),
}


def usage() -> str:
    width = max(map(len, COMMANDS))
    lines = ["usage: edgebench COMMAND [options]   (edgebench COMMAND --help for each)", "",
             "Pick the inference runtime for a vision model on an edge board: every model in",
             "every runtime variant, checked for parity, measured the same way.", "",
             "commands:"]
    lines += [f"  {name:<{width}}  {help_}" for name, (_, _, help_) in COMMANDS.items()]
    lines += ["", "edgebench --models ... (options, no command) is edgebench run."]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(usage(), file=sys.stdout if argv else sys.stderr)
        return 0 if argv else EXIT_USAGE
    name, rest = argv[0], argv[1:]
    if name.startswith("-"):          # options only: the main job, as before subcommands
        name, rest = "run", argv
    if name not in COMMANDS:
        close = difflib.get_close_matches(name, COMMANDS, n=2)
        hint = f"; did you mean {' or '.join(close)}?" if close else ""
        print(f"edgebench: error: unknown command '{name}'{hint} (commands: "
              f"{', '.join(COMMANDS)}; see edgebench --help)", file=sys.stderr)
        return EXIT_USAGE
    module, func, _ = COMMANDS[name]
    return getattr(importlib.import_module(module), func)(rest)


if __name__ == "__main__":
    sys.exit(main())
