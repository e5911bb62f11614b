#!/usr/bin/env bash
# The edge (edge/: nginx + Lua) in front of an app instance on this machine, with its own folder,
# pid and logs beside the system's nginx (never touched):
#
#   scripts/edge.sh start    render edge/nginx.conf.template for the app's configuration, start
#                            nginx (or reload it when it runs); idempotent
#   scripts/edge.sh stop     stop it (graceful: requests in flight and the visits buffered finish)
#   scripts/edge.sh status   whether it runs, where, and in front of what
#
# Run it with the app's environment (REDIS_URL, REDIS_KEY_PREFIX, DEFAULT_LANGUAGE, HMDP_COMPAT,
# UV_TRACKING, ...): the edge reads the app's Redis records and answers in the app's words. Run the
# app with TRUST_PROXY=1 behind it, so that both see the client's address.
# Settings (environment): EDGE_DIR (.edge), EDGE_LISTEN (127.0.0.1:8080), EDGE_APP (127.0.0.1:$PORT,
# else 127.0.0.1:8081; several instances comma-separated), EDGE_WEB_ROOT (unset: the app serves the
# front end; web/dist: nginx serves it), EDGE_WORKERS (auto), EDGE_READS (on), EDGE_PUSH (on),
# EDGE_L1_TTL_MS (30000), EDGE_L1_UNPUSHED_TTL_MS (1000), EDGE_L1_JITTER_PERCENT (20),
# EDGE_REDIS_TIMEOUT_MS (100), EDGE_REDIS_BACKOFF_MS (1000), EDGE_MAX_RECORD_BYTES (65536), EDGE_ORDER_RATE (5), EDGE_ORDER_BURST (10), EDGE_SALE_CONN (16),
# EDGE_EXEMPT (127.0.0.1), EDGE_SALES (on: the sale's refusals and voucher lists, edge/sale.md),
# EDGE_SALE_FRESH_MS (50), EDGE_SALE_BEAT_MS (10), EDGE_SALE_READ_GAP_MS (100). The Debian packages are installed with apt-get when missing
# (edge/packages.sh). edge/README.md tells what the edge answers and how.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)

EDGE_DIR=${EDGE_DIR:-$ROOT/.edge}
LISTEN=${EDGE_LISTEN:-127.0.0.1:8080}
APP=${EDGE_APP:-127.0.0.1:${PORT:-8081}}
PIDFILE=$EDGE_DIR/nginx.pid

log() { echo "edge: $*"; }
fail() { echo "edge: $*" >&2; exit 1; }
alive() { [ -f "$PIDFILE" ] && kill -0 "$(cat "$PIDFILE")" 2>/dev/null; }

# dist/cli/edge-config.js when the build is current, else the source through tsx.
render() {
  if [ -f dist/cli/edge-config.js ] && [ -z "$(find src -name '*.ts' -newer dist/cli/edge-config.js -print -quit)" ]; then
    node dist/cli/edge-config.js "$@"
  else
    node --import tsx src/cli/edge-config.ts "$@"
  fi
}

start() {
  local nginx conf
  nginx=$(bash edge/packages.sh) || fail "the Debian packages could not be installed (edge/packages.sh)"
  mkdir -p "$EDGE_DIR"
  conf=$(render --prefix "$EDGE_DIR" --listen "$LISTEN" --sale "$APP" ${EDGE_WEB_ROOT:+--web-root "$EDGE_WEB_ROOT"} \
    --workers "${EDGE_WORKERS:-auto}" --reads "${EDGE_READS:-on}" --push "${EDGE_PUSH:-on}" \
    --l1-ttl-ms "${EDGE_L1_TTL_MS:-30000}" --l1-unpushed-ttl-ms "${EDGE_L1_UNPUSHED_TTL_MS:-1000}" \
    --l1-jitter-percent "${EDGE_L1_JITTER_PERCENT:-20}" \
    --redis-timeout-ms "${EDGE_REDIS_TIMEOUT_MS:-100}" --redis-backoff-ms "${EDGE_REDIS_BACKOFF_MS:-1000}" \
    --max-record-bytes "${EDGE_MAX_RECORD_BYTES:-65536}" --order-rate "${EDGE_ORDER_RATE:-5}" \
    --sales "${EDGE_SALES:-on}" --sale-fresh-ms "${EDGE_SALE_FRESH_MS:-50}" --sale-beat-ms "${EDGE_SALE_BEAT_MS:-10}" \
    --sale-read-gap-ms "${EDGE_SALE_READ_GAP_MS:-100}" \
    --order-burst "${EDGE_ORDER_BURST:-10}" --sale-conn "${EDGE_SALE_CONN:-16}" --exempt "${EDGE_EXEMPT-127.0.0.1}") \
    || fail "could not write the configuration"
  "$nginx" -t -q -p "$EDGE_DIR" -c "$conf" -e "$EDGE_DIR/logs/error.log" || fail "nginx rejected $conf"
  if alive; then
    "$nginx" -p "$EDGE_DIR" -c "$conf" -e "$EDGE_DIR/logs/error.log" -s reload
    log "reloaded: http://$LISTEN -> $APP"
    return
  fi
  "$nginx" -p "$EDGE_DIR" -c "$conf" -e "$EDGE_DIR/logs/error.log"
  for _ in $(seq 1 50); do alive && break; sleep 0.1; done
  alive || fail "nginx did not start: see $EDGE_DIR/logs/error.log"
  log "started (pid $(cat "$PIDFILE")): http://$LISTEN -> $APP; logs in $EDGE_DIR/logs"
}

stop() {
  alive || { log "not running"; rm -f "$PIDFILE"; return 0; }
  local pid; pid=$(cat "$PIDFILE")
  kill -QUIT "$pid"
  for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$pid" 2>/dev/null; then log "nginx ($pid) still running after 10 s: SIGTERM"; kill -TERM "$pid"; fi
  log "stopped (pid $pid)"
}

status() {
  if alive; then log "running (pid $(cat "$PIDFILE")): http://$LISTEN -> $APP ($EDGE_DIR)"; else log "not running"; return 3; fi
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  status) status ;;
  *) fail "usage: scripts/edge.sh start | stop | status" ;;
esac
