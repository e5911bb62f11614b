#!/usr/bin/env bash
# A local scale-out topology on loopback, as hmdp runs in production (docs/flows/scale-out.md):
#
#   nginx :8080 ──▶ app :8091  app :8092  app :8093     (SECKILL_WORKER=false)
#     /api/* proxied (X-Forwarded-For, keepalive)   ╲      │      ╱
#     /  the web front end (web/dist)                Redis Cluster 7001..7006 (3 masters + 3 replicas)
#                                                     MySQL database hmdp_topology
#   order workers ×2 (node dist/cli/order-worker.js, stable consumer names, /metrics on :8191 :8192)
#   Prometheus :9090 (TOPOLOGY_PROMETHEUS=1) scraping every app and worker, ops/prometheus/alerts.yml loaded
#
# Usage:
#   scripts/topology.sh up              start what is not running (idempotent)
#   scripts/topology.sh down [--purge]  stop everything it started, remove the Redis data;
#                                       --purge also drops the database and the whole folder
#   scripts/topology.sh status          what runs, where
#   scripts/topology.sh env             the topology's environment (MYSQL_URL, REDIS_CLUSTER_NODES, ...)
#   scripts/topology.sh run CMD...      runs CMD with that environment, e.g. `run npm run reconcile`
#   scripts/topology.sh bench ARGS...   npm run bench -- --target <nginx> ARGS (with that environment)
#
# Settings (environment): TOPOLOGY_DIR (.topology), TOPOLOGY_REDIS_BASE_PORT (7001; six ports and
# their cluster bus ports +10000), TOPOLOGY_APP_BASE_PORT (8091; three ports), TOPOLOGY_HTTP_PORT
# (8080), TOPOLOGY_DB (hmdp_topology, on MYSQL_URL's server), TOPOLOGY_REDIS_KEY_PREFIX (empty),
# SECKILL_STREAM_SHARDS (4), TOPOLOGY_WORKER_METRICS_BASE_PORT (8191; two ports), TOPOLOGY_PROMETHEUS
# (unset: no Prometheus; 1: start one), TOPOLOGY_PROMETHEUS_PORT (9090). Every app and worker serves
# /metrics to the token in $TOPOLOGY_DIR/metrics-token (METRICS_TOKEN, generated once). Other app settings in the environment (SECKILL_REPLICA_ACKS, LOG_LEVEL,
# ...) are passed to the app instances and workers.
# Packages (redis-server, redis-tools, nginx; prometheus with TOPOLOGY_PROMETHEUS=1) are installed with apt-get when missing. The nginx used
# here runs from its own configuration, pid and logs in the topology folder; the system's nginx
# and /etc/nginx/sites-* are never touched.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)

TOPOLOGY_DIR=${TOPOLOGY_DIR:-$ROOT/.topology}
REDIS_BASE_PORT=${TOPOLOGY_REDIS_BASE_PORT:-7001}
APP_BASE_PORT=${TOPOLOGY_APP_BASE_PORT:-8091}
HTTP_PORT=${TOPOLOGY_HTTP_PORT:-8080}
DB_NAME=${TOPOLOGY_DB:-hmdp_topology}
KEY_PREFIX=${TOPOLOGY_REDIS_KEY_PREFIX:-}
SHARDS=${SECKILL_STREAM_SHARDS:-4}
WORKER_METRICS_BASE_PORT=${TOPOLOGY_WORKER_METRICS_BASE_PORT:-8191}
PROMETHEUS=${TOPOLOGY_PROMETHEUS:-}
PROMETHEUS_PORT=${TOPOLOGY_PROMETHEUS_PORT:-9090}
REDIS_NODES=6
APPS=3
WORKERS=2
CLUSTER_NODE_TIMEOUT_MS=2000

RUN_DIR=$TOPOLOGY_DIR/run
LOG_DIR=$TOPOLOGY_DIR/logs
REDIS_DIR=$TOPOLOGY_DIR/redis
NGINX_DIR=$TOPOLOGY_DIR/nginx
PROMETHEUS_DIR=$TOPOLOGY_DIR/prometheus
TOKEN_FILE=$TOPOLOGY_DIR/metrics-token
PURCHASE_KEY_FILE=$TOPOLOGY_DIR/purchase-token-key
ENV_FILE=$TOPOLOGY_DIR/env

log() { echo "topology: $*"; }
fail() { echo "topology: $*" >&2; exit 1; }

