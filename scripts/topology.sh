#!/usr/bin/env bash
# A local scale-out topology on loopback, as hmdp runs in production (docs/flows/scale-out.md):
#
#   nginx :8080 ─┬─ the sale's routes ─▶ sale pool: app :8091 :8092     (SECKILL_WORKER=false)
#     limit_req, │  (order, gate, order events)      ╲      │      ╱
#     limit_conn └─ the rest of /api ──▶ site pool: app :8093   Redis Cluster 7001..7006 (3 masters + 3 replicas)
#     /  the web front end (web/dist)                           MySQL database hmdp_topology
#   order workers ×2 (node dist/cli/order-worker.js, stable consumer names, /metrics on :8191 :8192)
#   change followers ×2 (node dist/cli/cdc.js: one active under the lease, one standing by; /api/health
#     and /metrics on :8291 :8292), when MYSQL_URL's server writes a ROW binlog (else not started, said)
#   RabbitMQ cluster of 3 nodes :5701..5703 (TOPOLOGY_QUEUE=rabbitmq; the machine's broker untouched)
#   Prometheus :9090 (TOPOLOGY_PROMETHEUS=1) scraping every app and worker, ops/prometheus/alerts.yml loaded
#
# Usage:
#   scripts/topology.sh up              start what is not running (idempotent)
#   scripts/topology.sh down [--purge]  stop everything it started, remove the Redis and RabbitMQ data;
#                                       --purge also drops the database and the whole folder
#   scripts/topology.sh status          what runs, where
#   scripts/topology.sh env             the topology's environment (MYSQL_URL, REDIS_CLUSTER_NODES, ...)
#   scripts/topology.sh run CMD...      runs CMD with that environment, e.g. `run npm run reconcile`
#   scripts/topology.sh bench ARGS...   npm run bench -- --target <nginx> ARGS (with that environment)
#   scripts/topology.sh broker          the RabbitMQ cluster alone (what `up` starts with TOPOLOGY_QUEUE=rabbitmq)
#   scripts/topology.sh rabbitmqctl ARGS...  rabbitmqctl against the cluster's first node (-n picks another)
#
# Settings (environment): TOPOLOGY_DIR (.topology), TOPOLOGY_REDIS_BASE_PORT (7001; six ports and
# their cluster bus ports +10000), TOPOLOGY_APP_BASE_PORT (8091; one port per instance),
# TOPOLOGY_SALE_APPS (2) and TOPOLOGY_SITE_APPS (1): the instances of each pool, the sale's first,
# TOPOLOGY_HTTP_PORT (8080), TOPOLOGY_DB (hmdp_topology, on MYSQL_URL's server), TOPOLOGY_REDIS_KEY_PREFIX (empty),
# SECKILL_STREAM_SHARDS (4), TOPOLOGY_WORKER_METRICS_BASE_PORT (8191; two ports), TOPOLOGY_CDC_BASE_PORT
# (8291; two ports, each also its follower's replica server id), TOPOLOGY_PROMETHEUS
# (unset: no Prometheus; 1: start one), TOPOLOGY_PROMETHEUS_PORT (9090). Every app, worker and follower serves
# /metrics to the token in $TOPOLOGY_DIR/metrics-token (METRICS_TOKEN, generated once). Other app settings in the environment (SECKILL_REPLICA_ACKS, LOG_LEVEL,
# ...) are passed to the app instances and workers.
# Edge limits (nginx, per client address): TOPOLOGY_EDGE_ORDER_RATE (5: order requests a second),
# TOPOLOGY_EDGE_ORDER_BURST (10: more at once, answered without delay), TOPOLOGY_EDGE_SALE_CONN (16:
# requests in flight on the sale's routes), TOPOLOGY_EDGE_EXEMPT (127.0.0.1: space-separated
# addresses or CIDRs never limited, the machine's own load generator; empty limits every address).
# Queue: TOPOLOGY_QUEUE (stream; rabbitmq: a 3-node RabbitMQ cluster, SECKILL_QUEUE=rabbitmq and
# RABBITMQ_URL for the app), TOPOLOGY_RABBITMQ_BASE_PORT (5701; three AMQP ports, their Erlang
# distribution ports +20000 and the CLI's +30000..+30010).
# Packages (redis-server, redis-tools, the edge's nginx with its Lua modules: edge/packages.sh;
# prometheus with TOPOLOGY_PROMETHEUS=1; rabbitmq-server with TOPOLOGY_QUEUE=rabbitmq) are installed
# with apt-get when missing. The nginx and RabbitMQ nodes
# used here run from their own configuration, pid, data and logs in the topology folder; the system's
# nginx, /etc/nginx/sites-*, /etc/rabbitmq and the machine's broker are never touched.
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
CDC_BASE_PORT=${TOPOLOGY_CDC_BASE_PORT:-8291}
PROMETHEUS=${TOPOLOGY_PROMETHEUS:-}
PROMETHEUS_PORT=${TOPOLOGY_PROMETHEUS_PORT:-9090}
SALE_APPS=${TOPOLOGY_SALE_APPS:-2}
SITE_APPS=${TOPOLOGY_SITE_APPS:-1}
EDGE_ORDER_RATE=${TOPOLOGY_EDGE_ORDER_RATE:-5}
EDGE_ORDER_BURST=${TOPOLOGY_EDGE_ORDER_BURST:-10}
EDGE_SALE_CONN=${TOPOLOGY_EDGE_SALE_CONN:-16}
EDGE_EXEMPT=${TOPOLOGY_EDGE_EXEMPT-127.0.0.1}
QUEUE=${TOPOLOGY_QUEUE:-stream}
RABBITMQ_BASE_PORT=${TOPOLOGY_RABBITMQ_BASE_PORT:-5701}
REDIS_NODES=6
WORKERS=2
FOLLOWERS=2
RABBITMQ_NODES=3
CLUSTER_NODE_TIMEOUT_MS=2000

