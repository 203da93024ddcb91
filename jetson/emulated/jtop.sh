#!/usr/bin/env bash
# jetson-stats' jtop service in the emulated AGX Orin, started the way its systemd unit starts
# it on a board (/usr/local/share/jetson_stats/jtop.service: Environment="JTOP_SERVICE=True",
# ExecStart=/usr/local/bin/jtop --force), as root, inside the root; there is no systemd in a
# chroot, so this script stands where `systemctl start|stop jtop.service` would:
#
#   jetson/emulated/jtop.sh start    # returns once the service listens on /run/jtop.sock
#   EDGEBENCH_POWER_SOURCE=jtop jetson/emulated/run.sh python -m edgebench.full ...
#   jetson/emulated/jtop.sh status
#   jetson/emulated/jtop.sh stop
#
# The service runs in a run.sh of its own (its own mount namespace, the same root): clients
# in other run.sh invocations reach it through the socket file in the root's /run. Its log
# and pid are in .emulated/jtop/.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=common.sh
source "$(dirname "$0")/common.sh"

STATE=$EMU_DIR/jtop
SOCK=$EMU_ROOT/run/jtop.sock
UNIT=$EMU_ROOT/usr/local/share/jetson_stats/jtop.service

alive() { [ -f "$STATE/service.pid" ] && kill -0 "$(cat "$STATE/service.pid")" 2>/dev/null; }

stop() {
  if alive; then
    local pid
    pid=$(cat "$STATE/service.pid")
    emu_say "jtop: stopping the service (pid $pid)"
    # SIGTERM, as systemctl stop sends: jtop's handler closes the service and its socket
    emu_stop_group "$pid"
  fi
  rm -f "$STATE/service.pid"
  rm -f "$SOCK"
}

start() {
  mkdir -p "$STATE"
  [ -x "$EMU_ROOT/usr/local/bin/jtop" ] || emu_die "jtop: jetson-stats is not installed in the root: run jetson/emulated/setup.sh"
  if alive && [ -S "$SOCK" ]; then
    emu_say "jtop: service already running (pid $(cat "$STATE/service.pid"))"
    return 0
  fi
  stop
  # The unit file's own command and environment (checked: a changed unit is a changed start)
  if ! grep -qx 'Environment="JTOP_SERVICE=True"' "$UNIT" \
     || ! grep -qx 'ExecStart=/usr/local/bin/jtop --force' "$UNIT"; then
    emu_die "jtop: $UNIT no longer starts the service as this script does; update jtop.sh"
  fi
  emu_say "jtop: starting the service in the emulated Orin (JTOP_SERVICE=True /usr/local/bin/jtop --force; log $STATE/service.log)"
  setsid "$EMU_REPO/jetson/emulated/run.sh" env JTOP_SERVICE=True /usr/local/bin/jtop --force \
    > "$STATE/service.log" 2>&1 < /dev/null &
  echo $! > "$STATE/service.pid"
  local t0=$SECONDS
  until [ -S "$SOCK" ] && grep -q "service ready" "$STATE/service.log" 2>/dev/null; do
    alive || { tail -n 20 "$STATE/service.log" >&2; stop; emu_die "jtop: the service exited"; }
    [ $((SECONDS - t0)) -lt "${EDGEBENCH_EMULATED_JTOP_WAIT:-180}" ] \
      || { tail -n 20 "$STATE/service.log" >&2; stop; emu_die "jtop: no service on /run/jtop.sock after $((SECONDS - t0)) s"; }
    sleep 1
  done
  emu_say "jtop: ready on /run/jtop.sock ($((SECONDS - t0)) s)"
}

case "${1:-}" in
  start)
    emu_need_root
    emu_check_root
    emu_check_binfmt 1
    start ;;
  stop) stop ;;
  status)
    if alive && [ -S "$SOCK" ]; then emu_say "jtop: running (pid $(cat "$STATE/service.pid"))"
    else emu_say "jtop: not running"; exit 1; fi ;;
  *)
    echo "usage: jetson/emulated/jtop.sh start|stop|status  (jtop's service in the emulated Orin)" >&2
    exit 2 ;;
esac
