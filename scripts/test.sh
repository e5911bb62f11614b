#!/usr/bin/env bash
# The whole test suite: services, dependencies, type check, then the three test tiers (unit,
# integration, system; docs/testing.md) against real Redis and MariaDB (started or installed if
# missing); it ends with Vitest's own summary. The system tier's global setup builds the web app
# and installs Chromium when needed. Extra arguments go to Vitest, e.g.
# `scripts/test.sh --project unit` or `scripts/test.sh test/integration/modules/users`.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/services.sh
bash scripts/deps.sh
# Static checks, before any test runs (further checkers, such as a linter, go here too).
npm run --silent typecheck
exec npm test -- "$@"
