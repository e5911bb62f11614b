#!/usr/bin/env bash
# The whole test suite against real Redis and MariaDB (started or installed if missing); it ends
# with Vitest's own summary. Extra arguments go to Vitest, e.g. `scripts/test.sh test/modules/user`.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/services.sh
bash scripts/deps.sh
# Debian's Chromium and a CJK font for the browser tests (test/web).
bash scripts/browser.sh
npm run --silent typecheck
exec npm test -- "$@"