[[ $DB_NAME =~ ^[A-Za-z0-9_]+$ ]] || fail "TOPOLOGY_DB must be letters, digits and _ (got '$DB_NAME')"
for port in "$REDIS_BASE_PORT" "$APP_BASE_PORT" "$HTTP_PORT" "$WORKER_METRICS_BASE_PORT" "$PROMETHEUS_PORT"; do
  [[ $port =~ ^[0-9]+$ ]] && [ "$port" -ge 1 ] && [ "$port" -le 55000 ] || fail "ports must be integers from 1 to 55000 (got '$port')"
done

# MYSQL_URL's server (user, password, host, port) with the topology's own database.
MYSQL_SERVER_URL=$(node -e 'const u=new URL(process.env.MYSQL_URL||"mysql://root@127.0.0.1:3306/hmdp");u.pathname="";process.stdout.write(u.toString().replace(/\/$/,""))')
TOPOLOGY_MYSQL_URL="$MYSQL_SERVER_URL/$DB_NAME"

redis_ports() { seq "$REDIS_BASE_PORT" $((REDIS_BASE_PORT + REDIS_NODES - 1)); }
app_ports() { seq "$APP_BASE_PORT" $((APP_BASE_PORT + APPS - 1)); }
worker_metrics_port() { echo $((WORKER_METRICS_BASE_PORT + $1 - 1)); }
cluster_nodes() { redis_ports | sed 's/^/127.0.0.1:/' | paste -sd, -; }

as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }
APT_UPDATED=0
apt_install() {
  if [ "$APT_UPDATED" -eq 0 ]; then
    as_root apt-get update -qq || fail "apt-get update failed: cannot install $* (needs root or sudo and a Debian package mirror)"
    APT_UPDATED=1
  fi
  log "installing $* from Debian packages"
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null \
    || fail "apt-get install $* failed: the topology needs the Debian packages redis-server, redis-tools and nginx"
}
ensure_packages() {
  command -v redis-server >/dev/null || apt_install redis-server
  command -v redis-cli >/dev/null || apt_install redis-tools
  command -v nginx >/dev/null || [ -x /usr/sbin/nginx ] || apt_install nginx
  NGINX=$(command -v nginx || echo /usr/sbin/nginx)
  [ -x "$NGINX" ] || fail "nginx is not installed and apt-get could not install it"
  if [ -n "$PROMETHEUS" ]; then command -v prometheus >/dev/null || apt_install prometheus; fi
}

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
alive() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }
wait_until() { # seconds, description, command...
  local seconds=$1 what=$2; shift 2
  for _ in $(seq 1 $((seconds * 5))); do "$@" && return 0; sleep 0.2; done
  fail "$what did not happen within ${seconds} s (logs: $LOG_DIR)"
}
require_free() { # port, what
  port_open "$1" && fail "port $1 ($2) is taken by something this topology did not start; set the TOPOLOGY_*_PORT variables"
  return 0
}

build_if_stale() {
  if [ ! -f dist/main.js ] || [ ! -f web/dist/index.html ] \
    || [ -n "$(find src -newer dist/main.js -print -quit)" ] || [ -n "$(find web/src web/index.html -newer web/dist/index.html -print -quit 2>/dev/null)" ]; then
    log "building (npm run build)"
    npm run --silent build >/dev/null
  fi
}

# --- Redis Cluster ---------------------------------------------------------------------------

start_redis() {
  for port in $(redis_ports); do
    local pidfile=$RUN_DIR/redis-$port.pid
    if alive "$pidfile"; then continue; fi
    require_free "$port" "Redis node"
    require_free $((port + 10000)) "Redis cluster bus"
    mkdir -p "$REDIS_DIR/$port"
    redis-server --port "$port" --bind 127.0.0.1 --daemonize yes --protected-mode no \
      --dir "$REDIS_DIR/$port" --pidfile "$pidfile" --logfile "$LOG_DIR/redis-$port.log" \
      --cluster-enabled yes --cluster-config-file nodes.conf --cluster-node-timeout "$CLUSTER_NODE_TIMEOUT_MS" \
      --appendonly yes --appendfsync everysec --save ""
  done
  for port in $(redis_ports); do wait_until 15 "Redis on port $port answering" redis_ping "$port"; done
  if ! redis-cli -p "$REDIS_BASE_PORT" cluster info | grep -q 'cluster_state:ok'; then
    log "creating the Redis Cluster (3 masters + 3 replicas, node timeout ${CLUSTER_NODE_TIMEOUT_MS} ms)"
    # shellcheck disable=SC2046
    redis-cli --cluster create $(redis_ports | sed 's/^/127.0.0.1:/') --cluster-replicas 1 --cluster-yes >"$LOG_DIR/cluster-create.log" 2>&1 \
      || fail "redis-cli --cluster create failed: see $LOG_DIR/cluster-create.log"
  fi
  for port in $(redis_ports); do wait_until 30 "cluster_state:ok on $port" cluster_ok "$port"; done
  wait_until 30 "three replicas in sync" replicas_in_sync
}
redis_ping() { [ "$(redis-cli -p "$1" ping 2>/dev/null)" = PONG ]; }
cluster_ok() { redis-cli -p "$1" cluster info 2>/dev/null | grep -q 'cluster_state:ok'; }
replicas_in_sync() {
  local up=0
  for port in $(redis_ports); do
    redis-cli -p "$port" info replication 2>/dev/null | grep -q 'master_link_status:up' && up=$((up + 1))
  done
  [ "$up" -eq 3 ]
}

