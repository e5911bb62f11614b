#!/usr/bin/env bash
# The binlog the change follower reads (docs/flows/cdc.md#setup), on the machine's MariaDB: what
# scripts/start.sh runs before it starts the follower. Never run by the tests on the shared server
# (scripts/fresh-binlog-check.sh runs it in namespaces, on a server of its own).
#
#   log_bin ON, binlog_format ROW   nothing to do
#   log_bin ON, another format      binlog_format=ROW for new sessions at once (SET GLOBAL) and in CNF;
#                                   no restart (a session opened before keeps its format until it reconnects)
#   log_bin OFF                     CNF written: log_bin, binlog_format=ROW, and binlog_expire_logs_seconds
#                                   (7 days) or server_id (1) when the server has none; then MariaDB is
#                                   restarted once: by systemctl when a systemd unit runs it, else stopped
#                                   by its pid and its own command line started again
#
# Changes only a server on loopback (MYSQL_URL's host), and restarts it only once its option files
# are known to include CNF (my_print_defaults, with the server's own --defaults-file if it has one);
# otherwise CNF is put back as it was and nothing restarts. A server that does not come back with
# the binlog on gets CNF back as it was and is started again as it was.
# Exit 0: the binlog is on in ROW format; 1: it is not (why, on stderr). Idempotent.
# Settings: MYSQL_URL (mysql://root@127.0.0.1:3306/hmdp: its host, port, user and password),
# HMDP_BINLOG_CNF (/etc/mysql/mariadb.conf.d/60-hmdp-binlog.cnf).
set -euo pipefail

CNF=${HMDP_BINLOG_CNF:-/etc/mysql/mariadb.conf.d/60-hmdp-binlog.cnf}
RESTART_SECONDS=120

log() { echo "binlog: $*"; }
fail() { echo "binlog: $*" >&2; exit 1; }
as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }

# host, port, user, password of MYSQL_URL, one a line.
mapfile -t URL < <(node -e '
  const u = new URL(process.env.MYSQL_URL || "mysql://root@127.0.0.1:3306/hmdp");
  const d = decodeURIComponent;
  console.log([u.hostname.replace(/^\[|\]$/g, "") || "127.0.0.1", u.port || "3306", d(u.username) || "root", d(u.password)].join("\n"));')
HOST=${URL[0]} PORT=${URL[1]} USER_NAME=${URL[2]} PASSWORD=${URL[3]:-}

sql() { MYSQL_PWD=$PASSWORD mariadb -h"$HOST" -P"$PORT" -u"$USER_NAME" --batch --skip-column-names -e "$1"; }

# log_bin, binlog_format, server_id, binlog_expire_logs_seconds, pid_file, tab-separated.
read_state() { sql 'SELECT @@log_bin, @@binlog_format, @@server_id, @@binlog_expire_logs_seconds, @@pid_file'; }

is_loopback() { [[ $HOST =~ ^(127\.[0-9.]+|localhost|::1)$ ]]; }

# set_option KEY VALUE: KEY = VALUE in CNF (this script's own file, one [mysqld] group), replacing
# a line of KEY already there.
set_option() {
  local key=$1 value=$2 text
  text=$(as_root cat "$CNF" 2>/dev/null | grep -v "^$key[[:space:]]*=" || true)
  grep -qx '\[mysqld\]' <<<"$text" || text=$(printf '# Written by hmdp-ts scripts/mariadb-binlog.sh: the binlog its change follower reads (docs/flows/cdc.md).\n[mysqld]')
  printf '%s\n%s = %s\n' "$text" "$key" "$value" | as_root tee "$CNF" >/dev/null
}

# restore_cnf BACKUP: CNF as it was before this run (no CNF when there was none).
restore_cnf() {
  if [ -s "$1" ]; then as_root cp "$1" "$CNF"; else as_root rm -f "$CNF"; fi
}

# The pid in a pid file, if it names a running mariadbd or mysqld.
live_server_pid() { # pid file
  local pid
  pid=$(as_root cat "$1" 2>/dev/null) && [[ $pid =~ ^[0-9]+$ ]] && [[ $(cat "/proc/$pid/comm" 2>/dev/null) =~ ^(mariadbd|mysqld)$ ]] && echo "$pid"
}

# The systemd unit that runs the process, if systemd runs it.
systemd_unit() {
  [ -d /run/systemd/system ] || return 1
  sed -n 's|^.*/\([^/]*\.service\)$|\1|p' "/proc/$1/cgroup" | head -n 1 | grep .
}

# Whether the option files the server reads (its --defaults-file / --defaults-extra-file kept)
# give KEY=VALUE.
server_reads() { # pid, key, value
  local -a command defaults=()
  mapfile -d '' -t command <"/proc/$1/cmdline"
  for arg in "${command[@]:1}"; do
    case $arg in
      --no-defaults) return 1 ;;
      --defaults-file=* | --defaults-extra-file=* | --defaults-group-suffix=*) defaults+=("$arg") ;;
    esac
  done
  my_print_defaults "${defaults[@]}" mysqld server mariadbd mariadb | grep -qxF -- "--$2=$3"
}

wait_for_server() { # seconds
  for _ in $(seq 1 $(($1 * 2))); do
    sql 'SELECT 1' >/dev/null 2>&1 && return 0
    sleep 0.5
  done
  return 1
}