RUN_DIR=$TOPOLOGY_DIR/run
LOG_DIR=$TOPOLOGY_DIR/logs
REDIS_DIR=$TOPOLOGY_DIR/redis
NGINX_DIR=$TOPOLOGY_DIR/nginx
RABBITMQ_DIR=$TOPOLOGY_DIR/rabbitmq
PROMETHEUS_DIR=$TOPOLOGY_DIR/prometheus
TOKEN_FILE=$TOPOLOGY_DIR/metrics-token
PURCHASE_KEY_FILE=$TOPOLOGY_DIR/purchase-token-key
ENV_FILE=$TOPOLOGY_DIR/env

log() { echo "topology: $*"; }
fail() { echo "topology: $*" >&2; exit 1; }

[[ $DB_NAME =~ ^[A-Za-z0-9_]+$ ]] || fail "TOPOLOGY_DB must be letters, digits and _ (got '$DB_NAME')"
for port in "$REDIS_BASE_PORT" "$APP_BASE_PORT" "$HTTP_PORT" "$WORKER_METRICS_BASE_PORT" "$CDC_BASE_PORT" "$PROMETHEUS_PORT"; do
  [[ $port =~ ^[0-9]+$ ]] && [ "$port" -ge 1 ] && [ "$port" -le 55000 ] || fail "ports must be integers from 1 to 55000 (got '$port')"
done
# Its distribution ports (+20000) and the CLI's (+30000..+30010) must stay below 65536.
[[ $RABBITMQ_BASE_PORT =~ ^[0-9]+$ ]] && [ "$RABBITMQ_BASE_PORT" -ge 1024 ] && [ "$RABBITMQ_BASE_PORT" -le 35000 ] \
  || fail "TOPOLOGY_RABBITMQ_BASE_PORT must be an integer from 1024 to 35000 (got '$RABBITMQ_BASE_PORT')"