# --- Database --------------------------------------------------------------------------------

prepare_database() {
  log "database $DB_NAME: migrations, demo data, shop indexes"
  app_env node dist/cli/migrate.js >"$LOG_DIR/migrate.log" 2>&1 || fail "migrations failed: see $LOG_DIR/migrate.log"
  app_env node dist/cli/seed.js >"$LOG_DIR/seed.log" 2>&1 || fail "seed failed: see $LOG_DIR/seed.log"
  app_env node dist/cli/shop-index.js >"$LOG_DIR/shop-index.log" 2>&1 || fail "shop-index failed: see $LOG_DIR/shop-index.log"
  # Demo user 1 (phone 13686869696) administers the demo, as under scripts/start.sh.
  app_env node dist/cli/admin.js grant 13686869696 >"$LOG_DIR/admin.log" 2>&1 || fail "admin grant failed: see $LOG_DIR/admin.log"
}

# The environment every process of the topology runs with (also written to $ENV_FILE).
topology_env() {
  cat <<EOF
MYSQL_URL=$TOPOLOGY_MYSQL_URL
REDIS_CLUSTER_NODES=$(cluster_nodes)
REDIS_KEY_PREFIX=$KEY_PREFIX
SECKILL_STREAM_SHARDS=$SHARDS
SMS_SENDER=${SMS_SENDER:-log}
METRICS_TOKEN=$(cat "$TOKEN_FILE" 2>/dev/null)
PURCHASE_TOKEN_KEYS=${PURCHASE_TOKEN_KEYS:-topology:$(cat "$PURCHASE_KEY_FILE" 2>/dev/null)}
TOPOLOGY_URL=http://127.0.0.1:$HTTP_PORT
EOF
}
# Request logs cost the instances real CPU under load: warn unless LOG_LEVEL says otherwise.
app_env() { env $(topology_env | grep -v '^REDIS_KEY_PREFIX=') REDIS_KEY_PREFIX="$KEY_PREFIX" NODE_ENV=production LOG_LEVEL="${LOG_LEVEL:-warn}" "$@"; }

# --- App instances and workers ---------------------------------------------------------------

# Starts a command in the background with the topology's environment and records ITS pid: the
# subshell execs env, env execs the command, so $! is the process itself (never a bash wrapper
# whose death would leave the process running).
spawn() { # pidfile, logfile, command...
  local pidfile=$1 logfile=$2; shift 2
  ( exec env $(topology_env | grep -v '^REDIS_KEY_PREFIX=') REDIS_KEY_PREFIX="$KEY_PREFIX" NODE_ENV=production \
      LOG_LEVEL="${LOG_LEVEL:-warn}" nohup "$@" ) </dev/null >>"$logfile" 2>&1 &
  echo $! >"$pidfile"
}

start_apps() {
  for port in $(app_ports); do
    local pidfile=$RUN_DIR/app-$port.pid
    if alive "$pidfile"; then continue; fi
    require_free "$port" "app instance"
    # Every client of a local topology is this machine (the load generator too): a per-IP order
    # limit would throttle the load test, so it is off unless set.
    PORT=$port HOST=127.0.0.1 SECKILL_WORKER=false TRUST_PROXY=127.0.0.1 ORDER_RATE_LIMIT_PER_IP="${ORDER_RATE_LIMIT_PER_IP-0}" \
      spawn "$pidfile" "$LOG_DIR/app-$port.log" node dist/main.js
  done
  for port in $(app_ports); do wait_until 30 "app on port $port healthy" app_healthy "$port"; done
}
app_healthy() { curl -fsS "http://127.0.0.1:$1/api/health" >/dev/null 2>&1; }

