#!/usr/bin/env bash
# The whole test suite: services and dependencies (started or installed if missing), then Vitest:
# the static checks (types, lint, format) and the unit, integration and system tests side by side,
# then the load tests (fault scenarios, bench harness) one at a time (docs/testing.md). It ends with
# Vitest's own summary. Extra arguments go to Vitest, e.g. `scripts/test.sh --project unit` or
# `scripts/test.sh test/integration/modules/users`.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/services.sh
bash scripts/deps.sh

exec npm test -- "$@"