for count in "$SALE_APPS" "$SITE_APPS" "$EDGE_ORDER_RATE" "$EDGE_ORDER_BURST" "$EDGE_SALE_CONN"; do
  [[ $count =~ ^[0-9]+$ ]] && [ "$count" -ge 1 ] && [ "$count" -le 100000 ] \
    || fail "TOPOLOGY_SALE_APPS, _SITE_APPS, _EDGE_ORDER_RATE, _EDGE_ORDER_BURST and _EDGE_SALE_CONN must be integers from 1 (got '$count')"
done
for address in $EDGE_EXEMPT; do
  [[ $address =~ ^[0-9a-fA-F:.]+(/[0-9]{1,3})?$ ]] || fail "TOPOLOGY_EDGE_EXEMPT must list IP addresses or CIDRs (got '$address')"
done
[ "$QUEUE" = stream ] || [ "$QUEUE" = rabbitmq ] || fail "TOPOLOGY_QUEUE must be stream or rabbitmq (got '$QUEUE')"
APPS=$((SALE_APPS + SITE_APPS))

# MYSQL_URL's server (user, password, host, port) with the topology's own database.
MYSQL_SERVER_URL=$(node -e 'const u=new URL(process.env.MYSQL_URL||"mysql://root@127.0.0.1:3306/hmdp");u.pathname="";process.stdout.write(u.toString().replace(/\/$/,""))')
TOPOLOGY_MYSQL_URL="$MYSQL_SERVER_URL/$DB_NAME"

redis_ports() { seq "$REDIS_BASE_PORT" $((REDIS_BASE_PORT + REDIS_NODES - 1)); }
app_ports() { seq "$APP_BASE_PORT" $((APP_BASE_PORT + APPS - 1)); }
# The sale's pool is the first TOPOLOGY_SALE_APPS instances, the site's the others.
sale_ports() { seq "$APP_BASE_PORT" $((APP_BASE_PORT + SALE_APPS - 1)); }
site_ports() { seq $((APP_BASE_PORT + SALE_APPS)) $((APP_BASE_PORT + APPS - 1)); }
pool_of() { [ "$1" -lt $((APP_BASE_PORT + SALE_APPS)) ] && echo sale || echo site; }
worker_metrics_port() { echo $((WORKER_METRICS_BASE_PORT + $1 - 1)); }
cdc_port() { echo $((CDC_BASE_PORT + $1 - 1)); }
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
  # nginx with Debian's Lua modules and libraries (edge/packages.sh says which).
  NGINX=$(bash "$ROOT/edge/packages.sh") || fail "the edge's Debian packages (nginx, libnginx-mod-http-lua, ...) could not be installed"
  if [ -n "$PROMETHEUS" ]; then command -v prometheus >/dev/null || apt_install prometheus; fi
}
# The server's own scripts, not /usr/sbin's wrappers (which switch to the rabbitmq user and its cookie).
RABBITMQ_BIN=/usr/lib/rabbitmq/bin
ensure_rabbitmq_package() { [ -x "$RABBITMQ_BIN/rabbitmq-server" ] || apt_install rabbitmq-server; }

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

# --- RabbitMQ cluster (TOPOLOGY_QUEUE=rabbitmq) --------------------------------------------------
# Three nodes on loopback, each with its own node name, AMQP and distribution ports, data, logs and
# pid file under the topology folder, sharing a cookie of their own; joined into one cluster. They
# register with the host's epmd (shared by every Erlang node of the machine, and left running).

rabbitmq_ports() { seq "$RABBITMQ_BASE_PORT" $((RABBITMQ_BASE_PORT + RABBITMQ_NODES - 1)); }
rabbitmq_node() { echo "hmdp-topology-$1@localhost"; }
rabbitmq_urls() { rabbitmq_ports | sed 's|^|amqp://guest:guest@127.0.0.1:|' | paste -sd, -; }
rabbitmq_dist_port() { echo $(($1 + 20000)); }

