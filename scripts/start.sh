#!/usr/bin/env bash
# Quick start: services, dependencies, build, migrations, demo data, then the server on PORT (8081).
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/services.sh
bash scripts/deps.sh
npm run --silent build >/dev/null
node dist/cli/migrate.js
node dist/cli/seed.js
# Redis indexes of the shops: GEO sets per type and the id Bloom filter (idempotent).
node dist/cli/shop-index.js
# The demo user (phone 13686869696) is an administrator: the admin page, shops, vouchers (idempotent).
node dist/cli/admin.js grant 13686869696
echo "start: http://127.0.0.1:${PORT:-8081}/api/health"
exec node dist/main.js
