#!/usr/bin/env bash
# Quick start: services, the binlog, dependencies, build, migrations, demo data, then the change
# follower and the server on PORT (8081).
#
# The change follower (docs/flows/cdc.md) reads MariaDB's binlog: scripts/mariadb-binlog.sh turns
# it on when it is off (a conf.d file and one restart of MariaDB). Without the binlog (it could not
# be turned on: the reason is printed) the app runs alone. CDC_FOLLOWER=off: neither the binlog
# step nor the follower. CDC_PORT (9470): the follower's /api/health and /metrics (0: none).
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/services.sh
follower=${CDC_FOLLOWER:-on}
[ "$follower" = on ] || [ "$follower" = off ] || { echo "start: CDC_FOLLOWER must be on or off (got '$follower')" >&2; exit 1; }
if [ "$follower" = on ] && ! bash scripts/mariadb-binlog.sh; then
  echo "start: no change follower (the binlog is not on, above): rows written outside the app stay cached until their TTL" >&2
  follower=off
fi
bash scripts/deps.sh
npm run --silent build >/dev/null
node dist/cli/migrate.js
node dist/cli/seed.js
# Redis indexes of the shops: GEO sets per type and the id Bloom filter (idempotent).
node dist/cli/shop-index.js
# The demo user (phone 13686869696) is an administrator: the admin page, shops, vouchers (idempotent).
node dist/cli/admin.js grant 13686869696

if [ "$follower" = on ]; then
  cdc_port=${CDC_PORT:-9470}
  if [ "$cdc_port" != 0 ] && (exec 3<>"/dev/tcp/127.0.0.1/$cdc_port") 2>/dev/null; then
    echo "start: port $cdc_port is taken: the change follower runs without /api/health (set CDC_PORT)"
    cdc_port=0
  fi
  # Started from this shell, which then becomes the app (exec): the app is the follower's parent,
  # gets every signal as before, and the follower stops once it ends, however it ends.
  node dist/cli/cdc.js --port "$cdc_port" --stop-with-parent &
  [ "$cdc_port" = 0 ] || echo "start: change follower (pid $!): http://127.0.0.1:$cdc_port/api/health"
fi
echo "start: http://127.0.0.1:${PORT:-8081}/api/health"
exec node dist/main.js
