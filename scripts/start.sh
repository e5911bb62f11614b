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
# Demo user 1 (phone 13686869696) may create vouchers.
export ADMIN_USER_IDS="${ADMIN_USER_IDS-1}"
echo "start: http://127.0.0.1:${PORT:-8081}/api/health"
exec node dist/main.js