# The environment of a node and of the CLI: nothing read from /etc/rabbitmq (its env file names the
# machine's broker), the cookie in a HOME of the topology's own.
rabbitmq_env() {
  env HOME="$RABBITMQ_DIR/home" RABBITMQ_CONF_ENV_FILE="$RABBITMQ_DIR/rabbitmq-env.conf" \
    RABBITMQ_CONFIG_FILE="$RABBITMQ_DIR/rabbitmq.conf" RABBITMQ_ADVANCED_CONFIG_FILE="$RABBITMQ_DIR/advanced.config" \
    RABBITMQ_ENABLED_PLUGINS_FILE="$RABBITMQ_DIR/enabled_plugins" ERL_EPMD_ADDRESS=127.0.0.1 "$@"
}
ctl() { # port, rabbitmqctl arguments...
  local port=$1; shift
  rabbitmq_env RABBITMQ_CTL_DIST_PORT_MIN=$(($(rabbitmq_dist_port "$port") + 10000)) RABBITMQ_CTL_DIST_PORT_MAX=$(($(rabbitmq_dist_port "$port") + 10010)) \
    "$RABBITMQ_BIN/rabbitmqctl" -n "$(rabbitmq_node "$port")" "$@"
}

write_rabbitmq_conf() {
  mkdir -p "$RABBITMQ_DIR/home"
  [ -s "$RABBITMQ_DIR/home/.erlang.cookie" ] \
    || node -e 'process.stdout.write(require("node:crypto").randomBytes(20).toString("hex").toUpperCase())' >"$RABBITMQ_DIR/home/.erlang.cookie"
  chmod 400 "$RABBITMQ_DIR/home/.erlang.cookie"
  echo '# Written by scripts/topology.sh: the nodes take their settings from their environment.' >"$RABBITMQ_DIR/rabbitmq-env.conf"
  echo '[].' >"$RABBITMQ_DIR/enabled_plugins"
  echo '[].' >"$RABBITMQ_DIR/advanced.config"
  cat >"$RABBITMQ_DIR/rabbitmq.conf" <<EOF
# Written by scripts/topology.sh; regenerated on every 'up'.
# A node that loses sight of the majority pauses instead of diverging (three nodes: a minority is one).
cluster_partition_handling = pause_minority
cluster_name = hmdp-topology-$RABBITMQ_BASE_PORT
log.console = false
log.file.level = info
EOF
}

start_rabbitmq() {
  ensure_rabbitmq_package
  write_rabbitmq_conf
  for port in $(rabbitmq_ports); do
    alive "$RUN_DIR/rabbitmq-$port.pid" && continue
    require_free "$port" "RabbitMQ node (AMQP)"
    require_free "$(rabbitmq_dist_port "$port")" "RabbitMQ node (Erlang distribution)"
    rm -f "$RUN_DIR/rabbitmq-$port.pid"
    # -detached: the node writes its own pid (the Erlang VM's) to RABBITMQ_PID_FILE.
    rabbitmq_env RABBITMQ_NODENAME="$(rabbitmq_node "$port")" RABBITMQ_NODE_IP_ADDRESS=127.0.0.1 RABBITMQ_NODE_PORT="$port" \
      RABBITMQ_DIST_PORT="$(rabbitmq_dist_port "$port")" RABBITMQ_MNESIA_BASE="$RABBITMQ_DIR/data" RABBITMQ_LOG_BASE="$LOG_DIR/rabbitmq-$port" \
      RABBITMQ_PID_FILE="$RUN_DIR/rabbitmq-$port.pid" RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS="-kernel inet_dist_use_interface {127,0,0,1} +sbwt none +sbwtdcpu none +sbwtdio none" \
      "$RABBITMQ_BIN/rabbitmq-server" -detached >>"$LOG_DIR/rabbitmq-start.log" 2>&1 \
      || fail "RabbitMQ node on $port did not start: see $LOG_DIR/rabbitmq-start.log"
  done
  for port in $(rabbitmq_ports); do
    wait_until 90 "RabbitMQ node $(rabbitmq_node "$port") listening on $port" port_open "$port"
    ctl "$port" -q await_startup --timeout 60 >>"$LOG_DIR/rabbitmq-start.log" 2>&1 || fail "RabbitMQ node on $port did not boot: see $LOG_DIR/rabbitmq-$port"
  done
  join_rabbitmq_cluster
}

