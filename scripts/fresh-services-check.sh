#!/usr/bin/env bash
# Checks scripts/services.sh as on a fresh machine, without touching the services already
# running here: inside new network and mount namespaces (root only) nothing listens on loopback
# and the Redis/MariaDB data directories are empty tmpfs mounts. It must start both servers,
# open root over TCP, create the database, and a second run must change nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
[ "$(id -u)" -eq 0 ] || { echo "needs root (unshare)" >&2; exit 1; }

exec unshare --net --mount --fork bash -euo pipefail -c '
  stop_all() {
    redis-cli -h 127.0.0.1 shutdown nosave >/dev/null 2>&1 || true
    mariadb-admin shutdown >/dev/null 2>&1 || true
  }
  trap stop_all EXIT
  ip link set lo up
  for dir in /var/lib/mysql /run/mysqld /var/lib/redis; do mkdir -p "$dir"; mount -t tmpfs tmpfs "$dir"; done
  chown mysql:mysql /var/lib/mysql /run/mysqld
  bash scripts/services.sh
  second=$(bash scripts/services.sh)
  case "$second" in *starting*|*installing*|*allowing*) echo "second run changed something: $second" >&2; exit 1;; esac
  mariadb -h127.0.0.1 -uroot -e "SHOW DATABASES LIKE \"hmdp\"" | grep -q hmdp
  [ "$(redis-cli -h 127.0.0.1 ping)" = PONG ]
  echo "fresh-services-check: ok"
'
