#!/usr/bin/env bash
# The whole test suite: services, dependencies, static checks (types, lint, format), then the
# three test tiers (unit, integration, system; docs/testing.md) against real Redis and MariaDB
# (started or installed if missing); it ends with Vitest's own summary. The system tier's global
# setup builds the web app and installs Chromium when needed. Extra arguments go to Vitest, e.g.
# `scripts/test.sh --project unit` or `scripts/test.sh test/integration/modules/users`.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/services.sh
bash scripts/deps.sh
# Static checks, before any test runs: tsc and vue-tsc, ESLint, Prettier (npm run check).
npm run --silent check
exec npm test -- "$@"