start_workers() {
  for i in $(seq 1 "$WORKERS"); do
    local pidfile=$RUN_DIR/worker-$i.pid
    if alive "$pidfile"; then continue; fi
    require_free "$(worker_metrics_port "$i")" "order worker metrics"
    HOST=127.0.0.1 WORKER_METRICS_PORT=$(worker_metrics_port "$i") SECKILL_CONSUMER="topology-worker-$i" spawn "$pidfile" "$LOG_DIR/worker-$i.log" node dist/cli/order-worker.js
  done
  sleep 0.5
  for i in $(seq 1 "$WORKERS"); do alive "$RUN_DIR/worker-$i.pid" || fail "order worker $i exited: see $LOG_DIR/worker-$i.log"; done
}

# --- nginx -----------------------------------------------------------------------------------

write_nginx_conf() {
  mkdir -p "$NGINX_DIR/temp" "$NGINX_DIR/logs"
  local upstreams="" user_line=""
  for port in $(app_ports); do upstreams+="    server 127.0.0.1:$port max_fails=1 fail_timeout=2s;"$'\n'; done
  # Workers of a root master run as nobody by default; let them read web/dist as its owner.
  [ "$(id -u)" -eq 0 ] && user_line="user $(stat -c %U "$ROOT/web/dist") $(stat -c %G "$ROOT/web/dist");"
  cat >"$NGINX_DIR/nginx.conf" <<EOF
# Written by scripts/topology.sh; regenerated on every 'up'.
$user_line
worker_processes auto;
pid $NGINX_DIR/nginx.pid;
error_log $NGINX_DIR/logs/error.log warn;
events { worker_connections 4096; }
http {
  include /etc/nginx/mime.types;
  default_type application/octet-stream;
  access_log $NGINX_DIR/logs/access.log combined buffer=64k flush=1s;
  client_body_temp_path $NGINX_DIR/temp/body;
  proxy_temp_path $NGINX_DIR/temp/proxy;
  fastcgi_temp_path $NGINX_DIR/temp/fastcgi;
  uwsgi_temp_path $NGINX_DIR/temp/uwsgi;
  scgi_temp_path $NGINX_DIR/temp/scgi;
  sendfile on;
  client_max_body_size 6m;

  upstream hmdp {
$upstreams    keepalive 64;
  }

  server {
    listen 127.0.0.1:$HTTP_PORT;
    # The front end, served by nginx as hmdp does (history URLs fall back to index.html).
    root $ROOT/web/dist;
    location /assets/ { expires 1y; add_header Cache-Control "public, immutable"; }
    location / { try_files \$uri /index.html; add_header Cache-Control "no-cache"; }

    location /api/ {
      proxy_pass http://hmdp;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Host \$host;
      proxy_set_header X-Real-IP \$remote_addr;
      proxy_set_header X-Forwarded-For \$proxy_add_x_forwarded_for;
      proxy_set_header X-Forwarded-Proto \$scheme;
      # Which instance answered (for the topology test and for debugging).
      add_header X-Upstream \$upstream_addr always;
      # An order POST is not idempotent: never replay it on another instance.
      proxy_next_upstream error timeout;
    }
    # Order state streams (Server-Sent Events): each event passed on at once (the app also sends
    # X-Accel-Buffering: no), the connection held past the default 60 s read timeout (heartbeats
    # come every ORDER_EVENTS_HEARTBEAT_MS), never retried on another instance.
    location ~ ^/api/voucher-order/[0-9]+/events\$ {
      proxy_pass http://hmdp;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Host \$host;
      proxy_set_header X-Forwarded-For \$proxy_add_x_forwarded_for;
      proxy_buffering off;
      proxy_cache off;
      proxy_read_timeout 1h;
      add_header X-Upstream \$upstream_addr always;
      proxy_next_upstream off;
    }
    location /imgs/ { proxy_pass http://hmdp; proxy_http_version 1.1; proxy_set_header Connection ""; }
    # /metrics stays on the instances' own ports, off the public entry point.
    location = /metrics { return 404; }
  }
}
EOF
}

start_nginx() {
  write_nginx_conf
  "$NGINX" -t -q -p "$NGINX_DIR" -c "$NGINX_DIR/nginx.conf" -e "$NGINX_DIR/logs/error.log" 2>>"$LOG_DIR/nginx-test.log" \
    || fail "nginx rejected $NGINX_DIR/nginx.conf: see $LOG_DIR/nginx-test.log"
  if alive "$NGINX_DIR/nginx.pid"; then
    "$NGINX" -p "$NGINX_DIR" -c "$NGINX_DIR/nginx.conf" -e "$NGINX_DIR/logs/error.log" -s reload
    return
  fi
  require_free "$HTTP_PORT" "nginx"
  "$NGINX" -p "$NGINX_DIR" -c "$NGINX_DIR/nginx.conf" -e "$NGINX_DIR/logs/error.log"
  wait_until 10 "nginx answering on $HTTP_PORT" curl -fsS "http://127.0.0.1:$HTTP_PORT/api/health" -o /dev/null
}

# --- Prometheus (TOPOLOGY_PROMETHEUS=1) -------------------------------------------------------

# A token of 32 hex characters, made once; every app and worker serves /metrics to it.
ensure_token() {
  [ -s "$TOKEN_FILE" ] || node -e 'process.stdout.write(require("node:crypto").randomBytes(16).toString("hex"))' >"$TOKEN_FILE"
  chmod 600 "$TOKEN_FILE"
  # The purchase token key every instance signs and verifies with (production needs one).
  [ -s "$PURCHASE_KEY_FILE" ] || node -e 'process.stdout.write(require("node:crypto").randomBytes(32).toString("hex"))' >"$PURCHASE_KEY_FILE"
  chmod 600 "$PURCHASE_KEY_FILE"
}

write_prometheus_conf() {
  mkdir -p "$PROMETHEUS_DIR/data"
  local targets=""
  for port in $(app_ports); do targets+="'127.0.0.1:$port', "; done
  for i in $(seq 1 "$WORKERS"); do targets+="'127.0.0.1:$(worker_metrics_port "$i")', "; done
  cat >"$PROMETHEUS_DIR/prometheus.yml" <<EOF
# Written by scripts/topology.sh; regenerated on every 'up'.
global: { scrape_interval: 5s, evaluation_interval: 5s }
rule_files: ['$ROOT/ops/prometheus/alerts.yml']
scrape_configs:
  - job_name: hmdp
    authorization: { type: Bearer, credentials_file: '$TOKEN_FILE' }
    static_configs: [{ targets: [${targets%, }] }]
EOF
}

start_prometheus() {
  [ -n "$PROMETHEUS" ] || return 0
  write_prometheus_conf
  promtool check config "$PROMETHEUS_DIR/prometheus.yml" >"$LOG_DIR/prometheus-check.log" 2>&1 \
    || fail "promtool rejected $PROMETHEUS_DIR/prometheus.yml: see $LOG_DIR/prometheus-check.log"
  local pidfile=$RUN_DIR/prometheus.pid
  if alive "$pidfile"; then kill -HUP "$(cat "$pidfile")"; return; fi
  require_free "$PROMETHEUS_PORT" "Prometheus"
  ( exec nohup prometheus --config.file="$PROMETHEUS_DIR/prometheus.yml" --storage.tsdb.path="$PROMETHEUS_DIR/data" \
      --web.listen-address="127.0.0.1:$PROMETHEUS_PORT" ) </dev/null >>"$LOG_DIR/prometheus.log" 2>&1 &
  echo $! >"$pidfile"
  wait_until 30 "Prometheus answering on $PROMETHEUS_PORT" curl -fs "http://127.0.0.1:$PROMETHEUS_PORT/-/ready" -o /dev/null
}

# --- Commands --------------------------------------------------------------------------------

up() {
  ensure_packages
  command -v curl >/dev/null || apt_install curl
  mkdir -p "$RUN_DIR" "$LOG_DIR" "$REDIS_DIR"
  ensure_token
  build_if_stale
  start_redis
  topology_env >"$ENV_FILE"
  prepare_database
  start_apps
  start_workers
  start_nginx
  start_prometheus
  [ -z "$PROMETHEUS" ] || log "Prometheus: http://127.0.0.1:$PROMETHEUS_PORT (alerts: ops/prometheus/alerts.yml; dashboard: ops/grafana/hmdp.json)"
  log "up: http://127.0.0.1:$HTTP_PORT (nginx) -> apps $(app_ports | paste -sd, -); Redis Cluster $(cluster_nodes); MySQL $DB_NAME"
  log "environment for tools: $ENV_FILE (scripts/topology.sh run <command>, scripts/topology.sh bench <args>)"
}

stop_pidfile() { # pidfile, name
  local pidfile=$1 name=$2
  [ -f "$pidfile" ] || return 0
  local pid; pid=$(cat "$pidfile")
  if kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 1 75); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
    if kill -0 "$pid" 2>/dev/null; then log "$name ($pid) did not stop in 15 s: SIGKILL"; kill -KILL "$pid" 2>/dev/null || true; fi
    log "stopped $name ($pid)"
  fi
  rm -f "$pidfile"
}

