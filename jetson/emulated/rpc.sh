#!/usr/bin/env bash
# TVM RPC for the emulated AGX Orin: a tracker on this (x86) host and an RPC server inside the
# emulated root, registered under a key, so that tuning on the host measures its candidates
# on the emulated Orin, as it would on a board over the network:
#
#   jetson/emulated/rpc.sh start     # tracker 127.0.0.1:9190 + server (key orin-emu); returns
#                                    # once the server has registered with the tracker
#   python -m edgebench.tune --model squeezenet1_1 --target jetson-agx-orin-cpu \
#       --rpc-tracker 127.0.0.1:9190 --rpc-key orin-emu --trials 32 --tuning-dir D --export E
#   jetson/emulated/rpc.sh status    # what the tracker has registered
#   jetson/emulated/rpc.sh stop
#
#   EDGEBENCH_EMULATED_RPC_PORT  tracker port (default 9190; the server takes one of the next 50)
#   EDGEBENCH_EMULATED_RPC_KEY   the device key (default orin-emu)
# The tracker runs with this repository's .venv Python (TVM and tornado, pyproject's "tvm"
# extra); logs and pids are in .emulated/rpc/.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=common.sh
source "$(dirname "$0")/common.sh"

PORT=${EDGEBENCH_EMULATED_RPC_PORT:-9190}
KEY=${EDGEBENCH_EMULATED_RPC_KEY:-orin-emu}
STATE=$EMU_DIR/rpc
HOST_PY=$(emu_host_python)

alive() { [ -f "$STATE/$1.pid" ] && kill -0 "$(cat "$STATE/$1.pid")" 2>/dev/null; }

# Prints the keys registered with the tracker (one a line); fails when it does not answer.
registered() {
  "$HOST_PY" - "$PORT" <<'EOF'
import sys
from tvm import rpc
t = rpc.connect_tracker("127.0.0.1", int(sys.argv[1]))
for item in t.summary().get("server_info", []):
    print(str(item.get("key", "")).split(":", 1)[-1])
EOF
}

stop() {
  local what pid
  for what in server tracker; do
    if alive "$what"; then
      pid=$(cat "$STATE/$what.pid")
      emu_say "rpc: stopping the $what (pid $pid)"
      # Its whole process group (setsid made it the leader): TVM's popen workers too, which
      # outlived a kill of the leader alone (seen after CI's lane: one under QEMU, one here).
      emu_stop_group "$pid"
    fi
    rm -f "$STATE/$what.pid"
  done
}

start() {
  mkdir -p "$STATE"
  "$HOST_PY" -c "import tvm, tornado" 2>/dev/null \
    || emu_die "rpc: the host Python ($HOST_PY) lacks TVM or tornado: run ./setup.sh (extra 'tvm')"
  if alive tracker; then
    emu_say "rpc: tracker already running (pid $(cat "$STATE/tracker.pid"), port $(cat "$STATE/port"))"
  else
    emu_say "rpc: starting the TVM RPC tracker on the host at 127.0.0.1:$PORT (log $STATE/tracker.log)"
    setsid "$HOST_PY" -m tvm.exec.rpc_tracker --host 127.0.0.1 --port "$PORT" \
      --port-end "$((PORT + 1))" > "$STATE/tracker.log" 2>&1 < /dev/null &
    echo $! > "$STATE/tracker.pid"
    echo "$PORT" > "$STATE/port"
    for _ in $(seq 100); do
      registered >/dev/null 2>&1 && break
      alive tracker || { tail -n 5 "$STATE/tracker.log" >&2; emu_die "rpc: the tracker exited"; }
      sleep 0.3
    done
    registered >/dev/null 2>&1 || emu_die "rpc: the tracker does not answer on 127.0.0.1:$PORT"
  fi
  if alive server; then
    emu_say "rpc: server already running (pid $(cat "$STATE/server.pid"))"
  else
    emu_say "rpc: starting the TVM RPC server in the emulated Orin, key '$KEY'" \
            "(log $STATE/server.log; importing TVM under QEMU takes a while)"
    # run.sh ends in exec: the pid of this job is the server's own.
    setsid "$EMU_REPO/jetson/emulated/run.sh" python -m tvm.exec.rpc_server \
      --tracker "127.0.0.1:$PORT" --key "$KEY" --host 127.0.0.1 \
      --port "$((PORT + 10))" --port-end "$((PORT + 60))" > "$STATE/server.log" 2>&1 < /dev/null &
    echo $! > "$STATE/server.pid"
  fi
  local t0=$SECONDS
  until registered 2>/dev/null | grep -qx "$KEY"; do
    alive server || { tail -n 20 "$STATE/server.log" >&2; stop; emu_die "rpc: the server in the emulated root exited"; }
    [ $((SECONDS - t0)) -lt "${EDGEBENCH_EMULATED_RPC_WAIT:-300}" ] \
      || { tail -n 20 "$STATE/server.log" >&2; stop; emu_die "rpc: no server registered as '$KEY' after $((SECONDS - t0)) s"; }
    sleep 2
  done
  emu_say "rpc: ready: --rpc-tracker 127.0.0.1:$PORT --rpc-key $KEY ($((SECONDS - t0)) s)"
}

case "${1:-}" in
  start)
    emu_need_root
    emu_check_root
    emu_check_binfmt 1
    start ;;
  stop) stop ;;
  status)
    if registered 2>/dev/null | sed 's/^/[emulated] rpc: registered: /' >&2; then :; else
      emu_say "rpc: no tracker answers on 127.0.0.1:$PORT"
      exit 1
    fi ;;
  *)
    echo "usage: jetson/emulated/rpc.sh start|stop|status  (TVM RPC tracker here, server in the emulated Orin)" >&2
    exit 2 ;;
esac
