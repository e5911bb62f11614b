#!/usr/bin/env bash
# Makes sure Redis, MariaDB and RabbitMQ run on loopback and the app's database exists.
#
# - Installs them from Debian packages (apt-get) when the binaries are missing.
# - Starts each one only when nothing answers on its port; a server that is already running
#   (127.0.0.1:6379, 127.0.0.1:3306, 127.0.0.1:5672) is used as it is.
# - RabbitMQ carries the sale's orders with SECKILL_QUEUE=rabbitmq; its tests make a vhost of their
#   own with rabbitmqctl (guest/guest, which RabbitMQ lets in from loopback only).
# - Lets root log in over TCP without a password (Debian's default is socket-only auth).
# - Creates the database named in MYSQL_URL (default hmdp).
# Idempotent: on a machine where all this holds, it only checks and returns in well under a second.
set -euo pipefail

REDIS_PORT=6379
MYSQL_PORT=3306
RABBITMQ_PORT=5672
DB_NAME=$(node -e 'const u=new URL(process.env.MYSQL_URL||"mysql://root@127.0.0.1:3306/hmdp");process.stdout.write(decodeURIComponent(u.pathname.slice(1))||"hmdp")' 2>/dev/null || echo hmdp)

log() { echo "services: $*"; }

as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

wait_for_port() {
  local port=$1 name=$2 seconds=${3:-30}
  for _ in $(seq 1 $((seconds * 2))); do
    port_open "$port" && return 0
    sleep 0.5
  done
  log "$name did not start listening on 127.0.0.1:$port within $seconds s" >&2
  return 1
}

APT_UPDATED=0
apt_install() {
  if [ "$APT_UPDATED" -eq 0 ]; then
    as_root apt-get update -qq
    APT_UPDATED=1
  fi
  log "installing $* from Debian packages"
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}

ensure_redis() {
  if port_open "$REDIS_PORT"; then return 0; fi
  command -v redis-server >/dev/null || apt_install redis-server
  log "starting Redis on 127.0.0.1:$REDIS_PORT"
  as_root mkdir -p /var/lib/redis /var/log/redis
  as_root redis-server --daemonize yes --bind 127.0.0.1 -::1 --port "$REDIS_PORT" \
    --save "" --appendonly no --dir /var/lib/redis --logfile /var/log/redis/hmdp.log
  wait_for_port "$REDIS_PORT" Redis
}

ensure_mariadb() {
  if ! port_open "$MYSQL_PORT"; then
    command -v mariadbd >/dev/null || [ -x /usr/sbin/mariadbd ] || apt_install mariadb-server mariadb-client
    if [ ! -d /var/lib/mysql/mysql ]; then
      log "initialising the MariaDB data directory"
      as_root mariadb-install-db --user=mysql --datadir=/var/lib/mysql >/dev/null
    fi
    log "starting MariaDB on 127.0.0.1:$MYSQL_PORT"
    as_root mkdir -p /run/mysqld
    as_root chown mysql:mysql /run/mysqld
    # A pid file of our own: --exec alone would match any mariadbd running on the machine.
    as_root start-stop-daemon --start --oknodo --background --make-pidfile --pidfile /run/mysqld/hmdp-mariadbd.pid \
      --exec /usr/sbin/mariadbd -- --user=mysql
    wait_for_port "$MYSQL_PORT" MariaDB
  fi
  if ! mariadb -h127.0.0.1 -P"$MYSQL_PORT" -uroot -e 'SELECT 1' >/dev/null 2>&1; then
    # Debian's MariaDB lets root in only through the socket; TCP connections from loopback
    # come as root@127.0.0.1 or root@::1. Development setup: root without a password, loopback only.
    log "allowing root to log in over TCP from loopback without a password (development setup)"
    as_root mariadb -uroot <<'SQL'
ALTER USER 'root'@'localhost' IDENTIFIED VIA unix_socket OR mysql_native_password USING PASSWORD('');
CREATE USER IF NOT EXISTS 'root'@'127.0.0.1' IDENTIFIED BY '';
GRANT ALL PRIVILEGES ON *.* TO 'root'@'127.0.0.1' WITH GRANT OPTION;
CREATE USER IF NOT EXISTS 'root'@'::1' IDENTIFIED BY '';
GRANT ALL PRIVILEGES ON *.* TO 'root'@'::1' WITH GRANT OPTION;
SQL
  fi
  mariadb -h127.0.0.1 -P"$MYSQL_PORT" -uroot -e \
    "CREATE DATABASE IF NOT EXISTS \`$DB_NAME\` CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci"
}

ensure_rabbitmq() {
  if port_open "$RABBITMQ_PORT"; then return 0; fi
  command -v rabbitmq-server >/dev/null || [ -x /usr/sbin/rabbitmq-server ] || apt_install rabbitmq-server
  log "starting RabbitMQ on 127.0.0.1:$RABBITMQ_PORT"
  # Loopback only, as the other services; the Erlang node takes seconds to boot, more on a first start.
  as_root env RABBITMQ_NODE_IP_ADDRESS=127.0.0.1 RABBITMQ_NODE_PORT="$RABBITMQ_PORT" rabbitmq-server -detached
  wait_for_port "$RABBITMQ_PORT" RabbitMQ 90
}

ensure_redis
ensure_mariadb
ensure_rabbitmq
log "Redis 127.0.0.1:$REDIS_PORT, MariaDB 127.0.0.1:$MYSQL_PORT (database $DB_NAME) and RabbitMQ 127.0.0.1:$RABBITMQ_PORT are ready"