down() {
  local purge=${1:-}
  [ -z "$purge" ] || [ "$purge" = --purge ] || fail "usage: scripts/topology.sh down [--purge]"
  if [ -f "$NGINX_DIR/nginx.pid" ]; then stop_pidfile "$NGINX_DIR/nginx.pid" nginx; fi
  stop_pidfile "$RUN_DIR/prometheus.pid" Prometheus
  for port in $(app_ports); do stop_pidfile "$RUN_DIR/app-$port.pid" "app :$port"; done
  for i in $(seq 1 "$WORKERS"); do stop_pidfile "$RUN_DIR/worker-$i.pid" "order worker $i"; done
  for port in $(redis_ports); do stop_pidfile "$RUN_DIR/redis-$port.pid" "Redis :$port"; done
  rm -rf "$REDIS_DIR" "$ENV_FILE"
  if [ "$purge" = --purge ]; then
    node --input-type=module -e '
      import { createConnection } from "mysql2/promise";
      const connection = await createConnection(process.argv[1]);
      await connection.query(`DROP DATABASE IF EXISTS \`${process.argv[2]}\``);
      await connection.end();' "$MYSQL_SERVER_URL" "$DB_NAME"
    log "dropped database $DB_NAME"
    rm -rf "$TOPOLOGY_DIR"
  fi
  log "down"
}