# The second and third nodes join the first's cluster (once: a restarted member rejoins by itself).
join_rabbitmq_cluster() {
  local first; first=$(rabbitmq_ports | head -1)
  for port in $(rabbitmq_ports | tail -n +2); do
    rabbitmq_cluster_nodes "$first" | grep -qx "$(rabbitmq_node "$port")" && continue
    log "RabbitMQ: $(rabbitmq_node "$port") joins $(rabbitmq_node "$first")"
    { ctl "$port" stop_app && ctl "$port" reset && ctl "$port" join_cluster "$(rabbitmq_node "$first")" && ctl "$port" start_app; } >>"$LOG_DIR/rabbitmq-join.log" 2>&1 \
      || fail "RabbitMQ node on $port could not join the cluster: see $LOG_DIR/rabbitmq-join.log"
  done
  wait_until 60 "a RabbitMQ cluster of $RABBITMQ_NODES running nodes" rabbitmq_all_running "$first"
}
# The cluster's members (disc nodes), one a line, as the given node sees them.
rabbitmq_cluster_nodes() {
  ctl "$1" -q cluster_status --formatter json 2>/dev/null | node -e 'let s="";process.stdin.on("data",(d)=>(s+=d)).on("end",()=>{try{console.log(JSON.parse(s).disk_nodes.join("\n"))}catch{}})'
}
rabbitmq_running_nodes() {
  ctl "$1" -q cluster_status --formatter json 2>/dev/null | node -e 'let s="";process.stdin.on("data",(d)=>(s+=d)).on("end",()=>{try{console.log(JSON.parse(s).running_nodes.join("\n"))}catch{}})'
}
rabbitmq_all_running() { [ "$(rabbitmq_running_nodes "$1" | grep -c .)" -eq "$RABBITMQ_NODES" ]; }