# How the server was started, read before it stops: its systemd unit, or its own command line
# (mysqld_safe's when that watches it), environment and folder.
UNIT='' CWD='' COMMAND=() ENVIRONMENT=()
note_how_started() { # pid
  local target=$1 parent
  if UNIT=$(systemd_unit "$1"); then return 0; fi
  parent=$(ps -o ppid= -p "$1" | tr -d ' ')
  [ "$(cat "/proc/$parent/comm" 2>/dev/null)" != mysqld_safe ] || target=$parent
  mapfile -d '' -t COMMAND <"/proc/$target/cmdline"
  mapfile -d '' -t ENVIRONMENT < <(as_root cat "/proc/$target/environ")
  CWD=$(as_root readlink "/proc/$target/cwd")
}

# Restarts the server the way it was started: systemctl restart, or SIGTERM to its pid, then its
# command line again.
restart_server() { # pid
  if [ -n "$UNIT" ]; then
    log "restarting MariaDB (systemctl restart $UNIT)"
    as_root systemctl restart "$UNIT"
    return
  fi
  log "restarting MariaDB (pid $1: SIGTERM, then ${COMMAND[*]})"
  stop_server "$1" && start_command
}

stop_server() { # pid: SIGTERM, then its exit awaited (InnoDB's shutdown takes seconds)
  as_root kill -TERM "$1" 2>/dev/null || true
  for _ in $(seq 1 $((RESTART_SECONDS * 5))); do
    as_root kill -0 "$1" 2>/dev/null || return 0
    sleep 0.2
  done
  echo "binlog: MariaDB ($1) did not stop within ${RESTART_SECONDS} s" >&2
  return 1
}

# The noted command line, detached (a session of its own), as it was started: its environment and folder.
start_command() {
  local output; output=$(mktemp -t hmdp-mariadbd.XXXXXX.log)
  (cd "$CWD" && as_root env -i "${ENVIRONMENT[@]}" setsid --fork "${COMMAND[@]}" </dev/null >>"$output" 2>&1)
  log "MariaDB started (its output: $output)"
}

state=$(read_state) || fail "cannot ask MariaDB at $HOST:$PORT (MYSQL_URL) for its binlog settings"
IFS=$'\t' read -r log_bin format server_id expire pid_file <<<"$state"

if [ "$log_bin" = 1 ] && [ "$format" = ROW ]; then
  log "on (binlog_format ROW) at $HOST:$PORT"
  exit 0
fi
is_loopback || fail "log_bin is $([ "$log_bin" = 1 ] && echo "on with binlog_format $format" || echo off) at $HOST:$PORT, not on this machine: set log_bin and binlog_format=ROW there (docs/flows/cdc.md#setup)"
pid=$(live_server_pid "$pid_file") || fail "the pid file $pid_file (@@pid_file) names no running mariadbd: cannot restart it"
backup=$(mktemp -t hmdp-binlog-cnf.XXXXXX)
trap 'rm -f "$backup"' EXIT
as_root cat "$CNF" >"$backup" 2>/dev/null || true
as_root mkdir -p "$(dirname "$CNF")"

if [ "$log_bin" = 1 ]; then
  # The binlog is on already: ROW from now on for new sessions, and after any restart.
  set_option binlog_format ROW
  sql "SET GLOBAL binlog_format = 'ROW'" || { restore_cnf "$backup"; fail "SET GLOBAL binlog_format = 'ROW' refused (the user of MYSQL_URL needs SUPER)"; }
  server_reads "$pid" binlog_format ROW || log "warning: the server's option files do not include $CNF: binlog_format goes back to $format at its next restart"
  log "binlog_format ROW (was $format) for sessions opened from now on, kept in $CNF; no restart"
  exit 0
fi

set_option log_bin mariadb-bin
set_option binlog_format ROW
[ "$expire" != 0 ] || set_option binlog_expire_logs_seconds 604800
[ "$server_id" != 0 ] || set_option server_id 1
if ! server_reads "$pid" log_bin mariadb-bin; then
  restore_cnf "$backup"
  fail "log_bin is off and MariaDB (pid $pid) does not read $CNF (its option files: my_print_defaults; a --no-defaults server reads none): add it to them (!includedir) or set HMDP_BINLOG_CNF, then run this again; nothing restarted"
fi
log "log_bin is off: wrote $CNF; MariaDB restarts once to turn the binlog on"
note_how_started "$pid"
if restart_server "$pid" && wait_for_server "$RESTART_SECONDS"; then
  IFS=$'\t' read -r log_bin format _ <<<"$(read_state)"
  [ "$log_bin" != 1 ] || [ "$format" != ROW ] || { log "on (binlog_format ROW) at $HOST:$PORT after the restart"; exit 0; }
  restore_cnf "$backup"
  fail "MariaDB restarted with log_bin $log_bin and binlog_format $format (another option file overrides $CNF?); $CNF put back as it was"
fi
# Not answering: started again as it was, without the new options (a server that never stopped
# still runs as it was).
restore_cnf "$backup"
if [ -n "$UNIT" ]; then
  as_root systemctl restart "$UNIT" || true
elif ! as_root kill -0 "$pid" 2>/dev/null; then
  if started=$(live_server_pid "$pid_file"); then stop_server "$started" || true; fi
  start_command
fi
wait_for_server "$RESTART_SECONDS" && now=answering || now="not answering"
fail "MariaDB did not come back with the binlog on: $CNF put back as it was, MariaDB started as it was ($now; see its error log)"