status() {
  local line
  show() { printf '  %-22s %s\n' "$1" "$2"; }
  echo "topology ($TOPOLOGY_DIR):"
  for port in $(redis_ports); do
    if alive "$RUN_DIR/redis-$port.pid"; then
      line="pid $(cat "$RUN_DIR/redis-$port.pid"), $(redis-cli -p "$port" info replication 2>/dev/null | grep '^role:' | tr -d '\r')"
    else line="not running"; fi
    show "redis :$port" "$line"
  done
  if redis_ping "$REDIS_BASE_PORT" 2>/dev/null; then
    show "cluster" "$(redis-cli -p "$REDIS_BASE_PORT" cluster info | grep -E 'cluster_state|cluster_known_nodes' | tr -d '\r' | paste -sd' ' -)"
  fi
  for port in $(app_ports); do
    if alive "$RUN_DIR/app-$port.pid"; then
      line="pid $(cat "$RUN_DIR/app-$port.pid"), $(app_healthy "$port" && echo healthy || echo 'not answering')"
    else line="not running"; fi
    show "app :$port" "$line"
  done
  for i in $(seq 1 "$WORKERS"); do
    alive "$RUN_DIR/worker-$i.pid" && line="pid $(cat "$RUN_DIR/worker-$i.pid") (consumer topology-worker-$i)" || line="not running"
    show "order worker $i" "$line"
  done
  alive "$NGINX_DIR/nginx.pid" && line="pid $(cat "$NGINX_DIR/nginx.pid"), http://127.0.0.1:$HTTP_PORT" || line="not running"
  show "nginx" "$line"
  alive "$RUN_DIR/prometheus.pid" && line="pid $(cat "$RUN_DIR/prometheus.pid"), http://127.0.0.1:$PROMETHEUS_PORT" || line="not running (TOPOLOGY_PROMETHEUS=1 starts it)"
  show "prometheus" "$line"
  show "database" "$TOPOLOGY_MYSQL_URL"
}

with_env() {
  [ -f "$ENV_FILE" ] || fail "the topology is not up (no $ENV_FILE); run scripts/topology.sh up"
  env $(grep -v '^REDIS_KEY_PREFIX=' "$ENV_FILE") REDIS_KEY_PREFIX="$KEY_PREFIX" "$@"
}

case "${1:-}" in
  up) up ;;
  down) shift; down "${1:-}" ;;
  status) status ;;
  env) topology_env ;;
  run) shift; [ $# -gt 0 ] || fail "usage: scripts/topology.sh run <command> [args]"; with_env "$@" ;;
  bench) shift; with_env npm run bench -- --target "http://127.0.0.1:$HTTP_PORT" "$@" ;;
  *) fail "usage: scripts/topology.sh up | down [--purge] | status | env | run <command> | bench [bench options]" ;;
esac