# Every node this folder started, by its recorded pid (SIGTERM: the node shuts down cleanly), side by side.
stop_rabbitmq() {
  local pidfile port
  for pidfile in "$RUN_DIR"/rabbitmq-*.pid; do
    [ -e "$pidfile" ] || continue
    port=${pidfile##*/rabbitmq-}; port=${port%.pid}
    stop_pidfile "$pidfile" "RabbitMQ $(rabbitmq_node "$port")" &
  done
  wait
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
SECKILL_QUEUE=$QUEUE
EOF
  [ "$QUEUE" != rabbitmq ] || echo "RABBITMQ_URL=$(rabbitmq_urls)"
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

# --- Change followers --------------------------------------------------------------------------

# Why the followers cannot run on MYSQL_URL's server (the binlog off or not ROW), or nothing.
# The topology never reconfigures that server: scripts/start.sh turns the binlog on for the machine's.
binlog_missing() {
  node --input-type=module -e '
    import { createConnection } from "mysql2/promise";
    const connection = await createConnection(process.argv[1]);
    const [[state]] = await connection.query("SELECT @@log_bin AS logBin, @@binlog_format AS format");
    await connection.end();
    if (Number(state.logBin) !== 1) console.log("log_bin is OFF");
    else if (state.format !== "ROW") console.log(`binlog_format is ${state.format}, not ROW`);' "$MYSQL_SERVER_URL"
}
SKIPPED_FILE=$RUN_DIR/cdc-not-started

# Two followers of the topology's database: one active under the lease, one standing by. The
# replica server id is the health port: unique on the machine, as the server wants.
start_followers() {
  local missing
  missing=$(binlog_missing) || fail "could not ask MYSQL_URL's server for its binlog settings"
  if [ -n "$missing" ]; then
    echo "$missing on $(server_address)" >"$SKIPPED_FILE"
    log "change followers not started: $missing on $(server_address); rows written there outside the app stay cached until their TTL (scripts/start.sh turns the binlog on for the machine's MariaDB: docs/flows/cdc.md#setup)"
    return 0
  fi
  rm -f "$SKIPPED_FILE"
  for i in $(seq 1 "$FOLLOWERS"); do
    local pidfile=$RUN_DIR/cdc-$i.pid
    if alive "$pidfile"; then continue; fi
    require_free "$(cdc_port "$i")" "change follower"
    HOST=127.0.0.1 spawn "$pidfile" "$LOG_DIR/cdc-$i.log" node dist/cli/cdc.js --port "$(cdc_port "$i")" --server-id "$(cdc_port "$i")"
  done
  for i in $(seq 1 "$FOLLOWERS"); do wait_until 30 "change follower $i answering" follower_role "$i"; done
}
# The follower's role (active, standby), from its /api/health.
follower_role() { curl -fsS "http://127.0.0.1:$(cdc_port "$1")/api/health" 2>/dev/null | sed -n 's/.*"role":"\([a-z]*\)".*/\1/p' | grep .; }
followers_running() { alive "$RUN_DIR/cdc-1.pid"; }
server_address() { node -e 'process.stdout.write(new URL(process.argv[1]).host)' "$MYSQL_SERVER_URL"; }

# --- nginx -----------------------------------------------------------------------------------

# The edge's configuration: edge/nginx.conf.template rendered by dist/cli/edge-config.js (the 429
# pages and the Lua's settings beside it), with this topology's pools and limits. Its reads go to
# the Cluster: edge-config takes REDIS_CLUSTER_NODES from app_env as the seeds of the slot map.
write_nginx_conf() {
  local sale_pool site_pool
  sale_pool=$(sale_ports | sed 's/^/127.0.0.1:/' | paste -sd, -)
  site_pool=$(site_ports | sed 's/^/127.0.0.1:/' | paste -sd, -)
  app_env node dist/cli/edge-config.js --prefix "$NGINX_DIR" --listen "127.0.0.1:$HTTP_PORT" --sale "$sale_pool" --site "$site_pool" \
    --web-root "$ROOT/web/dist" --order-rate "$EDGE_ORDER_RATE" --order-burst "$EDGE_ORDER_BURST" --sale-conn "$EDGE_SALE_CONN" \
    --exempt "$EDGE_EXEMPT" >/dev/null 2>>"$LOG_DIR/nginx-test.log" || fail "could not write the edge's configuration: see $LOG_DIR/nginx-test.log"
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
rule_files: ['$ROOT/ops/prometheus/alerts.yml'$(! followers_running || echo ", '$ROOT/ops/prometheus/cdc-alerts.yml'")]
scrape_configs:
  - job_name: hmdp
    authorization: { type: Bearer, credentials_file: '$TOKEN_FILE' }
    static_configs: [{ targets: [${targets%, }] }]
EOF
  followers_running || return 0
  targets=""
  for i in $(seq 1 "$FOLLOWERS"); do targets+="'127.0.0.1:$(cdc_port "$i")', "; done
  cat >>"$PROMETHEUS_DIR/prometheus.yml" <<EOF
  - job_name: hmdp-cdc
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
  [ "$QUEUE" != rabbitmq ] || start_rabbitmq
  topology_env >"$ENV_FILE"
  prepare_database
  start_apps
  start_workers
  start_followers
  start_nginx
  start_prometheus
  [ -z "$PROMETHEUS" ] || log "Prometheus: http://127.0.0.1:$PROMETHEUS_PORT (alerts: ops/prometheus/alerts.yml; dashboard: ops/grafana/hmdp.json)"
  log "up: http://127.0.0.1:$HTTP_PORT (nginx) -> sale pool $(sale_ports | paste -sd, -), site pool $(site_ports | paste -sd, -); Redis Cluster $(cluster_nodes); MySQL $DB_NAME"
  [ "$QUEUE" != rabbitmq ] || log "RabbitMQ cluster: $(rabbitmq_urls)"
  ! followers_running || log "change followers (one active, one standing by): $(for i in $(seq 1 "$FOLLOWERS"); do echo "http://127.0.0.1:$(cdc_port "$i")/api/health"; done | paste -sd' ' -)"
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
  for i in $(seq 1 "$FOLLOWERS"); do stop_pidfile "$RUN_DIR/cdc-$i.pid" "change follower $i"; done
  rm -f "$SKIPPED_FILE"
  for port in $(redis_ports); do stop_pidfile "$RUN_DIR/redis-$port.pid" "Redis :$port"; done
  stop_rabbitmq
  rm -rf "$REDIS_DIR" "$RABBITMQ_DIR/data" "$ENV_FILE"
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
    show "app :$port ($(pool_of "$port"))" "$line"
  done
  for i in $(seq 1 "$WORKERS"); do
    alive "$RUN_DIR/worker-$i.pid" && line="pid $(cat "$RUN_DIR/worker-$i.pid") (consumer topology-worker-$i)" || line="not running"
    show "order worker $i" "$line"
  done
  for i in $(seq 1 "$FOLLOWERS"); do
    if alive "$RUN_DIR/cdc-$i.pid"; then
      line="pid $(cat "$RUN_DIR/cdc-$i.pid"), $(follower_role "$i" || echo 'not answering'), http://127.0.0.1:$(cdc_port "$i")/api/health"
    elif [ -f "$SKIPPED_FILE" ]; then line="not started: $(cat "$SKIPPED_FILE")"
    else line="not running"; fi
    show "change follower $i" "$line"
  done
  alive "$NGINX_DIR/nginx.pid" && line="pid $(cat "$NGINX_DIR/nginx.pid"), http://127.0.0.1:$HTTP_PORT" || line="not running"
  show "nginx" "$line"
  alive "$RUN_DIR/prometheus.pid" && line="pid $(cat "$RUN_DIR/prometheus.pid"), http://127.0.0.1:$PROMETHEUS_PORT" || line="not running (TOPOLOGY_PROMETHEUS=1 starts it)"
  show "prometheus" "$line"
  if [ "$QUEUE" = rabbitmq ] || [ -e "$RUN_DIR/rabbitmq-$RABBITMQ_BASE_PORT.pid" ]; then
    for port in $(rabbitmq_ports); do
      alive "$RUN_DIR/rabbitmq-$port.pid" && line="pid $(cat "$RUN_DIR/rabbitmq-$port.pid"), $(rabbitmq_node "$port")" || line="not running"
      show "rabbitmq :$port" "$line"
    done
    ! alive "$RUN_DIR/rabbitmq-$RABBITMQ_BASE_PORT.pid" \
      || show "rabbitmq cluster" "running nodes: $(rabbitmq_running_nodes "$RABBITMQ_BASE_PORT" | sort | paste -sd' ' -)"
  fi
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
  broker) mkdir -p "$RUN_DIR" "$LOG_DIR"; start_rabbitmq; log "RabbitMQ cluster: $(rabbitmq_urls)" ;;
  rabbitmqctl)
    shift
    if [ "${1:-}" = -n ]; then
      [[ ${2:-} =~ ^hmdp-topology-([0-9]+)@localhost$ ]] || fail "-n takes one of this topology's nodes: $(for p in $(rabbitmq_ports); do rabbitmq_node "$p"; done | paste -sd' ' -)"
      port=${BASH_REMATCH[1]}; shift 2
    else port=$RABBITMQ_BASE_PORT; fi
    ctl "$port" "$@" ;;
  *) fail "usage: scripts/topology.sh up | down [--purge] | status | env | run <command> | bench [bench options] | broker | rabbitmqctl [-n node] <args>" ;;
esac
