#!/usr/bin/env bash
# Checks scripts/mariadb-binlog.sh (what scripts/start.sh runs to turn the binlog on) as on a fresh
# Debian machine, without touching the MariaDB running here: inside new network, mount and pid
# namespaces (root only) nothing listens on loopback, no process outside is seen (so none can be
# stopped), and /etc/mysql, the data, run and log folders and /tmp are empty tmpfs mounts. /etc/mysql gets
# the lines of Debian 12's mariadb-common and mariadb-server files that take effect (plus an error
# log, for this check's messages). MariaDB is started as scripts/services.sh starts it.
#
#   1. my.cnf without Debian's !includedir: refused, nothing written, nothing restarted
#   2. a later option file turns the binlog off again: restarted once, CNF put back, refused
#   3. Debian's files: CNF written, restarted once, the binlog on (ROW), the data kept; a second
#      run changes nothing
#   4. the binlog on with binlog_format MIXED: ROW at once (SET GLOBAL) and in CNF, no restart
set -euo pipefail
cd "$(dirname "$0")/.."
[ "$(id -u)" -eq 0 ] || { echo "needs root (unshare)" >&2; exit 1; }

exec unshare --net --mount --pid --fork --mount-proc bash -euo pipefail -c '
  CNF=/etc/mysql/mariadb.conf.d/60-hmdp-binlog.cnf
  export MYSQL_URL=mysql://root@127.0.0.1:3306/hmdp
  unset HMDP_BINLOG_CNF
  say() { echo "fresh-binlog-check: $*"; }
  fail() { echo "fresh-binlog-check: $*" >&2; tail -n 20 /var/log/mysql/error.log >&2 2>/dev/null || true; exit 1; }
  sql() { mariadb -h127.0.0.1 -uroot --batch --skip-column-names -e "$1"; }
  server_pid() { cat /run/mysqld/mysqld.pid; }

  start() { # as scripts/services.sh starts it
    start-stop-daemon --start --oknodo --background --make-pidfile --pidfile /run/mysqld/hmdp-mariadbd.pid \
      --exec /usr/sbin/mariadbd -- --user=mysql
    for _ in $(seq 1 120); do mariadb -uroot -e "SELECT 1" >/dev/null 2>&1 && return 0; sleep 0.5; done
    fail "MariaDB did not start"
  }
  stop() {
    local pid; pid=$(server_pid)
    kill -TERM "$pid"
    while kill -0 "$pid" 2>/dev/null; do sleep 0.2; done
  }
  binlog() { bash scripts/mariadb-binlog.sh >/tmp/binlog.out 2>&1 && status=0 || status=$?; cat /tmp/binlog.out; return 0; }
  expect_output() { grep -qF -- "$1" /tmp/binlog.out || fail "expected \"$1\" in the output above"; }

  debian_my_cnf() {
    printf "[client-server]\nsocket = /run/mysqld/mysqld.sock\n\n!includedir /etc/mysql/conf.d/\n!includedir /etc/mysql/mariadb.conf.d/\n" >/etc/mysql/my.cnf
  }
  debian_server_cnf() {
    printf "[server]\n\n[mysqld]\npid-file = /run/mysqld/mysqld.pid\nbasedir = /usr\nbind-address = 127.0.0.1\nexpire_logs_days = 10\ncharacter-set-server = utf8mb4\ncollation-server = utf8mb4_general_ci\nlog_error = /var/log/mysql/error.log\n"
  }

  trap "mariadb-admin -uroot shutdown >/dev/null 2>&1 || true" EXIT
  ip link set lo up
  for dir in /etc/mysql /var/lib/mysql /run/mysqld /var/log/mysql /tmp; do mkdir -p "$dir"; mount -t tmpfs tmpfs "$dir"; done
  mkdir -p /etc/mysql/conf.d /etc/mysql/mariadb.conf.d
  chown mysql:mysql /var/lib/mysql /run/mysqld /var/log/mysql

  # 1. A my.cnf of its own that includes no folder (as on this machine): the CNF would never be read.
  { printf "[client-server]\nsocket = /run/mysqld/mysqld.sock\n\n"; debian_server_cnf; } >/etc/mysql/my.cnf
  mariadb-install-db --user=mysql --datadir=/var/lib/mysql >/tmp/install-db.log 2>&1 || { cat /tmp/install-db.log >&2; fail "mariadb-install-db failed"; }
  start
  # Root over TCP from loopback without a password, as scripts/services.sh opens it.
  mariadb -uroot -e "ALTER USER root@localhost IDENTIFIED VIA unix_socket OR mysql_native_password USING PASSWORD(\"\");
    CREATE USER IF NOT EXISTS root@127.0.0.1 IDENTIFIED BY \"\"; GRANT ALL PRIVILEGES ON *.* TO root@127.0.0.1 WITH GRANT OPTION;
    CREATE DATABASE kept; CREATE TABLE kept.t (v INT); INSERT INTO kept.t VALUES (42)"
  [ "$(sql "SELECT @@log_bin")" = 0 ] || fail "a fresh MariaDB has log_bin on?"
  before=$(server_pid)
  binlog
  [ "$status" = 1 ] || fail "1: exit $status, expected 1"
  expect_output "does not read $CNF"
  [ ! -e "$CNF" ] || fail "1: $CNF left behind"
  [ "$(server_pid)" = "$before" ] && [ "$(sql "SELECT @@log_bin")" = 0 ] || fail "1: the server was restarted"
  say "1. an option file not included: refused, nothing written or restarted: ok"

  # 2. Debian'"'"'s files, and a later one that turns the binlog off.
  debian_my_cnf
  debian_server_cnf >/etc/mysql/mariadb.conf.d/50-server.cnf
  printf "[mysqld]\nskip-log-bin\n" >/etc/mysql/mariadb.conf.d/99-no-binlog.cnf
  stop
  start
  before=$(server_pid)
  binlog
  [ "$status" = 1 ] || fail "2: exit $status, expected 1"
  expect_output "restarted with log_bin 0"
  [ ! -e "$CNF" ] || fail "2: $CNF left behind"
  [ "$(server_pid)" != "$before" ] && [ "$(sql "SELECT @@log_bin")" = 0 ] || fail "2: not restarted once, or the binlog on"
  say "2. overridden by a later option file: restarted once, CNF put back, refused: ok"

  # 3. A fresh Debian machine.
  rm /etc/mysql/mariadb.conf.d/99-no-binlog.cnf
  stop
  start
  before=$(server_pid)
  binlog
  [ "$status" = 0 ] || fail "3: exit $status"
  expect_output "after the restart"
  [ "$(server_pid)" != "$before" ] || fail "3: not restarted"
  [ "$(sql "SELECT @@log_bin, @@binlog_format, @@log_bin_basename, @@binlog_expire_logs_seconds, @@server_id")" = \
    "$(printf "1\tROW\t/var/lib/mysql/mariadb-bin\t864000\t1")" ] || fail "3: $(sql "SELECT @@log_bin, @@binlog_format, @@log_bin_basename, @@binlog_expire_logs_seconds, @@server_id")"
  [ "$(sql "SELECT v FROM kept.t")" = 42 ] || fail "3: the data is gone"
  [ "$(grep -c . "$CNF")" = 4 ] && grep -qx "log_bin = mariadb-bin" "$CNF" && grep -qx "binlog_format = ROW" "$CNF" || fail "3: $CNF: $(cat "$CNF")"
  [ -n "$(sql "SHOW BINARY LOGS")" ] || fail "3: no binary log"
  before=$(server_pid)
  binlog
  [ "$status" = 0 ] && [ "$(server_pid)" = "$before" ] || fail "3: a second run changed something"
  expect_output "on (binlog_format ROW) at 127.0.0.1:3306"
  say "3. a fresh Debian machine: CNF written, restarted once, binlog on (ROW), data kept; a second run changes nothing: ok"

  # 4. The binlog on in MIXED format.
  sed -i "s/^binlog_format = ROW$/binlog_format = MIXED/" "$CNF"
  stop
  start
  [ "$(sql "SELECT @@log_bin, @@binlog_format")" = "$(printf "1\tMIXED")" ] || fail "4: not on in MIXED format"
  before=$(server_pid)
  binlog
  [ "$status" = 0 ] && [ "$(server_pid)" = "$before" ] || fail "4: exit $status, or restarted"
  [ "$(sql "SELECT @@GLOBAL.binlog_format")" = ROW ] || fail "4: binlog_format still $(sql "SELECT @@GLOBAL.binlog_format")"
  grep -qx "binlog_format = ROW" "$CNF" && grep -qx "log_bin = mariadb-bin" "$CNF" || fail "4: $CNF: $(cat "$CNF")"
  say "4. on in MIXED format: ROW at once and in CNF, no restart: ok"
  say "ok"
'
